#include "sim/sweep.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace collkit {
namespace {

using Sizes = std::vector<std::int64_t>;

SweepSpec spec_of(Collective c, std::vector<std::string> algorithms, Sizes sizes, int p) {
  SweepSpec s;
  s.collective = c;
  s.algorithms = std::move(algorithms);
  s.sizes = std::move(sizes);
  s.ranks = p;
  return s;
}

TEST(ScheduleSpecOfSweep, CarriesCollkitCountsAndSegments) {
  SweepSpec s = spec_of(Collective::all_gather, {"ring"}, {1 << 20}, 8);
  s.dtype = DataType::float64;
  s.root = 3;
  s.segment_bytes = 4096;
  s.group_size = 2;
  const ScheduleSpec spec =
      schedule_spec(s, "ring", map_size(Collective::all_gather, 1 << 20, 8, 8));
  EXPECT_EQ(spec.collective, Collective::all_gather);
  EXPECT_EQ(spec.algorithm, "ring");
  EXPECT_EQ(spec.count, 131072);  // total output of 1 MiB of doubles
  EXPECT_EQ(spec.elem_size, 8);
  EXPECT_EQ(spec.segment, 512);
  EXPECT_EQ(spec.root, 3);
  EXPECT_EQ(spec.ranks, 8);
  EXPECT_EQ(spec.group_size, 2);
  s.segment_bytes = 3;  // less than one element still means one
  EXPECT_EQ(schedule_spec(s, "ring", {}).segment, 1);
}

// The points themselves: one per (algorithm, size), grouped by algorithm,
// with the size mapping and the time the timing function gave.
TEST(RunSweep, PointsInSweepOrder) {
  const SweepSpec s = spec_of(Collective::all_gather, {"a", "b"}, {1024, 4096}, 4);
  const std::vector<SweepPoint> points = run_sweep(s, [](const ScheduleSpec& spec) {
    return static_cast<double>(spec.count) * (spec.algorithm == "a" ? 1e-9 : 2e-9);
  });
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[0].algorithm, "a");
  EXPECT_EQ(points[1].algorithm, "a");
  EXPECT_EQ(points[2].algorithm, "b");
  EXPECT_EQ(points[1].size.bytes, 4096);
  EXPECT_EQ(points[1].size.count, 256);        // per rank, as nccl-tests' count column
  EXPECT_EQ(points[1].size.spec_count, 1024);  // collkit's total output
  EXPECT_DOUBLE_EQ(points[1].seconds, 1024e-9);
  EXPECT_DOUBLE_EQ(points[3].seconds, 2048e-9);
}

TEST(NetModelNames, RoundTrip) {
  EXPECT_EQ(parse_net_model("flow"), NetModel::flow);
  EXPECT_EQ(parse_net_model("alpha-beta"), NetModel::alpha_beta);
  EXPECT_EQ(to_string(NetModel::alpha_beta), "alpha-beta");
  EXPECT_THROW(parse_net_model("alpha_beta"), UsageError);
}

}  // namespace
}  // namespace collkit
