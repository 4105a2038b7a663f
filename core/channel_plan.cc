#include "core/channel_plan.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace collkit {

int ChannelPlan::channels() const {
  int n = 0;
  for (const Ring& r : rings) n += r.lanes;
  if (n == 0)
    for (const Tree& t : trees) n += t.lanes;
  return n;
}

void ChannelPlan::finish(int ranks) {
  const auto fail = [](const std::string& what) { throw UsageError("channel plan: " + what); };
  const std::size_t p = static_cast<std::size_t>(ranks);
  if (lag < 0 || lag > 64) fail("lag must be 0..64, got " + std::to_string(lag));
  if (!node_of.empty() && node_of.size() != p)
    fail("node_of lists " + std::to_string(node_of.size()) + " ranks, not " +
         std::to_string(ranks));
  for (std::size_t i = 0; i < rings.size(); ++i) {
    Ring& r = rings[i];
    const std::string name = "ring " + std::to_string(i);
    if (r.lanes < 1) fail(name + ": lanes must be >= 1");
    if (r.order.size() != p)
      fail(name + ": has " + std::to_string(r.order.size()) + " ranks, not " +
           std::to_string(ranks));
    r.position.assign(p, -1);
    for (std::size_t k = 0; k < p; ++k) {
      const int v = r.order[k];
      if (v < 0 || v >= ranks) fail(name + ": rank " + std::to_string(v) + " out of range");
      if (r.position[v] >= 0) fail(name + ": rank " + std::to_string(v) + " appears twice");
      r.position[v] = static_cast<int>(k);
    }
  }
  for (std::size_t i = 0; i < trees.size(); ++i) {
    Tree& t = trees[i];
    const std::string name = "tree " + std::to_string(i);
    if (t.lanes < 1) fail(name + ": lanes must be >= 1");
    if (t.parent.size() != p || t.child.size() != 3 * p)
      fail(name + ": needs parent for " + std::to_string(ranks) +
           " ranks and three child slots each");
    t.root = -1;
    for (int r = 0; r < ranks; ++r) {
      const int up = t.parent[r];
      if (up == -1) {
        if (t.root >= 0)
          fail(name + ": two roots, " + std::to_string(t.root) + " and " + std::to_string(r));
        t.root = r;
        continue;
      }
      if (up < 0 || up >= ranks || up == r)
        fail(name + ": rank " + std::to_string(r) + " has parent " + std::to_string(up));
      bool listed = false;
      for (int k = 0; k < 3; ++k)
        listed = listed || t.child[3 * static_cast<std::size_t>(up) + k] == r;
      if (!listed)
        fail(name + ": rank " + std::to_string(up) + " does not list its child " +
             std::to_string(r));
    }
    if (t.root < 0) fail(name + ": no root");
    for (int r = 0; r < ranks; ++r)
      for (int k = 0; k < 3; ++k) {
        const int c = t.child[3 * static_cast<std::size_t>(r) + k];
        if (c == -1) continue;
        if (c < 0 || c >= ranks || t.parent[c] != r)
          fail(name + ": rank " + std::to_string(r) + " lists child " + std::to_string(c) +
               " whose parent is not " + std::to_string(r));
      }
    // Depths from the root, breadth first; a rank never reached sits on a cycle.
    t.depth.assign(p, -1);
    t.depth[t.root] = 0;
    t.height = 0;
    std::vector<int> queue{t.root};
    for (std::size_t q = 0; q < queue.size(); ++q) {
      const int r = queue[q];
      int kids[3];
      for (int k = 0, n = t.children(r, kids); k < n; ++k) {
        if (t.depth[kids[k]] >= 0)
          fail(name + ": rank " + std::to_string(kids[k]) + " reached twice");
        t.depth[kids[k]] = t.depth[r] + 1;
        if (t.depth[kids[k]] > t.height) t.height = t.depth[kids[k]];
        queue.push_back(kids[k]);
      }
    }
    if (queue.size() != p)
      fail(name + ": " + std::to_string(p - queue.size()) + " rank(s) not below the root " +
           std::to_string(t.root));
    // Staggered reduction rounds, children before parents (reverse BFS order).
    std::vector<int> ready(p, 0);
    t.up_round.assign(p, 0);
    for (std::size_t q = queue.size(); q-- > 0;) {
      const int r = queue[q];
      int kids[3];
      const int n = t.children(r, kids);
      int prev = -1;
      for (int k = 0; k < n; ++k) {
        t.up_round[kids[k]] = std::max(ready[kids[k]], prev + 1);
        prev = t.up_round[kids[k]];
      }
      ready[r] = n == 0 ? 0 : prev + lag + 1;
    }
    t.up_round[t.root] = ready[t.root];
  }
}

}  // namespace collkit
