// The search's step bound (planner/planner.h, reduction_bound_seconds) and
// the pruning it allows (docs/PLANNER.md, "Search"):
//  - the bound of a gradient reduction is never above what the simulation
//    gives, for NCCL's choice and collkit's ring, over a sweep of groups
//    (one rank per node up to whole nodes) and sizes on the SC21 cluster,
//    nor above the planner's line through two simulations beyond 256 MiB;
//  - the pruned search (layouts skipped on their bound, and all layouts in
//    one pass when the weights alone need ZeRO-3) returns the same plan as
//    the unpruned one (every layout that fits its memory bound priced,
//    layouts without pipelining first) on small cases.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/registry.h"
#include "planner/device.h"
#include "planner/group_topology.h"
#include "planner/planner.h"
#include "planner_test_util.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "sim/sweep.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

using testing_planner::source;

// The A100 cluster's exits by hand: each GPU's own NIC at 24 GB/s
// (rail-optimised), so a group with r members on a node leaves it at r x 24.
TEST(SearchBound, NodeExitIsTheMembersNics) {
  const auto topo = load_topology(source("topologies/a100-cluster-384x8.json"));
  const NodeExit all = node_exit(*topo, 1, 64);
  EXPECT_EQ(all.members, 8);
  EXPECT_DOUBLE_EQ(all.bandwidth, 8 * 24e9);
  const NodeExit rail = node_exit(*topo, 8, 16);
  EXPECT_EQ(rail.members, 1);
  EXPECT_DOUBLE_EQ(rail.bandwidth, 24e9);
  const NodeExit half = node_exit(*topo, 2, 32);
  EXPECT_EQ(half.members, 4);
  EXPECT_DOUBLE_EQ(half.bandwidth, 4 * 24e9);
  // One node: nothing leaves, no bound.
  EXPECT_EQ(node_exit(*topo, 1, 8).bandwidth, 0);
  // 1 GiB over 64 ranks on 8 nodes: 56/64 of it out at 192 GB/s.
  EXPECT_DOUBLE_EQ(reduction_bound_seconds(all, 1ll << 30, 64),
                   (1ll << 30) * 56.0 / 64 / (8 * 24e9));
}

double simulated(const Topology& topo, Collective c, std::int64_t bytes, int stride, int size,
                 const std::string& algorithm) {
  GroupTopology group(topo, 0, stride, size);
  ScheduleSpec spec;
  spec.collective = c;
  spec.ranks = size;
  spec.elem_size = 2;
  spec.count = bytes / 2;
  if (algorithm == "nccl") {
    // As the planner prices it (--collectives nccl): NCCL's choice on the
    // group's ranks, that schedule simulated.
    spec.algorithm = "nccl";
    const NcclContext ctx = nccl_context(group, size, std::nullopt);
    std::optional<NcclChoice> instead;
    const NcclChoice choice = nccl_runnable_choice(ctx, c, spec.count * 2, DataType::half,
                                                   RedOp::sum, std::nullopt, &instead);
    return simulate(*make_schedule(nccl_schedule_spec(spec, ctx, choice, group)), group, {}).time;
  }
  spec.algorithm = algorithm;
  spec.model = cost_params_of(group, size);
  spec.node_size = group.ranks_per_node(size);
  return simulate(*make_schedule(spec), group, {}).time;
}

TEST(SearchBound, ReductionBoundNeverBeatsTheSimulation) {
  const auto topo = load_topology(source("topologies/a100-cluster-384x8.json"));
  const std::pair<int, int> groups[] = {{1, 64}, {2, 32}, {4, 16}, {8, 8}, {8, 16}, {1, 16}};
  int checked = 0;
  for (const auto& [stride, size] : groups) {
    const NodeExit exit = node_exit(*topo, stride, size);
    ASSERT_GT(exit.bandwidth, 0) << stride << " " << size;
    for (Collective c : {Collective::reduce_scatter, Collective::all_reduce})
      for (std::int64_t bytes : {1ll << 20, 16ll << 20, 128ll << 20})
        for (const char* algo : {"nccl", "ring"}) {
          const double bound = reduction_bound_seconds(exit, bytes, size);
          const double sim = simulated(*topo, c, bytes, stride, size, algo);
          std::printf(
              "%-14s %-4s stride %d x %2d  %9lld B  bound %10.1f us  simulated %10.1f us"
              "  (%.2f)\n",
              std::string(to_string(c)).c_str(), algo, stride, size, static_cast<long long>(bytes),
              bound * 1e6, sim * 1e6, bound / sim);
          EXPECT_GT(bound, 0);
          EXPECT_LE(bound, sim) << to_string(c) << " " << algo << " " << stride << "x" << size
                                << " " << bytes;
          ++checked;
        }
  }
  EXPECT_EQ(checked, 72);
}

// Above 256 MiB the planner prices a collective on the line through its
// simulations at 128 and 256 MiB (planner.cc, kSimCap), and a reduction
// never below the bound. For NCCL's reduce_scatter (the ring) that line
// rises at least as fast as the bound, equally fast at one member per
// node. NCCL's all_reduce over whole nodes is tree/LL128 at 128 MiB and
// ring/LL128 at 256 MiB, a line that rises slower than the bound (here it
// falls): the planner takes the bound there.
TEST(SearchBound, ExtrapolatedPricesRiseFasterThanTheBound) {
  const auto topo = load_topology(source("topologies/a100-cluster-384x8.json"));
  const std::pair<int, int> groups[] = {{1, 64}, {2, 32}, {4, 16}, {8, 8}, {8, 16}, {1, 16}};
  const std::int64_t lo = 128ll << 20, hi = 256ll << 20;
  for (const auto& [stride, size] : groups) {
    const NodeExit exit = node_exit(*topo, stride, size);
    for (Collective c : {Collective::reduce_scatter, Collective::all_reduce}) {
      const double t_lo = simulated(*topo, c, lo, stride, size, "nccl");
      const double t_hi = simulated(*topo, c, hi, stride, size, "nccl");
      const double slope = (t_hi - t_lo) / static_cast<double>(hi - lo);
      const double bound = reduction_bound_seconds(exit, hi, size) / static_cast<double>(hi);
      EXPECT_LE(reduction_bound_seconds(exit, hi, size), t_hi);
      if (c == Collective::reduce_scatter) {
        EXPECT_GE(slope, bound * (1 - 1e-9)) << stride << "x" << size;
      } else if (stride == 1 && size == 64) {
        EXPECT_LT(slope, bound) << "all_reduce " << stride << "x" << size;
      }
    }
  }
}

struct Case {
  const char* name;
  const char* model;
  int ranks;
  std::int64_t batch;
  double memory;     // device memory, bytes
  bool overlap;      // gradient reductions overlapped with the backward
  bool needs_zero3;  // the weights alone fill every flat layout
};

TEST(SearchBound, PrunedSearchReturnsTheUnprunedPlan) {
  const auto topo = load_topology(source("topologies/a100-cluster-384x8.json"));
  const Device a100 = load_device(source("devices/a100-sxm4-80gb.json"));
  // GPT 1.7B: 3.4 GB of 16-bit weights. GPT 7.5B: 15 GB, 1.9 GB at t 8,
  // so that with 1.8 GB usable no layout without pipelining holds them
  // unsharded (the one-pass search) and pipelined ones fit.
  const Case cases[] = {
      {"1.7B, 80 GB, no overlap", "gpt-1.7b", 64, 64, 80e9, false, false},
      {"1.7B, 80 GB, overlap", "gpt-1.7b", 64, 64, 80e9, true, false},
      {"1.7B, 3 GB, no overlap", "gpt-1.7b", 64, 128, 3e9, false, false},
      {"7.5B, 1.8 GB, no overlap", "gpt-7.5b", 128, 128, 1.8e9, false, true},
      {"7.5B, 1.8 GB, overlap", "gpt-7.5b", 128, 128, 1.8e9, true, true},
  };
  for (const Case& k : cases) {
    const Model m = load_model(source(std::string("models/sc21/") + k.model + ".json"));
    PlanOptions o;
    o.ranks = k.ranks;
    o.batch = k.batch;
    o.dtype = DataType::half;
    o.device = a100;
    o.device_memory = k.memory;
    o.memory_reserve = 0;
    o.nccl = true;
    o.step.attention = AttentionKernel::unfused;
    o.step.overlap_p2p = false;
    o.step.overlap_param_gather = false;
    o.step.overlap_grad_reduce = k.overlap;
    o.step.bucket_bytes = -1;
    o.jobs = 1;
    const PlanResult pruned = make_plan(m, *topo, o);
    o.prune = false;
    const PlanResult full = make_plan(m, *topo, o);
    const Layout& a = pruned.plan.layout;
    const Layout& b = full.plan.layout;
    std::printf(
        "%-20s pruned: %lld layouts priced, t %d p %d d %d b %lld v %d %s, %.4f s, %s; "
        "unpruned: %lld layouts priced, %.4f s\n",
        k.name, static_cast<long long>(pruned.layouts_priced), a.tp, a.pp, a.dp,
        static_cast<long long>(a.micro_batch), a.virtual_stages,
        std::string(to_string(a.recompute)).c_str(), pruned.plan.step_time(),
        pruned.fits ? "fits" : "does not fit", static_cast<long long>(full.layouts_priced),
        full.plan.step_time());
    ASSERT_TRUE(full.fits) << k.name;
    EXPECT_EQ(pruned.fits, full.fits) << k.name;
    EXPECT_EQ(a.tp, b.tp) << k.name;
    EXPECT_EQ(a.pp, b.pp) << k.name;
    EXPECT_EQ(a.dp, b.dp) << k.name;
    EXPECT_EQ(a.micro_batch, b.micro_batch) << k.name;
    EXPECT_EQ(a.virtual_stages, b.virtual_stages) << k.name;
    EXPECT_EQ(a.recompute, b.recompute) << k.name;
    EXPECT_EQ(a.sequence_parallel, b.sequence_parallel) << k.name;
    EXPECT_DOUBLE_EQ(pruned.plan.step_time(), full.plan.step_time()) << k.name;
    EXPECT_DOUBLE_EQ(pruned.plan.memory.total(), full.plan.memory.total()) << k.name;
    EXPECT_LE(pruned.layouts_priced, full.layouts_priced) << k.name;
    // The one-pass cases: the 16-bit weights at t 8 are more than the
    // memory (0 reserve), as planned.
    if (k.needs_zero3) {
      EXPECT_GT(static_cast<double>(m.total_params()) * 2 / 8, k.memory);
    }
  }
}

}  // namespace
}  // namespace collkit
