// The planner's subgroup view keeps the machine's metadata (protocols,
// name, the in-network switch), maps its ranks onto the group's members and
// their nodes, and keeps NCCL's declared graph only for the whole machine.
#include "planner/group_topology.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/topologies/metadata_check.h"

namespace collkit {
namespace {

TEST(GroupTopology, WholeMachineIsTheBase) {
  const std::unique_ptr<Topology> base = testing::rich_topology();
  const GroupTopology group(*base, 0, 1, base->num_ranks());
  testing::expect_carries(*base, group);
  EXPECT_EQ(group.num_ranks(), base->num_ranks());
}

TEST(GroupTopology, StridedGroupMapsRanksNodesAndRoutes) {
  const std::unique_ptr<Topology> base = testing::rich_topology();
  // One GPU per node, rail 3: ranks 3 and 11 of the 2 x 8 cluster.
  const GroupTopology group(*base, 3, 8, 2);
  testing::expect_carries(*base, group, 3, 8, /*whole_machine=*/false);
  EXPECT_EQ(group.num_ranks(), 2);
  EXPECT_EQ(group.ranks_per_node(2), 1);
  EXPECT_EQ(group.nccl.ring_channels, 0) << "NCCL searches a subgroup anew";
  EXPECT_EQ(group.nccl.nvls_heads, 0);
  std::vector<LinkId> want, got;
  base->route(3, 11, want);
  group.route(0, 1, got);
  EXPECT_EQ(got, want);
  EXPECT_EQ(group.endpoint(1).reduce_bw, base->endpoint(11).reduce_bw);

  // Eight GPUs of node 1: one node in the group.
  const GroupTopology node(*base, 8, 1, 8);
  EXPECT_EQ(node.ranks_per_node(8), 8);
  testing::expect_carries(*base, node, 8, 1, false);
}

}  // namespace
}  // namespace collkit
