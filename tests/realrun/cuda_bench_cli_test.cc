// `collkit bench --backend cuda` as a user runs it (one process, no
// mpirun). Without a device (or without CUDA in the build): exit code 2 and
// one clear message. With a device: a small run over virtual ranks with
// every all_reduce algorithm and a JSON report that records the devices and
// versions, every check passing.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "reports/report.h"
#include "tests/cli/cli_runner.h"
#ifdef COLLKIT_HAVE_CUDA
#include "realrun/device/cuda_util.h"
#endif

namespace collkit {
namespace {

using testing_cli::run_collkit;

std::filesystem::path scratch_dir() {
  const auto d = std::filesystem::temp_directory_path() / "collkit_cuda_bench_cli_test";
  std::filesystem::create_directories(d);
  return d;
}

bool have_device() {
#ifdef COLLKIT_HAVE_CUDA
  return realrun::cuda_device_problem().empty();
#else
  return false;
#endif
}

TEST(CudaBenchCliTest, WithoutADeviceExitsTwo) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present";
  const auto dir = scratch_dir();
  const auto json = dir / "none.json";
  std::filesystem::remove(json);
  const auto r = run_collkit(
      "bench --backend cuda --collective all_reduce -g 4 --json '" + json.string() + "'", dir);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
#ifdef COLLKIT_HAVE_CUDA
  EXPECT_NE(r.err.find("collkit: error: no CUDA device: cudaGetDeviceCount"), std::string::npos)
      << r.err;
#else
  EXPECT_NE(r.err.find("built without CUDA"), std::string::npos) << r.err;
#endif
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(std::filesystem::exists(json));
}

TEST(CudaBenchCliTest, HelpNamesTheBackends) {
  const auto r = run_collkit("bench --help", scratch_dir());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"--backend", "cuda", "nccl", "-T,--timeout", "-g,--ranks"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(CudaBenchCliTest, VirtualRanksRunEveryAlgorithm) {
  if (!have_device()) GTEST_SKIP() << "GPU test skipped: no CUDA device";
  const auto dir = scratch_dir();
  const auto json = dir / "cuda.json";
  std::filesystem::remove(json);
  const auto r = run_collkit(
      "bench --backend cuda -g 3 --collective all_reduce --algorithm all -b 1K -e 64K -f 8 -n 3 "
      "-w 1 -c 2 -d float -o sum --json '" +
          json.string() + "'",
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
  const Report rep = read_report(json.string());
  EXPECT_EQ(rep.backend, Backend::cuda);
  EXPECT_EQ(rep.ranks, 3);
  EXPECT_EQ(rep.extra["devices"].size(), 3u);
  EXPECT_TRUE(rep.extra.contains("cuda_driver_version"));
  EXPECT_TRUE(rep.extra.contains("cuda_runtime_version"));
  EXPECT_TRUE(rep.extra.contains("nccl_version"));
  ASSERT_FALSE(rep.results.empty());
  for (const ResultRow& row : rep.results) {
    EXPECT_EQ(row.wrong, 0) << row.algorithm << " " << row.bytes;
    EXPECT_GT(row.time_us, 0);
  }
}

}  // namespace
}  // namespace collkit
