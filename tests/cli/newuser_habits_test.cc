// Issue 40, nccl-tests and NCCL habits: NCCL's and MPI's names, every root
// and type at once, sendrecv logs, reading collkit's own tables and
// standard input back, progress on long runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
  for (const std::string name : {"allreduce", "AllReduce", "MPI_Allreduce", "all-reduce"}) {
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

// Item 17: every root (-r all, -r -1), every type and op (-d all, -o all)
// in one simulate, rows carrying their own; a sendrecv_perf log says what
// collkit does with it.
TEST_F(NewUserHabits, EveryRootTypeAndOpInOneRun) {
  const std::string ring8 = (kSource / "topologies/ring-8.json").string();
  for (const std::string root : {"all", "-1"}) {
    const RunResult r = run("simulate --topology " + ring8 +
                            " --collective reduce --algorithm linear -b 1K -e 2K -f 2 -r " + root +
                            " --json " + p("r.json"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Json j = Json::parse(slurp(dir_ / "r.json"));
    ASSERT_EQ(j["results"].size(), 16u);  // 8 roots x 2 sizes
    for (int i = 0; i < 16; ++i) EXPECT_EQ(j["results"][i]["root"], i / 2);
    EXPECT_EQ(j["best"].size(), 16u);
  }
  RunResult r = run("simulate --topology " + ring8 +
                    " --collective all_reduce --algorithm ring -b 1K -e 1K -d all -o all --json " +
                    p("d.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j = Json::parse(slurp(dir_ / "d.json"));
  EXPECT_EQ(j["results"].size(), 10u * 5u);  // every type x every op
  EXPECT_EQ(j["results"][0]["dtype"], "int8");
  EXPECT_EQ(j["results"][4]["op"], "avg");
  EXPECT_NE(r.out.find("  double     max"), std::string::npos) << r.out;
  // A collective that does not reduce runs -o all once.
  r = run("simulate --topology " + ring8 +
          " --collective all_gather --algorithm ring -b 1K -e 1K -o all --json " + p("g.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(slurp(dir_ / "g.json"))["results"].size(), 1u);

  std::ofstream(dir_ / "sr.txt")
      << "# Collective test starting: sendrecv_perf\n"
         "# nThread 1 nGpus 2 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 "
         "agg iters: 1 validation: 1 graph: 0\n#\n"
         "#                                                              out-of-place            "
         "           in-place\n"
         "#       size         count      type   redop    root     time   algbw   busbw #wrong    "
         " time   algbw   busbw #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)          "
         "  (us)  (GB/s)  (GB/s)\n"
         "        1024           256     float     sum      -1    12.00    0.09    0.09      0    "
         "12.00    0.09    0.09      0\n";
  const RunResult sr = run("report " + p("sr.txt") + " -o " + p("sr.html"));
  EXPECT_EQ(sr.exit_code, 2);
  EXPECT_NE(sr.err.find("sendrecv_perf measures point-to-point transfers"), std::string::npos)
      << sr.err;
  EXPECT_NE(sr.err.find("about the latency_us"), std::string::npos) << sr.err;
  EXPECT_FALSE(fs::exists(dir_ / "sr.html"));
}

// Item 18: collkit reads back the tables it prints (simulate's and bench's,
// as users keep them), and "-" reads standard input wherever a file is read.
TEST_F(NewUserHabits, OwnTablesAndStandardInputAreRead) {
  const std::string sim = "simulate --topology " + kDgx +
                          " --collective all_reduce --algorithm ring,rabenseifner -b 1K -e 1M -f 4";
  const std::string bin = "'" + std::string(COLLKIT_BINARY) + "' ";
  ASSERT_EQ(run("--version >/dev/null && (" + bin + sim + " --json " + p("s.json") + " >" +
                p("s.txt") + ")")
                .exit_code,
            0);
  RunResult r = run("report " + p("s.txt") + " --format csv -o -");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(",simulate,ring,1024,false,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",simulate,rabenseifner,1048576,false,"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(",true,"), std::string::npos) << "simulated in-place columns are copies";
  // The table against the JSON it was printed with: the same figures, as
  // printed (two decimals), so every error is 0.0%.
  r = run("compare " + p("s.json") + " " + p("s.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ring"), std::string::npos) << r.out;
  r = run("compare " + p("s.json") + " " + p("s.txt") + " --json " + p("c.json"));
  const Json c = Json::parse(slurp(dir_ / "c.json"));
  EXPECT_LT(std::abs(c["summary"]["median_abs_error"].get<double>()), 0.005) << c.dump(1);
  // Standard input: a pipe into report, a topology, a measured log.
  r = run(sim + " | " + bin + "report - --format csv -o " + p("piped.csv"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(dir_ / "piped.csv").find(",-:"), std::string::npos) << slurp(dir_ / "piped.csv");
  r = run("simulate --topology - --collective all_reduce --algorithm ring -b 1K -e 1K <" +
          std::string(COLLKIT_SOURCE_DIR) + "/topologies/ring-8.json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string log =
      (kSource / "tests/data/nccl-tests/h100x8_allreduce_ring_together-nccl-tests.txt").string();
  r = run("compare " + p("s.json") + " - --collective all_reduce --match ring <'" + log + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // bench's tables too (one process: one rank), in place and out of place.
  r = run("--version >/dev/null && (" + bin +
          "bench --backend mpi --collective all_reduce --algorithm ring,native -b 1K -e 2K -f 2 "
          "-n 2 -w 0 >" +
          p("b.txt") + ")");
  if (r.err.find("unknown subcommand 'bench'") == std::string::npos) {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run("report " + p("b.txt") + " --format csv -o -");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(",measure,ring,2048,false,"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(",measure,native,1024,false,"), std::string::npos) << r.out;
  }
  // Standard input is read once: two inputs "-" are refused.
  expect_error(run("report - - --collective all_reduce -o " + p("x.html") + " <'" + log + "'"),
               "- (standard input): standard input is read once");
}

// Item 19: simulate, plan, tuner and bench show progress on standard error
// (lines when it is not a terminal; COLLKIT_PROGRESS_INTERVAL_MS=0 turns the
// first seconds of silence off), --quiet silences it, and under mpirun one
// rank prints it.
TEST_F(NewUserHabits, LongRunsShowProgressUnlessQuiet) {
  const std::string bin = " COLLKIT_PROGRESS_INTERVAL_MS=0 '" + std::string(COLLKIT_BINARY) + "' ";
  const auto with_progress = [&](const std::string& args) {
    return run("--version >/dev/null && (" + bin + args + ")");
  };
  const std::string ring8 = (kSource / "topologies/ring-8.json").string();
  const std::string sim = "simulate --topology " + ring8 +
                          " --collective all_reduce --algorithm ring,rabenseifner -b 1K -e 2K -f 2";
  RunResult r = with_progress(sim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("collkit: simulate all_reduce on ring-8: 25% (1 of 4), 0:00 elapsed"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("100% (4 of 4)"), std::string::npos) << r.err;
  r = with_progress(sim + " --quiet");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  // The planner's search counts the layouts it considers, with what it has
  // priced and simulated so far.
  r = with_progress("plan --model " + (kSource / "models/llama2-7b.json").string() +
                    " --topology " + (kSource / "topologies/h100-cluster-4x8.json").string() +
                    " --batch 64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("collkit: plan llama2-7b on 32 ranks: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" layouts priced, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" simulations"), std::string::npos) << r.err;
  r = with_progress("tuner --topology " + kDgx + " -b 1M -e 2M -o " + p("t") + " --ranks 8,4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("collkit: tuner on dgx-h100: 50% (1 of 2)"), std::string::npos) << r.err;
  r = with_progress(
      "bench --backend mpi --collective all_reduce --algorithm ring,native -b 1K "
      "-e 2K -f 2 -n 1 -w 0");
  if (r.err.find("unknown subcommand 'bench'") != std::string::npos) return;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("collkit: bench all_reduce: 25% (1 of 4), 0:00 elapsed"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(": native 2048 B float"), std::string::npos) << r.err;
  r = with_progress(
      "bench --backend mpi --collective all_reduce --algorithm ring -b 1K -e 2K -f 2 "
      "-n 1 -w 0 --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// Item 19, the rest: a single row of many ranks (16k ranks took 114 s) and
// calibrate reported nothing until they ended; both show the elapsed time
// on a timer now.
TEST_F(NewUserHabits, OneLongRowAndCalibrateShowProgress) {
  const std::string bin = " COLLKIT_PROGRESS_INTERVAL_MS=0 '" + std::string(COLLKIT_BINARY) + "' ";
  const auto with_progress = [&](const std::string& args) {
    return run("--version >/dev/null && (" + bin + args + ")");
  };
  std::ofstream(dir_ / "sw.json")
      << R"({"dims": [{"kind": "switch", "size": 1024, "bandwidth_gbps": 100, "latency_us": 1}]})";
  const std::string sim = "simulate --topology " + p("sw.json") +
                          " --collective all_reduce --algorithm ring -b 1M -e 1M";
  RunResult r = with_progress(sim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Before the row ends: 0 of 1, on the timer.
  EXPECT_NE(r.err.find("collkit: simulate all_reduce on sw: 0% (0 of 1), 0:00 elapsed"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(with_progress(sim + " --quiet").err, "");
  const std::string cal =
      "calibrate " +
      (kSource / "tests/data/nccl-tests/h100x8_allreduce_ring_together-nccl-tests.txt").string() +
      " --collective all_reduce --topology " + kDgx +
      " --match nccl:ring --min-bytes 1M --starts 1 --max-iterations 20 --launch group:8 -o " +
      p("fit.json");
  r = with_progress(cal);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("collkit: calibrate dgx-h100 to 1 report(s): 0:00 elapsed (still running)"),
            std::string::npos)
      << r.err;
  r = with_progress(cal + " --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace collkit
