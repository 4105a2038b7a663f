// Every generator: node and link counts and route lengths against hand
// counts, routes shortest (brute force) and connected.
#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <set>

#include "route_check.h"
#include "topologies/builders.h"

namespace collkit {
namespace {

using testing::expect_all_routes_shortest;
using testing::expect_connected_route;
using testing::load_text;
using testing::route_names;

std::string gen(const std::string& body) {
  return R"({"generator": {)" + body + R"(, "bandwidth_gbps": 100, "latency_us": 1}})";
}

std::vector<LinkId> route_of(const Topology& t, int s, int d) {
  std::vector<LinkId> out;
  t.route(s, d, out);
  return out;
}

TEST(Ring, CountsAndShorterWayRound) {
  auto t = load_text(gen(R"("kind": "ring", "ranks": 8)"));
  EXPECT_EQ(t->num_ranks(), 8);
  EXPECT_EQ(t->num_nodes(), 8);
  EXPECT_EQ(t->num_links(), 16);
  EXPECT_EQ(t->num_link_classes(), 1);
  for (int s = 0; s < 8; ++s) {
    for (int d = 0; d < 8; ++d) {
      if (s == d) continue;
      int fwd = (d - s + 8) % 8;
      EXPECT_EQ(route_of(*t, s, d).size(), static_cast<std::size_t>(std::min(fwd, 8 - fwd)));
      expect_connected_route(*t, s, d);
    }
  }
  // Half way round is a tie; it goes the + way.
  EXPECT_EQ(route_names(*t, 0, 4),
            (std::vector<std::string>{"r0->r1", "r1->r2", "r2->r3", "r3->r4"}));
  EXPECT_EQ(route_names(*t, 0, 5), (std::vector<std::string>{"r0->r7", "r7->r6", "r6->r5"}));
  EXPECT_EQ(t->link(0).bandwidth, 100e9);
  EXPECT_DOUBLE_EQ(t->link(0).latency, 1e-6);
}

TEST(Ring, TwoAndOneRanks) {
  auto two = load_text(gen(R"("kind": "ring", "ranks": 2)"));
  EXPECT_EQ(two->num_links(), 2);  // one cable, not two parallel ones
  EXPECT_EQ(route_names(*two, 0, 1), std::vector<std::string>{"r0->r1"});
  EXPECT_EQ(route_names(*two, 1, 0), std::vector<std::string>{"r1->r0"});
  auto one = load_text(gen(R"("kind": "ring", "ranks": 1)"));
  EXPECT_EQ(one->num_ranks(), 1);
  EXPECT_EQ(one->num_links(), 0);
}

TEST(FullyConnected, OneDistinctLinkPerOrderedPair) {
  auto t = load_text(gen(R"("kind": "fully_connected", "ranks": 5)"));
  EXPECT_EQ(t->num_links(), 20);
  EXPECT_EQ(t->num_nodes(), 5);
  std::set<LinkId> seen;
  for (int s = 0; s < 5; ++s) {
    for (int d = 0; d < 5; ++d) {
      if (s == d) continue;
      auto r = route_of(*t, s, d);
      ASSERT_EQ(r.size(), 1u);
      seen.insert(r[0]);
      std::string name = "r";
      name += std::to_string(s);
      name += "->r";
      name += std::to_string(d);
      EXPECT_EQ(t->link_name(r[0]), name);
    }
  }
  EXPECT_EQ(seen.size(), 20u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 19);
}

// The simulator runs 2^20 ranks on fully_connected: nothing p^2 may be stored.
TEST(FullyConnected, ImplicitAtTwoToTheTwenty) {
  const std::int64_t p = std::int64_t{1} << 20;
  auto t = load_text(gen(R"("kind": "fully_connected", "ranks": 1048576)"));
  EXPECT_EQ(t->num_ranks(), p);
  EXPECT_EQ(t->num_links(), p * (p - 1));
  EXPECT_EQ(route_of(*t, 0, static_cast<int>(p - 1)), std::vector<LinkId>{p - 2});
  EXPECT_EQ(route_of(*t, static_cast<int>(p - 1), 0), std::vector<LinkId>{(p - 1) * (p - 1)});
  LinkId id = 12345 * (p - 1) + 999998;
  EXPECT_EQ(route_of(*t, 12345, 999999), std::vector<LinkId>{id});
  EXPECT_EQ(t->link_name(id), "r12345->r999999");
  EXPECT_EQ(t->link(id).bandwidth, 100e9);
  EXPECT_EQ(t->link_class(id), 0);
  std::vector<LinkId> out;
  for (int s = 0; s < p; ++s) {
    t->route(s, static_cast<int>((s + 1) % p), out);
    ASSERT_EQ(out.size(), 1u);
  }
}

TEST(Switch, TwoHopsThroughOneSwitch) {
  auto t = load_text(gen(R"("kind": "switch", "ranks": 16)"));
  EXPECT_EQ(t->num_nodes(), 17);
  EXPECT_EQ(t->num_links(), 32);
  EXPECT_EQ(route_names(*t, 3, 5), (std::vector<std::string>{"r3->sw", "sw->r5"}));
  for (int s = 0; s < 16; ++s) {
    for (int d = 0; d < 16; ++d) {
      if (s != d) expect_connected_route(*t, s, d);
    }
  }
  auto big = load_text(gen(R"("kind": "switch", "ranks": 1048576)"));
  EXPECT_EQ(big->num_links(), 2 * 1048576);
  EXPECT_EQ(route_of(*big, 7, 1048575).size(), 2u);
}

TEST(Torus, FourByFour) {
  auto t = load_text(gen(R"("kind": "torus", "shape": [4, 4])"));
  EXPECT_EQ(t->num_ranks(), 16);
  EXPECT_EQ(t->num_nodes(), 16);
  EXPECT_EQ(t->num_links(), 64);  // 4 neighbours per rank
  // From rank 0: ring-4 distances 0,1,2,1 in each dimension; sum 4 x 4 x 2.
  std::size_t total = 0, longest = 0;
  for (int d = 1; d < 16; ++d) {
    total += route_of(*t, 0, d).size();
    longest = std::max(longest, route_of(*t, 0, d).size());
  }
  EXPECT_EQ(total, 32u);
  EXPECT_EQ(longest, 4u);
  // Dimension order: x (dimension 0) first.
  EXPECT_EQ(route_names(*t, 0, 5), (std::vector<std::string>{"r0->r1", "r1->r5"}));
  auto* p = dynamic_cast<ProductTopology*>(t.get());
  ASSERT_NE(p, nullptr);
  expect_all_routes_shortest(*t, *build_product_graph(p->dims(), {}));
}

TEST(Torus, ThreeDimensionsAndSizeTwo) {
  auto t = load_text(gen(R"("kind": "torus", "shape": [3, 4, 5])"));
  EXPECT_EQ(t->num_ranks(), 60);
  EXPECT_EQ(t->num_links(), 60 * 6);
  EXPECT_EQ(route_of(*t, 0, 59).size(), 1u + 1u + 1u);  // (2,3,4): one step back in each
  auto* p = dynamic_cast<ProductTopology*>(t.get());
  expect_all_routes_shortest(*t, *build_product_graph(p->dims(), {}));
  auto two = load_text(gen(R"("kind": "torus", "shape": [2, 4])"));
  EXPECT_EQ(two->num_links(), 8 * 1 + 8 * 2);
}

TEST(Torus, ShortestRoutingUsesTheGraph) {
  auto t = load_text(gen(R"("kind": "torus", "shape": [4, 4], "routing": "shortest")"));
  auto* g = dynamic_cast<GraphTopology*>(t.get());
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(t->num_links(), 64);
  auto dor = load_text(gen(R"("kind": "torus", "shape": [4, 4])"));
  for (int s = 0; s < 16; ++s) {
    for (int d = 0; d < 16; ++d) {
      if (s != d) {
        EXPECT_EQ(route_of(*t, s, d).size(), route_of(*dor, s, d).size());
      }
    }
  }
  expect_all_routes_shortest(*t, *g);
}

TEST(Hypercube, RouteLengthIsHammingDistance) {
  auto t = load_text(gen(R"("kind": "hypercube", "dimension": 6)"));
  EXPECT_EQ(t->num_ranks(), 64);
  EXPECT_EQ(t->num_links(), 64 * 6);
  for (int s = 0; s < 64; ++s) {
    for (int d = 0; d < 64; ++d) {
      if (s == d) continue;
      EXPECT_EQ(route_of(*t, s, d).size(),
                static_cast<std::size_t>(std::popcount(static_cast<unsigned>(s ^ d))));
      expect_connected_route(*t, s, d);
    }
  }
  EXPECT_EQ(route_names(*t, 0, 5), (std::vector<std::string>{"r0->r1", "r1->r5"}));
  auto by_ranks = load_text(gen(R"("kind": "hypercube", "ranks": 64)"));
  EXPECT_EQ(by_ranks->num_links(), 384);
}

int hops(const Topology& t, int s, int d) { return static_cast<int>(route_of(t, s, d).size()); }

TEST(FatTree, K4HandCounts) {
  auto t = load_text(gen(R"("kind": "fat_tree", "k": 4)"));
  EXPECT_EQ(t->num_ranks(), 16);
  EXPECT_EQ(t->num_endpoints(), 16);
  EXPECT_EQ(t->num_nodes(), 16 + 20);
  // Cables: 16 host-edge, 4 pods x 2 x 2 edge-agg, 4 pods x 2 x 2 agg-core.
  EXPECT_EQ(t->num_links(), 2 * (16 + 16 + 16));
  EXPECT_EQ(hops(*t, 0, 1), 2);  // same edge switch
  EXPECT_EQ(hops(*t, 0, 2), 4);  // same pod
  EXPECT_EQ(hops(*t, 0, 4), 6);  // another pod
  for (int s = 0; s < 16; ++s) {
    for (int d = 0; d < 16; ++d) {
      if (s == d) continue;
      EXPECT_EQ(hops(*t, s, d), s / 2 == d / 2 ? 2 : s / 4 == d / 4 ? 4 : 6) << s << "->" << d;
    }
  }
  expect_all_routes_shortest(*t, dynamic_cast<GraphTopology&>(*t));
}

TEST(FatTree, K8Counts) {
  auto t = load_text(gen(R"("kind": "fat_tree", "k": 8)"));
  EXPECT_EQ(t->num_ranks(), 128);
  EXPECT_EQ(t->num_nodes(), 128 + 80);
  EXPECT_EQ(t->num_links(), 2 * 3 * 128);
  EXPECT_EQ(t->num_link_classes(), 1);
}

// Destination-based choice among equal-cost paths: traffic from one host to
// the other pods uses every core switch, as D-mod-k routing does.
TEST(FatTree, EqualCostPathsSpreadByDestination) {
  auto t = load_text(gen(R"("kind": "fat_tree", "k": 4)"));
  std::set<std::string> cores;
  for (int d = 4; d < 16; ++d) {
    auto names = route_names(*t, 0, d);
    ASSERT_EQ(names.size(), 6u);
    cores.insert(names[3].substr(0, names[3].find("->")));
  }
  EXPECT_EQ(cores, (std::set<std::string>{"c0", "c1", "c2", "c3"}));
}

TEST(FatTree, OversubscribedEdgeUplinks) {
  auto t = load_text(gen(R"("kind": "fat_tree", "k": 4, "oversubscription": 2)"));
  EXPECT_EQ(t->num_link_classes(), 2);
  auto r = route_of(*t, 0, 4);
  ASSERT_EQ(r.size(), 6u);
  const double bw[] = {100e9, 50e9, 100e9, 100e9, 50e9, 100e9};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t->link(r[i]).bandwidth, bw[i]) << t->link_name(r[i]);
  EXPECT_NE(t->link_class(r[0]), t->link_class(r[1]));
  EXPECT_EQ(t->link_class(r[0]), t->link_class(r[2]));
}

// k = 32: 8192 hosts, 1280 switches; the simulator's 4096-rank runs use it.
TEST(FatTree, K32LoadsAndRoutes) {
  auto t = load_text(gen(R"("kind": "fat_tree", "k": 32)"), 4096);
  EXPECT_EQ(t->num_ranks(), 4096);
  EXPECT_EQ(t->num_endpoints(), 8192);
  EXPECT_EQ(t->num_nodes(), 8192 + 1280);
  EXPECT_EQ(t->num_links(), 2 * 3 * 8192);
  std::vector<LinkId> out;
  for (int s = 0; s < 4096; ++s) {
    t->route(s, (s + 1) % 4096, out);
    ASSERT_TRUE(out.size() == 2 || out.size() == 4 || out.size() == 6);
    t->route(s, (s + 2048) % 4096, out);
    ASSERT_EQ(out.size(), 6u);  // 2048 hosts apart: another pod (256 per pod)
  }
  expect_connected_route(*t, 4095, 0);
}

std::string hier(const std::string& body) {
  return R"({"generator": {"kind": "hierarchical", )" + body + "}}";
}

const char* kH100 = R"("nodes": 4, "devices_per_node": 8,
    "intra": {"kind": "switch", "bandwidth_gbps": 370.8, "latency_us": 0.3},
    "nics_per_node": 8, "rail_optimized": true,
    "inter": {"kind": "switch", "bandwidth_gbps": 48, "latency_us": 1.35})";

TEST(Hierarchical, RailOptimizedCounts) {
  auto t = load_text(hier(kH100));
  EXPECT_EQ(t->num_ranks(), 32);
  // 32 GPUs, 4 NVSwitches, 32 NICs (send and receive sides), 8 rail switches.
  EXPECT_EQ(t->num_nodes(), 32 + 4 + 2 * 32 + 8);
  // Both directions of GPU-NVSwitch, GPU-NIC, NIC-rail: 32 each.
  EXPECT_EQ(t->num_links(), 2 * 96);
  EXPECT_EQ(route_names(*t, 0, 1), (std::vector<std::string>{"n0.g0->n0.nvs", "n0.nvs->n0.g1"}));
  EXPECT_EQ(route_names(*t, 0, 8),
            (std::vector<std::string>{"n0.g0->n0.nic0.tx", "n0.nic0.tx->rail0", "rail0->n1.nic0.rx",
                                      "n1.nic0.rx->n1.g0"}));
  // Cross rail: through one node's NVSwitch, then the destination's rail.
  EXPECT_EQ(route_of(*t, 0, 11).size(), 6u);
  expect_all_routes_shortest(*t, dynamic_cast<GraphTopology&>(*t));
  // NIC-side link classes: NVLink, NIC (48 GB/s, 1.35 us) and GPU-NIC (48, 0).
  EXPECT_EQ(t->num_link_classes(), 3);
}

// NCCL's PXN: traffic to GPU h of another node crosses the sending node's
// NVSwitch to GPU h and leaves through NIC h, so it arrives on the
// destination's own NIC. The two cross-rail paths cost the same; the route
// enters its destination over the narrowest tight link. Every NIC then
// carries exactly its rail's traffic: 8 sources x 3 remote GPUs on the rail.
TEST(Hierarchical, CrossRailTrafficTakesTheDestinationsRail) {
  auto t = load_text(hier(kH100));
  EXPECT_EQ(
      route_names(*t, 0, 11),
      (std::vector<std::string>{"n0.g0->n0.nvs", "n0.nvs->n0.g3", "n0.g3->n0.nic3.tx",
                                "n0.nic3.tx->rail3", "rail3->n1.nic3.rx", "n1.nic3.rx->n1.g3"}));
  std::map<std::string, int> through;  // "n<node>.nic<i>.tx" -> routes
  for (int s = 0; s < 32; ++s) {
    for (int d = 0; d < 32; ++d) {
      if (s / 8 == d / 8) continue;
      const std::vector<std::string> names = route_names(*t, s, d);
      const std::string tx = "n" + std::to_string(s / 8) + ".nic" + std::to_string(d % 8) + ".tx";
      int nics = 0;
      for (const std::string& n : names) {
        if (n.find(".tx->") != std::string::npos) {
          ++nics;
          EXPECT_EQ(n.substr(0, n.find("->")), tx) << s << " -> " << d;
          ++through[tx];
        }
      }
      EXPECT_EQ(nics, 1) << s << " -> " << d;
    }
  }
  EXPECT_EQ(through.size(), 32u);
  for (const auto& [nic, routes] : through) EXPECT_EQ(routes, 24) << nic;
}

TEST(Hierarchical, SharedNicsAndOneSwitch) {
  auto t = load_text(hier(R"("nodes": 2, "devices_per_node": 8,
    "intra": {"kind": "switch", "bandwidth_gbps": 240, "latency_us": 0.3},
    "nics_per_node": 4, "inter": {"bandwidth_gbps": 24, "latency_us": 1.35})"));
  EXPECT_EQ(t->num_nodes(), 16 + 2 + 2 * 8 + 1);
  // GPU j uses NIC j * 4 / 8.
  EXPECT_EQ(route_names(*t, 3, 11),
            (std::vector<std::string>{"n0.g3->n0.nic1.tx", "n0.nic1.tx->sw", "sw->n1.nic1.rx",
                                      "n1.nic1.rx->n1.g3"}));
  // GPUs 2 and 3 share NIC 1, which does not forward between them.
  EXPECT_EQ(route_names(*t, 2, 3), (std::vector<std::string>{"n0.g2->n0.nvs", "n0.nvs->n0.g3"}));
  expect_all_routes_shortest(*t, dynamic_cast<GraphTopology&>(*t));
}

TEST(Hierarchical, FatTreeBetweenNodes) {
  auto t = load_text(hier(R"("nodes": 4, "devices_per_node": 8,
    "intra": {"kind": "switch", "bandwidth_gbps": 370.8, "latency_us": 0.3},
    "nics_per_node": 8, "rail_optimized": true,
    "inter": {"kind": "fat_tree", "bandwidth_gbps": 48, "latency_us": 1.35})"));
  // 32 NICs need k = 6 (54 host ports): 6 pods x 6 + 9 core = 45 switches.
  EXPECT_EQ(t->num_nodes(), 32 + 4 + 2 * 32 + 45);
  // Rail-major: NIC 0 of all 4 nodes sit on one edge switch (3 ports per edge
  // switch at k = 6, so nodes 0-2): same rail, same edge: NIC-edge-NIC.
  EXPECT_EQ(route_of(*t, 0, 8).size(), 4u);
  expect_all_routes_shortest(*t, dynamic_cast<GraphTopology&>(*t));
}

TEST(Hierarchical, SingleNodeAndOtherIntraFabrics) {
  auto one = load_text(hier(R"("nodes": 1, "devices_per_node": 8,
    "intra": {"kind": "switch", "bandwidth_gbps": 370.8, "latency_us": 0.3})"));
  EXPECT_EQ(one->num_nodes(), 9);
  EXPECT_EQ(one->num_links(), 16);
  auto fc = load_text(hier(R"("nodes": 2, "devices_per_node": 4,
    "intra": {"kind": "fully_connected", "bandwidth_gbps": 100, "latency_us": 0.5},
    "nics_per_node": 1, "inter": {"bandwidth_gbps": 24, "latency_us": 1})"));
  // 2 x 6 GPU cables, 8 GPU-NIC, 2 NIC-switch, both directions.
  EXPECT_EQ(fc->num_links(), 2 * (12 + 8 + 2));
  // NVLink (0.5 us) although the shared NIC's links cost nothing.
  EXPECT_EQ(route_of(*fc, 0, 1).size(), 1u);
  expect_all_routes_shortest(*fc, dynamic_cast<GraphTopology&>(*fc));
}

TEST(Dims, SwitchTimesRing) {
  auto t = load_text(R"({"dims": [
      {"kind": "switch", "size": 8, "bandwidth_gbps": 370, "latency_us": 0.6},
      {"kind": "ring", "size": 4, "bandwidth_gbps": 50, "latency_us": 2.7}]})");
  EXPECT_EQ(t->num_ranks(), 32);
  EXPECT_EQ(t->num_nodes(), 32 + 4);
  EXPECT_EQ(t->num_links(), 32 * 2 + 32 * 2);
  EXPECT_EQ(t->num_link_classes(), 2);
  EXPECT_EQ(route_names(*t, 0, 9),
            (std::vector<std::string>{"r0->d0.sw0", "d0.sw0->r1", "r1->r9"}));
  auto* p = dynamic_cast<ProductTopology*>(t.get());
  expect_all_routes_shortest(*t, *build_product_graph(p->dims(), {}));
}

TEST(Dims, EqualLinksShareAClass) {
  auto t = load_text(R"({"dims": [
      {"kind": "fully_connected", "size": 4, "bandwidth_gbps": 100, "latency_us": 1},
      {"kind": "ring", "size": 3, "bandwidth_gbps": 100, "latency_us": 1},
      {"kind": "switch", "size": 2, "bandwidth_gbps": 25, "latency_us": 1}]})");
  EXPECT_EQ(t->num_ranks(), 24);
  EXPECT_EQ(t->num_link_classes(), 2);
  EXPECT_EQ(t->num_links(), 24 * 3 + 24 * 2 + 24 * 2);
  auto* p = dynamic_cast<ProductTopology*>(t.get());
  expect_all_routes_shortest(*t, *build_product_graph(p->dims(), {}));
}

TEST(Routing, DeterministicAcrossLoadsAndCalls) {
  const std::string k8 = gen(R"("kind": "fat_tree", "k": 8)");
  auto a = load_text(k8);
  auto b = load_text(k8);
  std::vector<std::vector<LinkId>> first;
  for (int s = 0; s < 128; s += 3) {
    for (int d = 0; d < 128; ++d) {
      if (s == d) continue;
      first.push_back(route_of(*a, s, d));
      EXPECT_EQ(first.back(), route_of(*b, s, d));
    }
  }
  // Asking again, in another order, after other trees were built.
  std::size_t i = 0;
  for (int s = 0; s < 128; s += 3) {
    for (int d = 0; d < 128; ++d) {
      if (s != d) {
        EXPECT_EQ(route_of(*a, s, d), first[i++]);
      }
    }
  }
}

TEST(Routing, LowestLatencyFirstThenFewestHops) {
  // a-b direct costs 10 us; through s it is 1 + 1: the two-hop path wins.
  auto slow = load_text(R"({"nodes": [{"id": "a"}, {"id": "b"}, {"id": "s", "switch": true}],
    "links": [{"a": "a", "b": "b", "bandwidth_gbps": 1, "latency_us": 10},
              {"a": "a", "b": "s", "bandwidth_gbps": 1, "latency_us": 1},
              {"a": "s", "b": "b", "bandwidth_gbps": 1, "latency_us": 1}]})");
  EXPECT_EQ(route_names(*slow, 0, 1), (std::vector<std::string>{"a->s", "s->b"}));
  // Equal latency (2 us either way): fewer hops wins.
  auto tie = load_text(R"({"nodes": [{"id": "a"}, {"id": "b"}, {"id": "s", "switch": true}],
    "links": [{"a": "a", "b": "b", "bandwidth_gbps": 1, "latency_us": 2},
              {"a": "a", "b": "s", "bandwidth_gbps": 1, "latency_us": 1},
              {"a": "s", "b": "b", "bandwidth_gbps": 1, "latency_us": 1}]})");
  EXPECT_EQ(route_names(*tie, 0, 1), std::vector<std::string>{"a->b"});
  EXPECT_EQ(route_names(*tie, 1, 0), std::vector<std::string>{"b->a"});
  EXPECT_EQ(tie->num_link_classes(), 2);
}

TEST(Explicit, RankOrderAndEndpointOverrides) {
  auto t = load_text(R"({"endpoint": {"overhead_us": 2, "reduce_gbps": 500, "copy_gbps": 80},
    "nodes": [{"id": "g0", "host": "b"}, {"id": "g1", "overhead_us": 5, "copy_gbps": 20, "host": "a"},
              {"id": "sw", "switch": true}],
    "links": [{"a": "g0", "b": "sw", "bandwidth_gbps": 450, "latency_us": 0.5},
              {"a": "g1", "b": "sw", "bandwidth_gbps": 450, "latency_us": 0.5}],
    "ranks": ["g1", "g0"]})");
  EXPECT_EQ(t->num_ranks(), 2);
  EXPECT_EQ(t->num_nodes(), 3);
  EXPECT_EQ(t->num_links(), 4);
  EXPECT_EQ(t->name, "test");
  EXPECT_DOUBLE_EQ(t->endpoint(0).overhead, 5e-6);  // rank 0 is g1
  EXPECT_DOUBLE_EQ(t->endpoint(1).overhead, 2e-6);
  EXPECT_EQ(t->endpoint(0).reduce_bw, 500e9);
  EXPECT_EQ(t->endpoint(0).copy_bw, 20e9);   // g1's own
  EXPECT_EQ(t->endpoint(1).copy_bw, 80e9);   // the default
  EXPECT_EQ(t->endpoint(1).cache_bytes, 0);  // no cache model unless asked
  EXPECT_EQ(t->endpoint(1).dram_factor, 1);
  EXPECT_EQ(t->endpoint(1).host_cores, 0);
  EXPECT_EQ(t->endpoint(1).host, 0);  // g0: "b", the first host named
  EXPECT_EQ(t->endpoint(0).host, 1);  // g1: "a"
  // Link 2c is a->b of cable c, 2c+1 is b->a.
  EXPECT_EQ(t->link_name(0), "g0->sw");
  EXPECT_EQ(t->link_name(1), "sw->g0");
  EXPECT_EQ(route_names(*t, 0, 1), (std::vector<std::string>{"g1->sw", "sw->g0"}));
  EXPECT_EQ(t->link(0).bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(t->link(0).latency, 0.5e-6);
}

TEST(Explicit, RandomGraphsRouteShortest) {
  // Deterministic pseudo-random connected graphs with mixed latencies, ties
  // included (latencies drawn from a small set).
  std::uint64_t state = 12345;
  auto next = [&](int n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % n);
  };
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 6 + trial % 7;
    std::string nodes, links;
    for (int v = 0; v < n; ++v) {
      nodes += (v ? ", " : "") + std::string(R"({"id": "v)") + std::to_string(v) + "\"" +
               (v % 4 == 3 ? R"(, "switch": true})" : "}");
    }
    auto link = [&](int a, int b) {
      links += (links.empty() ? "" : ", ") + std::string(R"({"a": "v)") + std::to_string(a) +
               R"(", "b": "v)" + std::to_string(b) + R"(", "bandwidth_gbps": 1, "latency_us": )" +
               std::to_string(1 + next(3)) + "}";
    };
    for (int v = 1; v < n; ++v) link(v, next(v));  // a spanning tree
    for (int e = 0; e < n; ++e) {
      int a = next(n), b = next(n);
      if (a != b) link(a, b);
    }
    auto t = load_text(R"({"nodes": [)" + nodes + R"(], "links": [)" + links + "]}");
    expect_all_routes_shortest(*t, dynamic_cast<GraphTopology&>(*t));
  }
}

// Trees are built partially (up to the first target) and completed on a
// later miss, and evicted least recently used: none of that may change a
// route. Query two copies in opposite orders and compare.
TEST(Routing, RoutesDoNotDependOnQueryOrder) {
  for (const std::string& json : {hier(kH100), gen(R"("kind": "fat_tree", "k": 8)")}) {
    auto a = load_text(json);
    auto b = load_text(json);
    const int p = a->num_ranks();
    std::vector<std::vector<std::vector<LinkId>>> fwd(p, std::vector<std::vector<LinkId>>(p));
    for (int s = 0; s < p; ++s) {
      for (int d = 0; d < p; ++d) {
        if (s != d) fwd[s][d] = route_of(*a, s, d);
      }
    }
    for (int d = p - 1; d >= 0; --d) {
      for (int s = p - 1; s >= 0; --s) {
        if (s != d) {
          ASSERT_EQ(route_of(*b, s, d), fwd[s][d]) << s << "->" << d;
        }
      }
    }
  }
}

}  // namespace
}  // namespace collkit
