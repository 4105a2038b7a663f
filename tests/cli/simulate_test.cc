// Runs the built `collkit simulate` as a user would, checking what the
// process leaves behind: exit code, stderr, stdout and files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "reports/report.h"
#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

using testing_cli::RunResult;
using testing_cli::slurp;

class SimulateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_cli_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    topology_ = (dir_ / "fc-8.json").string();
    fc8_ = topology_;
    std::ofstream(topology_) << R"({"name": "fc-8", "generator": {"kind": "fully_connected",
        "ranks": 8, "bandwidth_gbps": 100, "latency_us": 1.0}})";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `args` is appended to "collkit simulate --topology <fc-8>" (shell words).
  RunResult run(const std::string& args) {
    return testing_cli::run_collkit("simulate --topology '" + topology_ + "' " + args, dir_);
  }

  // Everything in the test directory but the topology.
  std::vector<std::string> leftovers() {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      if (e.path() != fc8_) out.push_back(e.path().filename());
    return out;
  }

  std::string json_path() const { return (dir_ / "r.json").string(); }
  std::string csv_path() const { return (dir_ / "r.csv").string(); }

  fs::path dir_;
  std::string fc8_;       // the topology file every test starts with
  std::string topology_;  // what --topology names
};

struct BadCase {
  const char* name;
  const char* args;
  const char* message;  // must appear in the single stderr line
};

class SimulateBadInput : public SimulateCli, public ::testing::WithParamInterface<BadCase> {};

TEST_P(SimulateBadInput, ExitsTwoWithOneLineAndNoFile) {
  const BadCase& c = GetParam();
  const RunResult r = run(std::string("--collective all_reduce --algorithm ring ") + c.args +
                          " --json '" + json_path() + "' --csv '" + csv_path() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("collkit: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

INSTANTIATE_TEST_SUITE_P(
    Flags, SimulateBadInput,
    ::testing::Values(
        BadCase{"min_above_max", "-b 64 -e 8 -f 2", "-b 64 is larger than -e 8"},
        BadCase{"zero_min", "-b 0 -e 8 -f 2", "-b 0: the minimum size must be > 0 bytes"},
        BadCase{"bad_suffix", "-b 12X -e 1G", "-b '12X': expected a whole number of bytes"},
        BadCase{"bad_max", "-b 8 -e 1GX", "-e '1GX'"},
        BadCase{"negative_step", "-b 8 -e 64 -i -8", "-i '-8': sizes must be > 0 bytes"},
        BadCase{"zero_step", "-b 8 -e 64 -i 0", "-i 0: the step must be > 0 bytes"},
        BadCase{"zero_factor", "-b 8 -e 64 -f 0", "-f 0: the step factor must be >= 1"},
        BadCase{"bad_factor", "-b 8 -e 64 -f 1.5", "-f '1.5': expected a non-negative integer"},
        BadCase{"dtype", "--dtype fp8", "unknown data type 'fp8'; valid: int8, uint8"},
        BadCase{"op", "--op mean", "unknown reduction op 'mean'"},
        BadCase{"model", "--net-model exact", "unknown network model 'exact'"},
        BadCase{"root", "--root x", "--root 'x': expected a non-negative integer"},
        BadCase{"algorithm", "--algorithm ring,nosuch",
                "unknown algorithm 'nosuch' for all_reduce"},
        BadCase{"variant", "--algorithm ring:sideways", "variant 'sideways'"},
        BadCase{"too_many_sizes", "-b 1 -e 1G -i 1", "gives more than 100000 sizes"},
        BadCase{"segment", "--segment 4Q", "--segment '4Q'"}),
    [](const ::testing::TestParamInfo<BadCase>& i) { return i.param.name; });

TEST_F(SimulateCli, UnknownCollective) {
  const RunResult r = run("--collective allreduc --json '" + json_path() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "collkit: error: unknown collective 'allreduc'; did you mean 'all_reduce'? (valid: "
            "broadcast, reduce, all_gather, scatter, gather, reduce_scatter, all_reduce, "
            "all_to_all, barrier)\n");
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

// Issue 44: an MSCCL file is refused at the sizes at which its runtime would
// hang, before anything is simulated or written. The 64-GPU recursive
// halving/doubling file on nodes of 8 hangs from 16 MiB + 256 bytes
// (tests/interop/msccl_buffering_test.cc works it out); a 64 MiB
// NCCL_BUFFSIZE lets 32 MiB run.
TEST_F(SimulateCli, MscclSizesThatHangInTheRuntimeAreRefused) {
  const std::string root = COLLKIT_SOURCE_DIR;
  const std::string args =
      "simulate --topology '" + root + "/topologies/h100-cluster-16x8.json' --ranks 64 " +
      "--collective all_reduce --algorithm 'msccl:" + root +
      "/tests/data/msccl/"
      "dailiuyao__msccl_tools_lyd__examples__xml__allreduce_rec_doub_halv_Simple_gpu64_ins1.xml' "
      "-b 16M -e 32M -f 2 --json '" +
      json_path() + "'";
  const RunResult r = testing_cli::run_collkit(args, dir_);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("collkit: error: size 33554432 of the sweep: msccl:", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(" at count 8388608 (33554432 bytes): the runtime hangs from count 4194368 "
                       "(16777472 bytes of 4-byte elements; Simple, connection buffer 4194304 "
                       "bytes (NCCL_BUFFSIZE's default) in 8 steps, 16 between nodes of 8 ranks)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
  const RunResult big = testing_cli::run_collkit(args + " --nccl-buffsize 64M", dir_);
  EXPECT_EQ(big.exit_code, 0) << big.err;
  EXPECT_NE(big.out.find("\n    33554432       8388608     float"), std::string::npos) << big.out;
}

TEST_F(SimulateCli, OutputDirectoryMustExist) {
  const std::string bad = (dir_ / "missing" / "r.json").string();
  const RunResult r = run("--collective all_reduce --algorithm ring --json '" + bad + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "collkit: error: --json " + bad + ": cannot write: directory '" +
                       (dir_ / "missing").string() + "' does not exist\n");
}

TEST_F(SimulateCli, SameFileForJsonAndCsv) {
  const RunResult r = run("--collective all_reduce --algorithm ring --json '" + json_path() +
                          "' --csv '" + json_path() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "collkit: error: --csv " + json_path() + " and --json " + json_path() +
                       " name the same file: give each output its own path\n");
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

TEST_F(SimulateCli, MissingTopologyFile) {
  topology_ = (dir_ / "absent.json").string();
  const RunResult r = run("--collective all_reduce --algorithm ring --json '" + json_path() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("absent.json"), std::string::npos) << r.err;
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

TEST_F(SimulateCli, RootOutOfRange) {
  const RunResult r =
      run("--collective broadcast --algorithm all --root 8 --json '" + json_path() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("root 8 is out of range for 8 ranks"), std::string::npos) << r.err;
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

TEST_F(SimulateCli, MoreRanksThanTheTopologyHas) {
  const RunResult r =
      run("--collective all_reduce --algorithm ring --ranks 9 --json '" + json_path() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

// --segments-as rebuilds the schedules a measured run chose: its
// segment_model replaces the one the topology gives, and shows in the output.
TEST_F(SimulateCli, SegmentsAsTakesTheRunsSegmentModel) {
  const std::string measured = (dir_ / "m.json").string();
  {
    // A measured report as collkit bench writes it, with a model far from
    // fc-8's, so that the pipelined chain cuts other segments.
    Report m;
    m.mode = ReportMode::measure;
    m.backend = Backend::mpi;
    m.ranks = 8;
    m.collkit_version = "test";
    m.extra["segment_model"] = segment_model_json(CostParams{50e-6, 1e-9, 0});
    std::ofstream(measured) << report_json_text(m);
  }
  const std::string args =
      "--collective broadcast --algorithm pipelined_chain -b 4M -e 4M --json '" + json_path() + "'";
  ASSERT_EQ(run(args).exit_code, 0);
  const Report own = read_report(json_path());
  const RunResult r = run(args + " --segments-as '" + measured + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Report as_run = read_report(json_path());
  EXPECT_EQ(as_run.extra["segment_model"]["alpha"].get<double>(), 50e-6);
  EXPECT_EQ(as_run.extra["segment_model"]["beta"].get<double>(), 1e-9);
  EXPECT_NEAR(own.extra["segment_model"]["alpha"].get<double>(), 1e-6, 1e-15);  // fc-8: 1 us
  ASSERT_EQ(own.results.size(), 1u);
  ASSERT_EQ(as_run.results.size(), 1u);
  // Fewer, larger segments (the run's latency is 50x higher): another time.
  EXPECT_NE(own.results[0].time_us, as_run.results[0].time_us);

  // A report without the key (older files) is an error naming it; no output.
  fs::remove(json_path());
  {
    Report m;
    m.mode = ReportMode::measure;
    m.backend = Backend::mpi;
    m.ranks = 8;
    m.collkit_version = "test";
    std::ofstream(measured) << report_json_text(m);
  }
  const RunResult bad = run(args + " --segments-as '" + measured + "'");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("m.json: segment_model: missing"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(json_path()));
}

TEST_F(SimulateCli, SweepWritesTablesJsonAndCsv) {
  const RunResult r = run("--collective all_reduce --algorithm all -b 8 -e 1M -f 4 --json '" +
                          json_path() + "' --csv '" + csv_path() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // no progress bar: stderr is not a terminal
  const Report rep = read_report(json_path());
  EXPECT_EQ(rep.mode, ReportMode::simulate);
  EXPECT_EQ(rep.ranks, 8);
  ASSERT_TRUE(rep.topology.has_value());
  EXPECT_EQ(rep.topology->name, "fc-8");
  EXPECT_EQ(rep.topology->file, topology_);
  EXPECT_EQ(rep.extra.value("model", ""), "flow");
  // 8 B .. 1 MiB by 4: 9 sizes (8 B .. 512 KiB) per algorithm, one best each.
  ASSERT_FALSE(rep.results.empty());
  EXPECT_EQ(rep.results.size() % 9, 0u);
  EXPECT_EQ(rep.best.size(), 9u);
  for (const ResultRow& row : rep.results) {
    EXPECT_GT(row.time_us, 0) << row.algorithm << " " << row.bytes;
    EXPECT_EQ(row.wrong, -1);
  }
  EXPECT_EQ(rep.results[0].bytes, 8);
  EXPECT_EQ(rep.results[0].count, 2);
  // stdout: a table per algorithm, in nccl-tests layout, then the summary.
  EXPECT_NE(r.out.find("#       size         count      type   redop    root     time"),
            std::string::npos);
  EXPECT_NE(r.out.find("# Avg bus bandwidth    : "), std::string::npos);
  EXPECT_NE(r.out.find("# Best algorithm per size"), std::string::npos);
  std::istringstream lines(r.out);
  std::size_t data_rows = 0;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != '#') ++data_rows;
  EXPECT_EQ(data_rows, rep.results.size());
  const std::string csv = slurp(csv_path());
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')),
            rep.results.size() + 1);
  // Only the two outputs: no temporaries.
  std::vector<std::string> files = leftovers();
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"r.csv", "r.json"}));
}

}  // namespace
}  // namespace collkit
