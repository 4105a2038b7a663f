// Issue 40, what a new user lost or waited for: outputs that overwrite an
// input, inputs read without a limit, write errors on standard output,
// /dev/stdout and /dev/fd/N as outputs, and empty output paths.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::RunResult;
using testing_cli::slurp;

class NewUserIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_newuser_io_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(fs::path(COLLKIT_SOURCE_DIR) / "topologies/ring-8.json", dir_ / "t.json");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }
  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }
  // Exit 2, one line "collkit: error: ..." holding `text`, nothing on stdout.
  static void expect_error(const RunResult& r, const std::string& text) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("collkit: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  fs::path dir_;
};

// Item 1: the tuner's two files are outputs like every other command's.
TEST_F(NewUserIo, TunerRefusesToOverwriteItsTopology) {
  for (const std::string name : {"nccl_tuner.conf", "collkit-tuner.model"}) {
    fs::copy_file(dir_ / "t.json", dir_ / name, fs::copy_options::overwrite_existing);
    const std::string before = slurp(dir_ / name);
    const RunResult r = run("tuner --topology " + p(name) + " -b 1M -e 2M -o " + p(""));
    expect_error(r, "-o " + (dir_ / name).string() + " is the same file as --topology " +
                        (dir_ / name).string() + ": refusing to overwrite an input");
    EXPECT_EQ(slurp(dir_ / name), before);
    fs::remove(dir_ / name);
  }
}

}  // namespace
}  // namespace collkit
