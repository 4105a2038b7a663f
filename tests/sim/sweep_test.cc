#include "sim/sweep.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "core/error.h"
#include "topologies/topology.h"

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

// --jobs: the same points, in the same order, on any number of threads;
// progress counts up to the total one call at a time. Simulated on a real
// topology, so the engine's shared state (the topology's route cache) is
// exercised from several threads.
TEST(RunSweep, SamePointsWhateverTheThreads) {
  const std::unique_ptr<Topology> t =
      load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/h100-cluster-4x8.json");
  SweepSpec s = spec_of(Collective::all_reduce, {"ring", "nccl", "recursive_doubling"},
                        {1 << 10, 1 << 16, 1 << 22, 1 << 26}, 32);
  s.model = cost_params_of(*t, 32);
  const std::vector<SweepPoint> one = simulate_sweep(s, *t, SimOptions{});
  ASSERT_EQ(one.size(), 12u);
  for (int jobs : {2, 3, 0}) {
    s.jobs = jobs;
    std::vector<std::size_t> seen;
    const std::vector<SweepPoint> many =
        simulate_sweep(s, *t, SimOptions{}, [&](std::size_t done, std::size_t total) {
          EXPECT_EQ(total, 12u);
          seen.push_back(done);
        });
    ASSERT_EQ(many.size(), one.size());
    for (std::size_t i = 0; i < one.size(); ++i) {
      EXPECT_EQ(many[i].algorithm, one[i].algorithm) << i;
      EXPECT_EQ(many[i].size.bytes, one[i].size.bytes) << i;
      EXPECT_EQ(many[i].seconds, one[i].seconds) << jobs << " " << i;  // bit for bit
      EXPECT_EQ(many[i].note, one[i].note) << i;
    }
    ASSERT_EQ(seen.size(), 12u);
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 1);
  }
  // The order is the sweep's (grouped by algorithm) and each time is the
  // schedule simulated alone.
  s.node_size = t->ranks_per_node(32);
  EXPECT_EQ(one[4].algorithm, "nccl");
  EXPECT_EQ(one[6].size.bytes, 1 << 22);
  EXPECT_EQ(one[0].seconds,
            simulate(*make_schedule(schedule_spec(s, "ring", one[0].size)), *t, SimOptions{}).time);
}

TEST(NetModelNames, RoundTrip) {
  EXPECT_EQ(parse_net_model("flow"), NetModel::flow);
  EXPECT_EQ(parse_net_model("alpha-beta"), NetModel::alpha_beta);
  EXPECT_EQ(to_string(NetModel::alpha_beta), "alpha-beta");
  EXPECT_THROW(parse_net_model("alpha_beta"), UsageError);
}

}  // namespace
}  // namespace collkit

namespace collkit {
namespace {

// hierarchical all_reduce's default group follows the topology's nodes
// (issue 16): on a100-cluster-2x8 (2 nodes of 8) the default is one group
// per node, timed exactly as --group 8, where it had been sqrt(16) = 4 (a
// group spanning half a node, and a ring across 4 groups over the network).
TEST(SimulateSweep, HierarchicalDefaultGroupIsANode) {
  const auto topo =
      load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/a100-cluster-2x8.json");
  ASSERT_EQ(topo->ranks_per_node(16), 8);
  const auto time_with = [&](int group) {
    SweepSpec s = spec_of(Collective::all_reduce, {"hierarchical"}, {1 << 26}, 16);
    s.group_size = group;
    return simulate_sweep(s, *topo, SimOptions{}).at(0).seconds;
  };
  const double by_default = time_with(0);
  EXPECT_DOUBLE_EQ(by_default, time_with(8));
  EXPECT_LT(by_default, 0.8 * time_with(4));

  // The closed form agrees: node_size 8 is group 8; without nodes the
  // largest divisor <= sqrt(p), and a node_size that does not split p into
  // several groups is ignored.
  ScheduleSpec spec;
  spec.collective = Collective::all_reduce;
  spec.algorithm = "hierarchical";
  spec.ranks = 16;
  spec.count = 1 << 20;
  CostParams c;
  c.alpha = 1e-6;
  c.beta = 1e-11;
  const auto cost = [&](int group, int node) {
    ScheduleSpec s = spec;
    s.group_size = group;
    s.node_size = node;
    return closed_form_cost(s, c).time;
  };
  EXPECT_DOUBLE_EQ(cost(0, 8), cost(8, 0));
  EXPECT_DOUBLE_EQ(cost(0, 0), cost(4, 0));
  EXPECT_DOUBLE_EQ(cost(0, 16), cost(4, 0));
  EXPECT_DOUBLE_EQ(cost(0, 3), cost(4, 0));
  EXPECT_DOUBLE_EQ(cost(2, 8), cost(2, 0));  // --group wins
}

// NCCL discards a collective of no elements (src/enqueue.cc, taskAppend):
// nccl-tests' all_gather rows below 128 bytes on 8 ranks (float) have count 0
// and measure about 0.9 us, the host's loop (dgx-h100 -g 8 table). The nccl
// family predicts 0 there, with no launch floor, while a call of 4 elements
// pays the 8 x 4.0 us floor of one thread launching on 8 GPUs. collkit's own
// schedules are not NCCL and keep the floor at count 0.
TEST(SimulateSweep, NcclDiscardsACallOfNoElements) {
  const auto topo = load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/dgx-h100.json");
  SimOptions sim;
  sim.launch_devices = 8;
  SweepSpec s = spec_of(Collective::all_gather, {"nccl", "nccl:ring", "ring"}, {8, 128}, 8);
  const std::vector<SweepPoint> points = simulate_sweep(s, *topo, sim);
  ASSERT_EQ(points.size(), 6u);
  for (int a = 0; a < 3; ++a) {
    const SweepPoint& none = points[static_cast<std::size_t>(2 * a)];
    const SweepPoint& two = points[static_cast<std::size_t>(2 * a + 1)];
    ASSERT_EQ(none.size.count, 0) << none.algorithm;
    ASSERT_EQ(two.size.count, 4) << two.algorithm;
    EXPECT_GE(two.seconds, 32e-6) << two.algorithm;
    if (a < 2) {
      EXPECT_EQ(none.seconds, 0) << none.algorithm;
      EXPECT_EQ(none.note, "none (no elements: NCCL discards the call)");
      EXPECT_EQ(two.note.rfind("ring/", 0), 0u) << two.note;
    } else {
      EXPECT_GE(none.seconds, 32e-6);
      EXPECT_EQ(none.note, "");
    }
  }
}

}  // namespace
}  // namespace collkit
