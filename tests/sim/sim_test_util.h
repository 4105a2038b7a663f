// Test-local topologies and hand-written schedules, so the simulator's tests
// depend neither on the topology loader nor on the generators.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/schedule.h"
#include "topologies/topology.h"

namespace collkit::testing {

// p ranks, one directed link per ordered pair, computed rather than stored
// (link id = src * p + dst), like the loader's fully_connected generator.
class FullyConnected final : public Topology {
 public:
  FullyConnected(int p, double bandwidth, double latency, EndpointProps endpoint = {})
      : p_(p), link_{bandwidth, latency}, endpoint_(endpoint) {
    name = "test-fc-";
    name += std::to_string(p);
  }
  int num_ranks() const override { return p_; }
  std::int64_t num_links() const override { return std::int64_t{p_} * p_; }
  EndpointProps endpoint(int) const override { return endpoint_; }
  LinkProps link(LinkId) const override { return link_; }
  std::string link_name(LinkId id) const override {
    std::string out = "r";
    out += std::to_string(id / p_);
    out += "->r";
    out += std::to_string(id % p_);
    return out;
  }
  void route(int src, int dst, std::vector<LinkId>& out) const override {
    out.assign(1, std::int64_t{src} * p_ + dst);
  }
  int num_link_classes() const override { return 1; }
  int link_class(LinkId) const override { return 0; }

 private:
  int p_;
  LinkProps link_;
  EndpointProps endpoint_;
};

// Nodes 0..ranks-1 are endpoints, higher ids are switches. Cables are two
// directed links; routes are shortest by latency (ties: fewer hops, then the
// first found), unless set explicitly with set_route().
class SmallGraph final : public Topology {
 public:
  SmallGraph(int ranks, int nodes, EndpointProps endpoint = {})
      : ranks_(ranks),
        nodes_(nodes),
        adjacency_(static_cast<std::size_t>(nodes)),
        endpoint_(endpoint) {
    name = "test-graph";
  }

  // Returns the id of the a->b link; b->a is that id + 1.
  LinkId add_cable(int a, int b, double bandwidth, double latency) {
    const LinkId id = static_cast<LinkId>(links_.size());
    links_.push_back({a, b, {bandwidth, latency}});
    links_.push_back({b, a, {bandwidth, latency}});
    adjacency_[a].push_back(id);
    adjacency_[b].push_back(id + 1);
    return id;
  }
  // A cable with every figure given (protocol latencies included).
  LinkId add_cable(int a, int b, const LinkProps& props) {
    const LinkId id = static_cast<LinkId>(links_.size());
    links_.push_back({a, b, props});
    links_.push_back({b, a, props});
    adjacency_[a].push_back(id);
    adjacency_[b].push_back(id + 1);
    return id;
  }
  // Switch node `node` multicasts and reduces at `bandwidth` per port.
  void set_in_network(int node, double bandwidth) { in_network_[node] = bandwidth; }
  int in_network_side(LinkId id, double& bandwidth) const override {
    bandwidth = 0;
    if (auto it = in_network_.find(links_[id].to); it != in_network_.end()) {
      bandwidth = it->second;
      return 1;
    }
    if (auto it = in_network_.find(links_[id].from); it != in_network_.end()) {
      bandwidth = it->second;
      return -1;
    }
    return 0;
  }
  // A lone directed link (for tests that pin routes by hand).
  LinkId add_link(int a, int b, double bandwidth, double latency) {
    const LinkId id = static_cast<LinkId>(links_.size());
    links_.push_back({a, b, {bandwidth, latency}});
    adjacency_[a].push_back(id);
    return id;
  }
  void set_route(int src, int dst, std::vector<LinkId> links) {
    fixed_[{src, dst}] = std::move(links);
  }
  // One rank's own endpoint props instead of the common ones.
  void set_endpoint(int rank, EndpointProps props) { own_endpoint_[rank] = props; }

  int num_ranks() const override { return ranks_; }
  std::int64_t num_links() const override { return static_cast<std::int64_t>(links_.size()); }
  EndpointProps endpoint(int rank) const override {
    const auto it = own_endpoint_.find(rank);
    return it == own_endpoint_.end() ? endpoint_ : it->second;
  }
  LinkProps link(LinkId id) const override { return links_[id].props; }
  std::string link_name(LinkId id) const override {
    std::string out = std::to_string(links_[id].from);
    out += "->";
    out += std::to_string(links_[id].to);
    return out;
  }
  void route(int src, int dst, std::vector<LinkId>& out) const override {
    out.clear();
    if (auto it = fixed_.find({src, dst}); it != fixed_.end()) {
      out = it->second;
      return;
    }
    using Key = std::pair<double, int>;  // (latency, hops)
    std::vector<Key> best(static_cast<std::size_t>(nodes_),
                          {std::numeric_limits<double>::infinity(), 0});
    std::vector<LinkId> via(static_cast<std::size_t>(nodes_), -1);
    std::vector<bool> done(static_cast<std::size_t>(nodes_), false);
    best[src] = {0, 0};
    for (;;) {
      int u = -1;
      for (int v = 0; v < nodes_; ++v)
        if (!done[v] && (u < 0 || best[v] < best[u])) u = v;
      if (u < 0 || best[u].first == std::numeric_limits<double>::infinity()) break;
      done[u] = true;
      // Paths go through switches only, never through another endpoint.
      if (u != src && u < ranks_) continue;
      for (LinkId id : adjacency_[u]) {
        const Key k{best[u].first + links_[id].props.latency, best[u].second + 1};
        if (k < best[links_[id].to]) {
          best[links_[id].to] = k;
          via[links_[id].to] = id;
        }
      }
    }
    for (int v = dst; v != src; v = links_[via[v]].from) out.push_back(via[v]);
    std::reverse(out.begin(), out.end());
  }
  int num_link_classes() const override { return 1; }
  int link_class(LinkId) const override { return 0; }

 private:
  struct Link {
    int from;
    int to;
    LinkProps props;
  };
  int ranks_;
  int nodes_;
  std::vector<Link> links_;
  std::vector<std::vector<LinkId>> adjacency_;
  std::map<std::pair<int, int>, std::vector<LinkId>> fixed_;
  EndpointProps endpoint_;
  std::map<int, EndpointProps> own_endpoint_;
  std::map<int, double> in_network_;
};

// A schedule given as explicit per-rank step lists.
class HandSchedule final : public Schedule {
 public:
  // rank_rate: ScheduleSpec::rank_rate, data bytes per second a rank's
  // sends share (0 = none).
  explicit HandSchedule(int ranks, int elem_size = 1, Protocol protocol = Protocol::none,
                        double rank_rate = 0)
      : Schedule(spec_for(ranks, elem_size, protocol, rank_rate)),
        steps_(static_cast<std::size_t>(ranks)) {}

  // Appends a step to `rank`'s program.
  void add(int rank, std::vector<Op> ops) { steps_[rank].push_back(Step{std::move(ops)}); }

  Generator<Step> program(int rank) const override { return replay(&steps_[rank]); }

 protected:
  std::int64_t scratch_size(int) const override { return 0; }

 private:
  static ScheduleSpec spec_for(int ranks, int elem_size, Protocol protocol, double rank_rate) {
    ScheduleSpec spec;
    spec.rank_rate = rank_rate;
    spec.algorithm = "hand";
    spec.ranks = ranks;
    spec.elem_size = elem_size;
    spec.protocol = protocol;
    return spec;
  }
  static Generator<Step> replay(const std::vector<Step>* steps) {
    for (const Step& s : *steps) co_yield s;
  }
  std::vector<std::vector<Step>> steps_;
};

// Region of `count` elements at the start of the input buffer.
inline Region in(std::int64_t count) { return Region{Buf::input, 0, count}; }

}  // namespace collkit::testing
