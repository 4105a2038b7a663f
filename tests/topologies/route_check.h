// Helpers shared by the topology tests: load inline JSON, follow a route by
// its link names, and brute-force shortest paths (Floyd-Warshall) to check
// that routes are shortest.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "topologies/graph_topology.h"
#include "topologies/product_topology.h"
#include "topologies/topology.h"

namespace collkit::testing {

inline std::unique_ptr<Topology> load_text(const std::string& json, int ranks = 0) {
  return parse_topology(json, "test.json", ranks);
}

inline std::string rank_node(const Topology& t, int r) {
  if (const auto* g = dynamic_cast<const GraphTopology*>(&t)) {
    return g->node_name(g->endpoint_node(r));
  }
  std::string name = "r";
  return name += std::to_string(r);
}

inline std::vector<std::string> route_names(const Topology& t, int src, int dst) {
  std::vector<LinkId> links;
  t.route(src, dst, links);
  std::vector<std::string> out;
  for (LinkId l : links) out.push_back(t.link_name(l));
  return out;
}

// The route is a chain of links from src's node to dst's node, ids in range.
inline void expect_connected_route(const Topology& t, int src, int dst) {
  std::vector<LinkId> links;
  t.route(src, dst, links);
  ASSERT_FALSE(links.empty()) << src << "->" << dst;
  std::string at = rank_node(t, src);
  for (LinkId l : links) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, t.num_links());
    std::string name = t.link_name(l);
    auto arrow = name.find("->");
    ASSERT_NE(arrow, std::string::npos) << name;
    ASSERT_EQ(name.substr(0, arrow), at) << "route " << src << "->" << dst << " breaks at " << name;
    at = name.substr(arrow + 2);
  }
  EXPECT_EQ(at, rank_node(t, dst));
}

inline std::int64_t latency_ps(double seconds) { return std::llround(seconds * 1e12); }

using Cost = std::pair<std::int64_t, int>;  // (latency in ps, hops)

// All-pairs (latency, hops) over a graph's nodes.
inline std::vector<std::vector<Cost>> floyd(const GraphTopology& g) {
  const int n = static_cast<int>(g.num_nodes());
  const Cost inf{std::numeric_limits<std::int64_t>::max() / 4, 1 << 20};
  std::vector<std::vector<Cost>> d(n, std::vector<Cost>(n, inf));
  for (int v = 0; v < n; ++v) d[v][v] = {0, 0};
  for (LinkId l = 0; l < g.num_links(); ++l) {
    Cost c{latency_ps(g.link(l).latency), 1};
    auto& cur = d[g.link_src(l)][g.link_dst(l)];
    if (c < cur) cur = c;
  }
  for (int k = 0; k < n; ++k) {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        Cost via{d[i][k].first + d[k][j].first, d[i][k].second + d[k][j].second};
        if (via < d[i][j]) d[i][j] = via;
      }
    }
  }
  return d;
}

inline Cost route_cost(const Topology& t, int src, int dst) {
  std::vector<LinkId> links;
  t.route(src, dst, links);
  Cost c{0, static_cast<int>(links.size())};
  for (LinkId l : links) c.first += latency_ps(t.link(l).latency);
  return c;
}

// Every route between ranks of `t` is connected and as short as the
// brute-force optimum on `graph` (whose endpoint r is t's rank r).
inline void expect_all_routes_shortest(const Topology& t, const GraphTopology& graph) {
  auto d = floyd(graph);
  for (int s = 0; s < t.num_ranks(); ++s) {
    for (int r = 0; r < t.num_ranks(); ++r) {
      if (s == r) continue;
      expect_connected_route(t, s, r);
      EXPECT_EQ(route_cost(t, s, r), d[graph.endpoint_node(s)][graph.endpoint_node(r)])
          << s << "->" << r;
    }
  }
}

}  // namespace collkit::testing
