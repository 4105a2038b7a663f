// What a topology view must carry from its base: a shipped two-node H100
// cluster (node structure, LL/LL128/Simple figures, NCCL's graph, an NVLS
// switch) with a cache model added, and a check that every metadata field,
// every node and every in-network port came through.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>

#include "core/json.h"
#include "topologies/topology.h"

namespace collkit::testing {

inline std::unique_ptr<Topology> rich_topology() {
  const std::string file = std::string(COLLKIT_SOURCE_DIR) + "/topologies/h100-cluster-2x8.json";
  // The shipped file with a cache size added: every kind of metadata at once.
  Json shipped = Json::parse(std::ifstream(file));
  shipped["endpoint"]["cache_mb"] = 64;
  return parse_topology(shipped.dump(), file);
}

// The base's metadata, field by field; `ranks` of the view map to the base's
// ranks first + i x stride (the planner's groups), identity otherwise.
inline void expect_carries(const Topology& base, const Topology& view, int first = 0,
                           int stride = 1, bool whole_machine = true) {
  EXPECT_EQ(view.name, base.name);
  EXPECT_EQ(view.description, base.description);
  EXPECT_EQ(view.file, base.file);
  EXPECT_EQ(view.sha256, base.sha256);
  EXPECT_EQ(view.device, base.device);
  EXPECT_EQ(view.default_protocol, base.default_protocol);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(view.protocols[i].set, base.protocols[i].set) << i;
    EXPECT_EQ(view.protocols[i].efficiency, base.protocols[i].efficiency) << i;
    EXPECT_EQ(view.protocols[i].base_latency, base.protocols[i].base_latency) << i;
    EXPECT_EQ(view.protocols[i].chunk_bytes, base.protocols[i].chunk_bytes) << i;
  }
  if (whole_machine) {
    EXPECT_EQ(view.nccl.ring_channels, base.nccl.ring_channels);
    EXPECT_EQ(view.nccl.ring_bw, base.nccl.ring_bw);
    EXPECT_EQ(view.nccl.tree_channels, base.nccl.tree_channels);
    EXPECT_EQ(view.nccl.tree_bw, base.nccl.tree_bw);
    EXPECT_EQ(view.nccl.nvls_heads, base.nccl.nvls_heads);
    EXPECT_EQ(view.nccl.nvls_bw, base.nccl.nvls_bw);
    EXPECT_EQ(view.nccl.runtime_channels, base.nccl.runtime_channels);
    EXPECT_EQ(view.nccl.gpu, base.nccl.gpu);
    EXPECT_EQ(view.nccl.net_latency_us, base.nccl.net_latency_us);
    EXPECT_EQ(view.warnings, base.warnings);
  }
  ASSERT_TRUE(view.has_nodes());
  for (int r = 0; r < view.num_ranks(); ++r)
    EXPECT_EQ(view.node_of(r), base.node_of(first + r * stride)) << "rank " << r;
  EXPECT_EQ(view.num_links(), base.num_links());
  EXPECT_EQ(view.num_endpoints(), base.num_endpoints());
  EXPECT_EQ(view.num_nodes(), base.num_nodes());
  int in_network = 0;
  for (LinkId id = 0; id < base.num_links(); ++id) {
    double want = 0, got = 0;
    const int side = base.in_network_side(id, want);
    EXPECT_EQ(view.in_network_side(id, got), side) << base.link_name(id);
    EXPECT_EQ(got, want) << base.link_name(id);
    EXPECT_EQ(view.link_name(id), base.link_name(id));
    EXPECT_EQ(view.link_class(id), base.link_class(id));
    in_network += side != 0 ? 1 : 0;
  }
  EXPECT_GT(in_network, 0) << "the base has an NVLS switch";
}

}  // namespace collkit::testing
