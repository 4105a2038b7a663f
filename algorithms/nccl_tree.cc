// nccl:tree (docs/NCCL.md): all_reduce up and down the plan's trees
// (NCCL's double binary tree across nodes, a chain inside), pipelined in
// chunks, every child served in the same round; with its closed form.
#include <algorithm>
#include <utility>
#include <vector>

#include "algorithms/fold.h"
#include "algorithms/nccl_common.h"

namespace collkit::nccl {

// ---- tree: all_reduce ------------------------------------------------------
//
// Tree t (plan tree, ChannelPlan::finish's staggered rounds) carries its
// slice in K chunks. With R = up_round[root], a rank r at depth d works in
// global rounds
//   up_round[c] + i      receives chunk i from child c, reducing it into its
//                        output (children are heard in distinct rounds, so
//                        every receive lands in a different chunk)
//   up_round[r] + i      sends chunk i up to its parent
//   R + d - 1 + i        receives the finished chunk i from its parent
//   R + d + i            sends it down to every child at once
// Both ends of a message agree on its round, so trees of different channels
// merge into the same steps without deadlock.

namespace {

struct TreeWork {
  const ChannelPlan::Tree* tree;
  Slice slice;
  std::int64_t seg;
  std::int64_t chunks;
};

std::vector<TreeWork> tree_work(const ScheduleSpec& spec) {
  const ChannelPlan& plan = *spec.plan;
  const std::vector<Slice> sl = slices(spec.count, plan.trees);
  std::vector<TreeWork> out;
  for (std::size_t i = 0; i < plan.trees.size(); ++i) {
    const ChannelPlan::Tree& t = plan.trees[i];
    TreeWork w{&t, sl[i], chunk_elems(spec, sl[i].size, std::max(1, 2 * t.height), true), 0};
    w.chunks = sl[i].size == 0 ? 0 : (sl[i].size + w.seg - 1) / w.seg;
    out.push_back(w);
  }
  return out;
}

std::int64_t tree_end(const ChannelPlan::Tree& t, std::int64_t chunks, int lag) {
  return chunks == 0 ? 0 : t.up_round[t.root] + std::int64_t{t.height} * (lag + 1) + chunks;
}

}  // namespace

Generator<Step> tree_all_reduce(ScheduleSpec spec, int rank) {
  co_yield copy_step({Buf::input, 0, spec.count}, {Buf::output, 0, spec.count});
  if (spec.ranks == 1) co_return;
  const std::vector<TreeWork> work = tree_work(spec);
  std::vector<TreeRounds> rounds;
  std::int64_t end = 0;
  for (const TreeWork& w : work) {
    rounds.push_back(tree_rounds_of(*w.tree, rank, 0, spec.plan->lag));
    end = std::max(end, tree_end(*w.tree, w.chunks, spec.plan->lag));
  }
  for (std::int64_t t = 0; t < end; ++t) {
    Step s;
    for (std::size_t k = 0; k < work.size(); ++k) {
      const TreeWork& w = work[k];
      if (w.chunks == 0) continue;
      staggered_tree_ops(
          rounds[k], t, w.chunks, w.tree->lanes, [](int v) { return v; },
          [&](std::int64_t i) { return chunk_of(w.slice, w.seg, i); }, s.ops);
    }
    if (!s.ops.empty()) co_yield std::move(s);
  }
}

CostEstimate tree_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  if (p == 1) return {};
  std::int64_t steps = 0, max_sent = 0;
  double time = 0;
  const std::vector<TreeWork> work = tree_work(spec);
  const int lag = spec.plan->lag;
  for (const TreeWork& w : work)
    time = std::max(
        time, tree_end(*w.tree, w.chunks, lag) * message_time(c, spec.elem_size, w.seg, true));
  for (int r = 0; r < p; ++r) {
    std::vector<std::pair<std::int64_t, std::int64_t>> iv;
    std::int64_t sent = 0;
    for (const TreeWork& w : work) {
      if (w.chunks == 0) continue;
      const TreeRounds tr = tree_rounds_of(*w.tree, r, 0, lag);
      add_tree_intervals(tr, w.chunks, iv);
      sent += (tr.parent >= 0 ? w.slice.size : 0) + tr.kids * w.slice.size;
    }
    steps = std::max(steps, union_length(iv));
    max_sent = std::max(max_sent, sent);
  }
  return make_cost(time, steps, max_sent, spec.elem_size);
}

}  // namespace collkit::nccl
