// Issue 16 items 6-8 and 20 as a user meets them: units on size and memory
// flags, out-of-range integers, one set of dtype names, one unit for
// --segment, --net-model, the nearest subcommand, an irrelevant --group.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/json.h"
#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::RunResult;

class FlagsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_flags_cli_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }
  static std::string src(const std::string& rel) {
    return "'" + (fs::path(COLLKIT_SOURCE_DIR) / rel).string() + "'";
  }
  // Exit 2 and exactly this one line, nothing on stdout.
  void expect_error(const std::string& args, const std::string& message) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err, "collkit: error: " + message + "\n") << args;
    EXPECT_EQ(r.out, "") << args;
  }
  std::string simulate() const {
    return "simulate --topology " + src("topologies/ring-8.json") + " --collective all_reduce ";
  }
  std::string plan() const {
    return "plan --model " + src("models/gpt2-124m.json") + " --topology " +
           src("topologies/dgx-h100.json") + " --batch 64 ";
  }
  fs::path dir_;
};

// --repeats: compare takes median or fastest, calibrate all or fastest; any
// other word is one line naming the flag, and calibrate writes nothing.
TEST_F(FlagsCli, RepeatsTakesItsWordsOnly) {
  const std::string m = src("tests/data/calibration/m-reduce.json");
  expect_error("compare " + m + " " + m + " --repeats min",
               "--repeats 'min': expected median or fastest");
  expect_error("calibrate " + m + " --topology " + src("topologies/bases/host-pinned-4.json") +
                   " -o fit.json --repeats median",
               "--repeats 'median': expected all or fastest");
  EXPECT_FALSE(fs::exists(dir_ / "fit.json"));
}

TEST_F(FlagsCli, OutOfRangeIntegersAreErrors) {
  const std::string sched = "schedule --collective all_reduce --algorithm ring --ranks 4 ";
  expect_error(sched + "--count 99999999999999999999",
               "--count '99999999999999999999': out of range (must be in "
               "-9223372036854775808..9223372036854775807)");
  expect_error(sched + "--segment 99999999999999999999",
               "--segment '99999999999999999999': too large");
  expect_error("schedule --collective all_reduce --algorithm ring --ranks 99999999999",
               "--ranks '99999999999': out of range (must be in -2147483648..2147483647)");
  expect_error(
      "verify --collective all_reduce --algorithm ring --ranks 4 --count "
      "99999999999999999999",
      "--count '99999999999999999999': out of range (must be in "
      "0..9223372036854775807)");
  expect_error(simulate() + "-f 99999999999999999999",
               "-f '99999999999999999999': out of range (must be in 0..9223372036854775807)");
  expect_error(plan() + "--micro-batch 99999999999999999999",
               "--micro-batch '99999999999999999999': out of range (must be in "
               "0..9223372036854775807)");
}

TEST_F(FlagsCli, SegmentIsBytesEverywhereAndNeverRounded) {
  expect_error(simulate() + "--algorithm ring --segment 2",
               "--segment '2': below one element (float is 4 bytes); give at least 4, or 0 for "
               "automatic");
  expect_error(simulate() + "--algorithm ring --segment 6",
               "--segment '6': not a whole number of elements (float is 4 bytes)");
  expect_error(
      "schedule --collective broadcast --algorithm pipelined_chain --ranks 4 --count 16 "
      "--segment 2",
      "--segment '2': below one element (float is 4 bytes); give at least 4, or 0 for "
      "automatic");
  // 16 bytes of float = 4 elements: the chain broadcast of 16 elements in 4
  // segments sends 4 messages per link, as 32 bytes of double = 4 elements.
  const std::string chain =
      "schedule --collective broadcast --algorithm pipelined_chain --ranks 4 --count "
      "16 --rank 0 ";
  const RunResult bytes16 = run(chain + "--segment 16");
  ASSERT_EQ(bytes16.exit_code, 0) << bytes16.err;
  const RunResult double32 = run(chain + "--segment 32 -d double");
  ASSERT_EQ(double32.exit_code, 0) << double32.err;
  const RunResult one = run(chain + "--segment 64");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto sends = [](const std::string& text) {
    std::size_t n = 0;
    for (std::size_t at = text.find("\"send\""); at != std::string::npos;
         at = text.find("\"send\"", at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(sends(bytes16.out), 4u) << bytes16.out;
  EXPECT_EQ(sends(double32.out), 4u);
  EXPECT_EQ(sends(one.out), 1u);
}

TEST_F(FlagsCli, MemoryFlagsNeedAUnit) {
  expect_error(plan() + "--device-memory 80",
               "--device-memory '80': a memory size needs a unit (80 could be bytes or "
               "gigabytes): K, M, G, T, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB "
               "(powers of 1000), or B for bytes, e.g. '80GiB' or '80GB'");
  // 80G is 80 GiB: the JSON's device_memory_bytes says so.
  const RunResult r =
      run(plan() + "--device-memory 80G --json '" + (dir_ / "p.json").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(testing_cli::slurp(dir_ / "p.json"));
  EXPECT_EQ(j["device_memory_bytes"].get<double>(), 80.0 * 1024 * 1024 * 1024);
}

TEST_F(FlagsCli, OneSetOfDtypeNamesTrainingTypesForPlan) {
  expect_error(plan() + "--dtype int8",
               "--dtype 'int8': not a training data type; valid: bfloat16 (bf16), half (fp16, "
               "float16), float (fp32, float32)");
  expect_error(plan() + "--dtype double",
               "--dtype 'double': not a training data type; valid: bfloat16 (bf16), half (fp16, "
               "float16), float (fp32, float32)");
  for (const char* alias : {"bf16", "fp16", "float16", "fp32", "float32"}) {
    EXPECT_EQ(run(plan() + "--dtype " + alias).exit_code, 0) << alias;
    const std::string out = (dir_ / (std::string(alias) + ".json")).string();
    const RunResult r =
        run(simulate() + "--algorithm ring --dtype " + alias + " --json '" + out + "'");
    ASSERT_EQ(r.exit_code, 0) << alias << r.err;
    const std::string want = std::string(alias) == "bf16"                         ? "bfloat16"
                             : std::string(alias).find("16") != std::string::npos ? "half"
                                                                                  : "float";
    EXPECT_EQ(Json::parse(testing_cli::slurp(out))["dtype"], want) << alias;
  }
}

TEST_F(FlagsCli, NetworkModelIsNetModelEverywhere) {
  const std::string renamed =
      "--model flow: the network model is --net-model now (plan --model is the model file); use "
      "--net-model flow";
  expect_error(simulate() + "--model flow", renamed);
  expect_error(
      "calibrate x.json --topology " + src("topologies/ring-8.json") + " -o out.json --model flow",
      renamed);
  EXPECT_EQ(run(simulate() + "--algorithm ring --net-model alpha-beta").exit_code, 0);
}

TEST_F(FlagsCli, UnknownSubcommandSuggestsTheNearest) {
  const std::string all =
      " (subcommands: algorithms, schedule, verify, simulate, plan, calibrate, report, compare";
  RunResult r = run("simulat --topology x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind(
                "collkit: error: unknown subcommand 'simulat'; did you mean 'simulate'?" + all, 0),
            0u)
      << r.err;
  r = run("calibarte");
  EXPECT_NE(r.err.find("did you mean 'calibrate'?"), std::string::npos) << r.err;
  r = run("xyzzy");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown subcommand 'xyzzy'"), std::string::npos) << r.err;
}

TEST_F(FlagsCli, IrrelevantGroupDoesNotFailRunsThatDoNotUseIt) {
  // 3 does not divide 8: only the hierarchical algorithm reads --group.
  RunResult r = run(simulate() + "--algorithm ring --group 3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run("simulate --topology " + src("topologies/ring-8.json") +
          " --collective all_gather --group 3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run(simulate() + "--algorithm hierarchical --group 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("group size 3 does not divide 8 ranks"), std::string::npos) << r.err;
  r = run("schedule --collective all_reduce --algorithm ring --ranks 4 --group 3");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace collkit
