// nccl-tests results through the collkit command as a user would use them:
// compare, report, calibrate and simulate --segments-as read the public logs
// of tests/data/nccl-tests/, simulate -J writes files the nccl-tests reader
// reads back, and bad input is one line naming the file, line and field,
// exit 2, no output file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "reports/inputs.h"
#include "reports/report.h"
#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

using testing_cli::RunResult;
using testing_cli::slurp;

const std::string kData = std::string(COLLKIT_SOURCE_DIR) + "/tests/data/nccl-tests/";
const std::string kAllReduce = kData + "h100x8_allreduce_ring_together-nccl-tests.txt";
const std::string kAllGather = kData + "h100x8_allgather_ring_together-nccl-tests.txt";
const std::string kDgx = std::string(COLLKIT_SOURCE_DIR) + "/topologies/dgx-h100.json";

class NcclTestsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_nccl_tests_cli_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }
  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }
  // Exit 2, one line "collkit: error: " with every part, and no file `out`.
  void expect_error(const RunResult& r, std::initializer_list<const char*> parts,
                    const std::string& out = "") {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("collkit: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const char* p : parts) EXPECT_NE(r.err.find(p), std::string::npos) << p << "\n" << r.err;
    if (!out.empty()) {
      EXPECT_FALSE(fs::exists(dir_ / out));
    }
  }
  fs::path dir_;
};

TEST_F(NcclTestsCli, CalibrateSimulateCompareOnPublicLogs) {
  // 0. NCCL's rows stand for the nccl family: without --match they are
  //    simulated as NCCL's own choice on the base; --match nccl:ring pins
  //    the ring these logs were measured with (NCCL_ALGO=Ring). This part
  //    checks which rows are fitted and as what, not the fit (part 1 fits):
  //    sizes from 1 MiB and one start of 20 iterations keep it quick (the
  //    default four starts of 100 iterations took 21 CPU-s in Release and
  //    most of this program's 251 s under ASan).
  RunResult r = run("calibrate '" + kAllReduce + "' --collective all_reduce --topology '" + kDgx +
                    "' --launch group:8 --match nccl:ring --min-bytes 1M --starts 1 "
                    "--max-iterations 20 -o " +
                    path("nccl.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# 28 points (14 distinct)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nccl as nccl:ring"), std::string::npos) << r.out;
  // 1. Fit the DGX H100 base to the measured all_reduce with collkit's
  //    one-channel ring standing for NCCL's.
  r = run("calibrate '" + kAllReduce + "' --collective all_reduce --topology '" + kDgx +
          "' --match ring -o " + path("fit.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# 62 points (31 distinct)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nccl as ring"), std::string::npos) << r.out;
  EXPECT_NE(slurp(dir_ / "fit.json").find("rows of algorithm nccl or native simulated as ring"),
            std::string::npos);
  // 2. Predict all_gather on the fitted network, as nccl-tests swept it.
  r = run("simulate --topology " + path("fit.json") +
          " --collective all_gather --algorithm ring -b 8 -e 8G -f 2 --json " + path("s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 3. Compare with NCCL's measured all_gather, per size band.
  r = run("compare " + path("s.json") + " '" + kAllGather +
          "' --collective all_gather --match ring --json " + path("c.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ring vs nccl"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# Summary: 62 matched rows"), std::string::npos) << r.out;
  for (const char* band : {"< 1 MiB", "1 MiB - 64 MiB", ">= 64 MiB", "all   "})
    EXPECT_NE(r.out.find(band), std::string::npos) << band << "\n" << r.out;
  const Json c = Json::parse(slurp(dir_ / "c.json"));
  EXPECT_EQ(c["match"], "ring");
  ASSERT_EQ(c["bands"].size(), 4u);
  // 8 B..512 KiB: 17 sizes x 2; 1 MiB..32 MiB: 6 x 2; 64 MiB..8 GiB: 8 x 2.
  EXPECT_EQ(c["bands"][0]["rows"], 34);
  EXPECT_EQ(c["bands"][1]["rows"], 12);
  EXPECT_EQ(c["bands"][2]["rows"], 16);
  EXPECT_EQ(c["bands"][3]["rows"], 62);
  // Without --match NCCL's rows match no simulated algorithm.
  r = run("compare " + path("s.json") + " '" + kAllGather + "' --collective all_gather");
  expect_error(r, {"no row of", "has all_gather [ring]", "has all_gather [nccl]"});
}

TEST_F(NcclTestsCli, ReportDrawsEveryRun) {
  // A log of two runs (all_reduce_perf then all_gather_perf, binaries named
  // by their command lines): one series each.
  std::ofstream(dir_ / "two.txt") << "+ ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 8\n"
                                  << slurp(kAllReduce)
                                  << "+ ./build/all_gather_perf -b 8 -e 8G -f 2 -g 8\n"
                                  << slurp(kAllGather);
  const RunResult r = run("report " + path("two.txt") + " -o " + path("r.csv") + " --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string csv = slurp(dir_ / "r.csv");
  EXPECT_NE(csv.find("all_reduce,float,sum,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("all_gather,float,none,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("two.txt:5,measure,nccl,8589934592,false,40848.8,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("two.txt:43,measure,nccl,8589934592,false,20935.4,"), std::string::npos)
      << csv;
  const RunResult html = run("report " + path("two.txt") + " -o " + path("r.html"));
  ASSERT_EQ(html.exit_code, 0) << html.err;
  const std::string page = slurp(dir_ / "r.html");
  EXPECT_NE(page.find("<svg"), std::string::npos);
  // Each input says what it is: the nccl-tests and NCCL versions of the log.
  EXPECT_NE(page.find("two.txt:5: measured, backend nccl, 8 ranks, nccl-tests text version "
                      "2.17.9, NCCL 2.26.2"),
            std::string::npos);
}

// docs/ACCURACY.md's recipe by hand: NCCL's ring on the shipped DGX H100,
// launched as nccl-tests -g 8, against the measured all_gather. Its eight
// rows of 0 B (sizes 8..64 B on 8 ranks of float, out of place and in
// place) are predicted at 0 us (NCCL discards the call): matched one to one
// and left out of the error.
TEST_F(NcclTestsCli, RowsOfNoElementsMatchAndStayOutOfTheError) {
  RunResult r = run("simulate --topology '" + kDgx +
                    "' --collective all_gather --algorithm nccl:ring -b 8 -e 8G -f 2 "
                    "--launch group:8 --json " +
                    path("s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run("compare " + path("s.json") + " '" + kAllGather +
          "' --collective all_gather --match nccl:ring --json " + path("c.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# Summary: 62 matched rows (54 with an error)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("# 8 matched row(s) have no error"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Unmatched"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("-100.0%"), std::string::npos) << r.out;
  const Json c = Json::parse(slurp(dir_ / "c.json"));
  EXPECT_EQ(c["summary"]["predicted_no_time"], 8);
  EXPECT_EQ(c["bands"][0]["rows"], 26);  // 128 B..512 KiB: 13 sizes x 2
  EXPECT_EQ(c["bands"][3]["rows"], 54);
  EXPECT_TRUE(c["predicted_only"].empty());
}

TEST_F(NcclTestsCli, SimulateWritesNcclTestsJsonPerAlgorithm) {
  const RunResult r = run("simulate --topology '" + kDgx +
                          "' --collective all_reduce --algorithm ring,rabenseifner -b 1K -e 1M "
                          "-f 32 --json " +
                          path("s.json") + " -J " + path("nt.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "nt.json"));
  const Report s = read_report((dir_ / "s.json").string());
  for (const char* algorithm : {"ring", "rabenseifner"}) {
    SCOPED_TRACE(algorithm);
    const fs::path file = dir_ / ("nt." + std::string(algorithm) + ".json");
    const Json j = Json::parse(slurp(file));
    EXPECT_EQ(j["version"], 2);
    EXPECT_EQ(j["args"][0], COLLKIT_BINARY);
    EXPECT_EQ(j["results"].size(), 3u);
    const std::vector<InputRun> back = read_runs(file.string());
    ASSERT_EQ(back.size(), 1u);
    std::vector<ResultRow> expected;
    for (const ResultRow& row : s.results)
      if (row.algorithm == algorithm) expected.push_back(row);
    ASSERT_EQ(back[0].report.results.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(back[0].report.results[i].bytes, expected[i].bytes);
      EXPECT_EQ(back[0].report.results[i].time_us, expected[i].time_us);
      EXPECT_EQ(back[0].report.results[i].busbw_gbps, expected[i].busbw_gbps);
      EXPECT_EQ(back[0].report.results[i].algorithm, algorithm);
    }
  }
  // One algorithm: the file itself; and compare reads it like a report.
  RunResult one =
      run("simulate --topology '" + kDgx +
          "' --collective all_reduce --algorithm ring -b 1K -e 1M -f 32 -J " + path("ring.json"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  one = run("compare " + path("s.json") + " " + path("ring.json"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("median |error| 0.0%"), std::string::npos) << one.out;
  // Bad -J paths fail before anything is simulated.
  expect_error(run("simulate --topology '" + kDgx +
                   "' --collective all_reduce --algorithm ring -J /nonexistent/x.json"),
               {"/nonexistent/x.json"});
  expect_error(
      run("simulate --topology '" + kDgx + "' --collective all_reduce --algorithm ring --json " +
          path("x.json") + " -J " + path("x.json")),
      {"-J ", " and --json ", " name the same file: give each output its own path"});
}

TEST_F(NcclTestsCli, SegmentsAsAcceptsALogWithANote) {
  const RunResult r = run("simulate --topology '" + kDgx +
                          "' --collective all_reduce --algorithm ring -b 1M -e 1M --segments-as '" +
                          kAllReduce + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("collkit: note: --segments-as"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("an nccl-tests log (NCCL chose its own segments)"), std::string::npos)
      << r.err;
}

TEST_F(NcclTestsCli, BadLogsAreOneLineNamingFileLineAndField) {
  std::string text = slurp(kAllReduce);
  text.replace(text.find("137.49"), 6, "237.49");  // 4 MiB out-of-place busbw
  std::ofstream(dir_ / "bad.txt") << text;
  RunResult r = run("compare " + path("bad.txt") + " " + path("bad.txt") +
                    " --collective all_reduce --json " + path("c.json"));
  expect_error(r, {"bad.txt:25: out-of-place busbw: 237.49 GB/s, but algbw 78.57 x 2(p-1)/p"},
               "c.json");
  r = run("report " + path("bad.txt") + " --collective all_reduce -o " + path("r.html"));
  expect_error(r, {"bad.txt:25: out-of-place busbw"}, "r.html");
  r = run("calibrate " + path("bad.txt") + " --collective all_reduce --match ring --topology '" +
          kDgx + "' -o " + path("fit.json"));
  expect_error(r, {"bad.txt:25: out-of-place busbw"}, "fit.json");
  // The rank count of a one-process-per-GPU run without "# Rank" lines.
  const std::string xx = kData + "h100x8_allreduce_xxrjun-cluster01-cnode3-002.txt";
  r = run("report '" + xx + "' --collective all_reduce -o " + path("r.html"));
  expect_error(
      r,
      {"h100x8_allreduce_xxrjun-cluster01-cnode3-002.txt:6: out-of-place busbw", "give --ranks 8"},
      "r.html");
  r = run("report '" + xx + "' --collective all_reduce --ranks 8 -o " + path("r.html"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run("report '" + xx + "' --collective allreduce -o " + path("r2.html"));
  expect_error(r, {"allreduce"}, "r2.html");
}

}  // namespace
}  // namespace collkit
