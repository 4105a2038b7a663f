// bench/step_latency_bench as the GPU session runs it (docs/BENCH.md "Step
// latency"). Everywhere: bad flags are one line naming the flag and value,
// exit 2, nothing on stdout and no report. Without a device: exit 2 with
// CUDA's reason (skipped where a device is present). With a device: the
// --quick run measures every variant, each message arrives with every word
// right, and the report's figures hang together (skipped without one).
#include "bench/step_latency.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "realrun/device/cuda_util.h"
#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

using testing_cli::run_program;

std::filesystem::path scratch_dir() {
  const auto d = std::filesystem::temp_directory_path() / "collkit_bench_step_latency";
  std::filesystem::create_directories(d);
  return d;
}

// The build's path, or (a build carried to another machine, as
// scripts/gpu-build.sh's is) the program beside this one's folder.
std::string bench_path() {
  if (std::filesystem::exists(COLLKIT_STEP_LATENCY_BENCH)) return COLLKIT_STEP_LATENCY_BENCH;
  const auto self = std::filesystem::read_symlink("/proc/self/exe");
  return (self.parent_path().parent_path() / "bench" / "step_latency_bench").string();
}

testing_cli::RunResult run_bench(const std::string& args) {
  return run_program(bench_path(), args, scratch_dir());
}

int lines_of(const std::string& s) {
  int n = 0;
  for (const char c : s) n += c == '\n';
  return n;
}

// Where the kernels put a message's data and flag (bench/step_latency.h):
// hand-worked cases, then the rules for every size the bench accepts
// around them.
TEST(StepLatencyBenchTest, LayoutsPutTheFlagWhereTheNameSays) {
  using step_latency::FlagPlace;
  using step_latency::layout_of;
  using step_latency::Proto;
  struct Same {
    std::int64_t bytes, data, flag;
  };
  // The flag in the last 16 bytes of the data's last 128-byte line.
  for (const Same c : {Same{16, 96, 112}, Same{64, 48, 112}, Same{112, 0, 112}, Same{128, 112, 240},
                       Same{512, 112, 624}}) {
    const auto l = layout_of(Proto::add_release_gpu, FlagPlace::same_line, c.bytes);
    EXPECT_EQ(l.data, c.data) << c.bytes;
    EXPECT_EQ(l.flag, c.flag) << c.bytes;
  }
  EXPECT_EQ(layout_of(Proto::fence_gpu, FlagPlace::separate_line, 64).flag, 128);
  EXPECT_EQ(layout_of(Proto::fence_gpu, FlagPlace::separate_line, 128).flag, 128);
  EXPECT_EQ(layout_of(Proto::fence_gpu, FlagPlace::separate_line, 144).flag, 256);
  EXPECT_EQ(layout_of(Proto::ll, FlagPlace::separate_line, 512).region, 1024);
  EXPECT_EQ(layout_of(Proto::ll128, FlagPlace::separate_line, 512).region, 5 * 128);
  for (std::int64_t bytes = 16; bytes <= 8192; bytes += 16) {
    SCOPED_TRACE(bytes);
    const auto s = layout_of(Proto::store_release_gpu, FlagPlace::separate_line, bytes);
    EXPECT_EQ(s.data, 0);
    EXPECT_EQ(s.flag % 128, 0);  // a line of its own, after the data
    EXPECT_GE(s.flag, bytes);
    EXPECT_LT(s.flag - bytes, 128);
    EXPECT_EQ(s.region, s.flag + 128);
    const auto m = layout_of(Proto::store_release_gpu, FlagPlace::same_line, bytes);
    EXPECT_EQ(m.data % 16, 0);  // 16-byte vectors
    EXPECT_EQ(m.data + bytes, m.flag);
    EXPECT_EQ(m.flag % 128, 112);
    EXPECT_EQ((m.flag - 1) / 128, m.flag / 128);  // the last data byte shares its line
    EXPECT_LT(m.data, 128);
    for (const auto& l : {s, m}) {
      EXPECT_EQ(l.stride % 4096, 0);
      EXPECT_GE(l.stride, l.region);
    }
    EXPECT_EQ(layout_of(Proto::ll, FlagPlace::same_line, bytes).region, 2 * bytes);
    EXPECT_EQ(layout_of(Proto::ll128, FlagPlace::same_line, bytes).region,
              (bytes + 119) / 120 * 128);
  }
}

TEST(StepLatencyBenchTest, BadFlagsAreOneLineAndExitTwo) {
  const auto json = scratch_dir() / "bad.json";
  const std::string j = " --json '" + json.string() + "'";
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"--bytes 17", "--bytes 17: expected bytes, a multiple of 16, in 16..16777216"},
      {"--bytes 0", "--bytes 0: expected"},
      {"--bytes 64,", "--bytes 64,: expected a comma list"},
      {"--bytes 64,abc", "--bytes abc: expected"},
      {"--round-trips 0", "--round-trips 0: expected a count in 1..4096"},
      {"--round-trips 4097", "--round-trips 4097: expected a count in 1..4096"},
      {"--launches 2x", "--launches 2x: expected a count in 1..1000"},
      {"--lanes 0", "--lanes 0: expected blocks per side in 1..1024"},
      {"--lanes 64 --lanes-bytes 1024", "--lanes-bytes 1024: 9 LL128 lines, fewer than --lanes 64"},
      {"--frobnicate", "unknown argument '--frobnicate'"},
      {"--filter no-such-variant", "--filter no-such-variant: no variant's name contains it"},
  };
  for (const auto& c : cases) {
    std::filesystem::remove(json);
    const auto r = run_bench(c.args + j);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_EQ(lines_of(r.err), 1) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("step_latency_bench: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_FALSE(std::filesystem::exists(json)) << c.args;
  }
  // A value missing at the end, and a report nobody could write.
  auto r = run_bench("--quick --json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--json: expected a value"), std::string::npos) << r.err;
  r = run_bench("--quick --json /nonexistent-dir-collkit/x.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines_of(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("/nonexistent-dir-collkit/x.json"), std::string::npos) << r.err;
}

TEST(StepLatencyBenchTest, WithoutADeviceExitsTwo) {
  if (realrun::cuda_device_problem().empty()) GTEST_SKIP() << "a CUDA device is present";
  const auto json = scratch_dir() / "none.json";
  std::filesystem::remove(json);
  const auto r = run_bench("--quick --json '" + json.string() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines_of(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("step_latency_bench: error: no CUDA device: cudaGetDeviceCount"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(json));
}

// The names --quick must measure, written out here from docs/BENCH.md's
// description: every protocol x flag place x group with one lane at 512
// bytes, then add_release_gpu, ll and ll128 in blocks at 131072 bytes with
// 1, 16 and 64 lanes.
std::set<std::string> quick_names() {
  std::set<std::string> names;
  for (const char* p : {"fence_gpu", "fence_sys", "store_release_gpu", "store_release_sys",
                        "add_release_gpu", "add_release_sys"})
    for (const char* place : {"separate_line", "same_line"})
      for (const char* g : {"warp", "block"})
        names.insert(std::string(p) + "/" + place + "/" + g + "/L1/512B");
  for (const char* p : {"ll", "ll128"})
    for (const char* g : {"warp", "block"})
      names.insert(std::string(p) + "/in_line/" + g + "/L1/512B");
  for (const char* p : {"add_release_gpu/separate_line", "ll/in_line", "ll128/in_line"})
    for (const int lanes : {1, 16, 64})
      names.insert(std::string(p) + "/block/L" + std::to_string(lanes) + "/131072B");
  return names;
}

TEST(StepLatencyBenchTest, QuickRunOnTheDevice) {
  const std::string problem = realrun::cuda_device_problem();
  if (!problem.empty()) GTEST_SKIP() << "GPU test skipped: " << problem;
  const auto json = scratch_dir() / "quick.json";
  std::filesystem::remove(json);
  const auto r = run_bench("--quick --json '" + json.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::ifstream in(json);
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["program"], "step_latency_bench");
  EXPECT_FALSE(report["device"]["name"].get<std::string>().empty());
  EXPECT_TRUE(report["unavailable"].empty()) << report["unavailable"].dump();
  std::set<std::string> seen;
  for (const auto& row : report["results"]) {
    const std::string name = row["name"];
    SCOPED_TRACE(name);
    seen.insert(name);
    EXPECT_EQ(row["errors"], 0);
    EXPECT_FALSE(row["timed_out"].get<bool>());
    EXPECT_EQ(row["round_trips"], 2 * 500);
    const double median = row["median_round_trip_ns"], p10 = row["p10_round_trip_ns"],
                 p90 = row["p90_round_trip_ns"], low = row["min_round_trip_ns"];
    EXPECT_LE(low, p10);
    EXPECT_LE(p10, median);
    EXPECT_LE(median, p90);
    EXPECT_DOUBLE_EQ(row["median_step_ns"].get<double>(), median / 2);
    // Two dependent trips through L2 and back take well over 100 ns; a
    // small message's round trip well under a millisecond.
    EXPECT_GT(median, 100.0);
    EXPECT_LT(median, 1e6);
    EXPECT_GT(row["sm_clock_mhz"].get<double>(), 100.0);
    EXPECT_LT(row["sm_clock_mhz"].get<double>(), 5000.0);
  }
  EXPECT_EQ(seen, quick_names());
  ASSERT_EQ(report["launch_floor"].size(), 3u);
  for (const auto& f : report["launch_floor"]) {
    EXPECT_GT(f["median_us"].get<double>(), 0.0);
    EXPECT_LT(f["median_us"].get<double>(), 1000.0);
  }
}

}  // namespace
}  // namespace collkit
