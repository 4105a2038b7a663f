// Networks stored as a graph of nodes (endpoints, switches, NICs) and directed
// links, routed with Boost.Graph's Dijkstra. Used for explicit files, fat
// trees, hierarchical clusters and torus with shortest routing.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "topologies/topology.h"

namespace collkit {

// Route choice: a path minimises total latency, then hop count (both exact:
// latency is compared in whole picoseconds). Among equal-cost paths the route
// is built backwards from the destination; at each node the tight
// predecessors (ordered by node index, then link id) are candidates and the
// one at position sel % c is taken, with sel starting at the destination's
// node index and divided by c at each step. With a single candidate that is
// the only path; with many it spreads destinations over equal-cost paths the
// way D-mod-k routing does in a fat tree, while staying deterministic.
class GraphTopology : public Topology {
 public:
  GraphTopology();
  ~GraphTopology() override;

  // Building: nodes, then full-duplex cables, then finalize().
  int add_node(std::string name, bool is_switch, EndpointProps endpoint = {});
  // Adds directed links a->b and b->a (consecutive ids) and returns the id of
  // a->b. Explicit files add only cables, so there cable c is links 2c, 2c+1.
  LinkId add_cable(int a, int b, LinkProps props);
  // One directed link: for generated parts whose two directions end in
  // different nodes (a NIC's send and receive sides).
  LinkId add_link(int a, int b, LinkProps props);
  // A switch that multicasts and reduces (NVLS, SHARP) at `bandwidth` bytes
  // per second per port and direction.
  void set_in_network(int node, double bandwidth);
  // Nodes that carry ranks, in rank order. Default: every non-switch node in
  // the order added.
  void set_endpoints(std::vector<int> nodes);
  // false: a route never passes through an endpoint (only its first and last
  // nodes may be endpoints); messages between endpoints cross switches only.
  // For hosts whose processes do not forward each other's messages (shared
  // memory, one copy between two processes). Set before finalize().
  void set_endpoints_forward(bool forward) { endpoints_forward_ = forward; }
  bool endpoints_forward() const { return endpoints_forward_; }
  // Freezes the graph (adjacency, link classes). Returns the index of an
  // endpoint that cannot reach or be reached from endpoint 0, or -1 if none;
  // lost_cannot_reach() then says which: true when it cannot reach endpoint
  // 0, false when endpoint 0 cannot reach it. Without forwarding through
  // endpoints every pair is checked; lost_peer() is then the endpoint that
  // the returned one cannot reach (-1 otherwise).
  int finalize();
  bool lost_cannot_reach() const { return lost_cannot_reach_; }
  int lost_peer() const { return lost_peer_; }
  void set_num_ranks(int ranks) { ranks_ = ranks; }

  // Blocks of identical structure (the servers of a generated cluster):
  // block[v] is node v's block (0 .. B-1), or -1 for a node no block owns (a
  // rail switch, a fabric switch). Given before finalize(), which checks the
  // claim: every block has the same nodes and links in the same order of
  // creation (a link belongs to the block of its endpoints; one between two
  // blocks voids the claim), with equal kinds, link classes and in-network
  // figures, and the same outside nodes at the same places. Then swapping
  // blocks 0 and b (their k-th nodes and links, outside nodes fixed) maps
  // the network onto itself, so a source's distances are those of its image
  // in block 0, and routes use one shortest-path search per node of block 0
  // (and per outside source) instead of one per source. The route rule
  // above is applied unchanged in the source's own numbering, so the routes
  // are exactly those of a search per source (tests/topologies/
  // block_symmetry_test.cc compares every pair). Without a valid claim, or
  // with fewer than two blocks, or without forwarding through endpoints,
  // routes search per source as before.
  void set_blocks(std::vector<int> block);
  // Whether finalize() accepted the blocks (false when none were given).
  bool block_symmetric() const { return blocks_ > 1; }
  // A turn of the ranks (RankTurn) that the network is claimed to admit:
  // sigma[v] is node v's image under one step of the turn, for every node;
  // ranks form `nodes` x `per_node`. Given before finalize(), which checks
  // it (check_turn) and keeps it only if proven. The node turn needs no
  // claim: finalize() derives it from accepted blocks (server b to server
  // b + 1) and checks it the same way.
  void set_turn(TurnKind kind, std::vector<int> sigma, int nodes, int per_node);
  const RankTurn* turn(TurnKind kind) const override {
    const auto& t = turns_[kind == TurnKind::local ? 0 : 1];
    return t ? &*t : nullptr;
  }
  // Tests: route by a search per source even where the blocks hold.
  void set_block_symmetry(bool use) { use_blocks_ = use; }

  const std::string& node_name(int node) const { return names_[node]; }
  bool is_switch(int node) const { return is_switch_[node]; }
  int endpoint_node(int rank) const { return endpoints_[rank]; }
  int link_src(LinkId id) const { return link_src_[id]; }
  int link_dst(LinkId id) const { return link_dst_[id]; }

  int num_ranks() const override { return ranks_; }
  int num_endpoints() const override { return static_cast<int>(endpoints_.size()); }
  std::int64_t num_nodes() const override { return static_cast<std::int64_t>(names_.size()); }
  std::int64_t num_links() const override { return static_cast<std::int64_t>(link_src_.size()); }
  EndpointProps endpoint(int rank) const override { return node_endpoint_[endpoints_[rank]]; }
  LinkProps link(LinkId id) const override { return classes_[link_class_[id]]; }
  std::string link_name(LinkId id) const override;
  void route(int src, int dst, std::vector<LinkId>& out) const override;
  int num_link_classes() const override { return static_cast<int>(classes_.size()); }
  int link_class(LinkId id) const override { return link_class_[id]; }
  int in_network_side(LinkId id, double& bandwidth) const override;

 private:
  struct Graph;  // the Boost graph, kept out of this header
  // Shortest distances (latency and hops packed in one integer) from a root.
  // The first query from a root stops Dijkstra once every node as near as
  // its target is settled and keeps only the settled nodes (routes to nearby
  // ranks, the common case in ring-like schedules, then cost a few heap
  // operations and a few bytes); a later query that partial tree cannot
  // answer searches again to its target and adds what it settles, 8 times at
  // most; the next one computes the full tree.
  struct Tree {
    bool full = false;
    // Block symmetry: the tight in-links of every node (CSR over the
    // nodes), those ending a shortest path from the root.
    std::vector<std::int64_t> tight_begin;
    std::vector<LinkId> tight_links;
    int reruns = 0;                                     // partial searches after the first
    std::vector<std::int64_t> dense;                    // full: every node
    std::vector<std::pair<int, std::int64_t>> settled;  // partial: by node
    std::list<int>::iterator lru;
    // Distance of v; for a partial tree kInf unless v was settled (a node
    // not settled is at least as far as the target, so it cannot precede a
    // node of a route within the settled region).
    std::int64_t dist(int v) const;
    std::size_t size() const {
      return (full ? dense.size() : settled.size()) + tight_begin.size() + tight_links.size();
    }
  };
  const Tree& tree(int root, int target) const;  // caller holds mutex_
  // The full tree of a node of block 0 or outside every block, with its
  // tight in-links; caller holds mutex_.
  const Tree& block_tree(int root) const;
  using TreeMap = std::unordered_map<int, Tree>;
  // The tree slot of `root` (it: trees_.find(root)), made or moved to the
  // front of the LRU list, its size taken off stored_ for the caller to
  // add back once filled.
  Tree& lru_slot(int root, TreeMap::iterator it) const;
  // Least recently used trees go once the budget is passed, never the
  // one just built.
  void evict_trees() const;
  void route_by_blocks(int root, int t, std::uint64_t sel, std::vector<LinkId>& out) const;
  // The route rule's pick among tight_ (the narrowest, then sel's digit).
  LinkId choose(std::uint64_t& sel) const;
  int check_pairs(int vertices);  // finalize() without forwarding
  void check_blocks();            // finalize(): accepts or drops block_
  // finalize(): the turn `sigma` proven (nodes to nodes of the same kind,
  // figures and endpoint, links to links of the same class and weight,
  // rank r's endpoint to rank turn(r)'s, the turn's order a multiple of
  // every cycle), with its link cycles; nullopt otherwise.
  std::optional<RankTurn> check_turn(TurnKind kind, const std::vector<int>& sigma, int nodes,
                                     int per_node) const;

  // The swap of blocks 0 and b applied to a node or to a link.
  int swap_node(int v, int b) const {
    const int k = block_[v];
    if (k != b && k != 0) return v;
    return block_nodes_[static_cast<std::size_t>(k == b ? 0 : b) * block_size_ + local_[v]];
  }
  LinkId swap_link(LinkId l, int b) const {
    const int k = link_block_[l];
    if (k != b && k != 0) return l;
    return block_links_[static_cast<std::size_t>(k == b ? 0 : b) * block_link_size_ +
                        link_local_[l]];
  }

  std::vector<std::string> names_;
  std::vector<bool> is_switch_;
  std::vector<EndpointProps> node_endpoint_;
  std::vector<double> in_network_;  // per node; empty = no switch offloads collectives
  std::vector<int> link_src_, link_dst_;
  std::vector<LinkProps> link_props_;  // until finalize()
  bool lost_cannot_reach_ = false;
  int lost_peer_ = -1;
  bool endpoints_forward_ = true;
  // Dijkstra's vertex of each link's source: the node itself, or, when
  // endpoints do not forward, the endpoint's departure vertex (numbered from
  // names_.size()), which only its own routes start from.
  std::vector<int> graph_src_;
  std::vector<int> departure_;  // per node: its departure vertex, or the node
  std::vector<int> link_class_;
  std::vector<LinkProps> classes_;
  std::vector<std::int64_t> weight_;  // Dijkstra weight of each link
  std::vector<int> endpoints_;
  bool endpoints_set_ = false;
  int ranks_ = 0;
  // In-links of each node sorted by (source node, link id): CSR arrays.
  std::vector<std::int64_t> in_begin_;
  std::vector<LinkId> in_links_;
  // Every node's in-links are also sorted by their source's Dijkstra vertex
  // (always so where endpoints forward).
  bool in_sorted_ = false;
  // The only out-link of a node with one, else -1: such a source shares the
  // tree of that neighbour (all hosts under one fat-tree edge switch do).
  std::vector<LinkId> via_;
  std::unique_ptr<Graph> graph_;
  // Block symmetry (set_blocks): blocks_ > 1 when accepted. Per node and per
  // link its block (-1: none) and index within the block in order of
  // creation; per block its nodes and links by that index.
  int blocks_ = 0;
  bool use_blocks_ = true;
  std::vector<int> block_, local_, link_block_, link_local_;
  std::vector<int> block_nodes_;
  std::vector<LinkId> block_links_;
  std::size_t block_size_ = 0, block_link_size_ = 0;

  // Claimed turns until finalize(), then the proven ones (local, node).
  struct TurnClaim {
    std::vector<int> sigma;
    int nodes = 0;
    int per_node = 0;
  };
  std::optional<TurnClaim> claims_[2];
  std::optional<RankTurn> turns_[2];

  // Trees computed on demand, least recently used dropped beyond a memory cap.
  mutable std::mutex mutex_;
  mutable std::list<int> lru_;
  mutable TreeMap trees_;
  mutable std::size_t stored_ = 0;             // distances held by trees_
  mutable std::vector<std::int64_t> scratch_;  // Dijkstra's distance map
  mutable std::vector<int> examined_;          // nodes settled, in order
  mutable std::vector<LinkId> tight_;          // route(): a node's tight in-links
};

}  // namespace collkit
