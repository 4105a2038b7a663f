// The nccl family's shared parts (docs/NCCL.md): what more than one of its
// algorithm files uses, and the entry points of each file, which nccl.cc
// dispatches to by variant. Internal to algorithms/nccl*.cc.
//
//   nccl.cc          the family's definitions: default plans, prepare, and
//                    the program, scratch and closed form of each variant
//   nccl_ring.cc     nccl:ring (all_reduce, all_gather, reduce_scatter;
//                    broadcast and reduce as chains along the rings), nccl:p2p
//   nccl_tree.cc     nccl:tree
//   nccl_sharded.cc  nccl:nvls, nccl:nvls_tree, nccl:collnet_direct (the
//                    node-sharded all_reduce)
//   nccl_chain.cc    nccl:collnet_chain
//   nccl_pat.cc      nccl:pat (algorithms/nccl_pat.h)
//   nccl_common.cc   the helpers below that are not templates
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "algorithms/generator.h"
#include "algorithms/nccl_variant.h"
#include "algorithms/registry.h"
#include "algorithms/schedule.h"

namespace collkit::nccl {

// At most this many pipeline chunks per channel: a larger chunk than the
// protocol's only lengthens the pipeline's fill, by at most depth/kMaxChunks
// of the transfer (docs/NCCL.md, "Chunks").
constexpr std::int64_t kMaxChunks = 512;

// ---- channels and chunks -----------------------------------------------------

// The channel slices of n elements: runtime channels split n as a
// Partition; ring (or tree) i takes its `lanes` consecutive channels.
struct Slice {
  std::int64_t offset = 0;
  std::int64_t size = 0;
};
template <typename Unit>
std::vector<Slice> slices(std::int64_t n, const std::vector<Unit>& units) {
  int channels = 0;
  for (const Unit& u : units) channels += u.lanes;
  const Partition part{n, std::max(1, channels)};
  std::vector<Slice> out;
  int first = 0;
  for (const Unit& u : units) {
    out.push_back({part.offset(first), part.span(first, u.lanes)});
    first += u.lanes;
  }
  return out;
}

inline Op with_lanes(Op op, int lanes) {
  op.lanes = static_cast<std::uint16_t>(lanes);
  return op;
}

inline Step copy_step(Region from, Region to) {
  Step s;
  s.ops.push_back(copy_op(from, to));
  return s;
}

// The chunk (elements) a pipeline over `depth` rounds moves a slice of n
// elements in: the spec's segment, else the closed-form optimum, and no more
// than kMaxChunks chunks (1 for an empty slice).
std::int64_t chunk_elems(const ScheduleSpec& spec, std::int64_t n, int depth, bool reduction);

// Chunk i of `seg` elements of a slice of the output (the last one shorter).
inline Region chunk_of(const Slice& slice, std::int64_t seg, std::int64_t i) {
  const std::int64_t first = i * seg;
  return {Buf::output, slice.offset + first, std::min(seg, slice.size - first)};
}

// ---- staggered trees (nccl:tree; nvls_tree across nodes) ---------------------

// The rounds of one rank in a staggered tree: receive from each child, send
// up, receive down, send down (first round of each, -1 where absent).
struct TreeRounds {
  int kids = 0;
  int child[3] = {-1, -1, -1};
  std::int64_t from_child[3] = {-1, -1, -1};
  std::int64_t up = -1, down_recv = -1, down_send = -1;
  int parent = -1;
};

// Rank r's rounds in tree t, from round `base`, with the plan's lag.
TreeRounds tree_rounds_of(const ChannelPlan::Tree& t, int r, std::int64_t base, int lag);

// Appends the ops of one rank at global round t; `peer` maps the tree's
// vertices to ranks, `region(i)` is chunk i of the data the tree reduces.
template <typename Peer, typename RegionOf>
void staggered_tree_ops(const TreeRounds& tr, std::int64_t t, std::int64_t chunks, int lanes,
                        Peer peer, RegionOf region, std::vector<Op>& out) {
  const auto at = [&](std::int64_t first) {
    return first >= 0 && t >= first && t - first < chunks ? t - first : std::int64_t{-1};
  };
  for (int k = 0; k < tr.kids; ++k)
    if (const std::int64_t i = at(tr.from_child[k]); i >= 0)
      out.push_back(with_lanes(recv_op(peer(tr.child[k]), region(i), Combine::reduce), lanes));
  if (tr.parent >= 0) {
    if (const std::int64_t i = at(tr.up); i >= 0)
      out.push_back(with_lanes(send_op(peer(tr.parent), region(i)), lanes));
    if (const std::int64_t i = at(tr.down_recv); i >= 0)
      out.push_back(with_lanes(recv_op(peer(tr.parent), region(i)), lanes));
  }
  if (const std::int64_t i = at(tr.down_send); i >= 0)
    for (int k = 0; k < tr.kids; ++k)
      out.push_back(with_lanes(send_op(peer(tr.child[k]), region(i)), lanes));
}

// The communicating rounds of a rank (union of [first, first + chunks)) and
// the elements it sends, for the closed forms.
void add_tree_intervals(const TreeRounds& tr, std::int64_t chunks,
                        std::vector<std::pair<std::int64_t, std::int64_t>>& iv);

// Counts a rank's communicating rounds (union of [start, start + len)
// intervals) for the tree schedules.
std::int64_t union_length(std::vector<std::pair<std::int64_t, std::int64_t>> iv);

// ---- nodes and SHARP (the node-sharded all_reduce, collnet_chain) ------------

// The nodes of a plan (its node_of) and the node tree across them.
struct NvlsPlan {
  std::vector<std::vector<int>> members;  // per node (dense ids): its ranks, in rank order
  std::vector<int> node;                  // per rank: its node
  std::vector<int> local;                 // per rank: its index in the node
  int size = 1;                           // ranks per node
  ChannelPlan::Tree node_tree;            // over node ids, with finish()'s rounds
};

// Node tree 0 and 1 (NCCL's double binary tree over the nodes) of the
// spec's plan; one_node: every rank in one node, whatever the plan's node_of.
std::vector<NvlsPlan> nvls_plans(const ScheduleSpec& spec, bool one_node);

// The plans of nvls_plans(spec, one_node), shared by every rank's program
// of the schedule: they are O(p) (every rank's node and index, every node's
// members), and built per rank they were O(p^2) in all (10 GB of coroutine
// frames at 16384 ranks). They depend only on the channel plan, p and
// one_node; a cache of weak references returns the plans of a live schedule
// and lets them go with its last program.
std::shared_ptr<const std::vector<NvlsPlan>> shared_nvls_plans(const ScheduleSpec& spec,
                                                               bool one_node);

// The SHARP exchange of one work item (nccl_sharded.cc, "SHARP in the
// IR"): the ranks of equal local index on the N nodes all-reduce chunk i of
// their data through the network's switches, which sum it on the way.
// `base`: the round the first chunk is ready to go.
struct SharpRounds {
  std::int64_t base = 0;
  int lag = 0;
  int nodes = 1;
  bool root = false;  // node 0's rank: the shards meet here
};

// Node 0's rank gets chunk i at base + lag + i, sums it the round after and
// multicasts it the next; the others have it lag rounds later. The round
// from which every rank may send chunk 0 on.
inline std::int64_t sharp_done(const SharpRounds& sr) {
  return sr.base + 2 * std::int64_t{sr.lag} + 3;
}

// Appends the exchange's ops of one rank at round t: `member(m)` is the
// rank of node m, `region(i)` chunk i of the data (at most `seg` elements),
// `slots` the first scratch element of node 0's rank's slots (two sets of
// N - 1 chunks, by chunk parity: chunk i is summed the round after it
// arrived, while chunk i + 1 lands in the other set). The sums go to
// `local` (after the step's communication).
template <typename Member, typename RegionOf>
void sharp_ops(const SharpRounds& sr, std::int64_t t, std::int64_t chunks, int lanes,
               std::int64_t seg, std::int64_t slots, Member member, RegionOf region,
               std::vector<Op>& ops, std::vector<Op>& local) {
  const int n = sr.nodes;
  const auto at = [&](std::int64_t first) {
    return t >= first && t - first < chunks ? t - first : std::int64_t{-1};
  };
  const auto net = [&](Op op, bool in) {
    op.lanes = static_cast<std::uint16_t>(lanes);
    if (n >= 3) (in ? op.fan_in : op.fan_out) = static_cast<std::uint16_t>(n - 1);
    return op;
  };
  const std::int64_t got = sr.base + sr.lag;  // node 0's rank receives chunk 0
  if (!sr.root) {
    if (const std::int64_t i = at(sr.base); i >= 0)
      ops.push_back(net(send_op(member(0), region(i)), true));
    if (const std::int64_t i = at(got + 2 + sr.lag); i >= 0)
      ops.push_back(net(recv_op(member(0), region(i)), false));
    return;
  }
  const auto slot = [&](std::int64_t i, int m, std::int64_t count) {
    return Region{Buf::scratch, slots + ((i % 2) * std::int64_t{n - 1} + (m - 1)) * seg, count};
  };
  if (const std::int64_t i = at(got); i >= 0)
    for (int m = 1; m < n; ++m)
      ops.push_back(net(recv_op(member(m), slot(i, m, region(i).count)), true));
  if (const std::int64_t i = at(got + 1); i >= 0) {
    const Region mine = region(i);
    for (int m = 1; m < n; ++m) {
      Op sum = reduce_op(slot(i, m, mine.count), mine);
      if (n >= 3) {
        sum.fan_in = static_cast<std::uint16_t>(n - 1);
        sum.peer = member(m);
      }
      local.push_back(sum);
    }
  }
  if (const std::int64_t i = at(got + 2); i >= 0)
    for (int m = 1; m < n; ++m) ops.push_back(net(send_op(member(m), region(i)), false));
}

// The scratch node 0's rank needs for one work item's exchange: two sets of
// N - 1 chunks of `seg` elements (none without chunks).
std::int64_t sharp_scratch(std::int64_t chunks, std::int64_t seg, int nodes);

// Its communicating rounds and the elements it sends (`mine`: the chunks'
// total), for the closed forms.
std::int64_t sharp_intervals(const SharpRounds& sr, std::int64_t chunks, std::int64_t mine,
                             std::vector<std::pair<std::int64_t, std::int64_t>>& iv);

// ---- the algorithms, one file each -------------------------------------------

// nccl_ring.cc: nccl:ring and nccl:p2p.
Generator<Step> ring_all_reduce(ScheduleSpec spec, int rank);
Generator<Step> ring_all_gather(ScheduleSpec spec, int rank);
Generator<Step> ring_reduce_scatter(ScheduleSpec spec, int rank);
Generator<Step> ring_broadcast(ScheduleSpec spec, int rank);
Generator<Step> ring_reduce(ScheduleSpec spec, int rank);
std::int64_t ring_reduce_scratch(const ScheduleSpec& spec, int rank);
CostEstimate ring_family_cost(const ScheduleSpec& spec, const CostParams& c);
Generator<Step> p2p_all_to_all(ScheduleSpec spec, int rank);
Generator<Step> p2p_scatter(ScheduleSpec spec, int rank);
Generator<Step> p2p_gather(ScheduleSpec spec, int rank);
CostEstimate p2p_cost(const ScheduleSpec& spec, const CostParams& c);

// nccl_tree.cc: nccl:tree (all_reduce).
Generator<Step> tree_all_reduce(ScheduleSpec spec, int rank);
CostEstimate tree_cost(const ScheduleSpec& spec, const CostParams& c);

// nccl_sharded.cc: nccl:nvls, nccl:nvls_tree and nccl:collnet_direct
// (all_reduce), `variant` one of them.
Generator<Step> sharded_program(ScheduleSpec spec, int rank, NcclVariant variant);
std::int64_t sharded_scratch(const ScheduleSpec& spec, int rank, NcclVariant variant);
CostEstimate sharded_cost(const ScheduleSpec& spec, const CostParams& c, NcclVariant variant);

// nccl_chain.cc: nccl:collnet_chain (all_reduce).
Generator<Step> chain_program(ScheduleSpec spec, int rank);
std::int64_t chain_scratch(const ScheduleSpec& spec, int rank);
CostEstimate chain_cost(const ScheduleSpec& spec, const CostParams& c);

}  // namespace collkit::nccl
