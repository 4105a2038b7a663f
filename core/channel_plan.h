// How a collective is spread over parallel channels, in NCCL's sense: each
// channel is one thread block that moves its share of the data along its own
// rank order (docs/NCCL.md). A plan is pure data: the orders come from a
// search over a topology (topologies/channels.h) or from a default, and the
// `nccl` generators (algorithms/nccl.cc) read them.
#pragma once

#include <cstdint>
#include <vector>

namespace collkit {

struct ChannelPlan {
  // One ring: every rank once, in the order data flows (order[i] sends to
  // order[i + 1], the last to the first). `lanes` runtime channels share the
  // ring (NCCL duplicates each ring it finds: channels c and c + n run the
  // same order); they are generated as one transfer of `lanes` times the
  // data, which the simulator runs as `lanes` identical flows.
  struct Ring {
    std::vector<int> order;
    int lanes = 1;
  };
  // One tree: parent[r] (-1 for the root) and up to three children per rank
  // (child[3 r + k], -1 where absent), in the order data flows down. A chain
  // is a tree with one child per rank.
  struct Tree {
    std::vector<int> parent;
    std::vector<int> child;
    int lanes = 1;
    int children(int r, int out[3]) const {
      int n = 0;
      for (int k = 0; k < 3; ++k)
        if (child[3 * static_cast<std::size_t>(r) + k] >= 0)
          out[n++] = child[3 * static_cast<std::size_t>(r) + k];
      return n;
    }
  };
  std::vector<Ring> rings;
  std::vector<Tree> trees;
  // Ranks per node and the node of each rank, for the algorithms that treat
  // a node as a unit (NVLS inside a node, trees across nodes). Empty = one
  // node holding every rank.
  std::vector<int> node_of;

  // Runtime channels: the sum of the rings' lanes (trees' when there are no rings).
  int channels() const {
    int n = 0;
    for (const Ring& r : rings) n += r.lanes;
    if (n == 0)
      for (const Tree& t : trees) n += t.lanes;
    return n;
  }
};

}  // namespace collkit
