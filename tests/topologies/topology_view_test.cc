// TopologyView forwards every virtual of Topology to its base and carries
// the base's metadata whole: a view that overrides nothing is the base.
#include "topologies/topology_view.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/topologies/metadata_check.h"

namespace collkit {
namespace {

TEST(TopologyView, CarriesEveryFieldAndForwardsEveryQuery) {
  const std::unique_ptr<Topology> base = testing::rich_topology();
  ASSERT_GT(base->endpoint(0).cache_bytes, 0);
  const TopologyView view(*base);
  testing::expect_carries(*base, view);
  EXPECT_EQ(view.num_ranks(), base->num_ranks());
  EXPECT_EQ(view.num_link_classes(), base->num_link_classes());
  for (int r = 0; r < base->num_ranks(); ++r) {
    EXPECT_EQ(view.endpoint(r).cache_bytes, base->endpoint(r).cache_bytes);
    EXPECT_EQ(view.endpoint(r).launch, base->endpoint(r).launch);
    EXPECT_EQ(view.endpoint(r).pipelined, base->endpoint(r).pipelined);
  }
  std::vector<LinkId> want, got;
  for (int s = 0; s < base->num_ranks(); ++s)
    for (int d = 0; d < base->num_ranks(); ++d) {
      if (s == d) continue;
      base->route(s, d, want);
      view.route(s, d, got);
      EXPECT_EQ(got, want) << s << " -> " << d;
    }
  for (LinkId id = 0; id < base->num_links(); ++id) {
    EXPECT_EQ(view.link(id).bandwidth, base->link(id).bandwidth);
    EXPECT_EQ(view.link(id).latency, base->link(id).latency);
  }
}

// A field added to TopologyMetadata is carried without touching the view:
// the copy is of the whole struct.
TEST(TopologyView, CopiesTheMetadataStructWhole) {
  const std::unique_ptr<Topology> base = testing::rich_topology();
  base->rank_node.assign(static_cast<std::size_t>(base->num_ranks()), 3);
  base->default_protocol = Protocol::ll128;
  const TopologyView view(*base);
  EXPECT_EQ(view.rank_node, base->rank_node);
  EXPECT_EQ(view.default_protocol, Protocol::ll128);
}

}  // namespace
}  // namespace collkit
