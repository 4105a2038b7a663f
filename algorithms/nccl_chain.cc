// nccl:collnet_chain (docs/NCCL.md): all_reduce up a chain through each
// node's ranks to the channel's head, SHARP across the heads, and back down
// the chain; with its closed form.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "algorithms/fold.h"
#include "algorithms/nccl_common.h"

namespace collkit::nccl {

// ---- collnet_chain: all_reduce -----------------------------------------------
//
// CollNet Chain: channel c (plan tree c, with its lanes and slice) has one
// head per node, the rank of local index c mod g, whose NIC the channel
// uses. Inside each node its chunks go up a chain through the node's ranks
// to the head (positions j = 0 .. g-1: local index head + 1 + j mod g, the
// head last), the heads all-reduce them through the network's switches
// (SHARP, the exchange of nccl_common.h, among the heads of the N nodes), and they come back
// down the chain. With s = lag + 1, position j works on chunk i at rounds
//   j s - 1 + i          receives it from position j - 1, reducing (j >= 1)
//   j s + i              sends it up to position j + 1 (j < g - 1)
//   B + ...              the head's SHARP exchange (B = (g - 1) s)
//   D + (g - 2 - j) s + lag + i   receives the result from position j + 1
//   D + (g - 1 - j) s + i         sends it down to position j - 1 (j >= 1)
// (D: the round the exchange has chunk 0 done at every head; B with one node).

namespace {

struct ChainWork {
  Slice slice;
  std::int64_t seg = 1;
  std::int64_t chunks = 0;
  int lanes = 1;
  int head = 0;  // local index of the channel's head
};

struct ChainRounds {
  int position = 0;  // in the chain; g - 1 is the head
  std::int64_t step = 1;
  std::int64_t base = 0;  // B
  std::int64_t done = 0;  // D
  SharpRounds sharp;
  bool across = false;  // several nodes: the head runs the exchange
};

std::vector<ChainWork> chain_work(const ScheduleSpec& spec, const NvlsPlan& np) {
  const ChannelPlan& plan = *spec.plan;
  const std::vector<Slice> sl = slices(spec.count, plan.trees);
  std::vector<ChainWork> out;
  for (std::size_t i = 0; i < plan.trees.size(); ++i) {
    ChainWork w;
    w.slice = sl[i];
    w.lanes = plan.trees[i].lanes;
    w.head = static_cast<int>(i % static_cast<std::size_t>(np.size));
    w.seg = chunk_elems(spec, w.slice.size, 2 * np.size + 2, true);
    w.chunks = w.slice.size == 0 ? 0 : (w.slice.size + w.seg - 1) / w.seg;
    out.push_back(w);
  }
  return out;
}

ChainRounds chain_rounds(const NvlsPlan& np, const ChainWork& w, int rank, int lag) {
  ChainRounds cr;
  const int g = np.size;
  cr.position = mod(np.local[rank] - w.head - 1, g);
  cr.step = lag + 1;
  cr.base = std::int64_t{g - 1} * cr.step;
  const int nodes = static_cast<int>(np.members.size());
  cr.across = nodes > 1;
  cr.sharp = SharpRounds{cr.base, lag, nodes, np.node[rank] == 0};
  cr.done = cr.across ? sharp_done(cr.sharp) : cr.base;
  return cr;
}

// Rounds of the whole work item (a bound every rank's ops fall within).
std::int64_t chain_end(const ChainRounds& cr, int g, std::int64_t chunks) {
  return chunks == 0 ? 0 : cr.done + std::int64_t{g} * cr.step + chunks;
}

}  // namespace

Generator<Step> chain_program(ScheduleSpec spec, int rank) {
  co_yield copy_step({Buf::input, 0, spec.count}, {Buf::output, 0, spec.count});
  if (spec.ranks == 1) co_return;
  const std::shared_ptr<const std::vector<NvlsPlan>> shared = shared_nvls_plans(spec, false);
  const NvlsPlan& np = (*shared)[0];
  const std::vector<ChainWork> work = chain_work(spec, np);
  const int g = np.size, nodes = static_cast<int>(np.members.size());
  const std::vector<int>& locals = np.members[np.node[rank]];
  std::vector<ChainRounds> rounds;
  std::vector<std::int64_t> slots;  // per work item, node 0's rank's scratch
  std::int64_t end = 0, offset = 0;
  for (const ChainWork& w : work) {
    rounds.push_back(chain_rounds(np, w, rank, spec.plan->lag));
    end = std::max(end, chain_end(rounds.back(), g, w.chunks));
    slots.push_back(offset);
    offset += sharp_scratch(w.chunks, w.seg, nodes);
  }
  for (std::int64_t t = 0; t < end; ++t) {
    Step s;
    std::vector<Op> local;
    for (std::size_t k = 0; k < work.size(); ++k) {
      const ChainWork& w = work[k];
      if (w.chunks == 0) continue;
      const ChainRounds& cr = rounds[k];
      const int j = cr.position;
      const auto at = [&](std::int64_t first) {
        return t >= first && t - first < w.chunks ? t - first : std::int64_t{-1};
      };
      const auto region = [&](std::int64_t i) { return chunk_of(w.slice, w.seg, i); };
      const auto local_rank = [&](int position) { return locals[mod(w.head + 1 + position, g)]; };
      const auto lanes = [&](Op op) { return with_lanes(op, w.lanes); };
      if (j >= 1)
        if (const std::int64_t i = at(j * cr.step - 1); i >= 0)
          s.ops.push_back(lanes(recv_op(local_rank(j - 1), region(i), Combine::reduce)));
      if (j < g - 1)
        if (const std::int64_t i = at(j * cr.step); i >= 0)
          s.ops.push_back(lanes(send_op(local_rank(j + 1), region(i))));
      if (j == g - 1 && cr.across)
        sharp_ops(
            cr.sharp, t, w.chunks, w.lanes, w.seg, slots[k],
            [&](int m) { return np.members[m][w.head]; }, region, s.ops, local);
      if (j <= g - 2)
        if (const std::int64_t i = at(cr.done + (g - 2 - j) * cr.step + spec.plan->lag); i >= 0)
          s.ops.push_back(lanes(recv_op(local_rank(j + 1), region(i))));
      if (j >= 1)
        if (const std::int64_t i = at(cr.done + (g - 1 - j) * cr.step); i >= 0)
          s.ops.push_back(lanes(send_op(local_rank(j - 1), region(i))));
    }
    for (Op& op : local) s.ops.push_back(op);
    if (!s.ops.empty()) co_yield std::move(s);
  }
}

std::int64_t chain_scratch(const ScheduleSpec& spec, int rank) {
  if (spec.ranks == 1) return 0;
  const std::shared_ptr<const std::vector<NvlsPlan>> shared = shared_nvls_plans(spec, false);
  const NvlsPlan& np = (*shared)[0];
  const int nodes = static_cast<int>(np.members.size());
  if (nodes == 1 || np.node[rank] != 0) return 0;
  std::int64_t total = 0;
  for (const ChainWork& w : chain_work(spec, np)) total += sharp_scratch(w.chunks, w.seg, nodes);
  return total;
}

CostEstimate chain_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  if (p == 1) return {};
  const std::vector<NvlsPlan> plans = nvls_plans(spec, false);
  const NvlsPlan& np = plans[0];
  const std::vector<ChainWork> work = chain_work(spec, np);
  const int g = np.size;
  double time = 0;
  std::int64_t steps = 0, max_sent = 0;
  for (int r = 0; r < p; ++r) {
    std::vector<std::pair<std::int64_t, std::int64_t>> iv;
    std::int64_t sent = 0;
    for (const ChainWork& w : work) {
      if (w.chunks == 0) continue;
      const ChainRounds cr = chain_rounds(np, w, r, spec.plan->lag);
      const std::int64_t K = w.chunks;
      const int j = cr.position;
      if (r == 0)
        time = std::max(time, chain_end(cr, g, K) * message_time(c, spec.elem_size, w.seg, false));
      if (j >= 1) iv.emplace_back(j * cr.step - 1, j * cr.step - 1 + K);
      if (j < g - 1) {
        iv.emplace_back(j * cr.step, j * cr.step + K);
        sent += w.slice.size;
      }
      if (j == g - 1 && cr.across) sent += sharp_intervals(cr.sharp, K, w.slice.size, iv);
      if (j <= g - 2) {
        const std::int64_t first = cr.done + (g - 2 - j) * cr.step + spec.plan->lag;
        iv.emplace_back(first, first + K);
      }
      if (j >= 1) {
        const std::int64_t first = cr.done + (g - 1 - j) * cr.step;
        iv.emplace_back(first, first + K);
        sent += w.slice.size;
      }
    }
    steps = std::max(steps, union_length(iv));
    max_sent = std::max(max_sent, sent);
  }
  return make_cost(time, steps, max_sent, spec.elem_size);
}

}  // namespace collkit::nccl
