// Issue 16 items 4-5 through the command line: compare and calibrate leave
// out measured rows whose check failed, naming them; calibrate refuses a
// suspect fit (exit 1, nothing written) unless --accept.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "reports/report.h"
#include "reports/sweep_report.h"
#include "tests/cli/cli_runner.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::RunResult;

class CheckedRowsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_checked_rows_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }
  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  // A "measured" report: the simulation of `topology_text`, as bench writes it.
  Report measured(const std::string& topology_text) {
    const auto t = parse_topology(topology_text, "truth.json");
    SweepSpec sweep;
    sweep.collective = Collective::all_reduce;
    sweep.algorithms = {"ring", "recursive_doubling"};
    sweep.ranks = t->num_ranks();
    sweep.sizes = {1024, 16384, 262144, 4 << 20};
    sweep.model = cost_params_of(*t, sweep.ranks);
    Report r = simulate_report(sweep, *t, SimOptions{});
    r.collkit_version = "0.1.0";
    r.mode = ReportMode::measure;
    r.backend = Backend::mpi;
    r.topology.reset();
    r.extra = Json::object();
    r.extra["segment_model"] = segment_model_json(sweep.model);
    return r;
  }
  static std::string ring(double bw_gbps) {
    return R"({"name": "ring4", "generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": )" +
           std::to_string(bw_gbps) + R"(, "latency_us": 2}})";
  }
  fs::path dir_;
};

TEST_F(CheckedRowsCli, CompareLeavesOutAndNamesRowsThatFailedTheCheck) {
  write("t.json", ring(50));
  ASSERT_EQ(run("simulate --topology " + p("t.json") +
                " --collective all_reduce --algorithm ring,recursive_doubling -b 1K -e 4M -f 16 "
                "--json " +
                p("s.json"))
                .exit_code,
            0);
  Report m = measured(ring(50));
  m.results[1].wrong = 7;
  write("m.json", report_json_text(m));
  const RunResult r = run("compare " + p("s.json") + " " + p("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "collkit: warning: " + (dir_ / "m.json").string() +
                       ": 1 row(s) left out of the comparison: their check failed (#wrong > 0; "
                       "listed below the table)\n");
  EXPECT_NE(r.out.find("# warning: left out 1 row(s) of " + (dir_ / "m.json").string() +
                       " whose check failed (#wrong > 0):"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(7 wrong)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# Summary: 7 matched rows"), std::string::npos) << r.out;
}

TEST_F(CheckedRowsCli, CalibrateRefusesASuspectFitUnlessAccepted) {
  write("base.json", ring(10));
  // 1 PB/s: the fit ends on the 10 TB/s bound.
  write("m.json", report_json_text(measured(ring(1e6))));
  RunResult r =
      run("calibrate " + p("m.json") + " --topology " + p("base.json") + " -o " + p("fit.json"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "fit.json"));
  // Progress lines may come first on a slow machine; the error is a line of its own.
  const std::string suspect =
      "collkit: error: calibrate: the fit is suspect: class 0 bandwidth_gbps";
  const size_t at = r.err.find(suspect);
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_TRUE(at == 0 || r.err[at - 1] == '\n') << r.err;
  EXPECT_NE(r.err.find("not written (--accept writes it anyway)"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("# error before (base): median "), std::string::npos) << r.out;
  r = run("calibrate " + p("m.json") + " --topology " + p("base.json") + " -o " + p("fit.json") +
          " --accept");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "fit.json"));
  EXPECT_NE(r.out.find("# problem: class 0 bandwidth_gbps"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace collkit
