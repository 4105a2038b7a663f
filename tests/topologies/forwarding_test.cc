// "endpoints_forward": false in the explicit form: a route never passes
// through an endpoint. Checked against a brute-force shortest path whose
// interior nodes are switches only (Floyd-Warshall with the intermediate
// restricted to switches), on a hand-made host where the shortest path
// would detour through another rank, and on random graphs; a pair that can
// only reach each other through an endpoint is a disconnected file.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "route_check.h"

namespace collkit {
namespace {

using testing::Cost;
using testing::load_text;
using testing::route_cost;
using testing::route_names;

// Two cores, ranks 0 and 2 on core 0, 1 and 3 on core 1. The same-core hop
// (k0_in->k0_out) is slow to reach (10 us) and the cross-core ones are free,
// so with forwarding the shortest r0 -> r2 goes r0 -> k0_in -> k1_out -> r1
// -> k1_in -> k0_out -> r2 through rank 1.
std::string cores(bool forward) {
  return std::string(R"({)") + (forward ? "" : R"("endpoints_forward": false,)") +
         R"("nodes": [{"id": "r0"}, {"id": "r1"}, {"id": "r2"}, {"id": "r3"},
    {"id": "k0_in", "switch": true}, {"id": "k0_out", "switch": true},
    {"id": "k1_in", "switch": true}, {"id": "k1_out", "switch": true}],
  "links": [
    {"a": "r0", "b": "k0_in", "bandwidth_gbps": 5, "directed": true},
    {"a": "r1", "b": "k1_in", "bandwidth_gbps": 5, "directed": true},
    {"a": "r2", "b": "k0_in", "bandwidth_gbps": 5, "directed": true},
    {"a": "r3", "b": "k1_in", "bandwidth_gbps": 5, "directed": true},
    {"a": "k0_in", "b": "k0_out", "bandwidth_gbps": 9, "latency_us": 10, "directed": true},
    {"a": "k1_in", "b": "k1_out", "bandwidth_gbps": 9, "latency_us": 10, "directed": true},
    {"a": "k0_in", "b": "k1_out", "bandwidth_gbps": 7, "directed": true},
    {"a": "k1_in", "b": "k0_out", "bandwidth_gbps": 7, "directed": true},
    {"a": "k0_out", "b": "r0", "bandwidth_gbps": 6, "directed": true},
    {"a": "k0_out", "b": "r2", "bandwidth_gbps": 6, "directed": true},
    {"a": "k1_out", "b": "r1", "bandwidth_gbps": 6, "directed": true},
    {"a": "k1_out", "b": "r3", "bandwidth_gbps": 6, "directed": true}]})";
}

TEST(EndpointsForward, ByDefaultARouteMayDetourThroughAnotherRank) {
  const auto t = load_text(cores(true));
  const std::vector<std::string> detour = {"r0->k0_in", "k0_in->k1_out", "k1_out->r1",
                                           "r1->k1_in", "k1_in->k0_out", "k0_out->r2"};
  EXPECT_EQ(route_names(*t, 0, 2), detour);
}

TEST(EndpointsForward, FalseKeepsEveryRouteOnSwitches) {
  const auto t = load_text(cores(false));
  const std::vector<std::string> same_core = {"r0->k0_in", "k0_in->k0_out", "k0_out->r2"};
  EXPECT_EQ(route_names(*t, 0, 2), same_core);
  const std::vector<std::string> cross = {"r0->k0_in", "k0_in->k1_out", "k1_out->r1"};
  EXPECT_EQ(route_names(*t, 0, 1), cross);
  const std::vector<std::string> back = {"r3->k1_in", "k1_in->k1_out", "k1_out->r1"};
  EXPECT_EQ(route_names(*t, 3, 1), back);
  // Asked again (the distance trees are cached): the same answer.
  EXPECT_EQ(route_names(*t, 0, 2), same_core);
}

// Shortest (latency, hops) between nodes whose interior nodes are switches.
std::vector<std::vector<Cost>> floyd_over_switches(const GraphTopology& g) {
  const int n = static_cast<int>(g.num_nodes());
  const Cost inf{std::numeric_limits<std::int64_t>::max() / 4, 1 << 20};
  std::vector<std::vector<Cost>> d(n, std::vector<Cost>(n, inf));
  for (int v = 0; v < n; ++v) d[v][v] = {0, 0};
  for (LinkId l = 0; l < g.num_links(); ++l) {
    const Cost c{testing::latency_ps(g.link(l).latency), 1};
    auto& cur = d[g.link_src(l)][g.link_dst(l)];
    if (c < cur) cur = c;
  }
  for (int k = 0; k < n; ++k) {
    if (!g.is_switch(k)) continue;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const Cost via{d[i][k].first + d[k][j].first, d[i][k].second + d[k][j].second};
        if (via < d[i][j]) d[i][j] = via;
      }
  }
  return d;
}

// Random graphs: 3-7 endpoints each cabled to 1-2 of 2-5 switches, switches
// cabled among themselves, and random endpoint-endpoint cables with low
// latency (the shortcuts a forwarding route would take).
TEST(EndpointsForward, RoutesAreShortestOverSwitchesOnRandomGraphs) {
  std::mt19937 rng(20261126);
  int detours_avoided = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const int eps = 3 + static_cast<int>(rng() % 5);
    const int sws = 2 + static_cast<int>(rng() % 4);
    std::string nodes, links;
    const auto lat = [&] { return std::to_string(rng() % 20); };
    for (int e = 0; e < eps; ++e) nodes += R"({"id": "e)" + std::to_string(e) + R"("},)";
    for (int s = 0; s < sws; ++s)
      nodes += R"({"id": "s)" + std::to_string(s) + R"(", "switch": true},)";
    const auto cable = [&](const std::string& a, const std::string& b, const std::string& l) {
      links += R"({"a": ")" + a + R"(", "b": ")" + b + R"(", "bandwidth_gbps": 1, "latency_us": )" +
               l + "},";
    };
    for (int s = 0; s + 1 < sws; ++s)
      cable("s" + std::to_string(s), "s" + std::to_string(s + 1), lat());
    for (int e = 0; e < eps; ++e) {
      cable("e" + std::to_string(e), "s" + std::to_string(rng() % sws), lat());
      if (rng() % 2) cable("e" + std::to_string(e), "s" + std::to_string(rng() % sws), lat());
    }
    for (int k = 0; k < eps; ++k) {
      const int a = static_cast<int>(rng() % eps), b = static_cast<int>(rng() % eps);
      if (a != b) cable("e" + std::to_string(a), "e" + std::to_string(b), "0");
    }
    nodes.pop_back();
    links.pop_back();
    const std::string body = R"("nodes": [)" + nodes + R"(], "links": [)" + links + "]}";
    const auto fwd = load_text("{" + body);
    const auto t = load_text(R"({"endpoints_forward": false, )" + body);
    const auto* g = dynamic_cast<const GraphTopology*>(t.get());
    ASSERT_NE(g, nullptr);
    const auto d = floyd_over_switches(*g);
    for (int s = 0; s < eps; ++s)
      for (int r = 0; r < eps; ++r) {
        if (s == r) continue;
        testing::expect_connected_route(*t, s, r);
        EXPECT_EQ(route_cost(*t, s, r), d[g->endpoint_node(s)][g->endpoint_node(r)])
            << "trial " << trial << ": " << s << "->" << r;
        std::vector<LinkId> links_of;
        t->route(s, r, links_of);
        for (std::size_t i = 0; i + 1 < links_of.size(); ++i)
          EXPECT_TRUE(g->is_switch(g->link_dst(links_of[i])))
              << "trial " << trial << ": " << s << "->" << r << " passes "
              << t->link_name(links_of[i]);
        if (route_cost(*fwd, s, r) < route_cost(*t, s, r)) ++detours_avoided;
      }
  }
  // The graphs are made so that forwarding would often be shorter: the test
  // compares something.
  EXPECT_GT(detours_avoided, 100);
}

TEST(EndpointsForward, APairThatOnlyMeetsThroughAnEndpointIsDisconnected) {
  // a - b - c in a chain, no switch: a reaches c only through b.
  const std::string chain = R"("nodes": [{"id": "a"}, {"id": "b"}, {"id": "c"}],
    "links": [{"a": "a", "b": "b", "bandwidth_gbps": 1}, {"a": "b", "b": "c", "bandwidth_gbps": 1}]})";
  EXPECT_EQ(load_text("{" + chain)->num_ranks(), 3);  // forwarding: connected
  try {
    load_text(R"({"endpoints_forward": false, )" + chain);
    FAIL() << "expected an error";
  } catch (const FileError& e) {
    EXPECT_STREQ(e.what(),
                 "test.json: links: the graph is disconnected: rank 0 (node \"a\") cannot reach "
                 "rank 2 (node \"c\") without passing through another endpoint "
                 "(endpoints_forward is false)");
  }
}

TEST(EndpointsForward, TheKeyIsABooleanOfTheExplicitForm) {
  try {
    load_text(R"({"endpoints_forward": "no", "nodes": [{"id": "a"}, {"id": "b"}],
      "links": [{"a": "a", "b": "b", "bandwidth_gbps": 1}]})");
    FAIL() << "expected an error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("endpoints_forward: expected true or false"),
              std::string::npos)
        << e.what();
  }
  try {
    load_text(R"({"endpoints_forward": false,
      "generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": 1}})");
    FAIL() << "expected an error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("endpoints_forward: only in the explicit form"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace collkit
