// Runs the built `collkit calibrate` as a user would: a measured report made
// by simulating a known network is fitted from a wrong base; bad inputs exit 2
// with one line naming the file and field and leave no output file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "reports/report.h"
#include "reports/sweep_report.h"
#include "tests/cli/cli_runner.h"
#include "topologies/sha256.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

// The classic algorithms: these tests fit measurements of them (the nccl
// family is resolved on a topology, tests/sim and tests/cli cover it).
std::vector<std::string> classic(Collective c, const std::string& list) {
  std::vector<std::string> out = expand_algorithms(c, list, false);
  std::erase_if(out, [](const std::string& a) { return a.rfind("nccl", 0) == 0; });
  return out;
}

namespace fs = std::filesystem;
using testing_cli::RunResult;
using testing_cli::slurp;

constexpr const char* kTruth = R"({"name": "sw4", "endpoint": {"overhead_us": 0.8},
  "generator": {"kind": "switch", "ranks": 4, "bandwidth_gbps": 25, "latency_us": 1.5}})";
constexpr const char* kBase = R"({"name": "sw4", "endpoint": {"overhead_us": 3},
  "generator": {"kind": "switch", "ranks": 4, "bandwidth_gbps": 100, "latency_us": 0.2}})";

class CalibrateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_calibrate_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(base_path()) << kBase;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string base_path() const { return (dir_ / "base.json").string(); }
  std::string fit_path() const { return (dir_ / "fit.json").string(); }

  // A measured report of all_gather and all_to_all on the truth, written to
  // `name`; `sizes` sets how many points it has.
  std::string write_measured(const std::string& name, std::vector<std::int64_t> sizes,
                             ReportMode mode = ReportMode::measure) {
    const std::unique_ptr<Topology> truth = parse_topology(kTruth, "truth.json");
    Report all;
    std::vector<ResultRow> rows;
    for (Collective c : {Collective::all_gather, Collective::all_to_all}) {
      SweepSpec sweep;
      sweep.collective = c;
      sweep.algorithms = classic(c, "all");
      sweep.ranks = 4;
      sweep.sizes = sizes;
      sweep.model = cost_params_of(*parse_topology(kBase, "base.json"), 4);
      all = simulate_report(sweep, *truth, {});  // the context; rows of both sweeps
      rows.insert(rows.end(), all.results.begin(), all.results.end());
    }
    all.results = rows;
    all.best = compute_best(all.results);
    all.collkit_version = "test";
    all.mode = mode;
    if (mode == ReportMode::measure) {
      all.backend = Backend::mpi;
      all.topology.reset();
      all.extra = Json::object();
    }
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << report_json_text(all);
    return path;
  }

  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }

  fs::path dir_;
};

TEST_F(CalibrateCli, FitsAndWritesALoadableTopology) {
  const std::string m = write_measured("m.json", {1024, 65536, 1 << 20});
  const RunResult r =
      run("calibrate '" + m + "' --topology '" + base_path() + "' -o '" + fit_path() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("bandwidth_gbps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("median"), std::string::npos) << r.out;
  const std::unique_ptr<Topology> fit = load_topology(fit_path());
  EXPECT_NEAR(fit->link(0).bandwidth / 25e9, 1, 1e-6);
  // On a switch every route is two links, so only 2 x latency + overhead is
  // determined, and the output says so.
  EXPECT_NEAR((2 * fit->link(0).latency + fit->endpoint(0).overhead) / 3.8e-6, 1, 1e-6);
  EXPECT_NE(r.out.find("only their combination is fitted"), std::string::npos) << r.out;
  EXPECT_NE(fit->description.find(m), std::string::npos) << fit->description;
  EXPECT_NE(fit->description.find(sha256_hex(slurp(m))), std::string::npos) << fit->description;
  EXPECT_NE(fit->description.find(" points"), std::string::npos) << fit->description;
}

TEST_F(CalibrateCli, TooFewPointsSaysHowManyMore) {
  // Every algorithm at one size would be enough: keep two rows only.
  const std::string m = write_measured("m.json", {1024});
  Json j = Json::parse(slurp(m));
  j["results"] = Json::array({j["results"][0], j["results"][1]});
  std::ofstream(m) << j.dump(1);
  const RunResult r =
      run("calibrate '" + m + "' --topology '" + base_path() + "' -o '" + fit_path() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("2 distinct measured points for 3 parameters"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("add 2 more"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(fit_path()));
}

TEST_F(CalibrateCli, MinBytesLeavesSmallRowsOutAndSaysSo) {
  const std::string m = write_measured("m.json", {1024, 65536, 1 << 20, 4 << 20});
  const RunResult r = run("calibrate '" + m + "' --topology '" + base_path() +
                          "' --min-bytes 64K -o '" + fit_path() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rows below 65536 bytes (--min-bytes)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" 1024 "), std::string::npos) << "no 1 KiB point is fitted\n" << r.out;
  EXPECT_NE(load_topology(fit_path())->description.find("rows below 65536 bytes left out"),
            std::string::npos);
  const RunResult bad = run("calibrate '" + m + "' --topology '" + base_path() +
                            "' --min-bytes 12Q -o '" + fit_path() + "x'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--min-bytes"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(fit_path() + "x"));
}

struct BadCase {
  const char* name;
  const char* edit;     // what is done to the measured file
  const char* message;  // must appear in the one stderr line
};

class CalibrateBadInput : public CalibrateCli, public ::testing::WithParamInterface<BadCase> {};

TEST_P(CalibrateBadInput, ExitsTwoNamingFileAndFieldWithNoOutput) {
  const BadCase& c = GetParam();
  const std::string edit = c.edit;
  const std::string m =
      write_measured("m.json", {1024, 65536, 1 << 20},
                     edit == "simulate" ? ReportMode::simulate : ReportMode::measure);
  Json j = Json::parse(slurp(m));
  if (edit == "ranks") {
    // A run on 8 ranks: its bus bandwidths follow (the reader checks them).
    j["ranks"] = 8;
    for (Json& row : j["results"])
      row["busbw_gbps"] = row["algbw_gbps"].get<double>() *
                          busbw_factor(parse_collective(row["collective"].get<std::string>()), 8);
  }
  if (edit == "no_time") j["results"][2].erase("time_us");
  if (edit == "zero_time") {
    j["results"][2]["time_us"] = 0.0;
    j["results"][2]["algbw_gbps"] = 0.0;
    j["results"][2]["busbw_gbps"] = 0.0;
  }
  if (edit == "algorithm") j["results"][1]["algorithm"] = "nosuch";
  if (edit == "not_report") j = Json{{"hello", 1}};
  if (edit == "not_json") {
    std::ofstream(m) << "{ nope";
  } else {
    std::ofstream(m) << j.dump(1);
  }
  const RunResult r =
      run("calibrate '" + m + "' --topology '" + base_path() + "' -o '" + fit_path() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("collkit: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(m), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(fit_path()));
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, CalibrateBadInput,
    ::testing::Values(BadCase{"simulated", "simulate", "mode: is 'simulate'"},
                      BadCase{"ranks", "ranks", "ranks: 8, but the topology has 4 ranks"},
                      BadCase{"missing_time", "no_time", "results[2].time_us"},
                      BadCase{"zero_time", "zero_time", "results[2].time_us: must be > 0"},
                      BadCase{"algorithm", "algorithm", "results[1].algorithm"},
                      BadCase{"not_a_report", "not_report", ""},
                      BadCase{"not_json", "not_json", "malformed JSON"}),
    [](const ::testing::TestParamInfo<BadCase>& i) { return i.param.name; });

TEST_F(CalibrateCli, RanksPlacesARunOnFewerEndpoints) {
  const std::string m = write_measured("m.json", {1024, 65536, 1 << 20});
  std::ofstream(base_path()) << R"({"name": "sw8", "endpoint": {"overhead_us": 3},
    "generator": {"kind": "switch", "ranks": 8, "bandwidth_gbps": 100, "latency_us": 0.2}})";
  RunResult r =
      run("calibrate '" + m + "' --topology '" + base_path() + "' -o '" + fit_path() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("ranks: 4, but the topology has 8 ranks (--ranks 4"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(fit_path()));
  r = run("calibrate '" + m + "' --topology '" + base_path() + "' --ranks 4 -o '" + fit_path() +
          "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::unique_ptr<Topology> fit = load_topology(fit_path());
  EXPECT_EQ(fit->num_ranks(), 8);
  EXPECT_NEAR(fit->link(0).bandwidth / 25e9, 1, 1e-6);
}

TEST_F(CalibrateCli, MissingTopologyNamesIt) {
  const std::string m = write_measured("m.json", {1024, 65536, 1 << 20});
  const std::string absent = (dir_ / "absent.json").string();
  const RunResult r =
      run("calibrate '" + m + "' --topology '" + absent + "' -o '" + fit_path() + "'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(absent), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(fit_path()));
}

}  // namespace
}  // namespace collkit
