#include "core/nccl_tree.h"

namespace collkit {
namespace {

int lowbit(int v) { return v & -v; }

int root_child(int m) {
  if (m <= 1) return -1;
  int bit = 1;
  while (bit < m) bit <<= 1;
  return bit >> 1;
}

}  // namespace

int nccl_btree_parent(int m, int r) {
  if (r == 0) return -1;
  const int b = lowbit(r);
  const int up = (r ^ b) | (b << 1);
  return up >= m ? r ^ b : up;
}

std::array<int, 2> nccl_btree_children(int m, int r) {
  if (r == 0) return {root_child(m), -1};
  const int b = lowbit(r);
  if (b == 1) return {-1, -1};
  int second = -1;
  for (int l = b >> 1; l >= 1; l >>= 1) {
    if (r + l < m) {
      second = r + l;
      break;
    }
  }
  return {r - (b >> 1), second};
}

TreeLinks nccl_dbt_links(int m, int which, int r) {
  TreeLinks t;
  if (which == 0) {
    t.parent = nccl_btree_parent(m, r);
    t.child = nccl_btree_children(m, r);
    return t;
  }
  const bool mirror = m % 2 == 0;
  const auto to_tree = [&](int x) { return mirror ? m - 1 - x : (x - 1 + m) % m; };
  const auto from_tree = [&](int x) { return x < 0 ? -1 : mirror ? m - 1 - x : (x + 1) % m; };
  const int x = to_tree(r);
  t.parent = from_tree(nccl_btree_parent(m, x));
  const std::array<int, 2> c = nccl_btree_children(m, x);
  t.child = {from_tree(c[0]), from_tree(c[1])};
  return t;
}

}  // namespace collkit
