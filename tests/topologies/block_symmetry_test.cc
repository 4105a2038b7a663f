// Routes of the hierarchical generator by block symmetry (one search per
// node of server 0, mapped to the other servers by swapping them) against
// the routes of a Dijkstra search per source (GraphTopology::
// set_block_symmetry(false)), every (src, dst) pair, on clusters of several
// sizes and shapes; and the claims finalize() must refuse.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "route_check.h"
#include "topologies/builders.h"

namespace collkit {
namespace {

using testing::load_text;

std::string hier(const std::string& body) {
  return R"({"generator": {"kind": "hierarchical", )" + body + "}}";
}

const GraphTopology& graph(const Topology& t) { return dynamic_cast<const GraphTopology&>(t); }

// Every route of the topology `load` gives, with the blocks, equals the
// route of a search per source, link for link; loaded twice so no search is
// shared.
void expect_routes_equal(const std::function<std::unique_ptr<Topology>()>& load,
                         const std::string& json, bool symmetric) {
  auto with = load();
  auto without = load();
  ASSERT_EQ(graph(*with).block_symmetric(), symmetric) << json;
  const_cast<GraphTopology&>(graph(*without)).set_block_symmetry(false);
  const int p = with->num_ranks();
  std::vector<LinkId> a, b;
  int compared = 0;
  // Sources in an order that visits servers out of turn (their searches are
  // shared, the first one of a server need not be server 0's).
  for (int i = 0; i < p; ++i) {
    const int s = (i * 7 + 3) % p;
    for (int d = 0; d < p; ++d) {
      with->route(s, d, a);
      without->route(s, d, b);
      ASSERT_EQ(a, b) << s << " -> " << d << " in " << json;
      ++compared;
    }
  }
  EXPECT_EQ(compared, p * p);
}

void expect_routes_equal(const std::string& json, bool symmetric = true) {
  expect_routes_equal([&] { return load_text(json); }, json, symmetric);
}

const char* kIntraSwitch =
    R"("intra": {"kind": "switch", "bandwidth_gbps": 370.8, "latency_us": 0.3,
                 "in_network": {"bandwidth_gbps": 272}})";
const char* kInterRails =
    R"("inter": {"kind": "switch", "bandwidth_gbps": 48, "latency_us": 1.35})";

TEST(BlockSymmetry, RailOptimizedClusters) {
  for (int nodes : {2, 3, 5, 16}) {
    expect_routes_equal(hier(R"("nodes": )" + std::to_string(nodes) +
                             R"(, "devices_per_node": 8, )" + kIntraSwitch +
                             R"(, "nics_per_node": 8, "rail_optimized": true, )" + kInterRails));
  }
}

TEST(BlockSymmetry, OneSwitchSharedNicsAndSharp) {
  expect_routes_equal(hier(R"("nodes": 6, "devices_per_node": 8, )" + std::string(kIntraSwitch) +
                           R"(, "nics_per_node": 4, "nic_latency_us": 0.5,
      "inter": {"kind": "switch", "bandwidth_gbps": 24, "latency_us": 1.35,
                "in_network": {"bandwidth_gbps": 20}})"));
  // Rails with fewer NICs than GPUs: GPUs 2k and 2k + 1 share rail k.
  expect_routes_equal(hier(R"("nodes": 4, "devices_per_node": 8, )" + std::string(kIntraSwitch) +
                           R"(, "nics_per_node": 2, "rail_optimized": true, )" + kInterRails));
}

// Equal-cost paths the tie-break decides: a ring of 8 inside a node (GPU 4
// is four hops either way round), and zero-latency NIC links.
TEST(BlockSymmetry, RingsAndFullyConnectedInsideNodes) {
  expect_routes_equal(hier(R"("nodes": 4, "devices_per_node": 8,
      "intra": {"kind": "ring", "bandwidth_gbps": 50, "latency_us": 0.5},
      "nics_per_node": 2, "rail_optimized": true, )" +
                           std::string(kInterRails)));
  expect_routes_equal(hier(R"("nodes": 5, "devices_per_node": 4,
      "intra": {"kind": "fully_connected", "bandwidth_gbps": 100, "latency_us": 0},
      "nics_per_node": 4, "nic_latency_us": 0,
      "inter": {"kind": "switch", "bandwidth_gbps": 25, "latency_us": 0})"));
}

// One GPU per server: the GPU's only link is to its NIC, so routes start at
// the NIC (a node of the server's block).
TEST(BlockSymmetry, OneDevicePerNode) {
  expect_routes_equal(hier(R"("nodes": 9, "devices_per_node": 1, )" + std::string(kInterRails)));
}

TEST(BlockSymmetry, ShippedClusterFile) {
  const std::string file = "topologies/h100-cluster-16x8.json";
  expect_routes_equal([&] { return load_topology(file); }, file, true);
}

// Servers on a fat tree sit on different edge switches: swapping two is no
// symmetry, finalize() refuses the blocks and routes search per source.
TEST(BlockSymmetry, FatTreeBetweenNodesFallsBack) {
  expect_routes_equal(hier(R"("nodes": 4, "devices_per_node": 4, )" + std::string(kIntraSwitch) +
                           R"(, "nics_per_node": 4, "rail_optimized": true,
      "inter": {"kind": "fat_tree", "bandwidth_gbps": 48, "latency_us": 1.35})"),
                      false);
  // One server: nothing to swap.
  auto one = load_text(hier(R"("nodes": 1, "devices_per_node": 8, )" + std::string(kIntraSwitch)));
  EXPECT_FALSE(graph(*one).block_symmetric());
}

// Two servers, each a GPU pair on a switch, joined by one fabric switch.
std::unique_ptr<GraphTopology> pair_of_servers(double second_bw, bool cross_link) {
  auto g = std::make_unique<GraphTopology>();
  LinkProps fast{100e9, 1e-6};
  LinkProps slow{second_bw, 2e-6};
  std::vector<int> owner;
  for (int n = 0; n < 2; ++n) {
    const int a = g->add_node("a" + std::to_string(n), false);
    const int b = g->add_node("b" + std::to_string(n), false);
    const int sw = g->add_node("s" + std::to_string(n), true);
    g->add_cable(a, sw, fast);
    g->add_cable(b, sw, fast);
    owner.insert(owner.end(), {n, n, n});
  }
  const int fabric = g->add_node("fabric", true);
  owner.push_back(-1);
  g->add_cable(2, fabric, LinkProps{100e9, 2e-6});
  g->add_cable(5, fabric, LinkProps{second_bw, 2e-6});
  if (cross_link) g->add_cable(0, 3, slow);  // joins the two blocks
  g->set_blocks(owner);
  g->finalize();
  return g;
}

TEST(BlockSymmetry, FinalizeRefusesFalseClaims) {
  EXPECT_TRUE(pair_of_servers(100e9, false)->block_symmetric());
  // Server 1's uplink is narrower: not the same link class.
  EXPECT_FALSE(pair_of_servers(50e9, false)->block_symmetric());
  // A cable between the servers belongs to neither.
  EXPECT_FALSE(pair_of_servers(100e9, true)->block_symmetric());
  // Blocks of different sizes.
  auto g = std::make_unique<GraphTopology>();
  for (int v = 0; v < 3; ++v) g->add_node("h" + std::to_string(v), false);
  g->add_cable(0, 1, LinkProps{1e9, 1e-6});
  g->add_cable(1, 2, LinkProps{1e9, 1e-6});
  g->set_blocks({0, 0, 1});
  g->finalize();
  EXPECT_FALSE(g->block_symmetric());
}

}  // namespace
}  // namespace collkit
