// NCCL's per-channel limits of each protocol in the simulation of the nccl
// family (sim/nccl.h, nccl_rank_rate; docs/NCCL.md "Per-channel limits"):
// the figures of src/graph/tuning.cc per release and machine, worked by
// hand, and a ring whose rank rate is below its links taking its bytes over
// that rate exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "algorithms/registry.h"
#include "core/nccl_version.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

std::unique_ptr<Topology> shipped(const std::string& name, int ranks = 0) {
  return load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/" + name + ".json", ranks);
}

NcclVersion version(const std::string& text) { return parse_nccl_version(text).value(); }

double rate(const NcclContext& ctx, NcclVariant v, Protocol p, int channels) {
  return nccl_rank_rate(ctx, NcclChoice{v, p, channels, 0});
}

// One DGX H100 (ring graph 12 channels, 24 at run time), NCCL 2.26.2
// (tuning.cc, v2.26.2-1): llMaxBw for Hopper on one node 141 GB/s;
// perChMaxRingLL128Bw 36.7 a graph channel.
TEST(NcclRankRate, OneH100NodeByProtocolAndChannels) {
  const std::unique_ptr<Topology> t = shipped("dgx-h100");
  const NcclContext ctx = nccl_context(*t, 8, version("2.26.2"));
  ASSERT_EQ(ctx.ring_channels, 12);
  ASSERT_EQ(ctx.runtime_channels, 24);
  EXPECT_DOUBLE_EQ(rate(ctx, NcclVariant::ring, Protocol::ll, 24), 141e9);
  EXPECT_DOUBLE_EQ(rate(ctx, NcclVariant::ring, Protocol::ll, 4), 141e9);  // not per channel
  EXPECT_DOUBLE_EQ(rate(ctx, NcclVariant::ring, Protocol::ll128, 24), 12 * 36.7e9);
  // 8 of the 24 run-time channels: a third of the graph's 12 x 36.7.
  EXPECT_DOUBLE_EQ(rate(ctx, NcclVariant::ring, Protocol::ll128, 8), 4 * 36.7e9);
  // No figure: the ring with Simple, NVLS.
  EXPECT_EQ(rate(ctx, NcclVariant::ring, Protocol::simple, 24), 0);
  EXPECT_EQ(rate(ctx, NcclVariant::nvls, Protocol::simple, 16), 0);
  // Before 2.21 one H100 node's llMaxBw was Ampere's 87.7 (v2.20.3-1).
  const NcclContext old = nccl_context(*t, 8, version("2.20.3"));
  EXPECT_DOUBLE_EQ(rate(old, NcclVariant::ring, Protocol::ll, 24), 87.7e9);
}

// A DGX A100 (12 x 20 GB/s, 24 at run time): perChMaxRingLL128Bw 20.0.
TEST(NcclRankRate, OneA100Node) {
  const std::unique_ptr<Topology> t = shipped("dgx-a100");
  const NcclContext ctx = nccl_context(*t, 8, version("2.26.2"));
  ASSERT_EQ(ctx.ring_channels, 12);
  EXPECT_DOUBLE_EQ(rate(ctx, NcclVariant::ring, Protocol::ll128, ctx.runtime_channels),
                   12 * 20.0e9);
  EXPECT_DOUBLE_EQ(rate(ctx, NcclVariant::ring, Protocol::ll, ctx.runtime_channels), 87.7e9);
}

// Across nodes of 8 H100 (tree graph 8 channels of 48 GB/s, 16 at run
// time), NCCL 2.26.2, Intel host: perChMaxTreeBw 41.4 on 2 nodes and 36.0
// beyond, perChMaxTreeLL128Bw 36.7 / 29.0, llMaxBw 39.0 / 20.4.
TEST(NcclRankRate, TreeAcrossNodes) {
  const std::unique_ptr<Topology> two = shipped("h100-cluster-2x8");
  const NcclContext c2 = nccl_context(*two, 16, version("2.26.2"));
  ASSERT_EQ(c2.tree_channels, 8);
  ASSERT_EQ(c2.runtime_channels, 16);
  // Simple: 8 x 41.4. LL: that / 3.8 = 87.2, above llMaxBw's 39.
  EXPECT_DOUBLE_EQ(rate(c2, NcclVariant::tree, Protocol::simple, 16), 8 * 41.4e9);
  EXPECT_DOUBLE_EQ(rate(c2, NcclVariant::tree, Protocol::ll, 16), 39.0e9);
  // LL128: min(8 x 41.4 x 120/128 = 310.5, 8 x 36.7 = 293.6).
  EXPECT_DOUBLE_EQ(rate(c2, NcclVariant::tree, Protocol::ll128, 16), 8 * 36.7e9);
  const std::unique_ptr<Topology> four = shipped("h100-cluster-4x8");
  const NcclContext c4 = nccl_context(*four, 32, version("2.26.2"));
  ASSERT_EQ(c4.tree_channels, 8);
  EXPECT_DOUBLE_EQ(rate(c4, NcclVariant::tree, Protocol::simple, 16), 8 * 36.0e9);
  EXPECT_DOUBLE_EQ(rate(c4, NcclVariant::tree, Protocol::ll, 16), 20.4e9);
  // min(8 x 36 x 120/128 = 270, 8 x 29 = 232); on 8 run-time channels half.
  EXPECT_DOUBLE_EQ(rate(c4, NcclVariant::tree, Protocol::ll128, 16), 8 * 29.0e9);
  EXPECT_DOUBLE_EQ(rate(c4, NcclVariant::tree, Protocol::ll128, 8), 4 * 29.0e9);
  // NVLSTree has no per-channel figure in 2.26.
  EXPECT_EQ(rate(c4, NcclVariant::nvls_tree, Protocol::simple, 16), 0);
}

// nccl:ring all_gather with LL128 on 8 of a DGX H100's channels: each rank
// may send 4 x 36.7 = 146.8 GB/s of data, where its NVSwitch port carries
// 370.8 x 0.9375 = 347.6. Inside a node each of the 7 steps moves a whole
// block (docs/NCCL.md, "Pipelines"), so doubling the size adds 7/8 of it
// per rank at exactly that rate; without the limit, at the port's.
TEST(NcclRankRate, ARingOnFewChannelsRunsAtTheLimit) {
  const std::unique_ptr<Topology> t = shipped("dgx-h100");
  const NcclContext ctx = nccl_context(*t, 8, version("2.26.2"));
  const NcclChoice choice{NcclVariant::ring, Protocol::ll128, 8, 0};
  const auto time = [&](std::int64_t bytes, bool limited) {
    ScheduleSpec base;
    base.collective = Collective::all_gather;
    base.ranks = 8;
    base.elem_size = 4;
    base.count = bytes / 4;
    ScheduleSpec spec = nccl_schedule_spec(base, ctx, choice, *t);
    if (!limited) spec.rank_rate = 0;
    return simulate(*make_schedule(spec), *t).time;
  };
  constexpr std::int64_t S = 64 << 20;
  const double limited = time(2 * S, true) - time(S, true);
  EXPECT_NEAR(limited, 7.0 / 8 * S / 146.8e9, 1e-9 * limited);
  const double free = time(2 * S, false) - time(S, false);
  EXPECT_NEAR(free, 7.0 / 8 * S / (370.8e9 * 0.9375), 1e-9 * free);
}

}  // namespace
}  // namespace collkit
