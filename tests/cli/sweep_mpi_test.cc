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

#include "cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::run_collkit;
using testing_cli::slurp;

const std::string kSource = COLLKIT_SOURCE_DIR;

class SweepCmd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("collkit_cli_sweep_mpi." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string outputs(const std::string& tag) const {
    return " --json '" + (dir_ / (tag + ".json")).string() + "' --csv '" +
           (dir_ / (tag + ".csv")).string() + "' --html '" + (dir_ / (tag + ".html")).string() +
           "'";
  }
  void expect_same(const std::string& a, const std::string& b) const {
    for (const char* ext : {".json", ".csv", ".html"}) {
      const std::string x = slurp(dir_ / (a + ext)), y = slurp(dir_ / (b + ext));
      EXPECT_FALSE(x.empty()) << a << ext;
      EXPECT_EQ(x, y) << a << ext << " vs " << b << ext;
    }
  }
  fs::path dir_;
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
