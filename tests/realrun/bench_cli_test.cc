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
                     "collkit: error: unknown argument(s) for bench: --bogus 3");
}

TEST_F(BenchCliTest, MinLargerThanMax) {
  expect_usage_error(bench(2, "--collective all_reduce -b 2K -e 1K"),
                     "-b 2048 is larger than -e 1024");
}

TEST_F(BenchCliTest, ZeroAndNegativeSizes) {
  expect_usage_error(bench(2, "--collective all_reduce -b 0"), "must be > 0 bytes");
  expect_usage_error(bench(2, "--collective all_reduce -b -4"), "sizes must be > 0 bytes");
}

// Usage errors are found before MPI starts: one line, exit 2, and no
// MPI_Abort banner, with or without mpirun.
TEST_F(BenchCliTest, UsageErrorsAreOneLineBeforeMpiStarts) {
  for (const std::string& cmd :
       {std::string(COLLKIT_BINARY " bench --collective all_reduce"),
        std::string(COLLKIT_BINARY " bench --backend mpi --collective all_reduce -t 2"),
        bench(2, "--collective broadcast -r 2")}) {
    const Result r = run(cmd);
    EXPECT_EQ(r.rc, 2) << cmd << "\n" << r.output;
    EXPECT_EQ(occurrences(r.output, "collkit: error: "), 1) << r.output;
    EXPECT_EQ(occurrences(r.output, "MPI_ABORT"), 0) << r.output;
  }
  const Result r = run(COLLKIT_BINARY " bench --collective all_reduce");
  EXPECT_EQ(r.output, "collkit: error: --backend is required (valid: mpi, nccl, cuda)\n");
}

// Issue 40 item 14: an MSCCL file is measured only where it declares it
// serves (r48ll.xml: in place only, 266240..2078719 bytes); every other row
// is N/A with the reason, and an in-place-only row shows its figures.
TEST_F(BenchCliTest, MscclFileOutsideItsDeclarationIsNotMeasured) {
  const std::string file = std::string(COLLKIT_SOURCE_DIR) +
                           "/tests/data/msccl/Azure__msccl-scheduler__tools__msccl-algorithms__"
                           "ndv4__r48ll.xml";
  const Result r = run(bench(
      8, "--collective all_reduce --algorithm msccl:" + file + " -b 64K -e 4M -f 4 -n 1 -w 0"));
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(occurrences(r.output,
                        "# out-of-place: N/A (outside the MSCCL file's declaration: out of place, "
                        "which the file does not serve (outofplace=\"0\"; its schedule runs in "
                        "place)"),
            2)
      << r.output;
  EXPECT_EQ(occurrences(r.output,
                        "# in-place: N/A (outside the MSCCL file's declaration: outside the "
                        "file's sizes 266240..2078719 bytes per call (minBytes, maxBytes))"),
            1)
      << r.output;
  // 1 MiB: out-of-place N/A, in-place measured; the others N/A throughout.
  const std::size_t row = r.output.find("\n     1048576        262144");
  ASSERT_NE(row, std::string::npos) << r.output;
  const std::string line = r.output.substr(row + 1, r.output.find('\n', row + 1) - row - 1);
  EXPECT_EQ(occurrences(line, "N/A"), 4) << line;
  EXPECT_EQ(occurrences(r.output, "N/A     N/A     N/A     N/A      N/A     N/A     N/A     N/A"),
            3)
      << r.output;
}

// Issue 40 item 19: under mpirun one process (rank 0) shows the progress.
TEST_F(BenchCliTest, ProgressComesFromRankZeroOnly) {
  const Result r = run("env COLLKIT_PROGRESS_INTERVAL_MS=0 " +
                       bench(2,
                             "--collective all_reduce --algorithm ring -b 1K -e 2K -f 2 -n 1 "
                             "-w 0"));
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_EQ(occurrences(r.output, "collkit: bench all_reduce: 50% (1 of 2)"), 1) << r.output;
  EXPECT_EQ(occurrences(r.output, "collkit: bench all_reduce: 100% (2 of 2)"), 1) << r.output;
}

// nccl-tests' flags: its defaults, and a refusal that says why where a flag
// has no meaning for the backend.
TEST_F(BenchCliTest, NcclTestsFlags) {
  expect_usage_error(bench(2, "--collective all_reduce -t 2"),
                     "-t 2: collkit bench runs one thread per process, so -t (threads per "
                     "process) has no meaning here");
  expect_usage_error(bench(2, "--collective all_reduce -m 4"),
                     "-m 4: aggregating operations into one group launch has no meaning for "
                     "--backend mpi");
  expect_usage_error(bench(2, "--collective all_reduce -p 1"),
                     "-p 1: parallel initialisation of the -t threads' communicators has no "
                     "meaning with one thread per process");
  expect_usage_error(bench(2, "--collective all_reduce -R 1"),
                     "-R 1: registering buffers with NCCL has no meaning for --backend mpi");
  expect_usage_error(bench(2, "--collective all_reduce -N 3 --json x.json"),
                     "-N 3 with --json x.json: a report holds one measurement per row");
  expect_usage_error(bench(2, "--collective all_reduce -N 3 -J x.json"),
                     "-N 3 with -J x.json: a report holds one measurement per row");
  {
    // -N 2: the whole bench twice, each table saying its cycle.
    const Result cycles = run(bench(2,
                                    "--collective all_reduce --algorithm ring,native -b 1K "
                                    "-e 2K -f 2 -n 1 -w 0 -N 2"));
    ASSERT_EQ(cycles.rc, 0) << cycles.output;
    for (const char* table :
         {"algorithm ring, 2 ranks, cycle 1 of 2", "algorithm native, 2 ranks, cycle 1 of 2",
          "algorithm ring, 2 ranks, cycle 2 of 2", "algorithm native, 2 ranks, cycle 2 of 2"})
      EXPECT_EQ(occurrences(cycles.output, table), 1) << table << "\n" << cycles.output;
    EXPECT_EQ(occurrences(cycles.output, "# Out of bounds values : 0 OK"), 4) << cycles.output;
    EXPECT_LT(cycles.output.find("algorithm native, 2 ranks, cycle 1 of 2"),
              cycles.output.find("algorithm ring, 2 ranks, cycle 2 of 2"));
  }
  // -w defaults to nccl-tests' 5; -z 1, -C 1, -t 1, -m 1 are accepted on mpi.
  const std::string path =
      (std::filesystem::temp_directory_path() / "collkit_bench_cli_flags.json").string();
  std::filesystem::remove(path);
  const Result r = run(bench(2,
                             "--collective all_reduce --algorithm ring -b 1K -e 1K -n 2 -z 1 -C 1 "
                             "-t 1 -m 1 -p 0 -N 1 -R 0 --json " +
                                 path));
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("warmup iters: 5 "), std::string::npos) << r.output;
  // Device lines with nccl-tests' fields (Rank, Group, Pid, on HOST).
  EXPECT_NE(r.output.find("#  Rank  0 Group  0 Pid "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("#  Rank  1 Group  0 Pid "), std::string::npos) << r.output;
  EXPECT_EQ(read_report(path).extra["warmup"], 5);
  std::filesystem::remove(path);
}

// The memory a size needs is computed before anything is allocated: all_reduce
// ring on one rank holds input, output and the check's expected values, 3 x
// 1 GiB, more than the (stated) 2 GiB of this host.
TEST_F(BenchCliTest, SizeThatCannotFitIsAUsageError) {
  const Result r = run("env COLLKIT_HOST_MEMORY=2147483648 " COLLKIT_BINARY
                       " bench --backend mpi --collective all_reduce --algorithm ring -b 1G -e 1G");
  EXPECT_EQ(r.rc, 2) << r.output;
  EXPECT_EQ(r.output,
            "collkit: error: -b/-e 1073741824: needs 3.0 GiB per rank and 3.0 GiB in all (1 "
            "ranks, 1 on this host: 3.0 GiB); this host has 2.0 GiB of memory available. "
            "Largest: all_reduce ring at 1073741824 bytes (float, out of place): buffers 2.0 GiB, "
            "scratch 0 B, temp 0 B, expected values 1.0 GiB\n");
  // Under mpirun: 2 ranks on this host need twice that.
  const Result two =
      run("env COLLKIT_HOST_MEMORY=4294967296 " + bench(2,
                                                        "--collective all_reduce "
                                                        "--algorithm ring -b 1G -e 1G"));
  EXPECT_EQ(two.rc, 2) << two.output;
  EXPECT_EQ(occurrences(two.output, "collkit: error: -b/-e 1073741824: needs "), 1) << two.output;
  EXPECT_NE(two.output.find("2 ranks, 2 on this host"), std::string::npos) << two.output;
  EXPECT_EQ(occurrences(two.output, "MPI_ABORT"), 0) << two.output;
}

TEST_F(BenchCliTest, RootOutOfRange) {
  expect_usage_error(bench(2, "--collective broadcast -r 2"),
                     "-r 2: root is out of range for 2 ranks (valid: 0..1)");
}

TEST_F(BenchCliTest, UnknownNames) {
  expect_usage_error(bench(2, "--collective broadcast -r all"),
                     "-r all: bench measures one root per run");
  expect_usage_error(bench(2, "--collective allreduc"),
                     "unknown collective 'allreduc'; did you mean 'all_reduce'?");
  expect_usage_error(bench(2, "--collective all_reduce --algorithm ring,nope"),
                     "unknown algorithm 'nope' for all_reduce");
  expect_usage_error(bench(2, "--collective all_reduce -d float33"), "unknown data type");
  expect_usage_error(bench(2, "--collective all_reduce -n x"),
                     "-n 'x': expected a positive integer");
  expect_usage_error(bench(2, "--collective all_reduce -T x"),
                     "-T 'x': expected a non-negative integer");
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
