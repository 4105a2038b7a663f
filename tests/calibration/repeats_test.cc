// Repeated measurements, by hand: which rows the fastest-repeat selection
// takes (and leaves out), which points form each repeat, and what the
// spreads between fits determine and report.
#include "calibration/repeats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace collkit {
namespace {

ResultRow row(std::int64_t bytes, double time_us, bool in_place = false, std::int64_t wrong = 0) {
  ResultRow r;
  r.collective = Collective::all_reduce;
  r.algorithm = "ring";
  r.bytes = bytes;
  r.count = bytes / 4;
  r.in_place = in_place;
  r.time_us = time_us;
  r.wrong = wrong;
  return r;
}

CalibrationInput input(const std::string& file, std::vector<ResultRow> rows) {
  CalibrationInput in;
  in.file = file;
  in.report.mode = ReportMode::measure;
  in.report.ranks = 4;
  in.report.results = std::move(rows);
  return in;
}

using Verdict = RepeatSelection::Verdict;

// Asks the selection about every row of every input, in order.
std::vector<Verdict> verdicts(RepeatSelection& s, const std::vector<CalibrationInput>& inputs) {
  std::vector<Verdict> out;
  for (const CalibrationInput& in : inputs)
    for (const ResultRow& r : in.report.results) out.push_back(s.take(in, r));
  return out;
}

std::vector<CalibrationInput> three_repeats() {
  // Size 64: fastest in b; size 128: a and c tie (a, the first, wins);
  // size 256 measured by a only; c's 64 B row failed its check.
  return {input("a", {row(64, 10), row(128, 7), row(256, 9)}),
          input("b", {row(64, 8), row(128, 9)}), input("c", {row(64, 5, false, 3), row(128, 7)})};
}

TEST(RepeatSelection, EveryRowWithoutFastest) {
  const std::vector<CalibrationInput> inputs = three_repeats();
  RepeatSelection s(inputs, false, -1);
  for (Verdict v : verdicts(s, inputs)) EXPECT_EQ(v, Verdict::take);
  EXPECT_EQ(s.repeats(), 0U);
}

TEST(RepeatSelection, FastestOfEachRowFirstOnTiesFailedChecksIgnored) {
  const std::vector<CalibrationInput> inputs = three_repeats();
  RepeatSelection s(inputs, true, -1);
  EXPECT_EQ(s.repeats(), 3U);
  EXPECT_EQ(verdicts(s, inputs),
            (std::vector<Verdict>{Verdict::slower, Verdict::take, Verdict::take, Verdict::take,
                                  Verdict::slower, Verdict::slower, Verdict::slower}));
}

TEST(RepeatSelection, LeavingOneRepeatOut) {
  const std::vector<CalibrationInput> inputs = three_repeats();
  // Repeat 0 (file a) out: 64 B still b's; 128 B now c's (7 us); 256 B,
  // measured once, stays.
  RepeatSelection s(inputs, true, 0);
  EXPECT_EQ(verdicts(s, inputs),
            (std::vector<Verdict>{Verdict::left_out, Verdict::left_out, Verdict::take,
                                  Verdict::take, Verdict::slower, Verdict::slower, Verdict::take}));
  // In and out of place are different rows.
  const std::vector<CalibrationInput> columns = {input("a", {row(64, 4, false), row(64, 3, true)})};
  RepeatSelection t(columns, true, -1);
  EXPECT_EQ(verdicts(t, columns), (std::vector<Verdict>{Verdict::take, Verdict::take}));
  EXPECT_EQ(t.repeats(), 1U);
}

TEST(RepeatMembers, KthFileOfEachPointModuloItsCount) {
  // Points 0..5: distinct point 0 measured in f1, f2, f3; point 3 in f1, f2
  // (twice in f2); point 5 alone.
  const std::vector<std::size_t> same_as = {0, 0, 0, 3, 3, 5, 3};
  const std::vector<std::string> file = {"f1", "f2", "f3", "f1", "f2", "f1", "f2"};
  const std::vector<std::vector<char>> m = repeat_members(same_as, file);
  ASSERT_EQ(m.size(), 3U);
  EXPECT_EQ(m[0], (std::vector<char>{1, 0, 0, 1, 0, 1, 0}));
  EXPECT_EQ(m[1], (std::vector<char>{0, 1, 0, 0, 1, 1, 1}));
  EXPECT_EQ(m[2], (std::vector<char>{0, 0, 1, 1, 0, 1, 0}));
  EXPECT_TRUE(repeat_members({0, 1}, {"f1", "f1"}).empty());
}

FittedParam param(ParamKind kind, const std::string& name) {
  FittedParam p;
  p.kind = kind;
  p.name = name;
  return p;
}

TEST(DeterminedQuantities, RoutesGroupsAndSeriesBandwidths) {
  const std::vector<FittedParam> params = {
      param(ParamKind::latency, "class 0 latency_us (a)"),
      param(ParamKind::bandwidth, "class 0 bandwidth_gbps (a)"),
      param(ParamKind::latency, "class 1 latency_us (b)"),
      param(ParamKind::bandwidth, "class 1 bandwidth_gbps (b)"),
      param(ParamKind::overhead, "endpoint overhead_us"),
      param(ParamKind::reduce_bw, "endpoint reduce_gbps"),
      param(ParamKind::dram_factor, "endpoint dram_factor")};
  // The bandwidths are one group; reduce_gbps with dram_factor another
  // (not all rates: not compared); latencies are routes only.
  const std::vector<std::size_t> group = {0, 1, 2, 1, 4, 5, 5};
  Quantity route;
  route.name = "route";
  route.members = {4, 0, 2, 2};
  Quantity unused_route;
  unused_route.name = "unused";
  unused_route.members = {0};
  std::vector<bool> unused(params.size(), false);
  unused[0] = true;
  const std::vector<Quantity> q =
      determined_quantities(params, group, unused, {route, unused_route});
  ASSERT_EQ(q.size(), 2U);
  EXPECT_EQ(q[0].name, "route");
  EXPECT_EQ(q[1].name, "series bandwidth of class 0 bandwidth_gbps + class 1 bandwidth_gbps");
  EXPECT_TRUE(q[1].series);
  // Series: 1 / (1/2 + 1/6) = 1.5; the route adds its members, repeats too.
  LmVector theta(params.size(), 0);
  theta[1] = std::log(2.0);
  theta[3] = std::log(6.0);
  theta[4] = std::log(1.0);
  theta[0] = std::log(2.0);
  theta[2] = std::log(0.5);
  EXPECT_DOUBLE_EQ(q[1].value(theta), 1.5);
  EXPECT_DOUBLE_EQ(q[0].value(theta), 1 + 2 + 0.5 + 0.5);
  // A lone parameter keeps its name.
  const std::vector<Quantity> lone =
      determined_quantities(params, {0, 1, 2, 3, 4, 5, 6}, std::vector<bool>(7, false), {});
  ASSERT_EQ(lone.size(), 4U);  // the four non-times
  EXPECT_EQ(lone[0].name, params[1].name);
  EXPECT_EQ(lone[3].name, params[6].name);
}

TEST(Spreads, HighestOverLowestAndWhatDisagrees) {
  const std::vector<FittedParam> params = {param(ParamKind::latency, "lat"),
                                           param(ParamKind::bandwidth, "bw")};
  Quantity lat;
  lat.name = "lat";
  lat.members = {0};
  Quantity bw;
  bw.name = "bw";
  bw.members = {1};
  const LmVector joint = {std::log(2e-6), std::log(10e9)};
  const LmVector a = {std::log(2.1e-6), std::log(12e9)};
  const LmVector b = {std::log(1.95e-6), std::log(9e9)};
  const std::vector<ParamSpread> s = spreads({lat, bw}, params, joint, {&a, &b});
  ASSERT_EQ(s.size(), 2U);
  EXPECT_DOUBLE_EQ(s[0].scale, 1e6);
  EXPECT_NEAR(s[0].spread, 2.1 / 1.95 - 1, 1e-12);
  EXPECT_NEAR(s[1].spread, 12.0 / 9 - 1, 1e-12);
  EXPECT_EQ(s[1].values.size(), 2U);
  EXPECT_NEAR(s[1].lowest, 9e9, 1);
  // lat moved 7.7% (within the 10% tolerance), bw 33%.
  EXPECT_EQ(disagreements(s), "bw 9..12 (33%)");
  EXPECT_EQ(disagreements({}), "");
}

}  // namespace
}  // namespace collkit
