// collkit sweep under mpirun: 4 processes write what one process writes
// (the check), byte for byte, and print the same table.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "sweep_fixture.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::run_collkit;
using testing_cli::slurp;

const std::string kSource = COLLKIT_SOURCE_DIR;

class SweepCmd : public testing_cli::SweepFiles {
 protected:
  SweepCmd() : SweepFiles("sweep_mpi") {}
};

// The check: mpirun -np 4 writes what one process writes.
TEST_F(SweepCmd, FourMpiProcessesWriteWhatOneWrites) {
#ifndef COLLKIT_MPIEXEC
  GTEST_SKIP() << "collkit was built without MPI";
#else
  const std::string grid = " '" + kSource + "/sweeps/small.json'";
  const auto one = run_collkit("sweep" + grid + " --quiet" + outputs("one"), dir_);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string mpirun =
      std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 '") + COLLKIT_MPIEXEC +
      "' -np 4 --oversubscribe --allow-run-as-root --bind-to none '" + COLLKIT_BINARY + "' sweep" +
      grid + " --jobs 1" + outputs("four");
  const fs::path log = dir_ / "mpirun.log";
  const int status = std::system(
      (mpirun + " >'" + (dir_ / "mpirun.out").string() + "' 2>'" + log.string() + "'").c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(log);
  EXPECT_NE(slurp(log).find("on 4 MPI process(es) x 1 thread(s)"), std::string::npos) << slurp(log);
  EXPECT_EQ(slurp(dir_ / "mpirun.out"), one.out);
  expect_same("one", "four");
#endif
}

}  // namespace
}  // namespace collkit
