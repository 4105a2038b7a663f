// How a collective is spread over parallel channels, in NCCL's sense: each
// channel is one thread block that moves its share of the data along its own
// rank order (docs/NCCL.md). A plan is pure data: the orders come from a
// search over a topology (topologies/channels.h) or from a default, and the
// `nccl` generators (algorithms/nccl*.cc) read them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace collkit {

struct ChannelPlan {
  // One ring: every rank once, in the order data flows (order[i] sends to
  // order[i + 1], the last to the first). `lanes` runtime channels share the
  // ring (NCCL duplicates each ring it finds: channels c and c + n run the
  // same order); they are generated as one transfer of `lanes` times the
  // data, which the simulator runs as `lanes` identical flows. `position` is
  // the inverse of `order` (filled by finish()).
  struct Ring {
    std::vector<int> order;
    int lanes = 1;
    std::vector<int> position;
  };
  // One tree: parent[r] (-1 for the root) and up to three children per rank
  // (child[3 r + k], -1 where absent, in the order data flows down; a chain
  // is a tree with one child per rank). finish() fills depth[r], height (the
  // largest depth) and the staggered reduction rounds: up_round[r] is the
  // round in which r sends chunk 0 to its parent (its parent receives it
  // `lag` rounds later), chosen so that a parent hears its children in
  // distinct rounds (the children of one rank are one round apart, each no
  // earlier than it has heard its own children); for the root it is the
  // round after it has heard its last child's chunk 0.
  struct Tree {
    std::vector<int> parent;
    std::vector<int> child;
    int lanes = 1;
    std::vector<int> depth;
    std::vector<int> up_round;
    int height = 0;
    int root = 0;
    int children(int r, int out[3]) const {
      int n = 0;
      for (int k = 0; k < 3; ++k) {
        const int c = child[3 * static_cast<std::size_t>(r) + k];
        if (c >= 0) out[n++] = c;
      }
      return n;
    }
  };
  std::vector<Ring> rings;
  std::vector<Tree> trees;
  // The node (server) of each rank, for the algorithms that treat a node as
  // a unit (NVLS inside a node, a tree across nodes). Empty = every rank is a
  // node of its own.
  std::vector<int> node_of;
  // Pipelined schedules (trees, nvls) receive a chunk `lag` rounds after it
  // was sent: NCCL's FIFO lets a sender run ahead of its receiver, so one
  // chunk's latency overlaps the next chunks' transfers. >= 0.
  int lag = 0;

  // Runtime channels of the rings (of the trees when there are no rings).
  int channels() const;
  // Validates the plan for `ranks` ranks and fills the derived fields; throws
  // UsageError naming the ring or tree and the rank that breaks it (a ring
  // that is not a permutation, a tree with a cycle, an unreachable rank, a
  // parent that does not list its child, lanes < 1, ...).
  void finish(int ranks);
};

}  // namespace collkit
