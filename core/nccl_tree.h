// NCCL's binary tree and double binary tree over m members (NCCL's
// src/graph/trees.cc, ncclGetBtree and ncclGetDtree): the one definition the
// pipelined trees (algorithms/) and the channel search (topologies/) share.
#pragma once

#include <array>

namespace collkit {

// Binary tree over 0..m-1: member 0 is the root and has one child, the
// largest power of two below m; member r > 0 with lowest set bit b hangs
// below (r ^ b) | 2b (or r ^ b when that is >= m) and has children r - b/2
// (first) and the largest r + b/2^j below m. -1 where absent.
int nccl_btree_parent(int m, int r);
std::array<int, 2> nccl_btree_children(int m, int r);

// Tree `which` (0 or 1) of the double binary tree: tree 1 is tree 0 under
// the mirror r -> m-1-r for even m and the shift r -> r+1 for odd m, so every
// member is an inner node in at most one of the two.
struct TreeLinks {
  int parent = -1;
  std::array<int, 2> child{-1, -1};
};
TreeLinks nccl_dbt_links(int m, int which, int r);

}  // namespace collkit
