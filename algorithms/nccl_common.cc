// The nccl family's shared helpers (algorithms/nccl_common.h).
#include "algorithms/nccl_common.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "algorithms/costs.h"
#include "algorithms/tree_pipeline.h"
#include "core/error.h"

namespace collkit::nccl {
namespace {

NvlsPlan nvls_plan(const ScheduleSpec& spec, bool one_node, int which) {
  const int p = spec.ranks;
  const std::vector<int>& raw = spec.plan->node_of;
  NvlsPlan np;
  np.node.assign(static_cast<std::size_t>(p), 0);
  np.local.assign(static_cast<std::size_t>(p), 0);
  // Raw node id -> dense, in order of first appearance.
  std::unordered_map<int, int> dense_of;
  for (int r = 0; r < p; ++r) {
    int id = 0;
    if (!one_node) {
      const int key = raw.empty() ? r : raw[r];
      id = dense_of.try_emplace(key, static_cast<int>(dense_of.size())).first->second;
    }
    if (id >= static_cast<int>(np.members.size())) np.members.emplace_back();
    np.node[r] = id;
    np.local[r] = static_cast<int>(np.members[id].size());
    np.members[id].push_back(r);
  }
  np.size = static_cast<int>(np.members[0].size());
  for (const auto& m : np.members)
    if (static_cast<int>(m.size()) != np.size)
      throw UsageError("nccl:nvls_tree needs the same number of ranks on every node");
  const int nodes = static_cast<int>(np.members.size());
  const std::vector<PipeNode> dbt = nccl_dbt_nodes(nodes, which);
  np.node_tree.parent.assign(static_cast<std::size_t>(nodes), -1);
  np.node_tree.child.assign(3 * static_cast<std::size_t>(nodes), -1);
  for (int n = 0; n < nodes; ++n) {
    np.node_tree.parent[n] = dbt[n].parent;
    for (int k = 0; k < 2; ++k)
      np.node_tree.child[3 * static_cast<std::size_t>(n) + k] = dbt[n].child[k];
  }
  ChannelPlan holder;
  holder.lag = spec.plan->lag;
  holder.trees.push_back(np.node_tree);
  holder.finish(nodes);
  np.node_tree = std::move(holder.trees[0]);
  return np;
}

}  // namespace

std::int64_t chunk_elems(const ScheduleSpec& spec, std::int64_t n, int depth, bool reduction) {
  if (n == 0) return 1;
  const std::int64_t seg = spec.segment > 0 ? spec.segment : segment_elems(spec, depth, reduction);
  return std::max(seg, (n + kMaxChunks - 1) / kMaxChunks);
}

TreeRounds tree_rounds_of(const ChannelPlan::Tree& t, int r, std::int64_t base, int lag) {
  TreeRounds tr;
  tr.kids = t.children(r, tr.child);
  for (int k = 0; k < tr.kids; ++k) tr.from_child[k] = base + t.up_round[tr.child[k]] + lag;
  tr.parent = t.parent[r];
  const std::int64_t R = base + t.up_round[t.root];
  // Down the tree a chunk takes lag + 1 rounds per level: sent, received
  // lag rounds later, forwarded the round after.
  const std::int64_t down = R + std::int64_t{t.depth[r]} * (lag + 1);
  if (tr.parent >= 0) {
    tr.up = base + t.up_round[r];
    tr.down_recv = down - 1;
  }
  if (tr.kids > 0) tr.down_send = down;
  return tr;
}

void add_tree_intervals(const TreeRounds& tr, std::int64_t chunks,
                        std::vector<std::pair<std::int64_t, std::int64_t>>& iv) {
  for (int k = 0; k < tr.kids; ++k) iv.emplace_back(tr.from_child[k], tr.from_child[k] + chunks);
  if (tr.parent >= 0) {
    iv.emplace_back(tr.up, tr.up + chunks);
    iv.emplace_back(tr.down_recv, tr.down_recv + chunks);
  }
  if (tr.kids > 0) iv.emplace_back(tr.down_send, tr.down_send + chunks);
}

std::int64_t union_length(std::vector<std::pair<std::int64_t, std::int64_t>> iv) {
  std::sort(iv.begin(), iv.end());
  std::int64_t total = 0, end = std::numeric_limits<std::int64_t>::min();
  for (auto [a, b] : iv) {
    if (b <= a) continue;
    if (a >= end) {
      total += b - a;
      end = b;
    } else if (b > end) {
      total += b - end;
      end = b;
    }
  }
  return total;
}

std::vector<NvlsPlan> nvls_plans(const ScheduleSpec& spec, bool one_node) {
  std::vector<NvlsPlan> plans;
  plans.push_back(nvls_plan(spec, one_node, 0));
  plans.push_back(nvls_plan(spec, one_node, 1));
  return plans;
}

std::shared_ptr<const std::vector<NvlsPlan>> shared_nvls_plans(const ScheduleSpec& spec,
                                                               bool one_node) {
  struct Entry {
    std::weak_ptr<const ChannelPlan> plan;  // expired: the key may be reused
    const ChannelPlan* key;
    int ranks;
    int lag;
    bool one_node;
    std::weak_ptr<const std::vector<NvlsPlan>> plans;
  };
  static std::mutex mutex;
  static std::vector<Entry> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  std::erase_if(cache, [](const Entry& e) { return e.plan.expired() || e.plans.expired(); });
  for (const Entry& e : cache) {
    if (e.key != spec.plan.get() || e.ranks != spec.ranks || e.lag != spec.plan->lag ||
        e.one_node != one_node)
      continue;
    if (auto plans = e.plans.lock()) return plans;
  }
  auto plans = std::make_shared<const std::vector<NvlsPlan>>(nvls_plans(spec, one_node));
  cache.push_back(Entry{spec.plan, spec.plan.get(), spec.ranks, spec.plan->lag, one_node, plans});
  return plans;
}

std::int64_t sharp_scratch(std::int64_t chunks, std::int64_t seg, int nodes) {
  return chunks == 0 ? 0 : std::int64_t{2} * (nodes - 1) * seg;
}

std::int64_t sharp_intervals(const SharpRounds& sr, std::int64_t chunks, std::int64_t mine,
                             std::vector<std::pair<std::int64_t, std::int64_t>>& iv) {
  const std::int64_t got = sr.base + sr.lag;
  if (sr.root) {
    iv.emplace_back(got, got + chunks);
    iv.emplace_back(got + 2, got + 2 + chunks);
    return std::int64_t{sr.nodes - 1} * mine;
  }
  iv.emplace_back(sr.base, sr.base + chunks);
  iv.emplace_back(got + 2 + sr.lag, got + 2 + sr.lag + chunks);
  return mine;
}

}  // namespace collkit::nccl
