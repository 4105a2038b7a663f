// The tree's latencies (docs/NCCL.md, "Latencies by algorithm"): a GPU
// topology's protocol latencies are NCCL's ring figures, and the simulated
// tree scales them by NCCL's tree / ring ratio of its version's table, per
// hop kind (NVLink, network) and for the base. A call of one element is all
// latency, so its simulated time is NCCL's own tree formula (tuning.cc):
//   base + 2 * ((GPUs a node - 1) * NVLink hop + log2(nodes) * network hop),
// worked by hand below from NCCL 2.26.2's table: tree base LL 6.8, LL128
// 14.0, Simple 8.4; tree NVLink hop 0.6 / 1.25 / 4.0; tree network hop
// 5.0 / 8.5 / 14.0 us.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/registry.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

std::unique_ptr<Topology> cluster(int nodes) {
  return load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/h100-cluster-16x8.json@" +
                       std::to_string(nodes) + "x8");
}

double simulated_us(const Topology& topo, const NcclContext& ctx, NcclVariant variant,
                    Protocol protocol, std::int64_t count) {
  ScheduleSpec base;
  base.collective = Collective::all_reduce;
  base.ranks = topo.num_ranks();
  base.count = count;
  NcclChoice choice;
  choice.variant = variant;
  choice.protocol = protocol;
  choice.channels = 1;
  return 1e6 * simulate(*make_schedule(nccl_schedule_spec(base, ctx, choice, topo)), topo).time;
}

struct Case {
  Protocol protocol;
  double base, nvlink_hop, net_hop;  // NCCL 2.26.2's tree figures, us
};

TEST(NcclTreeLatency, OneElementIsNcclsTreeFormula) {
  const Case cases[] = {{Protocol::ll, 6.8, 0.6, 5.0},
                        {Protocol::ll128, 14.0, 1.25, 8.5},
                        {Protocol::simple, 8.4, 4.0, 14.0}};
  for (int nodes : {2, 4, 8, 16}) {
    const auto topo = cluster(nodes);
    const NcclContext ctx = nccl_context(*topo, topo->num_ranks(), NcclVersion{2, 26, 2});
    for (const Case& c : cases) {
      const double expected =
          c.base + 2 * (7 * c.nvlink_hop + std::log2(static_cast<double>(nodes)) * c.net_hop);
      const double t = simulated_us(*topo, ctx, NcclVariant::tree, c.protocol, 1);
      // One 4-byte element adds nanoseconds of transfer to the latency.
      EXPECT_NEAR(t, expected, 0.05)
          << nodes << " nodes, " << to_string(c.protocol) << ": simulated " << t;
      // NCCL's own estimate of the same call, from its cost model.
      const std::optional<double> nccl =
          nccl_model_time(ctx, Collective::all_reduce, NcclVariant::tree, c.protocol, 4,
                          DataType::float32, RedOp::sum);
      ASSERT_TRUE(nccl.has_value());
      EXPECT_NEAR(t, *nccl, 0.05) << nodes << " nodes, " << to_string(c.protocol);
    }
  }
}

// The ring keeps the topology's own figures (NCCL's ring row); the tree
// pays NCCL's tree figure minus the ring's, per hop and at the start.
TEST(NcclTreeLatency, TreePaysNcclsDifferenceOverTheRing) {
  const auto topo = cluster(2);
  const NcclContext ctx = nccl_context(*topo, topo->num_ranks(), NcclVersion{2, 26, 2});
  ScheduleSpec base;
  base.collective = Collective::all_reduce;
  base.ranks = topo->num_ranks();
  base.count = 16;
  NcclChoice ring;
  ring.variant = NcclVariant::ring;
  ring.protocol = Protocol::ll;
  ring.channels = 1;
  const ScheduleSpec spec = nccl_schedule_spec(base, ctx, ring, *topo);
  EXPECT_EQ(spec.hop_extra_latency[0], 0.0);
  EXPECT_EQ(spec.hop_extra_latency[1], 0.0);
  EXPECT_EQ(spec.base_extra_latency, 0.0);
  // The tree with LL: NVLink hops the same (0.6 both), network hops 5.0
  // against 2.7, base 6.8 against 6.6 (NCCL 2.26.2).
  NcclChoice tree = ring;
  tree.variant = NcclVariant::tree;
  const ScheduleSpec t = nccl_schedule_spec(base, ctx, tree, *topo);
  EXPECT_NEAR(t.hop_extra_latency[0], 0.0, 1e-15);
  EXPECT_NEAR(t.hop_extra_latency[1], 2.3e-6, 1e-15);
  EXPECT_NEAR(t.base_extra_latency, 0.2e-6, 1e-15);
  // LL128: NVLink 1.25 against 1.9 (the tree's is lower), network 8.5 against 4.0.
  tree.protocol = Protocol::ll128;
  const ScheduleSpec t128 = nccl_schedule_spec(base, ctx, tree, *topo);
  EXPECT_NEAR(t128.hop_extra_latency[0], -0.65e-6, 1e-15);
  EXPECT_NEAR(t128.hop_extra_latency[1], 4.5e-6, 1e-15);
  EXPECT_NEAR(t128.base_extra_latency, 0.0, 1e-15);
}

}  // namespace
}  // namespace collkit
