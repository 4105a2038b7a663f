// `collkit bench --backend mpi` end to end under mpirun: bad input ends the
// job with exit code 2 and one message from rank 0 (never a hang: every run
// is under `timeout`), and --json writes a report the report model reads.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "reports/inputs.h"
#include "reports/report.h"
#ifdef COLLKIT_HAVE_CUDA
#include "realrun/device/cuda_util.h"
#endif

namespace collkit {
namespace {

struct Result {
  int rc = -1;
  std::string output;  // stdout and stderr
};

Result run(const std::string& args) {
  const std::string cmd =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string bench(int ranks, const std::string& flags) {
  return "mpirun --oversubscribe -np " + std::to_string(ranks) +
         " " COLLKIT_BINARY " bench --backend mpi " + flags;
}

int occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class BenchCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef COLLKIT_HAVE_MPI
    GTEST_SKIP() << "built without MPI";
#endif
  }
  // Exit code 2 and the message exactly once (rank 0 only).
  void expect_usage_error(const std::string& cmd, const std::string& message) {
    const Result r = run(cmd);
    EXPECT_EQ(r.rc, 2) << cmd << "\n" << r.output;
    EXPECT_EQ(occurrences(r.output, message), 1) << cmd << "\n" << r.output;
  }
};

TEST_F(BenchCliTest, UnknownFlag) {
  expect_usage_error(bench(2, "--collective all_reduce --bogus 3"),
                     "collkit bench: error: unknown argument(s) for bench: --bogus 3");
}

TEST_F(BenchCliTest, MinLargerThanMax) {
  expect_usage_error(bench(2, "--collective all_reduce -b 2K -e 1K"),
                     "-b 2048 is larger than -e 1024");
}

TEST_F(BenchCliTest, ZeroAndNegativeSizes) {
  expect_usage_error(bench(2, "--collective all_reduce -b 0"), "must be > 0 bytes");
  expect_usage_error(bench(2, "--collective all_reduce -b -4"), "sizes must be > 0 bytes");
}

TEST_F(BenchCliTest, RootOutOfRange) {
  expect_usage_error(bench(2, "--collective broadcast -r 2"),
                     "-r 2: root is out of range for 2 ranks (valid: 0..1)");
}

TEST_F(BenchCliTest, UnknownNames) {
  expect_usage_error(bench(2, "--collective allreduce"), "unknown collective 'allreduce'");
  expect_usage_error(bench(2, "--collective all_reduce --algorithm ring,nope"),
                     "unknown algorithm 'nope' for all_reduce");
  expect_usage_error(bench(2, "--collective all_reduce -d float33"), "unknown data type");
  expect_usage_error(bench(2, "--collective all_reduce -n x"), "-n 'x': expected an integer");
  expect_usage_error(bench(2, "--collective all_reduce -T x"), "-T 'x': expected an integer");
  expect_usage_error(bench(2, "--collective all_reduce -g 4"),
                     "-g/--ranks 4: only --backend cuda takes a rank count");
  expect_usage_error("mpirun --oversubscribe -np 2 " COLLKIT_BINARY
                     " bench --backend bogus --collective all_reduce",
                     "--backend 'bogus' is not available here (valid: mpi, nccl, cuda)");
  expect_usage_error(
      "env COLLKIT_FAULT_INJECT=rank=1,action=boom mpirun --oversubscribe -np 2 " COLLKIT_BINARY
      " bench --backend mpi --collective all_reduce",
      "unknown action 'boom'");
}

// Without CUDA, NCCL or a device, --backend nccl ends the job with exit 2
// and says which of them is missing.
TEST_F(BenchCliTest, NcclBackendWithoutItsPieces) {
#if defined(COLLKIT_HAVE_NCCL_BACKEND)
  if (realrun::cuda_device_problem().empty()) GTEST_SKIP() << "a CUDA device is present";
  const std::string message = "no CUDA device: cudaGetDeviceCount";
#else
  const std::string message = "--backend 'nccl' is not available";
#endif
  expect_usage_error("mpirun --oversubscribe -np 2 " COLLKIT_BINARY
                     " bench --backend nccl --collective all_reduce",
                     message);
}

TEST_F(BenchCliTest, RanksWithDifferentFlags) {
  const std::string one = COLLKIT_BINARY " bench --backend mpi --collective all_reduce -b 1K";
  const std::string two = COLLKIT_BINARY " bench --backend mpi --collective all_reduce -b 2K";
  expect_usage_error("mpirun --oversubscribe -np 1 " + one + " : -np 1 " + two,
                     "the ranks were started with different bench flags");
}

TEST_F(BenchCliTest, TableAndJsonReport) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "collkit_bench_cli_test.json").string();
  std::filesystem::remove(path);
  const Result r = run(bench(3,
                             "--collective all_gather --algorithm ring,native -b 1K -e 4K "
                             "-f 2 -n 2 -w 1 -c 2 --json " +
                                 path));
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(occurrences(r.output, "# Out of bounds values : 0 OK"), 2) << r.output;
  EXPECT_EQ(occurrences(r.output, "# Avg bus bandwidth"), 2) << r.output;
  const Report rep = read_report(path);
  EXPECT_EQ(rep.mode, ReportMode::measure);
  EXPECT_EQ(rep.backend, Backend::mpi);
  EXPECT_EQ(rep.ranks, 3);
  EXPECT_EQ(rep.extra["hosts"], 1);
  EXPECT_EQ(rep.extra["iters"], 2);
  EXPECT_EQ(rep.extra["warmup"], 1);
  // 2 algorithms x 3 sizes x (out-of-place, in-place).
  ASSERT_EQ(rep.results.size(), 12u);
  for (const ResultRow& row : rep.results) {
    EXPECT_EQ(row.wrong, 0);
    EXPECT_GT(row.time_us, 0);
    EXPECT_EQ(row.collective, Collective::all_gather);
  }
  // nccl-tests' sizes: -b 1K with 3 ranks = 84 floats per rank (16-byte multiple).
  EXPECT_EQ(rep.results[0].count, 84);
  EXPECT_EQ(rep.results[0].bytes, 84 * 3 * 4);
  EXPECT_EQ(rep.best.size(), 3u);
  std::filesystem::remove(path);
}

TEST_F(BenchCliTest, InPlaceNotDefinedPrintsNA) {
  const Result r = run(bench(2, "--collective all_to_all --algorithm native -b 64 -e 64"));
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("     N/A     N/A     N/A     N/A"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("# in-place: N/A (in-place all_to_all is not defined"), std::string::npos)
      << r.output;
}

// -J: nccl-tests' JSON schema, one file per algorithm, reading back (through
// the nccl-tests reader) as the rows of the --json report.
TEST_F(BenchCliTest, NcclTestsJsonPerAlgorithm) {
  const auto dir = std::filesystem::temp_directory_path() / "collkit_bench_cli_test_J";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string json = (dir / "m.json").string();
  const Result r = run(bench(3,
                             "--collective all_gather --algorithm ring,native -b 1K -e 4K -f 2 "
                             "-n 2 -w 1 --json " +
                                 json + " -J " + (dir / "nt.json").string()));
  ASSERT_EQ(r.rc, 0) << r.output;
  const Report rep = read_report(json);
  for (const char* algorithm : {"ring", "native"}) {
    SCOPED_TRACE(algorithm);
    const auto path = dir / ("nt." + std::string(algorithm) + ".json");
    ASSERT_TRUE(std::filesystem::exists(path));
    const std::vector<InputRun> runs = read_runs(path.string());
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].format, InputFormat::nccl_tests_json);
    const Report& back = runs[0].report;
    EXPECT_EQ(back.ranks, 3);
    EXPECT_EQ(back.backend, Backend::mpi);
    std::vector<const ResultRow*> expected;
    for (const ResultRow& row : rep.results)
      if (row.algorithm == algorithm) expected.push_back(&row);
    ASSERT_EQ(back.results.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(back.results[i].algorithm, algorithm);
      EXPECT_EQ(back.results[i].bytes, expected[i]->bytes);
      EXPECT_EQ(back.results[i].count, expected[i]->count);
      EXPECT_EQ(back.results[i].in_place, expected[i]->in_place);
      EXPECT_EQ(back.results[i].time_us, expected[i]->time_us);
      EXPECT_EQ(back.results[i].busbw_gbps, expected[i]->busbw_gbps);
      EXPECT_EQ(back.results[i].wrong, expected[i]->wrong);
    }
  }
  // A -J path in a directory that does not exist: exit 2 before measuring.
  expect_usage_error(bench(2, "--collective all_reduce -J /nonexistent/dir/nt.json"),
                     "/nonexistent/dir/nt.json");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace collkit
