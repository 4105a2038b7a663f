// RCCL's cost model on the shipped MI300X machines (sim/rccl.h), against
// figures worked by hand from ROCm/rccl 2.21.5's src/graph/tuning.cc
// (tuning_model_5, baseLat, ncclTopoTuneModel, ncclTopoGetAlgoTime) and the
// machine's RCCL graph (28 rings of 12 GB/s, 56 run-time channels; the
// file's nccl block), and the rings collkit lays on an xGMI mesh.
#include "sim/rccl.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "sim/nccl.h"
#include "topologies/channels.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

const std::string kTopologies = std::string(COLLKIT_SOURCE_DIR) + "/topologies/";

std::unique_ptr<Topology> shipped(const std::string& name, int ranks = 0) {
  return load_topology(kTopologies + name + ".json", ranks);
}

std::optional<NcclModelEntry> entry(const NcclContext& ctx, Collective c, NcclVariant v,
                                    Protocol p) {
  return nccl_model_entry(ctx, c, v, p, DataType::float32, RedOp::sum);
}

// One node of 8 MI300X: the graph is 28 x 12 = 336 GB/s (7 xGMI links of 48),
// ring all_reduce takes 2(n-1) = 14 steps at n / nsteps = 8/14 of the bus
// bandwidth. By hand, tuning_model_5 on <= 2 nodes:
//   ring LL:     bus 336 x 0.08 = 26.88, alg 15.36; lat 12 + 14 x 0.8 = 23.2
//   ring Simple: bus 336 x 1.00 = 336,   alg 192;   lat 17 + 14 x 2.1 = 46.4
//   tree LL:     bus 336 x 0.06 = 20.16, alg x 0.5 = 10.08; lat 12 + 2 x 7 x 0.9 = 24.6
//   tree Simple: skipped on one gfx94x node; LL128: ratio 0, off on gfx942.
TEST(Rccl, OneNodeTableByHand) {
  const auto t = shipped("mi300x-8");
  const NcclContext ctx = nccl_context(*t, 8);
  ASSERT_TRUE(ctx.rccl);
  EXPECT_EQ(ctx.ring_channels, 28);
  EXPECT_NEAR(ctx.ring_channels * ctx.ring_bw, 336.0, 1e-9);
  EXPECT_EQ(ctx.nvls_heads, 0);
  EXPECT_EQ(ctx.collnet_heads, 0);

  const auto ring_ll = entry(ctx, Collective::all_reduce, NcclVariant::ring, Protocol::ll);
  ASSERT_TRUE(ring_ll);
  EXPECT_NEAR(ring_ll->latency_us, 23.2, 1e-9);
  EXPECT_NEAR(ring_ll->bandwidth_gbps, 26.88 * 8 / 14, 1e-9);
  const auto ring_simple = entry(ctx, Collective::all_reduce, NcclVariant::ring, Protocol::simple);
  ASSERT_TRUE(ring_simple);
  EXPECT_NEAR(ring_simple->latency_us, 46.4, 1e-9);
  EXPECT_NEAR(ring_simple->bandwidth_gbps, 192.0, 1e-9);
  const auto tree_ll = entry(ctx, Collective::all_reduce, NcclVariant::tree, Protocol::ll);
  ASSERT_TRUE(tree_ll);
  EXPECT_NEAR(tree_ll->latency_us, 24.6, 1e-9);
  EXPECT_NEAR(tree_ll->bandwidth_gbps, 10.08, 1e-9);
  EXPECT_FALSE(entry(ctx, Collective::all_reduce, NcclVariant::tree, Protocol::simple));
  EXPECT_FALSE(entry(ctx, Collective::all_reduce, NcclVariant::ring, Protocol::ll128));
  EXPECT_FALSE(entry(ctx, Collective::all_reduce, NcclVariant::nvls, Protocol::simple));
  // The tree is all_reduce's only: all_gather has the ring alone, n - 1 = 7
  // steps at n / 7: ring Simple 336 x 8/7 = 384, lat 17 + 7 x 2.1 = 31.7.
  EXPECT_FALSE(entry(ctx, Collective::all_gather, NcclVariant::tree, Protocol::ll));
  const auto ag = entry(ctx, Collective::all_gather, NcclVariant::ring, Protocol::simple);
  ASSERT_TRUE(ag);
  EXPECT_NEAR(ag->latency_us, 31.7, 1e-9);
  EXPECT_NEAR(ag->bandwidth_gbps, 384.0, 1e-9);
  // Broadcast, ring LL on one gfx94x node: x 1.65 (n steps, ratio n / n):
  // 26.88 x 1.65 = 44.352; same channels: lat 12 + one hop 0.8.
  const auto bc = entry(ctx, Collective::broadcast, NcclVariant::ring, Protocol::ll);
  ASSERT_TRUE(bc);
  EXPECT_NEAR(bc->bandwidth_gbps, 44.352, 1e-9);
  EXPECT_NEAR(bc->latency_us, 12.8, 1e-9);
}

// The per-size corrections (ncclTopoGetAlgoTime, HIP): the tree's by
// log2(bytes / 64) always, the ring's only across nodes. At 4 KiB (log 6)
// the tree LL's factor is 1.0, at 16 MiB (log 18) 0.1; the ring on one node
// is uncorrected.
TEST(Rccl, PerSizeCorrections) {
  const auto t = shipped("mi300x-8");
  const NcclContext ctx = nccl_context(*t, 8);
  const auto time = [&](NcclVariant v, Protocol p, std::int64_t bytes) {
    return nccl_model_time(ctx, Collective::all_reduce, v, p, bytes, DataType::float32, RedOp::sum);
  };
  EXPECT_NEAR(*time(NcclVariant::tree, Protocol::ll, 4096), 24.6 + 4096 / (1000 * 10.08), 1e-6);
  EXPECT_NEAR(*time(NcclVariant::tree, Protocol::ll, 16 << 20),
              24.6 + (16 << 20) / (1000 * 10.08 * 0.1), 1e-3);
  EXPECT_NEAR(*time(NcclVariant::ring, Protocol::simple, 1 << 30), 46.4 + (1 << 30) / 192000.0,
              1e-6);
}

// Two nodes of 8 (RoCE): the graph is one channel per NIC (8 x 47.4 GB/s),
// RCCL's bus bandwidth its total xGMI over the channels (336 / 8 = 42 a
// channel); ring Simple all_reduce: 30 steps, 2 x nodes = 4 of them across,
// the others at max(2.1, 3 x 2.0) = 6 us (an AMD host's network overhead x 3
// for Simple), across at 320 us: 17 + 26 x 6 + 4 x 320 = 1453 us.
TEST(Rccl, TwoNodesRingLatencyByHand) {
  const auto t = shipped("mi300x-cluster-2x8");
  const NcclContext ctx = nccl_context(*t, 16);
  ASSERT_TRUE(ctx.rccl);
  EXPECT_EQ(ctx.nodes, 2);
  const auto ring = entry(ctx, Collective::all_reduce, NcclVariant::ring, Protocol::simple);
  ASSERT_TRUE(ring);
  EXPECT_NEAR(ring->latency_us, 17 + 26 * 6.0 + 4 * 320.0, 1e-9);
  EXPECT_NEAR(ring->bandwidth_gbps, 336.0 * 16 / 30, 1e-9);
  // Tree LL: 12 + 2 x (7 x 0.9 + log2(2) x 10.5) = 45.6.
  const auto tree = entry(ctx, Collective::all_reduce, NcclVariant::tree, Protocol::ll);
  ASSERT_TRUE(tree);
  EXPECT_NEAR(tree->latency_us, 45.6, 1e-9);
  // Tree Simple runs across nodes: 17 + 2 x (7 x 2.3 + 25) = 99.2, bus x 0.11.
  const auto tree_simple = entry(ctx, Collective::all_reduce, NcclVariant::tree, Protocol::simple);
  ASSERT_TRUE(tree_simple);
  EXPECT_NEAR(tree_simple->latency_us, 99.2, 1e-9);
  EXPECT_NEAR(tree_simple->bandwidth_gbps, 336.0 * 0.11 * 0.5, 1e-9);
}

// Channels (getChannnelThreadInfo under HIP): one less while the call is
// below channels x 256 threads x the threshold (LL 8 a thread, x ranks on
// the ring; Simple 64); no planner.
TEST(Rccl, ChannelRule) {
  const auto t = shipped("mi300x-8");
  const NcclContext ctx = nccl_context(*t, 8);
  EXPECT_EQ(ctx.runtime_channels, 56);
  const auto ch = [&](std::int64_t bytes, Protocol p) {
    return nccl_channels(ctx, Collective::all_reduce, bytes, NcclVariant::ring, p);
  };
  // 256 x 64 = 16384 bytes a channel for ring LL (8 x 8 ranks) and Simple.
  EXPECT_EQ(ch(56 * 16384, Protocol::simple), 56);
  EXPECT_EQ(ch(56 * 16384 - 1, Protocol::simple), 55);
  EXPECT_EQ(ch(65536, Protocol::ll), 4);
  EXPECT_EQ(ch(65535, Protocol::ll), 3);
  EXPECT_EQ(ch(8, Protocol::simple), 1);
  // The tree's LL threshold is not multiplied by the ranks: 256 x 8 = 2048.
  EXPECT_EQ(nccl_channels(ctx, Collective::all_reduce, 4 * 2048, NcclVariant::tree, Protocol::ll),
            4);
}

// The library follows the GPU: "rccl" is refused on an NVIDIA machine with
// the reason, "nccl" on an AMD machine is RCCL's choice.
TEST(Rccl, LibraryFollowsTheGpu) {
  const auto h100 = shipped("dgx-h100");
  const NcclContext nv = nccl_context(*h100, 8);
  EXPECT_FALSE(nv.rccl);
  EXPECT_TRUE(is_nccl_algorithm("rccl:ring"));
  EXPECT_TRUE(is_rccl_algorithm("rccl"));
  EXPECT_FALSE(is_rccl_algorithm("nccl"));
  EXPECT_FALSE(nccl_applies(nv, Collective::all_reduce, "rccl", DataType::float32, RedOp::sum));
  try {
    check_library(nv, "rccl:ring");
    FAIL() << "rccl accepted on H100";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("use nccl:ring"), std::string::npos) << e.what();
  }
  const auto mi = shipped("mi300x-8");
  const NcclContext amd = nccl_context(*mi, 8);
  EXPECT_NO_THROW(check_library(amd, "rccl"));
  EXPECT_TRUE(nccl_applies(amd, Collective::all_reduce, "rccl", DataType::float32, RedOp::sum));
  // At 8 bytes RCCL's model picks the ring with LL (23.2 us against the
  // tree's 24.6), one channel.
  const NcclChoice c =
      nccl_choose(amd, Collective::all_reduce, 8, DataType::float32, RedOp::sum, std::nullopt);
  EXPECT_EQ(c.variant, NcclVariant::ring);
  EXPECT_EQ(c.protocol, Protocol::ll);
  EXPECT_EQ(c.channels, 1);
}

// Rings on a mesh: every directed xGMI link carries as many run-time
// channels as any other (56 channels over 56 arcs, each ring 8 arcs: 8 a
// link), counted from the plan's orders and lanes, not from how they were
// built; the graph is a whole number of rounds of the 7 arc-disjoint cycles.
TEST(Rccl, MeshRingsLoadEveryLinkAlike) {
  const auto t = shipped("mi300x-8");
  const ChannelSearch s = search_channels(*t, 8);
  EXPECT_EQ(s.graph_channels % 7, 0);
  EXPECT_EQ(s.runtime_channels, 56);
  std::map<std::pair<int, int>, int> use;
  for (const ChannelPlan::Ring& r : s.plan.rings) {
    ASSERT_EQ(r.order.size(), 8u);
    EXPECT_EQ(std::set<int>(r.order.begin(), r.order.end()).size(), 8u);
    for (std::size_t i = 0; i < r.order.size(); ++i)
      use[{r.order[i], r.order[(i + 1) % r.order.size()]}] += r.lanes;
  }
  EXPECT_EQ(use.size(), 56u);
  for (const auto& [arc, n] : use) EXPECT_EQ(n, 8) << arc.first << "->" << arc.second;
}

// Across two mesh nodes: every channel leaves each node by a device of its
// own, so the 8 NICs (rails) carry one graph channel each, and inside a
// node no xGMI link carries two channels' paths.
TEST(Rccl, MeshRingsAcrossNodesUseEveryRailOnce) {
  const auto t = shipped("mi300x-cluster-2x8");
  const ChannelSearch s = search_channels(*t, 16);
  ASSERT_EQ(s.graph_channels, 8);
  std::map<int, int> exits;
  std::map<std::pair<int, int>, int> inside;
  for (const ChannelPlan::Ring& r : s.plan.rings) {
    ASSERT_EQ(r.order.size(), 16u);
    for (std::size_t i = 0; i < r.order.size(); ++i) {
      const int a = r.order[i], b = r.order[(i + 1) % r.order.size()];
      if (t->node_of(a) != t->node_of(b))
        ++exits[a];
      else
        ++inside[{a, b}];
    }
  }
  EXPECT_EQ(exits.size(), 16u);  // every device of both nodes, once
  for (const auto& [dev, n] : exits) EXPECT_EQ(n, 1) << dev;
  for (const auto& [arc, n] : inside) EXPECT_EQ(n, 1) << arc.first << "->" << arc.second;
}

}  // namespace
}  // namespace collkit
