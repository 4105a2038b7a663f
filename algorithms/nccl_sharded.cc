// nccl:nvls, nccl:nvls_tree and nccl:collnet_direct (docs/NCCL.md): the
// node-sharded all_reduce, a reduce-scatter and an all-gather inside each
// node around an all-reduce of each shard across the nodes (a tree, or the
// network's switches); with its closed form.
#include <algorithm>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "algorithms/fold.h"
#include "algorithms/nccl_common.h"

namespace collkit::nccl {

// ---- node-sharded all_reduce: nvls, nvls_tree, collnet_direct -------------
//
// The g ranks of a node (plan.node_of; nvls with no node_of: all ranks form
// one node) split each chunk of a slice into g shards; local rank q owns
// shard q. Per chunk i:
//   rounds i + a       reduce-scatter inside the node: the peer at cyclic
//                      distance a + 1 after q sends shard q, so q reduces
//                      one peer's data per round into its shard; through
//                      the switch (fan_in g - 1) for nvls and nvls_tree,
//                      plain NVLink transfers for collnet_direct
//   rounds B + ...     (B = g - 1 + lag) across nodes on shard q among the
//                      ranks of equal local index:
//                      tree  (nvls_tree) the staggered tree of NCCL's double
//                            binary tree over the nodes
//                      sharp (collnet_direct; nvls on several nodes) the
//                            network's switch reduces (SHARP): every other
//                            node's rank sends its shard (fan_in N - 1) to
//                            the rank of node 0, which multicasts the sum
//                            back (fan_out N - 1), as below
//   round G + i        all-gather: q sends its finished shard to the node,
//                      by multicast (fan_out g - 1) for nvls and nvls_tree
// (G: B + R + d (lag + 1) for the tree with R its root round and d the
// node's depth; B + 2 lag + 3 for sharp; B with one node.)
//
// SHARP in the IR: at round B + i each rank of a node other than 0 sends
// its shard of chunk i to the rank of node 0 (send and receive fan_in
// N - 1, N the nodes); that rank receives the N - 1 shards at round
// B + lag + i into scratch slots (the N - 1 receives of one step must not
// share a region) and adds them to its own shard the round after, with
// local reduces that carry fan_in N - 1 too: the switch did that sum on the
// way, so the simulator charges them nothing where the receives crossed
// such a switch (docs/NCCL.md, "CollNet"). At round B + lag + 2 + i it
// multicasts the sum (fan_out N - 1), received at B + 2 lag + 2 + i. Every
// NIC link then carries the shard once each way, as under SHARP; the chunk
// crosses the network twice (up to node 0's rank and back), where SHARP's aggregation
// turns around inside the switch, so the pipeline's fill pays two network
// traversals instead of one.

namespace {

enum class Across : std::uint8_t { none, tree, sharp };

// What a node-sharded variant does inside a node and across nodes.
struct ShardedKind {
  bool one_node = false;      // every rank in one node, whatever the plan's node_of
  bool switch_inside = true;  // reduce-scatter and all-gather through the node's switch
  Across across = Across::tree;
};

ShardedKind sharded_kind(const ScheduleSpec& spec, NcclVariant variant) {
  ShardedKind k;
  if (variant == NcclVariant::nvls) {
    // One node (the default plan has no node_of), or NVLS inside the nodes
    // and SHARP across them (NCCL's NVLS algorithm on several nodes).
    k.one_node = spec.plan->node_of.empty();
    k.across = Across::sharp;
  } else if (variant == NcclVariant::collnet_direct) {
    k.switch_inside = false;
    k.across = Across::sharp;
  }
  return k;
}

struct NvlsWork {
  Slice slice;
  std::int64_t seg = 1;     // chunk
  std::int64_t chunks = 0;  // K
  int lanes = 1;
  int which = 0;  // node tree 0 or 1 of the double binary tree
};

// The data is split between the plan's trees (NCCL's two trees of the double
// binary tree; channels alternate between them; in one node there is no
// tree and every channel is alike).
//
// Folding: a channel's ranks, routes and rounds depend only on which node
// tree it follows, so with spec.fold_channels the channels of one tree (and
// of the same lanes) run as one work item: its lanes the sum of theirs, its slice the sum of theirs
// (contiguous), its chunk the sum of theirs, so it has their chunk count and
// each of its transfers is theirs side by side. The simulator gives a
// transfer of L lanes L shares of every link it crosses (weighted max-min),
// so where the channels are equal (equal lanes, hence slices and chunks
// equal up to one element) the folded run has the same times, up to that
// rounding, with one transfer where there were several. Channels of
// different lanes fold separately. tests/sim/nccl_fold_test.cc compares the
// two.
std::vector<NvlsWork> nvls_work(const ScheduleSpec& spec, const std::vector<NvlsPlan>& plans,
                                bool one_node) {
  const ChannelPlan& plan = *spec.plan;
  const std::vector<Slice> sl = slices(spec.count, plan.trees);
  std::vector<NvlsWork> per_channel;
  for (std::size_t i = 0; i < plan.trees.size(); ++i) {
    NvlsWork w;
    w.slice = sl[i];
    w.lanes = plan.trees[i].lanes;
    // One node (however the plan says so): no node tree, every channel alike.
    w.which = one_node || plans[0].members.size() == 1 ? 0 : static_cast<int>(i % 2);
    const NvlsPlan& np = plans[static_cast<std::size_t>(w.which)];
    w.seg = chunk_elems(spec, w.slice.size, np.size + 2 * np.node_tree.height, true);
    // A whole number of elements per shard: every rank's part of a chunk is
    // alike, so the node's transfers stay in step (on 72 GPUs, shards that
    // differ by an element desynchronised the ranks' rounds and multiplied
    // the simulator's events a hundredfold).
    if (np.size > 1) w.seg = (w.seg + np.size - 1) / np.size * np.size;
    w.chunks = w.slice.size == 0 ? 0 : (w.slice.size + w.seg - 1) / w.seg;
    per_channel.push_back(w);
  }
  if (!spec.fold_channels) return per_channel;
  // Channels fold with the channels of the same node tree and the same
  // lanes (hence the same slice and chunk, up to one element): those are
  // alike, so the folded run has their times. Groups in order of first
  // appearance, each group's data contiguous.
  std::vector<NvlsWork> out;
  std::vector<std::pair<int, int>> keys;  // (which, lanes) of out[k]
  for (const NvlsWork& w : per_channel) {
    const std::pair<int, int> key{w.which, w.lanes};
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      NvlsWork f;
      f.which = w.which;
      f.lanes = 0;
      f.seg = 0;
      out.push_back(f);
      it = keys.end() - 1;
    }
    NvlsWork& f = out[static_cast<std::size_t>(it - keys.begin())];
    f.lanes += w.lanes;
    f.slice.size += w.slice.size;
    f.seg += w.seg;
  }
  std::int64_t offset = 0;
  for (NvlsWork& f : out) {
    f.slice.offset = offset;
    offset += f.slice.size;
    f.seg = std::max<std::int64_t>(1, f.seg);
    f.chunks = f.slice.size == 0 ? 0 : (f.slice.size + f.seg - 1) / f.seg;
  }
  return out;
}

struct NvlsRank {
  int g = 1, me = 0, node = 0, lag = 0;
  Across across = Across::none;
  std::int64_t base = 0;  // B = g - 1 + lag: the shard of chunk 0 is node-reduced after round B - 1
  TreeRounds tree;        // tree: node-level rounds, shifted by B
  int nodes = 1;          // sharp: N
  bool sharp_root = false;  // sharp: this rank is node 0's, where the shards meet
  std::int64_t gather = 0;  // all-gather of chunk 0 (received lag rounds later)
  std::int64_t end = 0;     // rounds of this work item, given K
  SharpRounds sharp_rounds() const { return SharpRounds{base, lag, nodes, sharp_root}; }
};

NvlsRank nvls_rank(const NvlsPlan& np, const ShardedKind& kind, int rank, std::int64_t chunks,
                   int lag) {
  NvlsRank nr;
  nr.g = np.size;
  nr.me = np.local[rank];
  nr.node = np.node[rank];
  nr.lag = lag;
  nr.nodes = static_cast<int>(np.members.size());
  nr.across = nr.nodes == 1 ? Across::none : kind.across;
  nr.base = nr.g - 1 + (nr.g > 1 ? lag : 0);
  const int after_gather = nr.g > 1 ? lag : 0;
  if (nr.across == Across::sharp) {
    nr.sharp_root = nr.node == 0;
    nr.gather = sharp_done(nr.sharp_rounds());
    nr.end = chunks == 0 ? 0 : nr.g > 1 ? nr.gather + lag + chunks : nr.gather + chunks;
    return nr;
  }
  // The tree (one node: a tree of one vertex, R = 0, no rounds).
  nr.tree = tree_rounds_of(np.node_tree, nr.node, nr.base, lag);
  const std::int64_t R = np.node_tree.up_round[np.node_tree.root];
  nr.gather = nr.base + R + std::int64_t{np.node_tree.depth[nr.node]} * (lag + 1);
  nr.end = chunks == 0 ? 0
                       : nr.base + R + std::int64_t{np.node_tree.height} * (lag + 1) +
                             after_gather + chunks;
  return nr;
}

// Scratch of the rank of node 0 under sharp: per work item, two sets of
// N - 1 slots of its chunk for the shards the other nodes send (offsets in
// work order).
std::vector<std::int64_t> sharp_slots(const std::vector<NvlsWork>& work, int nodes) {
  std::vector<std::int64_t> at;
  std::int64_t offset = 0;
  for (const NvlsWork& w : work) {
    at.push_back(offset);
    offset += sharp_scratch(w.chunks, w.seg, nodes);
  }
  at.push_back(offset);
  return at;
}

}  // namespace

Generator<Step> sharded_program(ScheduleSpec spec, int rank, NcclVariant variant) {
  co_yield copy_step({Buf::input, 0, spec.count}, {Buf::output, 0, spec.count});
  if (spec.ranks == 1) co_return;
  const ShardedKind kind = sharded_kind(spec, variant);
  // Shared with the other ranks' programs: this frame keeps O(channels) of its own.
  const std::shared_ptr<const std::vector<NvlsPlan>> shared =
      shared_nvls_plans(spec, kind.one_node);
  const std::vector<NvlsPlan>& plans = *shared;
  const std::vector<NvlsWork> work = nvls_work(spec, plans, kind.one_node);
  std::vector<NvlsRank> ranks;
  std::int64_t end = 0;
  for (const NvlsWork& w : work) {
    ranks.push_back(
        nvls_rank(plans[static_cast<std::size_t>(w.which)], kind, rank, w.chunks, spec.plan->lag));
    end = std::max(end, ranks.back().end);
  }
  const std::vector<std::int64_t> slots =
      sharp_slots(work, static_cast<int>(plans[0].members.size()));
  // One step, yielded by reference and refilled each round: a fresh one
  // per round grew its ops from empty (five reallocations for some thirty
  // ops) and was freed after use, a fifth of the time spent making steps.
  Step s;
  for (std::int64_t t = 0; t < end; ++t) {
    s.ops.clear();
    std::vector<Op> local;  // sharp: the sums at node 0's rank, after the step's receives
    for (std::size_t k = 0; k < work.size(); ++k) {
      const NvlsWork& w = work[k];
      if (w.chunks == 0) continue;
      const NvlsPlan& np = plans[static_cast<std::size_t>(w.which)];
      const NvlsRank& nr = ranks[k];
      const int g = nr.g, me = nr.me;
      const std::vector<int>& locals = np.members[nr.node];
      const auto shard = [&](std::int64_t i, int q) {
        const Region c = chunk_of(w.slice, w.seg, i);
        const Partition part{c.count, g};
        return Region{Buf::output, c.offset + part.offset(q), part.size(q)};
      };
      const auto chunk_at = [&](std::int64_t first) {
        return t >= first && t - first < w.chunks ? t - first : std::int64_t{-1};
      };
      // A fan of g - 1 >= 2 transfers through the node's switch (none for
      // direct NVLink transfers).
      const auto fan = [&](Op op, bool in) {
        op.lanes = static_cast<std::uint16_t>(w.lanes);
        if (g >= 3 && kind.switch_inside)
          (in ? op.fan_in : op.fan_out) = static_cast<std::uint16_t>(g - 1);
        return op;
      };
      // Reduce-scatter: rank me sends shard q of chunk t - rel(me, q) to q,
      // and receives from the peer at distance a + 1 (a = 0 .. g-2) shard me
      // of chunk t - a; rel(j, q) = (j - q - 1) mod g.
      for (int q = 0; q < g; ++q) {
        if (q == me) continue;
        if (const std::int64_t i = chunk_at(mod(me - q - 1, g)); i >= 0)
          s.ops.push_back(fan(send_op(locals[q], shard(i, q)), true));
      }
      for (int a = 0; a + 1 < g; ++a) {
        if (const std::int64_t i = chunk_at(a + nr.lag); i >= 0)
          s.ops.push_back(
              fan(recv_op(locals[mod(me + a + 1, g)], shard(i, me), Combine::reduce), true));
      }
      if (nr.across == Across::tree) {
        // The tree across nodes on this rank's shard.
        staggered_tree_ops(
            nr.tree, t, w.chunks, w.lanes, [&](int n) { return np.members[n][me]; },
            [&](std::int64_t i) { return shard(i, me); }, s.ops);
      } else if (nr.across == Across::sharp) {
        sharp_ops(
            nr.sharp_rounds(), t, w.chunks, w.lanes, w.seg, slots[k],
            [&](int m) { return np.members[m][me]; }, [&](std::int64_t i) { return shard(i, me); },
            s.ops, local);
      }
      // All-gather inside the node (by multicast through the switch).
      if (const std::int64_t i = chunk_at(nr.gather); i >= 0 && g > 1)
        for (int q = 0; q < g; ++q)
          if (q != me) s.ops.push_back(fan(send_op(locals[q], shard(i, me)), false));
      if (const std::int64_t i = chunk_at(nr.gather + nr.lag); i >= 0 && g > 1)
        for (int q = 0; q < g; ++q)
          if (q != me) s.ops.push_back(fan(recv_op(locals[q], shard(i, q)), false));
    }
    for (Op& op : local) s.ops.push_back(op);
    if (!s.ops.empty()) co_yield std::ref(s);
  }
}

std::int64_t sharded_scratch(const ScheduleSpec& spec, int rank, NcclVariant variant) {
  const ShardedKind kind = sharded_kind(spec, variant);
  if (spec.ranks == 1 || kind.across != Across::sharp) return 0;
  const std::shared_ptr<const std::vector<NvlsPlan>> plans = shared_nvls_plans(spec, kind.one_node);
  const int nodes = static_cast<int>((*plans)[0].members.size());
  if (nodes == 1 || (*plans)[0].node[rank] != 0) return 0;
  return sharp_slots(nvls_work(spec, *plans, kind.one_node), nodes).back();
}

CostEstimate sharded_cost(const ScheduleSpec& spec, const CostParams& c, NcclVariant variant) {
  const int p = spec.ranks;
  if (p == 1) return {};
  const ShardedKind kind = sharded_kind(spec, variant);
  const bool one_node = kind.one_node;
  const std::vector<NvlsPlan> plans = nvls_plans(spec, one_node);
  const std::vector<NvlsWork> work = nvls_work(spec, plans, one_node);
  // Steps and bytes are the schedule's as built; the time estimate counts
  // each channel's chunks as its own messages, folded or not (folding
  // changes how the simulator runs the channels, not what they cost).
  ScheduleSpec apart = spec;
  apart.fold_channels = false;
  double time = 0;
  for (const NvlsWork& w : nvls_work(apart, plans, one_node)) {
    if (w.chunks == 0) continue;
    const NvlsRank nr =
        nvls_rank(plans[static_cast<std::size_t>(w.which)], kind, 0, w.chunks, spec.plan->lag);
    time = std::max(time, nr.end * message_time(c, spec.elem_size, w.seg, false));
  }
  std::int64_t steps = 0, max_sent = 0;
  for (int r = 0; r < p; ++r) {
    std::vector<std::pair<std::int64_t, std::int64_t>> iv;
    std::int64_t sent = 0;
    for (const NvlsWork& w : work) {
      if (w.chunks == 0) continue;
      const NvlsPlan& np = plans[static_cast<std::size_t>(w.which)];
      const NvlsRank nr = nvls_rank(np, kind, r, w.chunks, spec.plan->lag);
      const std::int64_t K = w.chunks;
      std::int64_t mine = 0, others = 0;
      for (std::int64_t i = 0; i < K; ++i) {
        const std::int64_t len = std::min(w.seg, w.slice.size - i * w.seg);
        const Partition part{len, nr.g};
        mine += part.size(nr.me);
        others += len - part.size(nr.me);
      }
      if (nr.g > 1) {
        for (int a = 0; a + 1 < nr.g; ++a) {
          iv.emplace_back(a, a + K);
          iv.emplace_back(a + nr.lag, a + nr.lag + K);
        }
        iv.emplace_back(nr.gather, nr.gather + K);
        iv.emplace_back(nr.gather + nr.lag, nr.gather + nr.lag + K);
        sent += others + std::int64_t{nr.g - 1} * mine;
      }
      if (nr.across == Across::tree) {
        add_tree_intervals(nr.tree, K, iv);
        sent += (nr.tree.parent >= 0 ? mine : 0) + nr.tree.kids * mine;
      } else if (nr.across == Across::sharp) {
        sent += sharp_intervals(nr.sharp_rounds(), K, mine, iv);
      }
    }
    steps = std::max(steps, union_length(iv));
    max_sent = std::max(max_sent, sent);
  }
  return make_cost(time, steps, max_sent, spec.elem_size);
}

}  // namespace collkit::nccl
