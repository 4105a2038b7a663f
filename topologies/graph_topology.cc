#include "topologies/graph_topology.h"

#include <algorithm>
#include <array>
#include <bit>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/dijkstra_shortest_paths_no_color_map.hpp>
#include <boost/property_map/property_map.hpp>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <utility>

namespace collkit {
namespace {

struct EdgeWeight {
  std::int64_t weight = 0;
};

using Csr = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, EdgeWeight,
                                               boost::no_property, std::uint32_t, std::uint32_t>;

constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max();
// Latency in whole picoseconds in the high bits, one hop in the low bits: the
// lexicographic order (latency, hops) becomes one exact integer comparison.
constexpr int kHopBits = 16;
// Trees kept in memory: about this many distances in total (8 bytes each,
// 16 in partial trees). 2^25 evicted and recomputed 43,000 trees of an
// nvls_tree all_reduce on 2048 nodes of 8 GPUs (16,384 roots, their
// partial trees across a rail about 3,000 nodes each); 2^26 keeps them.
constexpr std::size_t kTreeBudget = std::size_t{1} << 26;
// Partial searches again before a root's tree is computed in full.
constexpr int kPartialReruns = 2;
// route(): in-degree from which a partial tree's tight in-links are found by
// walking the in-links and the settled nodes together (both sorted).
constexpr std::int64_t kMergeInLinks = 16;
// Settled nodes from which a partial tree orders them by a radix sort; below
// it std::sort is as fast (about 0.5 us for 64 nodes either way; for 1,024
// the radix sort takes a third of the time, for 8,192 a quarter).
constexpr std::size_t kRadixSortMin = 96;
// The widest digit of that radix sort: its counts (2^11 of them at most)
// stay in L1, and vertex ids below 2^22 take two passes.
constexpr int kRadixBits = 11;

// The settled nodes with their distances, ordered by node: what sorting the
// (node, distance) pairs gives, since a search settles each node once. The
// ids are below `vertices`, so a least-significant-digit radix sort orders
// them in as few counting passes as their width needs (two at 2048 nodes of
// 8 GPUs, where std::sort of the pairs took 3.4% of an nccl all_reduce),
// its last pass writing the pairs. `nodes` is left in an unspecified order.
std::vector<std::pair<int, std::int64_t>> settled_by_node(std::vector<int>& nodes,
                                                          std::size_t vertices,
                                                          const std::vector<std::int64_t>& dist) {
  std::vector<std::pair<int, std::int64_t>> out;
  if (nodes.size() < kRadixSortMin) {
    std::sort(nodes.begin(), nodes.end());
    out.reserve(nodes.size());
    for (int v : nodes) out.emplace_back(v, dist[v]);
    return out;
  }
  const int bits = std::max(1, static_cast<int>(std::bit_width(vertices - 1)));
  const int passes = (bits + kRadixBits - 1) / kRadixBits;
  const int digit = (bits + passes - 1) / passes;
  const std::uint32_t mask = (std::uint32_t{1} << digit) - 1;
  std::vector<std::uint32_t> count(std::size_t{1} << digit);
  std::vector<int> spare(passes > 1 ? nodes.size() : 0);
  out.resize(nodes.size());
  std::vector<int>* from = &nodes;
  std::vector<int>* to = &spare;
  for (int pass = 0; pass < passes; ++pass) {
    const int shift = pass * digit;
    const auto bucket = [&](int v) { return (static_cast<std::uint32_t>(v) >> shift) & mask; };
    std::fill(count.begin(), count.end(), 0);
    for (int v : *from) ++count[bucket(v)];
    std::uint32_t sum = 0;
    for (std::uint32_t& c : count) sum += std::exchange(c, sum);
    if (pass + 1 < passes) {
      for (int v : *from) (*to)[count[bucket(v)]++] = v;
      std::swap(from, to);
    } else {
      for (int v : *from) out[count[bucket(v)]++] = {v, dist[v]};
    }
  }
  return out;
}

}  // namespace

struct GraphTopology::Graph {
  Csr csr;
};

GraphTopology::GraphTopology() = default;
GraphTopology::~GraphTopology() = default;

int GraphTopology::add_node(std::string name, bool is_switch, EndpointProps endpoint) {
  names_.push_back(std::move(name));
  is_switch_.push_back(is_switch);
  node_endpoint_.push_back(endpoint);
  return static_cast<int>(names_.size()) - 1;
}

LinkId GraphTopology::add_cable(int a, int b, LinkProps props) {
  LinkId id = add_link(a, b, props);
  add_link(b, a, props);
  return id;
}

LinkId GraphTopology::add_link(int a, int b, LinkProps props) {
  link_src_.push_back(a);
  link_dst_.push_back(b);
  link_props_.push_back(props);
  return static_cast<LinkId>(link_src_.size()) - 1;
}

void GraphTopology::set_in_network(int node, double bandwidth) {
  if (in_network_.empty()) in_network_.assign(names_.size(), 0.0);
  in_network_.resize(names_.size(), 0.0);
  in_network_[static_cast<std::size_t>(node)] = bandwidth;
}

int GraphTopology::in_network_side(LinkId id, double& bandwidth) const {
  bandwidth = 0;
  if (in_network_.empty()) return 0;
  const auto at = [&](int node) {
    return static_cast<std::size_t>(node) < in_network_.size() ? in_network_[node] : 0.0;
  };
  if (at(link_dst_[id]) > 0) {
    bandwidth = at(link_dst_[id]);
    return 1;
  }
  if (at(link_src_[id]) > 0) {
    bandwidth = at(link_src_[id]);
    return -1;
  }
  return 0;
}

void GraphTopology::set_endpoints(std::vector<int> nodes) {
  endpoints_ = std::move(nodes);
  endpoints_set_ = true;
}

void GraphTopology::set_blocks(std::vector<int> block) { block_ = std::move(block); }

std::string_view to_string(TurnKind kind) {
  return kind == TurnKind::local ? "rail turn" : "node turn";
}

void GraphTopology::set_turn(TurnKind kind, std::vector<int> sigma, int nodes, int per_node) {
  claims_[kind == TurnKind::local ? 0 : 1] = TurnClaim{std::move(sigma), nodes, per_node};
}

std::optional<RankTurn> GraphTopology::check_turn(TurnKind kind, const std::vector<int>& sigma,
                                                  int nodes, int per_node) const {
  const std::size_t n = names_.size();
  const std::size_t m = link_src_.size();
  if (sigma.size() != n || nodes < 1 || per_node < 1 || !endpoints_forward_) return std::nullopt;
  if (static_cast<std::int64_t>(nodes) * per_node != static_cast<std::int64_t>(endpoints_.size()))
    return std::nullopt;
  RankTurn turn;
  turn.kind = kind;
  turn.nodes = nodes;
  turn.per_node = per_node;
  const int order = turn.order();
  if (order < 2) return std::nullopt;
  // A permutation of the nodes that keeps kinds, in-network figures and
  // endpoints, whose every cycle divides the turn's order.
  std::vector<char> seen(n, 0);
  for (const int v : sigma) {
    if (v < 0 || static_cast<std::size_t>(v) >= n || seen[v]) return std::nullopt;
    seen[v] = 1;
  }
  const auto in_network = [&](int v) {
    return static_cast<std::size_t>(v) < in_network_.size() ? in_network_[v] : 0.0;
  };
  const auto same_endpoint = [](const EndpointProps& a, const EndpointProps& b) {
    return a.overhead == b.overhead && a.reduce_bw == b.reduce_bw && a.copy_bw == b.copy_bw &&
           a.cache_bytes == b.cache_bytes && a.dram_factor == b.dram_factor &&
           a.dirty_factor == b.dirty_factor && a.host_cores == b.host_cores &&
           (a.host_cores == 0 || a.host == b.host) && a.receiver_copies == b.receiver_copies &&
           a.pipelined == b.pipelined && a.launch == b.launch;
  };
  for (std::size_t v = 0; v < n; ++v) {
    const int u = sigma[v];
    if (is_switch_[v] != is_switch_[u] || in_network(static_cast<int>(v)) != in_network(u) ||
        !same_endpoint(node_endpoint_[v], node_endpoint_[u]))
      return std::nullopt;
  }
  std::fill(seen.begin(), seen.end(), 0);
  for (std::size_t v = 0; v < n; ++v) {
    if (seen[v]) continue;
    int len = 0;
    for (int w = static_cast<int>(v); !seen[w]; w = sigma[w]) {
      seen[w] = 1;
      ++len;
    }
    if (order % len != 0) return std::nullopt;
  }
  for (int r = 0; r < static_cast<int>(endpoints_.size()); ++r)
    if (endpoints_[turn.apply(r, 1)] != sigma[endpoints_[r]]) return std::nullopt;
  // Links: the k-th link from a to b (in id order) goes to the k-th from
  // sigma(a) to sigma(b), of the same class and weight.
  std::vector<LinkId> by_pair(m);
  std::iota(by_pair.begin(), by_pair.end(), 0);
  const auto pair_less = [&](LinkId x, LinkId y) {
    if (link_src_[x] != link_src_[y]) return link_src_[x] < link_src_[y];
    if (link_dst_[x] != link_dst_[y]) return link_dst_[x] < link_dst_[y];
    return x < y;
  };
  std::sort(by_pair.begin(), by_pair.end(), pair_less);
  std::vector<std::int64_t> rank_in_pair(m);
  for (std::size_t i = 0; i < m; ++i) {
    const LinkId l = by_pair[i];
    const bool first = i == 0 || link_src_[by_pair[i - 1]] != link_src_[l] ||
                       link_dst_[by_pair[i - 1]] != link_dst_[l];
    rank_in_pair[l] = first ? 0 : rank_in_pair[by_pair[i - 1]] + 1;
  }
  std::vector<LinkId> image(m);
  for (std::size_t l = 0; l < m; ++l) {
    const int a = sigma[link_src_[l]], b = sigma[link_dst_[l]];
    const auto lo = std::partition_point(by_pair.begin(), by_pair.end(), [&](LinkId x) {
      return link_src_[x] < a || (link_src_[x] == a && link_dst_[x] < b);
    });
    const auto at = lo + rank_in_pair[l];
    if (at >= by_pair.end() || link_src_[*at] != a || link_dst_[*at] != b) return std::nullopt;
    const LinkId t = *at;
    if (link_class_[t] != link_class_[l] || weight_[t] != weight_[l]) return std::nullopt;
    image[l] = t;
  }
  // Cycles (image is a bijection: every pair's links go to a pair with at
  // least as many, and sigma is a permutation, so counts are equal).
  auto cycles = std::make_shared<LinkCycles>();
  LinkCycles& c = *cycles;
  c.cycle.reserve(m);
  c.start.assign(m, -1);
  c.len.assign(m, 0);
  c.pos.assign(m, 0);
  for (std::size_t l = 0; l < m; ++l) {
    if (c.start[l] >= 0) continue;
    const auto begin = static_cast<std::int64_t>(c.cycle.size());
    LinkId x = static_cast<LinkId>(l);
    do {
      if (c.start[x] >= 0) return std::nullopt;  // not a bijection
      c.start[x] = begin;
      c.pos[x] = static_cast<std::int32_t>(c.cycle.size() - begin);
      c.cycle.push_back(x);
      x = image[x];
    } while (x != static_cast<LinkId>(l));
    const auto len = static_cast<std::int32_t>(c.cycle.size() - begin);
    if (order % len != 0) return std::nullopt;
    for (std::int64_t i = begin; i < begin + len; ++i) c.len[c.cycle[i]] = len;
  }
  turn.links = std::move(cycles);
  return turn;
}

int GraphTopology::finalize() {
  const int n = static_cast<int>(names_.size());
  const std::size_t m = link_src_.size();
  if (!endpoints_set_) {
    for (int v = 0; v < n; ++v) {
      if (!is_switch_[v]) endpoints_.push_back(v);
    }
  }
  ranks_ = static_cast<int>(endpoints_.size());

  // Link classes in order of first appearance, so ids are stable for a file.
  // Keyed by every figure of the link (bandwidth, latency, protocol
  // latencies, line rate).
  std::map<std::array<double, 6>, int> class_ids;
  link_class_.resize(m);
  weight_.resize(m);
  for (std::size_t l = 0; l < m; ++l) {
    const LinkProps& p = link_props_[l];
    auto [it, added] =
        class_ids.try_emplace({p.bandwidth, p.latency, p.protocol_latency[0], p.protocol_latency[1],
                               p.protocol_latency[2], p.line_rate},
                              static_cast<int>(classes_.size()));
    if (added) classes_.push_back(p);
    link_class_[l] = it->second;
    weight_[l] = (std::llround(p.latency * 1e12) << kHopBits) + 1;
  }
  link_props_.clear();
  link_props_.shrink_to_fit();

  std::vector<std::int64_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
    return link_dst_[x] != link_dst_[y] ? link_dst_[x] < link_dst_[y] : link_src_[x] < link_src_[y];
  });
  in_begin_.assign(n + 1, 0);
  for (std::size_t l = 0; l < m; ++l) ++in_begin_[link_dst_[l] + 1];
  for (int v = 0; v < n; ++v) in_begin_[v + 1] += in_begin_[v];
  in_links_ = std::move(order);

  std::vector<int> out_degree(n, 0);
  via_.assign(n, -1);
  for (std::size_t l = 0; l < m; ++l) {
    ++out_degree[link_src_[l]];
    via_[link_src_[l]] = static_cast<LinkId>(l);
  }
  for (int v = 0; v < n; ++v) {
    if (out_degree[v] != 1) via_[v] = -1;
  }

  // Dijkstra's graph: the nodes, plus, when endpoints do not forward, a
  // departure vertex per endpoint that sends. An endpoint's out-links leave
  // from its departure vertex, which only that endpoint's own routes start
  // from, so no route can enter an endpoint and go on.
  departure_.resize(n);
  std::iota(departure_.begin(), departure_.end(), 0);
  int vertices = n;
  if (!endpoints_forward_) {
    for (int v = 0; v < n; ++v)
      if (!is_switch_[v] && out_degree[v] > 0) departure_[v] = vertices++;
  }
  graph_src_.resize(m);
  for (std::size_t l = 0; l < m; ++l) graph_src_[l] = departure_[link_src_[l]];
  check_blocks();
  // Turns: the claimed ones, and the turn of servers where blocks hold.
  if (blocks_ > 1 && ranks_ % blocks_ == 0 && !claims_[1]) {
    std::vector<int> sigma(n);
    for (int v = 0; v < n; ++v) {
      const int b = block_[v];
      sigma[v] =
          b < 0
              ? v
              : block_nodes_[static_cast<std::size_t>((b + 1) % blocks_) * block_size_ + local_[v]];
    }
    claims_[1] = TurnClaim{std::move(sigma), blocks_, ranks_ / blocks_};
  }
  for (int i = 0; i < 2; ++i) {
    if (claims_[i])
      turns_[i] = check_turn(i == 0 ? TurnKind::local : TurnKind::node, claims_[i]->sigma,
                             claims_[i]->nodes, claims_[i]->per_node);
    claims_[i].reset();
  }
  in_sorted_ = true;
  for (int v = 0; v < n && in_sorted_; ++v)
    for (std::int64_t i = in_begin_[v] + 1; i < in_begin_[v + 1]; ++i)
      if (graph_src_[in_links_[i - 1]] > graph_src_[in_links_[i]]) {
        in_sorted_ = false;
        break;
      }

  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges(m);
  std::vector<EdgeWeight> props(m);
  for (std::size_t l = 0; l < m; ++l) {
    edges[l] = {static_cast<std::uint32_t>(graph_src_[l]),
                static_cast<std::uint32_t>(link_dst_[l])};
    props[l].weight = weight_[l];
  }
  graph_ = std::make_unique<Graph>(
      Graph{Csr(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), props.begin(),
                static_cast<std::uint32_t>(vertices))});

  if (endpoints_.empty()) return -1;
  if (!endpoints_forward_) return check_pairs(vertices);
  // Every endpoint must reach endpoint 0 and be reached from it; then every
  // pair is connected. Searched along in-links, then along out-links.
  std::vector<LinkId> out_links(m);
  std::vector<std::int64_t> out_begin(n + 1, 0);
  for (std::size_t l = 0; l < m; ++l) ++out_begin[link_src_[l] + 1];
  for (int v = 0; v < n; ++v) out_begin[v + 1] += out_begin[v];
  std::vector<std::int64_t> fill(out_begin.begin(), out_begin.end() - 1);
  for (std::size_t l = 0; l < m; ++l) out_links[fill[link_src_[l]]++] = static_cast<LinkId>(l);
  for (bool forward : {false, true}) {
    std::vector<char> seen(n, 0);
    std::vector<int> stack = {endpoints_[0]};
    seen[endpoints_[0]] = 1;
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      const auto& begin = forward ? out_begin : in_begin_;
      for (std::int64_t i = begin[v]; i < begin[v + 1]; ++i) {
        LinkId l = forward ? out_links[i] : in_links_[i];
        int u = forward ? link_dst_[l] : link_src_[l];
        if (!seen[u]) {
          seen[u] = 1;
          stack.push_back(u);
        }
      }
    }
    // Along in-links: what can reach endpoint 0; along out-links: what
    // endpoint 0 reaches.
    for (std::size_t r = 0; r < endpoints_.size(); ++r) {
      if (!seen[endpoints_[r]]) {
        lost_cannot_reach_ = !forward;
        return static_cast<int>(r);
      }
    }
  }
  return -1;
}

void GraphTopology::check_blocks() {
  blocks_ = 0;
  const std::size_t n = names_.size();
  const std::size_t m = link_src_.size();
  const auto drop = [&] {
    blocks_ = 0;
    for (auto* v : {&block_, &local_, &link_block_, &link_local_, &block_nodes_}) *v = {};
    block_links_ = {};
    block_size_ = block_link_size_ = 0;
  };
  // Departure vertices (no forwarding through endpoints) are numbered after
  // the nodes and are not swapped: such files search per source.
  if (block_.size() != n || !endpoints_forward_) return drop();
  int count_blocks = 0;
  for (const int b : block_) {
    if (b < -1) return drop();
    count_blocks = std::max(count_blocks, b + 1);
  }
  if (count_blocks < 2) return drop();
  const auto blocks = static_cast<std::size_t>(count_blocks);
  // Nodes and links of each block, numbered in order of creation.
  std::vector<std::size_t> count(blocks, 0);
  local_.assign(n, -1);
  for (std::size_t v = 0; v < n; ++v)
    if (block_[v] >= 0) local_[v] = static_cast<int>(count[block_[v]]++);
  for (const std::size_t c : count)
    if (c != count[0]) return drop();
  block_size_ = count[0];
  block_nodes_.assign(blocks * block_size_, -1);
  for (std::size_t v = 0; v < n; ++v)
    if (block_[v] >= 0) block_nodes_[block_[v] * block_size_ + local_[v]] = static_cast<int>(v);
  count.assign(blocks, 0);
  link_block_.assign(m, -1);
  link_local_.assign(m, -1);
  for (std::size_t l = 0; l < m; ++l) {
    const int a = block_[link_src_[l]];
    const int c = block_[link_dst_[l]];
    if (a >= 0 && c >= 0 && a != c) return drop();  // joins two blocks
    const int k = a >= 0 ? a : c;
    link_block_[l] = k;
    if (k >= 0) link_local_[l] = static_cast<int>(count[k]++);
  }
  for (const std::size_t c : count)
    if (c != count[0]) return drop();
  block_link_size_ = count[0];
  block_links_.assign(blocks * block_link_size_, -1);
  for (std::size_t l = 0; l < m; ++l)
    if (link_block_[l] >= 0)
      block_links_[link_block_[l] * block_link_size_ + link_local_[l]] = static_cast<LinkId>(l);
  // Block b against block 0: the same kinds of nodes, and links that join
  // corresponding nodes (or the same outside node) with the same figures.
  const auto in_network = [&](int v) {
    return static_cast<std::size_t>(v) < in_network_.size() ? in_network_[v] : 0.0;
  };
  const auto corresponds = [&](int v, int v0, int b) {
    if (block_[v] < 0) return v == v0;
    return block_[v] == b && block_[v0] == 0 && local_[v] == local_[v0];
  };
  for (int b = 1; b < count_blocks; ++b) {
    for (std::size_t i = 0; i < block_size_; ++i) {
      const int v = block_nodes_[b * block_size_ + i];
      const int v0 = block_nodes_[i];
      if (is_switch_[v] != is_switch_[v0] || in_network(v) != in_network(v0)) return drop();
    }
    for (std::size_t i = 0; i < block_link_size_; ++i) {
      const LinkId l = block_links_[b * block_link_size_ + i];
      const LinkId l0 = block_links_[i];
      if (!corresponds(link_src_[l], link_src_[l0], b) ||
          !corresponds(link_dst_[l], link_dst_[l0], b) || link_class_[l] != link_class_[l0] ||
          weight_[l] != weight_[l0])
        return drop();
    }
  }
  blocks_ = count_blocks;
}

int GraphTopology::check_pairs(int vertices) {
  // Without forwarding, reaching endpoint 0 and back says nothing about the
  // other pairs: search from every endpoint (O(p (n + m)); such files are
  // hosts and small machines).
  const std::size_t m = link_src_.size();
  std::vector<std::int64_t> begin(static_cast<std::size_t>(vertices) + 1, 0);
  for (std::size_t l = 0; l < m; ++l) ++begin[static_cast<std::size_t>(graph_src_[l]) + 1];
  for (int v = 0; v < vertices; ++v) begin[v + 1] += begin[v];
  std::vector<int> next(m);
  std::vector<std::int64_t> fill(begin.begin(), begin.end() - 1);
  for (std::size_t l = 0; l < m; ++l) next[fill[graph_src_[l]]++] = link_dst_[l];
  std::vector<int> seen(static_cast<std::size_t>(vertices), -1);
  std::vector<int> stack;
  for (std::size_t r = 0; r < endpoints_.size(); ++r) {
    const int from = departure_[endpoints_[r]];
    const int mark = static_cast<int>(r);
    seen[from] = mark;
    stack.assign(1, from);
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      for (std::int64_t i = begin[v]; i < begin[v + 1]; ++i) {
        const int u = next[static_cast<std::size_t>(i)];
        if (seen[u] != mark) {
          seen[u] = mark;
          stack.push_back(u);
        }
      }
    }
    for (std::size_t q = 0; q < endpoints_.size(); ++q) {
      if (q != r && seen[endpoints_[q]] != mark) {
        lost_cannot_reach_ = true;
        lost_peer_ = static_cast<int>(q);
        return static_cast<int>(r);
      }
    }
  }
  return -1;
}

std::string GraphTopology::link_name(LinkId id) const {
  return names_[link_src_[id]] + "->" + names_[link_dst_[id]];
}

namespace {

// Thrown by the visitor to end Dijkstra early (Boost's documented way).
struct TargetSettled {};

// Records settled nodes; with a target, stops once every node as near as
// the target is settled (a later target at that same distance, the common
// case in a fat tree or a rail, is then answered without a new search).
// Past `full_after` settled nodes the search is no longer partial: it runs
// to completion (sorting and keeping most of the graph as pairs would cost
// more than the dense tree) and says so in *went_full.
struct Recorder : boost::default_dijkstra_visitor {
  std::vector<int>* examined;
  mutable std::int64_t target;  // -1: run to completion
  const std::vector<std::int64_t>* dist;
  std::size_t full_after;
  bool* went_full;
  mutable std::int64_t limit = -1;  // the target's distance, once settled
  template <class Vertex, class G>
  void examine_vertex(Vertex v, const G&) const {
    if (target < 0) return;
    if (limit >= 0 && (*dist)[v] > limit) throw TargetSettled{};
    if (examined->size() >= full_after) {
      target = -1;
      *went_full = true;
      return;
    }
    examined->push_back(static_cast<int>(v));
    if (static_cast<std::int64_t>(v) == target) limit = (*dist)[v];
  }
};

}  // namespace

std::int64_t GraphTopology::Tree::dist(int v) const {
  if (full) return dense[v];
  auto it = std::lower_bound(settled.begin(), settled.end(), std::pair<int, std::int64_t>{v, 0},
                             [](const auto& a, const auto& b) { return a.first < b.first; });
  return it != settled.end() && it->first == v ? it->second : kInf;
}

const GraphTopology::Tree& GraphTopology::tree(int root, int target) const {
  auto it = trees_.find(root);
  if (it != trees_.end()) {
    Tree& t = it->second;
    if (t.full || t.dist(target) != kInf) {
      lru_.splice(lru_.begin(), lru_, t.lru);
      return t;
    }
  }
  // A root whose partial tree cannot answer a later target searches again,
  // partially, to that target (kPartialReruns times), then in full: NVLS and
  // channel searches ask each GPU for peers at a few distances, and full
  // trees of every GPU outgrew the budget from 512 nodes of 8 GPUs on
  // (evicted and recomputed); a root asked for targets at many distances
  // still ends with one full tree.
  bool full = it != trees_.end() && it->second.reruns >= kPartialReruns;
  const Csr& g = graph_->csr;
  scratch_.resize(boost::num_vertices(g));
  examined_.clear();
  bool went_full = false;
  try {
    boost::dijkstra_shortest_paths_no_color_map(
        g, static_cast<std::uint32_t>(root),
        boost::distance_map(
            boost::make_iterator_property_map(scratch_.begin(), get(boost::vertex_index, g)))
            .weight_map(get(&EdgeWeight::weight, g))
            .distance_inf(kInf)
            .visitor(Recorder{{},
                              &examined_,
                              full ? -1 : target,
                              &scratch_,
                              std::max<std::size_t>(1024, scratch_.size() / 4),
                              &went_full}));
  } catch (const TargetSettled&) {
  }
  full = full || went_full;
  Tree& t = lru_slot(root, it);
  t.full = full;
  if (full) {
    t.dense = scratch_;
    t.settled = {};
  } else {
    // Distances are exact, so what an earlier search settled joins what this
    // one did (a farther target settles at least every nearer node; nodes at
    // the earlier target's distance may be missing from this one).
    std::vector<std::pair<int, std::int64_t>> fresh =
        settled_by_node(examined_, scratch_.size(), scratch_);
    if (t.settled.empty()) {
      t.settled = std::move(fresh);
    } else {
      ++t.reruns;
      std::vector<std::pair<int, std::int64_t>> merged;
      merged.reserve(t.settled.size() + fresh.size());
      std::set_union(t.settled.begin(), t.settled.end(), fresh.begin(), fresh.end(),
                     std::back_inserter(merged),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
      t.settled = std::move(merged);
    }
  }
  stored_ += t.size();
  evict_trees();
  return t;
}

GraphTopology::Tree& GraphTopology::lru_slot(int root, TreeMap::iterator it) const {
  if (it == trees_.end()) {
    lru_.push_front(root);
    it = trees_.emplace(root, Tree{}).first;
    it->second.lru = lru_.begin();
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    stored_ -= it->second.size();
  }
  return it->second;
}

void GraphTopology::evict_trees() const {
  while (stored_ > kTreeBudget && lru_.size() > 1) {
    auto old = trees_.find(lru_.back());
    stored_ -= old->second.size();
    trees_.erase(old);
    lru_.pop_back();
  }
}

const GraphTopology::Tree& GraphTopology::block_tree(int root) const {
  auto it = trees_.find(root);
  if (it != trees_.end() && it->second.full && !it->second.tight_begin.empty()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  const Csr& g = graph_->csr;
  std::vector<std::int64_t> dist(boost::num_vertices(g));
  boost::dijkstra_shortest_paths_no_color_map(
      g, static_cast<std::uint32_t>(root),
      boost::distance_map(
          boost::make_iterator_property_map(dist.begin(), get(boost::vertex_index, g)))
          .weight_map(get(&EdgeWeight::weight, g))
          .distance_inf(kInf));
  Tree& t = lru_slot(root, it);
  t.full = true;
  t.settled = {};
  // Every node's tight in-links, in in-link order.
  const std::size_t n = names_.size();
  t.tight_begin.assign(n + 1, 0);
  t.tight_links.clear();
  for (std::size_t v = 0; v < n; ++v) {
    for (std::int64_t i = in_begin_[v]; i < in_begin_[v + 1]; ++i) {
      const LinkId l = in_links_[i];
      const std::int64_t du = dist[graph_src_[l]];
      if (du != kInf && du + weight_[l] == dist[v]) t.tight_links.push_back(l);
    }
    t.tight_begin[v + 1] = static_cast<std::int64_t>(t.tight_links.size());
  }
  t.tight_links.shrink_to_fit();
  t.dense = std::move(dist);
  stored_ += t.size();
  evict_trees();
  return t;
}

LinkId GraphTopology::choose(std::uint64_t& sel) const {
  // The narrowest bandwidth among the tight in-links and how many of them
  // have it.
  double narrowest = std::numeric_limits<double>::infinity();
  std::int64_t count = 0;
  for (const LinkId l : tight_) {
    const double bw = classes_[link_class_[l]].bandwidth;
    if (bw < narrowest) {
      narrowest = bw;
      count = 0;
    }
    if (bw == narrowest) ++count;
  }
  std::int64_t pick = static_cast<std::int64_t>(sel % static_cast<std::uint64_t>(count));
  sel /= static_cast<std::uint64_t>(count);
  for (const LinkId l : tight_)
    if (classes_[link_class_[l]].bandwidth == narrowest && pick-- == 0) return l;
  return -1;  // unreachable: count >= 1 on a connected graph
}

void GraphTopology::route_by_blocks(int root, int t, std::uint64_t sel,
                                    std::vector<LinkId>& out) const {
  // The search of root's image in block 0; a node's tight in-links are the
  // images of its image's. Ordered as in-links are (by source node, then
  // link id), the same candidates as a search from root gives.
  const int b = std::max(0, block_[root]);
  const Tree& tr = block_tree(swap_node(root, b));
  int v = t;
  while (v != root) {
    const int image = swap_node(v, b);
    tight_.clear();
    for (std::int64_t i = tr.tight_begin[image]; i < tr.tight_begin[image + 1]; ++i)
      tight_.push_back(swap_link(tr.tight_links[i], b));
    std::sort(tight_.begin(), tight_.end(), [&](LinkId x, LinkId y) {
      return link_src_[x] != link_src_[y] ? link_src_[x] < link_src_[y] : x < y;
    });
    const LinkId l = choose(sel);
    out.push_back(l);
    v = link_src_[l];
  }
}

void GraphTopology::route(int src, int dst, std::vector<LinkId>& out) const {
  out.clear();
  const int s = endpoints_[src];
  const int t = endpoints_[dst];
  if (s == t) return;
  // A single-homed source leaves by its only link; every shortest path from
  // it is that link plus a shortest path from the neighbour, which cannot
  // come back through the source (its only link leads away).
  // (Without forwarding through endpoints the neighbour must be a switch.)
  int root = s;
  LinkId first = -1;
  if (via_[s] >= 0 &&
      (endpoints_forward_ || link_dst_[via_[s]] == t || is_switch_[link_dst_[via_[s]]])) {
    first = via_[s];
    root = link_dst_[first];
    if (root == t) {
      out.push_back(first);
      return;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (blocks_ > 1 && use_blocks_) {
    route_by_blocks(root, t, static_cast<std::uint64_t>(t), out);
    if (first >= 0) out.push_back(first);
    std::reverse(out.begin(), out.end());
    return;
  }
  // Dijkstra runs from the root's departure vertex (the root itself unless
  // endpoints do not forward); a link's source counts at its graph vertex.
  const Tree& tree_of_root = tree(departure_[root], t);
  std::uint64_t sel = static_cast<std::uint64_t>(t);
  int v = t;
  // Among the tight in-links of a node only the narrowest are candidates:
  // where equal-cost paths differ in where they cross the slow links, the
  // route enters its destination over the slow ones and moves over the fast
  // ones first. On a rail-optimised cluster that is NCCL's PXN: traffic to
  // GPU h of another node crosses the NVSwitch to GPU h's rail in the
  // sending node and leaves through that rail's NIC, so every NIC carries
  // the traffic of its own rail (NVIDIA, "Doubling all2all Performance with
  // NVIDIA Collective Communication Library 2.12", 2022).
  auto tight = [&](LinkId l, std::int64_t dv) {
    const std::int64_t du = tree_of_root.dist(graph_src_[l]);
    return du != kInf && du + weight_[l] == dv;
  };
  while (v != root) {
    const std::int64_t dv = tree_of_root.dist(v);
    // The tight in-links, in in-link order. A partial tree's distances are a
    // binary search each: where the in-links are many (a rail switch has
    // one per node) and sorted by their source's vertex, they are walked
    // together with the sorted settled nodes instead, the same links found.
    tight_.clear();
    const std::int64_t b = in_begin_[v];
    const std::int64_t e = in_begin_[v + 1];
    if (!tree_of_root.full && in_sorted_ && e - b > kMergeInLinks) {
      const auto& settled = tree_of_root.settled;
      auto it = std::lower_bound(settled.begin(), settled.end(),
                                 std::pair<int, std::int64_t>{graph_src_[in_links_[b]], 0},
                                 [](const auto& x, const auto& y) { return x.first < y.first; });
      for (std::int64_t i = b; i < e && it != settled.end(); ++i) {
        const LinkId l = in_links_[i];
        const int u = graph_src_[l];
        while (it != settled.end() && it->first < u) ++it;
        if (it != settled.end() && it->first == u && it->second + weight_[l] == dv)
          tight_.push_back(l);
      }
    } else {
      for (std::int64_t i = b; i < e; ++i)
        if (tight(in_links_[i], dv)) tight_.push_back(in_links_[i]);
    }
    const LinkId l = choose(sel);
    out.push_back(l);
    v = link_src_[l];
  }
  if (first >= 0) out.push_back(first);
  std::reverse(out.begin(), out.end());
}

}  // namespace collkit
