// Issue 16 items 1-3, as a user meets them: every command refuses an output
// that is one of its inputs (before any work, naming both flags), refuses a
// read-only output, follows links, and "-" is standard output.
#include <gtest/gtest.h>
#include <sys/stat.h>

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

class OutputsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_outputs_cli_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(fs::path(COLLKIT_SOURCE_DIR) / "topologies/ring-8.json", dir_ / "t.json");
    fs::copy_file(fs::path(COLLKIT_SOURCE_DIR) / "topologies/dgx-h100.json", dir_ / "dgx.json");
    fs::copy_file(fs::path(COLLKIT_SOURCE_DIR) / "models/gpt2-124m.json", dir_ / "m.json");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }
  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }
  // A simulated report to feed report/compare/calibrate.
  void make_report(const std::string& name) {
    const RunResult r =
        run("simulate --topology " + p("t.json") +
            " --collective all_reduce --algorithm ring -b 1M -e 4M -f 2 --json " + p(name));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Exit 2, one line naming both flags, and the input unchanged.
  void expect_refused(const std::string& args, const std::string& input,
                      const std::string& message) {
    const std::string before = slurp(dir_ / input);
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err, "collkit: error: " + message + "\n") << args;
    EXPECT_EQ(r.out, "") << args;  // before any work
    EXPECT_EQ(slurp(dir_ / input), before) << args;
  }
  fs::path dir_;
};

TEST_F(OutputsCli, AnOutputThatIsAnInputIsRefusedByEveryCommand) {
  const std::string t = (dir_ / "t.json").string();
  expect_refused(
      "simulate --topology " + p("t.json") + " --collective all_reduce --json " + p("t.json"),
      "t.json",
      "--json " + t + " is the same file as --topology " + t + ": refusing to overwrite an input");
  // Through a link, and through the CSV output.
  fs::create_symlink(dir_ / "t.json", dir_ / "alias.json");
  expect_refused(
      "simulate --topology " + p("t.json") + " --collective all_reduce --csv " + p("alias.json"),
      "t.json",
      "--csv " + (dir_ / "alias.json").string() + " is the same file as --topology " + t +
          ": refusing to overwrite an input");
  make_report("s.json");
  const std::string s = (dir_ / "s.json").string();
  expect_refused(
      "report " + p("s.json") + " -o " + p("s.json"), "s.json",
      "-o " + s + " is the same file as input " + s + ": refusing to overwrite an input");
  expect_refused(
      "compare " + p("s.json") + " " + p("s.json") + " --json " + p("s.json"), "s.json",
      "--json " + s + " is the same file as predicted " + s + ": refusing to overwrite an input");
  expect_refused(
      "calibrate " + p("s.json") + " --topology " + p("t.json") + " -o " + p("t.json"), "t.json",
      "-o " + t + " is the same file as --topology " + t + ": refusing to overwrite an input");
  const std::string m = (dir_ / "m.json").string();
  expect_refused(
      "plan --model " + p("m.json") + " --topology " + p("dgx.json") + " --batch 64 --json " +
          p("m.json"),
      "m.json",
      "--json " + m + " is the same file as --model " + m + ": refusing to overwrite an input");
  // Two outputs naming one file.
  const RunResult r = run("simulate --topology " + p("t.json") +
                          " --collective all_reduce --json " + p("x") + " --csv " + p("./x"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("name the same file"), std::string::npos) << r.err;
}

TEST_F(OutputsCli, ReadOnlyOutputIsRefusedWritableKeepsItsMode) {
  std::ofstream(dir_ / "ro.json") << "precious";
  ::chmod((dir_ / "ro.json").c_str(), 0444);
  const RunResult r =
      run("simulate --topology " + p("t.json") + " --collective all_reduce --json " + p("ro.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "collkit: error: --json " + (dir_ / "ro.json").string() +
                       ": cannot write: the file is read-only (mode 0444); refusing to replace it "
                       "(make it writable or choose another path)\n");
  EXPECT_EQ(slurp(dir_ / "ro.json"), "precious");
  std::ofstream(dir_ / "rw.json") << "old";
  ::chmod((dir_ / "rw.json").c_str(), 0600);
  make_report("rw.json");
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "rw.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(Json::parse(slurp(dir_ / "rw.json"))["mode"], "simulate");
}

TEST_F(OutputsCli, DashIsStandardOutputAndTheTableMovesToStandardError) {
  RunResult r = run("simulate --topology " + p("t.json") +
                    " --collective all_reduce --algorithm ring --json -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);  // stdout is the JSON alone
  EXPECT_EQ(j["results"][0]["algorithm"], "ring");
  EXPECT_NE(r.err.find("# collkit simulate"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "-"));
  make_report("s.json");
  r = run("report " + p("s.json") + " --format csv -o -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("collective,dtype,op,file,", 0), 0u) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "-"));
}

TEST_F(OutputsCli, LinkedOutputReplacesTheTargetAndKeepsTheLink) {
  std::ofstream(dir_ / "real.json") << "old";
  fs::create_symlink("real.json", dir_ / "link.json");
  make_report("link.json");
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.json"));
  EXPECT_EQ(Json::parse(slurp(dir_ / "real.json"))["mode"], "simulate");
}

}  // namespace
}  // namespace collkit
