// Issue 16 items 4-5: every fitted parameter stays in its physical range and
// a fit that ends on a bound says so; the error before and after is known;
// measured rows whose check failed are left out and named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "calibration/calibrate.h"
#include "reports/sweep_report.h"

namespace collkit {
namespace {

std::string ring_text(double bw_gbps, double lat_us, double overhead_us, double reduce_gbps) {
  return R"({"name": "ring4", "endpoint": {"overhead_us": )" + std::to_string(overhead_us) +
         R"(, "reduce_gbps": )" + std::to_string(reduce_gbps) +
         R"(}, "generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": )" +
         std::to_string(bw_gbps) + R"(, "latency_us": )" + std::to_string(lat_us) + "}}";
}

const std::string kBase = ring_text(10, 5, 0.1, 1000);

// Reports "measured" by simulating on `truth`, segments chosen from the base
// as calibrate chooses them.
std::vector<CalibrationInput> measured_on(const Topology& truth) {
  std::vector<CalibrationInput> out;
  for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::all_to_all}) {
    SweepSpec sweep;
    sweep.collective = c;
    sweep.algorithms = c == Collective::all_to_all
                           ? std::vector<std::string>{"pairwise", "bruck"}
                           : std::vector<std::string>{"ring", "recursive_doubling"};
    sweep.ranks = 4;
    sweep.sizes = {1024, 16384, 262144, 4 << 20};
    sweep.model = cost_params_of(*parse_topology(kBase, "base.json"), 4);
    Report r = simulate_report(sweep, truth, SimOptions{});
    r.mode = ReportMode::measure;
    r.backend = Backend::mpi;
    r.topology.reset();
    r.extra = Json::object();
    out.push_back({"m" + std::to_string(out.size()) + ".json", "0", r});
  }
  return out;
}

const FittedParam& param(const CalibrationResult& r, ParamKind kind) {
  for (const FittedParam& p : r.params)
    if (p.kind == kind) return p;
  throw std::logic_error("no such parameter");
}

TEST(CalibrateBounds, Ranges) {
  EXPECT_EQ(param_range(ParamKind::bandwidth, 8), (std::pair<double, double>{1e6, 1e13}));
  EXPECT_EQ(param_range(ParamKind::reduce_bw, 8), (std::pair<double, double>{1e6, 1e13}));
  EXPECT_EQ(param_range(ParamKind::latency, 8), (std::pair<double, double>{0.0, 0.1}));
  EXPECT_EQ(param_range(ParamKind::dram_factor, 8), (std::pair<double, double>{1.0, 1000.0}));
  EXPECT_EQ(param_range(ParamKind::host_cores, 2), (std::pair<double, double>{1.0, 2.0}));
}

TEST(CalibrateBounds, ImpossibleBandwidthEndsOnTheBoundAndSaysSo) {
  // 1 PB/s links: no network has them; the fit stops at 10 TB/s.
  const auto truth = parse_topology(ring_text(1e6, 2, 0.7, 200), "truth.json");
  const auto base = parse_topology(kBase, "base.json");
  const CalibrationResult r = calibrate(measured_on(*truth), *base);
  const FittedParam& bw = param(r, ParamKind::bandwidth);
  EXPECT_TRUE(bw.at_bound);
  EXPECT_NEAR(bw.fitted, 1e13, 1e13 * 1e-5);
  ASSERT_FALSE(r.problems.empty());
  EXPECT_EQ(r.problems[0],
            "class 0 bandwidth_gbps (r0->r1, 8 links) ended on the upper bound of its physical "
            "range (0.001..10000 GB/s): the measurements ask for a value no such network has");
  EXPECT_NE(format_calibration(r).find("# problem: class 0 bandwidth_gbps"), std::string::npos);
  for (const FittedParam& p : r.params) {
    EXPECT_GE(p.fitted, p.lower) << p.name;
    EXPECT_LE(p.fitted, p.upper * (1 + 1e-9)) << p.name;
  }
}

TEST(CalibrateBounds, ErrorBeforeAndAfterAreThoseOfBaseAndFit) {
  const auto truth = parse_topology(ring_text(50, 2, 0.7, 200), "truth.json");
  const auto base = parse_topology(kBase, "base.json");
  const std::vector<CalibrationInput> inputs = measured_on(*truth);
  const CalibrationResult r = calibrate(inputs, *base);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  // Before: the base's own simulation of every measured row.
  std::vector<double> before;
  for (const CalibrationInput& in : inputs) {
    for (const ResultRow& row : in.report.results) {
      ScheduleSpec spec;
      spec.collective = row.collective;
      spec.algorithm = row.algorithm;
      spec.ranks = 4;
      spec.count = row.collective == Collective::all_reduce ? row.count : row.count * 4;
      spec.model = cost_params_of(*base, 4);
      const double us = simulate(*make_schedule(spec), *base, SimOptions{}).time * 1e6;
      before.push_back(std::abs(us / row.time_us - 1));
    }
  }
  std::sort(before.begin(), before.end());
  const double median = (before[before.size() / 2 - 1] + before[before.size() / 2]) / 2;
  EXPECT_NEAR(r.base_median_abs_error, median, 1e-9);
  EXPECT_LT(r.median_abs_error, 1e-6);
  EXPECT_GT(r.base_median_abs_error, 0.5);
  char line[160];
  std::snprintf(line, sizeof line, "# error before (base): median %.3g%%", 100 * median);
  EXPECT_NE(format_calibration(r).find(line), std::string::npos) << format_calibration(r);
}

TEST(CalibrateBounds, RowsWhoseCheckFailedAreLeftOutAndNamed) {
  const auto truth = parse_topology(ring_text(50, 2, 0.7, 200), "truth.json");
  const auto base = parse_topology(kBase, "base.json");
  std::vector<CalibrationInput> inputs = measured_on(*truth);
  // A wrong result measured something else: a time 100x off must not count.
  ResultRow& bad = inputs[0].report.results[2];
  bad.wrong = 12;
  bad.time_us *= 100;
  const CalibrationResult r = calibrate(inputs, *base);
  ASSERT_EQ(r.failed_check.size(), 1u);
  EXPECT_EQ(r.failed_check[0], "m0.json: results[2] (all_reduce " + bad.algorithm + " " +
                                   std::to_string(bad.bytes) + " bytes, 12 wrong)");
  EXPECT_NEAR(param(r, ParamKind::bandwidth).fitted, 50e9, 50e9 * 1e-4);
  EXPECT_NE(format_calibration(r).find("left out 1 row(s) whose check failed"), std::string::npos);
}

}  // namespace
}  // namespace collkit
