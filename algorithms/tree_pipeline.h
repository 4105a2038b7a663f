// Pipelined trees in synchronous rounds: the engine behind the pipelined
// chain, the pipelined binary tree and NCCL's double binary tree (broadcast,
// reduce, all_reduce). Private to broadcast.cc, reduce.cc and
// all_reduce_trees.cc; implemented in broadcast.cc.
//
// A tree carries k segments from its root to every node. Each message gets a
// global round: a node whose segment 0 arrives in round a receives segment i
// in round a + pace*i and sends it to its child j in round a + 1 + j + pace*i
// (child j's own arrival is a + 1 + j). With pace >= number of children every
// node sends and receives at most once per round and tree. A rank's step is
// the set of its ops in one round, over all trees it takes part in; rounds in
// which it has nothing to do are skipped. Because both ends of every message
// agree on its round, merging several trees (or a reduce phase followed by a
// broadcast phase) this way can never deadlock. A reduction is the same tree
// run backwards in time: round u becomes rounds-1-u, sends become receives
// that combine into the accumulator.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/schedule.h"

namespace collkit {

// One rank's place in one tree (real ranks).
struct PipeNode {
  int parent = -1;                   // -1 at the tree's root
  std::array<int, 2> child{-1, -1};  // in send order; -1 = none
  int arrival = -1;                  // round of segment 0's arrival; -1 at the root
  int children() const { return (child[0] >= 0) + (child[1] >= 0); }
};

struct Pipeline {
  PipeNode node;
  int pace = 2;
  std::int64_t n = 0;            // elements this tree carries
  std::int64_t seg = 1;          // segment size in elements
  std::int64_t rounds = 0;       // rounds of the whole tree (pipeline_rounds)
  std::int64_t first_round = 0;  // global round of the tree's round 0
  bool reduce = false;           // run backwards, combining towards the root
  Region recv_at{};              // segment 0 of the received (forward) / accumulated (reduce) data
  Region send_from{};            // segment 0 of the data sent
  std::uint16_t lanes = 1;       // Op::lanes of every message (channels sharing the tree)

  std::int64_t segments() const { return n == 0 ? 0 : (n + seg - 1) / seg; }
};

// Rounds of a tree whose deepest arrival is max_arrival.
std::int64_t pipeline_rounds(int max_arrival, int pace, std::int64_t segments);

// The rank's steps: first `prologue` (local ops) as a step of its own, then one
// step per round in which the rank has communication.
Generator<Step> run_pipelines(std::vector<Pipeline> pipes, std::vector<Op> prologue);

// Exact statistics of run_pipelines for one rank, in O(number of pipes).
struct PipeStats {
  std::int64_t comm_steps = 0;
  std::int64_t elems_sent = 0;
};
PipeStats pipeline_stats(std::span<const Pipeline> pipes);

// pipeline_stats depends on a node only through which peers exist and its
// arrival, so ranks of equal shape need it once. A shape key packs that.
inline std::uint32_t node_shape_key(const PipeNode& nd) {
  return static_cast<std::uint32_t>(nd.arrival + 1) << 3 | (nd.parent >= 0) << 2 |
         (nd.child[0] >= 0) << 1 | (nd.child[1] >= 0);
}
inline PipeNode node_from_shape_key(std::uint32_t key) {
  PipeNode nd;
  nd.arrival = static_cast<int>(key >> 3) - 1;
  nd.parent = key & 4 ? 0 : -1;
  nd.child = {key & 2 ? 0 : -1, key & 1 ? 0 : -1};
  return nd;
}

// Max over ranks 0..ranks-1 of pipeline_stats for pipelines over two trees:
// nodes_of(rank) gives the rank's two PipeNodes, pipes_of(nodes) its
// pipelines. Evaluated once per distinct shape: O(ranks log ranks).
template <typename NodesOf, typename PipesOf>
PipeStats max_pipeline_stats(int ranks, NodesOf nodes_of, PipesOf pipes_of) {
  std::vector<std::uint64_t> keys(ranks);
  for (int r = 0; r < ranks; ++r) {
    const std::array<PipeNode, 2> nd = nodes_of(r);
    keys[r] = std::uint64_t{node_shape_key(nd[0])} << 32 | node_shape_key(nd[1]);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  PipeStats best;
  for (std::uint64_t key : keys) {
    const std::array<PipeNode, 2> nd{node_from_shape_key(static_cast<std::uint32_t>(key >> 32)),
                                     node_from_shape_key(static_cast<std::uint32_t>(key))};
    const PipeStats st = pipeline_stats(pipes_of(nd));
    best.comm_steps = std::max(best.comm_steps, st.comm_steps);
    best.elems_sent = std::max(best.elems_sent, st.elems_sent);
  }
  return best;
}

// NCCL's binary tree over m ranks (ncclGetBtree): rank 0 is the root and has
// one child, the largest power of two below m; rank r > 0 with lowest set bit
// b hangs below (r ^ b) | 2b (or r ^ b when that is >= m) and has children
// r - b/2 (sent to first) and the largest r + b/2^j below m. Arrivals follow
// the round rule above.
PipeNode nccl_btree_node(int m, int r);
int nccl_btree_max_arrival(int m);
// Tree 0 or 1 of NCCL's double binary tree over m ranks: tree 1 is the mirror
// r -> m-1-r when m is even and the shift r -> r+1 when m is odd, so every rank
// is an inner node in at most one of the two trees.
PipeNode nccl_dbt_node(int m, int tree, int r);
// nccl_dbt_node for every rank at once, in O(m) (for closed-form costs that
// visit every rank).
std::vector<PipeNode> nccl_dbt_nodes(int m, int tree);

}  // namespace collkit
