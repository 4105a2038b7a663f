// Issue 40, nccl-tests and NCCL habits: NCCL's and MPI's names, every root
// and type at once, sendrecv logs, reading collkit's own tables and
// standard input back, progress on long runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/json.h"
#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::RunResult;
using testing_cli::slurp;

const fs::path kSource = COLLKIT_SOURCE_DIR;
const std::string kDgx = (kSource / "topologies/dgx-h100.json").string();

class NewUserHabits : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_newuser_habits_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }
  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }
  static void expect_error(const RunResult& r, const std::string& text) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("collkit: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  fs::path dir_;
};

// Item 16: the tuner prints "allreduce"; simulate takes it back, and NCCL's
// "tree" names the algorithms it may mean.
TEST_F(NewUserHabits, NcclAndMpiNamesAreUnderstood) {
  const std::string base = "simulate --topology " + kDgx + " --algorithm ring -b 1K -e 1K";
  for (const std::string& name : {"allreduce", "AllReduce", "MPI_Allreduce", "all-reduce"}) {
    const RunResult r = run(base + " --collective " + name);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_NE(r.out.find("all_reduce, algorithm ring"), std::string::npos) << r.out;
  }
  EXPECT_EQ(run(base + " --collective reducescatter").exit_code, 0);
  EXPECT_EQ(run("simulate --topology " + kDgx +
                " --collective alltoall --algorithm bruck -b 1K "
                "-e 1K")
                .exit_code,
            0);
  EXPECT_EQ(run("algorithms --collective AllGather").exit_code, 0);
  expect_error(run("simulate --topology " + kDgx + " --collective all_reduce --algorithm tree"),
               "unknown algorithm 'tree' for all_reduce; did you mean 'binomial_tree', "
               "'double_binary_tree', 'nccl:tree' or 'nccl:nvls_tree'?");
}

}  // namespace
}  // namespace collkit
