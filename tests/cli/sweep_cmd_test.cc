// collkit sweep as a user runs it: the same files on 1, 2 and 3 threads; a
// bad grid file exits 2 with one line naming file, field and value, and
// writes nothing. Under mpirun: sweep_mpi_test.cc.
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
  SweepCmd() : SweepFiles("sweep_cmd") {}
};

TEST_F(SweepCmd, SameFilesWhateverTheThreads) {
  const std::string grid = " '" + kSource + "/sweeps/small.json'";
  const auto one = run_collkit("sweep" + grid + " --jobs 1" + outputs("j1"), dir_);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  // One line per point and the header.
  EXPECT_EQ(std::count(one.out.begin(), one.out.end(), '\n'), 25);
  EXPECT_NE(one.err.find("sweep: 24 points: 6 machine(s) x 2 collective(s) x 2 size(s)"),
            std::string::npos)
      << one.err;
  for (const char* jobs : {"2", "3"}) {
    const auto many = run_collkit("sweep" + grid + " --quiet --jobs " + jobs + outputs(jobs), dir_);
    ASSERT_EQ(many.exit_code, 0) << many.err;
    EXPECT_EQ(many.out, one.out);
    EXPECT_EQ(many.err, "");  // --quiet
    expect_same("j1", jobs);
  }
}

TEST_F(SweepCmd, BadGridExits2WithOneLineAndNoFiles) {
  const fs::path grid = dir_ / "grid-bad.json";
  std::ofstream(grid) << "{\"sweep\": \"simulate\", \"topology\": \"" << kSource
                      << "/topologies/h100-cluster-2x8.json\", \"vary\": {\"nodes\": [2, -1]}, "
                         "\"collectives\": \"all_reduce\", \"sizes\": [\"1M\"]}";
  const auto r = run_collkit("sweep '" + grid.string() + "'" + outputs("bad"), dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(grid.string() + " (nodes=-1): "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("generator.nodes"), std::string::npos) << r.err;
  for (const char* ext : {".json", ".csv", ".html"})
    EXPECT_FALSE(fs::exists(dir_ / (std::string("bad") + ext))) << ext;
  // An output that is an input the grid reads: refused, nothing written.
  const auto same = run_collkit("sweep '" + kSource + "/sweeps/small.json' --csv '" + kSource +
                                    "/topologies/h100-cluster-2x8.json'",
                                dir_);
  EXPECT_EQ(same.exit_code, 2);
  EXPECT_NE(same.err.find("is the same file as topology"), std::string::npos) << same.err;
  const auto missing = run_collkit("sweep '" + (dir_ / "none.json").string() + "'", dir_);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.json: cannot open the grid file"), std::string::npos)
      << missing.err;
}

}  // namespace
}  // namespace collkit
