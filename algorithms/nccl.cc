// The nccl family: NCCL's algorithms as schedules (docs/NCCL.md). Data is
// spread over channels (a ChannelPlan: rank orders from a topology search, or
// the default below), each channel moving its share along its own ring or
// tree; channels that share an order are one transfer with `lanes`.
//
//   nccl:ring       all_reduce, all_gather, reduce_scatter (NCCL's ring);
//                   broadcast, reduce (a pipelined chain along the ring)
//   nccl:tree       all_reduce: reduce up and broadcast down the plan's trees
//                   (NCCL's double binary tree across nodes, a chain inside),
//                   pipelined in chunks, every child served in the same round
//   nccl:nvls       all_reduce through a switch that multicasts and reduces:
//                   reduce-scatter of each chunk into the switch (fan_in),
//                   all-gather by multicast (fan_out), chunks pipelined; on
//                   several nodes (a plan's node_of) SHARP across them
//                   between the ranks of equal local index
//   nccl:nvls_tree  all_reduce: nvls inside each node, a tree across nodes
//                   between the ranks of equal local index
//   nccl:collnet_direct  all_reduce: reduce-scatter and all-gather inside
//                   each node by direct NVLink transfers, the network's
//                   switches reducing (SHARP) across nodes in between
//   nccl:collnet_chain  all_reduce: per channel a chain through each node's
//                   ranks to the channel's head, SHARP across the heads, and
//                   back down the chain
//   nccl:p2p        all_to_all, scatter, gather: NCCL's grouped send/recv,
//                   every transfer in one step
//   nccl:pat        all_gather, reduce_scatter: PAT, NCCL's algorithm at one
//                   GPU per node (algorithms/nccl_pat.*)
//   nccl (auto)     NCCL's own choice per size, made on a topology by the
//                   simulator (sim/nccl.h); not buildable from a spec alone
#include <algorithm>
#include <initializer_list>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/blocks.h"
#include "algorithms/costs.h"
#include "algorithms/fold.h"
#include "algorithms/nccl_pat.h"
#include "algorithms/nccl_variant.h"
#include "algorithms/registry.h"
#include "algorithms/tree_pipeline.h"
#include "core/error.h"

namespace collkit {
namespace {

// At most this many pipeline chunks per channel: a larger chunk than the
// protocol's only lengthens the pipeline's fill, by at most depth/kMaxChunks
// of the transfer (docs/NCCL.md, "Chunks").
constexpr std::int64_t kMaxChunks = 512;

// ---- plans -----------------------------------------------------------------

// Channel c's default ring: rank order for even c, reversed for odd c, each
// rotated by c, so that channels differ (verification sweeps them all).
ChannelPlan::Ring default_ring(int p, int c) {
  ChannelPlan::Ring r;
  r.order.resize(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) r.order[i] = mod(c + (c % 2 == 0 ? i : -i), p);
  return r;
}

// Tree `which` (0 or 1) of NCCL's double binary tree over the ranks, as a
// plan tree (every rank its own node).
ChannelPlan::Tree default_tree(int p, int which) {
  ChannelPlan::Tree t;
  t.parent.assign(static_cast<std::size_t>(p), -1);
  t.child.assign(3 * static_cast<std::size_t>(p), -1);
  const std::vector<PipeNode> nodes = nccl_dbt_nodes(p, which);
  for (int r = 0; r < p; ++r) {
    t.parent[r] = nodes[r].parent;
    for (int k = 0; k < 2; ++k) t.child[3 * static_cast<std::size_t>(r) + k] = nodes[r].child[k];
  }
  // nccl_dbt_nodes roots tree 0 at rank 0 with one child; a lone rank is its root.
  return t;
}

// The plan every nccl schedule runs: the spec's (from a topology search) or
// `channels` default rings and trees. Validated once, shared by all ranks.
void prepare_nccl(ScheduleSpec& spec) {
  if (spec.variant == kNcclAuto || spec.variant.empty()) {
    std::string names;
    for (NcclVariant v : kNcclVariants)
      names += (names.empty() ? "nccl:" : ", nccl:") + std::string(to_string(v));
    throw UsageError(
        "nccl (NCCL's own choice of algorithm, protocol and channels) is made per size on a "
        "topology: use it with `collkit simulate`, or name a variant (" +
        names + ")");
  }
  if (spec.channels < 0 || spec.channels > 64)
    throw UsageError("nccl: channels must be 0..64 (0 = one), got " +
                     std::to_string(spec.channels));
  if (spec.plan) {
    // A plan built for these ranks elsewhere (topologies/channels.h); checked again.
    auto copy = std::make_shared<ChannelPlan>(*spec.plan);
    copy->finish(spec.ranks);
    spec.plan = std::move(copy);
    return;
  }
  const int p = spec.ranks;
  const int c = std::max(1, spec.channels);
  auto plan = std::make_shared<ChannelPlan>();
  for (int i = 0; i < c; ++i) plan->rings.push_back(default_ring(p, i));
  for (int i = 0; i < c; ++i) plan->trees.push_back(default_tree(p, i % 2));
  plan->finish(p);
  spec.plan = std::move(plan);
}

// The variant a prepared spec names (prepare_nccl has turned "auto" away,
// the registry every name that is not the collective's).
NcclVariant variant_of(const ScheduleSpec& spec) {
  if (const std::optional<NcclVariant> v = parse_nccl_variant(spec.variant)) return *v;
  throw UsageError("nccl: '" + spec.variant + "' is not a variant");
}

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

Op with_lanes(Op op, int lanes) {
  op.lanes = static_cast<std::uint16_t>(lanes);
  return op;
}

Step copy_step(Region from, Region to) {
  Step s;
  s.ops.push_back(copy_op(from, to));
  return s;
}

// ---- ring: all_reduce, all_gather, reduce_scatter ----------------------------
//
// Each ring step moves one block per ring: rank r sends the block of step k
// to its ring successor and receives (copy or reduce) the block of step k
// from its predecessor. With plan.lag = 0 (rendezvous endpoints, and every
// schedule the reference executor proves) a step moves whole blocks in lock
// step: inside a node NCCL's kernel hands each step to its neighbour through
// flags in memory, so every step pays its hop's latency (as NCCL's own
// model charges it). With plan.lag > 0 (pipelined GPU endpoints) and rings
// that cross nodes, where NCCL's network proxy sends from the FIFO while the
// kernel goes on, each block is cut into S slices of at most the spec's
// segment (the protocol's chunk; at least 2, as NCCL's kernels move a chunk
// in slices) and slice s of step k is received S - 1 rounds after it was
// sent: a rank forwards a slice as soon as it has it, so a network hop's
// latency is paid once per slice in flight, not once per step
// (docs/NCCL.md, "Pipelines"). The data a send reads was received
// S - 1 >= lag rounds earlier, so the lagged order moves the same data
// (tests/algorithms/nccl_eager_test.cc runs it under eager semantics).

struct RingMove {
  Region send, recv;
  Combine combine = Combine::copy;
};

// Steps `steps` of the rings; move(k, i) is ring i's block at step k.
template <typename MoveOf>
Generator<Step> ring_rounds(const ScheduleSpec& spec, int rank, int steps, MoveOf move) {
  const int p = spec.ranks;
  const ChannelPlan& plan = *spec.plan;
  const int rings = static_cast<int>(plan.rings.size());
  // Slices per block (one count for every ring, so every pair of ranks sees
  // the same message order): lag 0 keeps whole blocks.
  std::int64_t slices = 1;
  // Several nodes (an empty node_of: every rank a node of its own).
  bool nodes = plan.node_of.empty() && p > 1;
  for (int node : plan.node_of) nodes = nodes || node != plan.node_of.front();
  if (plan.lag > 0 && nodes) {
    std::int64_t largest = 0;
    // Every block of a ring is sent or received among its first p steps, on
    // every rank: so every rank finds the same largest block.
    for (int k = 0; k < std::min(steps, p); ++k)
      for (int i = 0; i < rings; ++i) {
        const RingMove m = move(k, i);
        largest = std::max({largest, m.send.count, m.recv.count});
      }
    const std::int64_t seg = spec.segment > 0 ? spec.segment : largest;
    slices = std::clamp<std::int64_t>((largest + seg - 1) / std::max<std::int64_t>(1, seg), 2,
                                      kMaxChunks);
  }
  const std::int64_t lag = slices - 1;
  const std::int64_t rounds = std::int64_t{steps} * slices;
  // Lock step (one slice) keeps every message, empty ones too, as the
  // classic ring does; slices of an empty piece are left out on both ends.
  const auto piece = [&](const Region& r, std::int64_t s) {
    const Partition part{r.count, static_cast<int>(slices)};
    return Region{r.buf, r.offset + part.offset(static_cast<int>(s)),
                  part.size(static_cast<int>(s))};
  };
  for (std::int64_t t = 0; t < rounds + lag; ++t) {
    Step st;
    for (int i = 0; i < rings; ++i) {
      const ChannelPlan::Ring& ring = plan.rings[static_cast<std::size_t>(i)];
      const int pos = ring.position[rank];
      const int next = ring.order[mod(pos + 1, p)];
      const int prev = ring.order[mod(pos - 1, p)];
      if (t < rounds) {
        const Region out = piece(move(static_cast<int>(t / slices), i).send, t % slices);
        if (out.count > 0 || slices == 1)
          st.ops.push_back(with_lanes(send_op(next, out), ring.lanes));
      }
      if (t >= lag) {
        const std::int64_t u = t - lag;
        const RingMove m = move(static_cast<int>(u / slices), i);
        const Region in = piece(m.recv, u % slices);
        if (in.count > 0 || slices == 1)
          st.ops.push_back(with_lanes(recv_op(prev, in, m.combine), ring.lanes));
      }
    }
    if (!st.ops.empty()) co_yield std::move(st);
  }
}

// all_reduce: each ring reduce-scatters its slice (blocks by ring position)
// then all-gathers it, p - 1 steps each; the rings move in the same steps.
Generator<Step> ring_all_reduce(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  co_yield copy_step({Buf::input, 0, spec.count}, {Buf::output, 0, spec.count});
  if (p == 1) co_return;
  const ChannelPlan& plan = *spec.plan;
  const std::vector<Slice> sl = slices(spec.count, plan.rings);
  const auto move = [&](int step, int i) {
    const ChannelPlan::Ring& ring = plan.rings[static_cast<std::size_t>(i)];
    const int pos = ring.position[rank];
    const Partition part{sl[static_cast<std::size_t>(i)].size, p};
    const auto block = [&](int b) {
      return Region{Buf::output, sl[static_cast<std::size_t>(i)].offset + part.offset(b),
                    part.size(b)};
    };
    // Reduce-scatter: block b starts at position b + 1 and arrives complete
    // at b; all-gather: each position starts with its own.
    const int phase = step / (p - 1);
    const int k = step % (p - 1);
    const int shift = phase == 0 ? 1 : 0;
    return RingMove{block(mod(pos - k - shift, p)), block(mod(pos - k - shift - 1, p)),
                    phase == 0 ? Combine::reduce : Combine::copy};
  };
  auto rounds = ring_rounds(spec, rank, 2 * (p - 1), move);
  while (rounds.next()) co_yield std::move(rounds.value());
}

// Rank j's contribution to the gathered (all_gather) or scattered
// (reduce_scatter) vector is block j of Partition{n, p}; ring i moves the
// part of every block that falls in its channels.
Region block_part(const Partition& part, int owner, int channels, int first, int lanes, Buf buf,
                  std::int64_t base) {
  const Partition sub{part.size(owner), channels};
  return {buf, base + part.offset(owner) + sub.offset(first), sub.span(first, lanes)};
}

// The first run-time channel of each ring (rings hold consecutive channels).
std::vector<int> first_lanes(const ChannelPlan& plan) {
  std::vector<int> first;
  int c = 0;
  for (const ChannelPlan::Ring& ring : plan.rings) {
    first.push_back(c);
    c += ring.lanes;
  }
  return first;
}

// Ring i's move of the block owned `back` positions before `rank`'s
// (rank sends it on) and of the one before that (rank receives it), in the
// channels of ring i, within `buf`.
RingMove owner_block_move(const ChannelPlan& plan, const Partition& part,
                          const std::vector<int>& first, int rank, int i, int back, Buf buf,
                          Combine combine) {
  const int p = part.p;
  const ChannelPlan::Ring& ring = plan.rings[static_cast<std::size_t>(i)];
  const int pos = ring.position[rank];
  const int f = first[static_cast<std::size_t>(i)];
  const int channels = plan.channels();
  return RingMove{
      block_part(part, ring.order[mod(pos - back, p)], channels, f, ring.lanes, buf, 0),
      block_part(part, ring.order[mod(pos - back - 1, p)], channels, f, ring.lanes, buf, 0),
      combine};
}

Generator<Step> ring_all_gather(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  co_yield copy_step({Buf::input, 0, part.size(rank)},
                     {Buf::output, part.offset(rank), part.size(rank)});
  if (p == 1) co_return;
  const std::vector<int> first = first_lanes(*spec.plan);
  const auto move = [&](int k, int i) {
    return owner_block_move(*spec.plan, part, first, rank, i, k, Buf::output, Combine::copy);
  };
  auto rounds = ring_rounds(spec, rank, p - 1, move);
  while (rounds.next()) co_yield std::move(rounds.value());
}

// Reduce-scatter on a scratch copy of the input (read-only): the block of
// ring position q starts at q + 1 and arrives complete at q after p - 1 hops.
Generator<Step> ring_reduce_scatter(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  co_yield copy_step({Buf::input, 0, spec.count}, {Buf::scratch, 0, spec.count});
  const std::vector<int> first = first_lanes(*spec.plan);
  // Position q's block starts one position on: step k moves the block of
  // position pos - 1 - k.
  const auto move = [&](int k, int i) {
    return owner_block_move(*spec.plan, part, first, rank, i, k + 1, Buf::scratch, Combine::reduce);
  };
  if (p > 1) {
    auto rounds = ring_rounds(spec, rank, p - 1, move);
    while (rounds.next()) co_yield std::move(rounds.value());
  }
  co_yield copy_step({Buf::scratch, part.offset(rank), part.size(rank)},
                     {Buf::output, 0, part.size(rank)});
}

// ---- ring: broadcast and reduce (pipelined chains along the rings) ----------

// The chain of ring i starting at the root: the root's ring successor first.
PipeNode chain_node(const ChannelPlan::Ring& ring, int p, int root, int rank) {
  const int v = mod(ring.position[rank] - ring.position[root], p);
  PipeNode nd;
  nd.parent = v > 0 ? ring.order[mod(ring.position[rank] - 1, p)] : -1;
  nd.child[0] = v + 1 < p ? ring.order[mod(ring.position[rank] + 1, p)] : -1;
  nd.arrival = v - 1;
  return nd;
}

std::vector<Pipeline> chain_pipes(const ScheduleSpec& spec, int rank, bool reduce) {
  const int p = spec.ranks;
  const ChannelPlan& plan = *spec.plan;
  const std::vector<Slice> sl = slices(spec.count, plan.rings);
  std::vector<Pipeline> pipes;
  for (std::size_t i = 0; i < plan.rings.size(); ++i) {
    if (sl[i].size == 0) continue;
    Pipeline pl;
    pl.node = chain_node(plan.rings[i], p, spec.root, rank);
    pl.pace = 1;
    pl.n = sl[i].size;
    // One chunk size for every channel: the spec's segment, else the
    // closed-form optimum for a chain of p ranks over the whole vector.
    pl.seg = segment_elems(spec, p - 1, reduce);
    pl.seg = std::max(pl.seg, (pl.n + kMaxChunks - 1) / kMaxChunks);
    pl.rounds = pipeline_rounds(p - 2, 1, pl.segments());
    pl.lanes = static_cast<std::uint16_t>(plan.rings[i].lanes);
    pl.reduce = reduce;
    if (reduce) {
      const bool root = pl.node.parent < 0;
      const Region acc{root ? Buf::output : Buf::scratch, sl[i].offset, pl.n};
      pl.recv_at = acc;
      pl.send_from = pl.node.child[0] >= 0 ? acc : Region{Buf::input, sl[i].offset, pl.n};
    } else {
      pl.recv_at = {Buf::output, sl[i].offset, pl.n};
      pl.send_from = {pl.node.parent < 0 ? Buf::input : Buf::output, sl[i].offset, pl.n};
    }
    pipes.push_back(pl);
  }
  return pipes;
}

Generator<Step> ring_broadcast(ScheduleSpec spec, int rank) {
  std::vector<Op> prologue;
  if (rank == spec.root && spec.count > 0)
    prologue.push_back(copy_op({Buf::input, 0, spec.count}, {Buf::output, 0, spec.count}));
  return run_pipelines(spec.count > 0 ? chain_pipes(spec, rank, false) : std::vector<Pipeline>{},
                       std::move(prologue));
}

Generator<Step> ring_reduce(ScheduleSpec spec, int rank) {
  if (spec.count == 0) return run_pipelines({}, {});
  std::vector<Pipeline> pipes = chain_pipes(spec, rank, true);
  std::vector<Op> prologue;
  // Inner ranks and the root accumulate: their input is copied in first.
  for (const Pipeline& pl : pipes)
    if (pl.node.child[0] >= 0 || rank == spec.root)
      prologue.push_back(copy_op({Buf::input, pl.recv_at.offset, pl.n}, pl.recv_at));
  return run_pipelines(std::move(pipes), std::move(prologue));
}

std::int64_t ring_reduce_scratch(const ScheduleSpec& spec, int rank) {
  return rank == spec.root ? 0 : spec.count;
}

// ---- p2p: all_to_all, scatter, gather ---------------------------------------

Generator<Step> p2p_all_to_all(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  // Rank j's output holds p blocks of part.size(j), the one from rank i at
  // i * part.size(j) (as the other all_to_all algorithms).
  const std::int64_t mine = part.size(rank);
  Step s;
  s.ops.push_back(copy_op({Buf::input, part.offset(rank), mine}, {Buf::output, rank * mine, mine}));
  co_yield std::move(s);
  if (p == 1) co_return;
  Step x;
  // NCCL's p2p schedule: in round k a rank sends to rank + k and receives
  // from rank - k; all rounds of a group run together.
  for (int k = 1; k < p; ++k) {
    const int to = mod(rank + k, p), from = mod(rank - k, p);
    x.ops.push_back(send_op(to, {Buf::input, part.offset(to), part.size(to)}));
    x.ops.push_back(recv_op(from, {Buf::output, from * mine, mine}));
  }
  co_yield std::move(x);
}

Generator<Step> p2p_scatter(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  if (rank == spec.root) {
    co_yield copy_step({Buf::input, part.offset(rank), part.size(rank)},
                       {Buf::output, 0, part.size(rank)});
    if (p == 1) co_return;
    Step x;
    for (int k = 1; k < p; ++k) {
      const int to = mod(rank + k, p);
      x.ops.push_back(send_op(to, {Buf::input, part.offset(to), part.size(to)}));
    }
    co_yield std::move(x);
  } else {
    Step x;
    x.ops.push_back(recv_op(spec.root, {Buf::output, 0, part.size(rank)}));
    co_yield std::move(x);
  }
}

Generator<Step> p2p_gather(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  if (rank == spec.root) {
    co_yield copy_step({Buf::input, 0, part.size(rank)},
                       {Buf::output, part.offset(rank), part.size(rank)});
    if (p == 1) co_return;
    Step x;
    for (int k = 1; k < p; ++k) {
      const int from = mod(rank + k, p);
      x.ops.push_back(recv_op(from, {Buf::output, part.offset(from), part.size(from)}));
    }
    co_yield std::move(x);
  } else {
    Step x;
    x.ops.push_back(send_op(spec.root, {Buf::input, 0, part.size(rank)}));
    co_yield std::move(x);
  }
}

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

struct TreeWork {
  const ChannelPlan::Tree* tree;
  Slice slice;
  std::int64_t seg;
  std::int64_t chunks;
};

std::int64_t chunk_elems(const ScheduleSpec& spec, std::int64_t n, int depth, bool reduction) {
  if (n == 0) return 1;
  const std::int64_t seg = spec.segment > 0 ? spec.segment : segment_elems(spec, depth, reduction);
  return std::max(seg, (n + kMaxChunks - 1) / kMaxChunks);
}

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

Region chunk_of(const Slice& slice, std::int64_t seg, std::int64_t i) {
  const std::int64_t first = i * seg;
  return {Buf::output, slice.offset + first, std::min(seg, slice.size - first)};
}

// The rounds of one rank in a staggered tree: receive from each child, send
// up, receive down, send down (first round of each, -1 where absent).
struct TreeRounds {
  int kids = 0;
  int child[3] = {-1, -1, -1};
  std::int64_t from_child[3] = {-1, -1, -1};
  std::int64_t up = -1, down_recv = -1, down_send = -1;
  int parent = -1;
};

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
                        std::vector<std::pair<std::int64_t, std::int64_t>>& iv) {
  for (int k = 0; k < tr.kids; ++k) iv.emplace_back(tr.from_child[k], tr.from_child[k] + chunks);
  if (tr.parent >= 0) {
    iv.emplace_back(tr.up, tr.up + chunks);
    iv.emplace_back(tr.down_recv, tr.down_recv + chunks);
  }
  if (tr.kids > 0) iv.emplace_back(tr.down_send, tr.down_send + chunks);
}

std::int64_t tree_end(const ChannelPlan::Tree& t, std::int64_t chunks, int lag) {
  return chunks == 0 ? 0 : t.up_round[t.root] + std::int64_t{t.height} * (lag + 1) + chunks;
}

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

struct NvlsPlan {
  std::vector<std::vector<int>> members;  // per node (dense ids): its ranks, in rank order
  std::vector<int> node;                  // per rank: its node
  std::vector<int> local;                 // per rank: its index in the node
  int size = 1;                           // ranks per node
  ChannelPlan::Tree node_tree;            // over node ids, with finish()'s rounds
};

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

std::vector<NvlsPlan> nvls_plans(const ScheduleSpec& spec, bool one_node) {
  std::vector<NvlsPlan> plans;
  plans.push_back(nvls_plan(spec, one_node, 0));
  plans.push_back(nvls_plan(spec, one_node, 1));
  return plans;
}

// The plans of nvls_plans(spec, one_node), shared by every rank's program
// of the schedule: they are O(p) (every rank's node and index, every node's
// members), and built per rank they were O(p^2) in all (10 GB of coroutine
// frames at 16384 ranks). They depend only on the channel plan, p and
// one_node; a cache of weak references returns the plans of a live schedule
// and lets them go with its last program.
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

// The SHARP exchange of one work item (see the comment above
// "enum class Across"): the ranks of equal local index on the N nodes
// all-reduce chunk i of their data through the network's switches, which
// sum it on the way. `base`: the round the first chunk is ready to go.
struct SharpRounds {
  std::int64_t base = 0;
  int lag = 0;
  int nodes = 1;
  bool root = false;  // node 0's rank: the shards meet here
};

// Node 0's rank gets chunk i at base + lag + i, sums it the round after and
// multicasts it the next; the others have it lag rounds later. The round
// from which every rank may send chunk 0 on.
std::int64_t sharp_done(const SharpRounds& sr) { return sr.base + 2 * std::int64_t{sr.lag} + 3; }

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
std::int64_t sharp_scratch(std::int64_t chunks, std::int64_t seg, int nodes) {
  return chunks == 0 ? 0 : std::int64_t{2} * (nodes - 1) * seg;
}

// Its communicating rounds and the elements it sends (`mine`: the chunks'
// total), for the closed forms.
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

// ---- collnet_chain: all_reduce -----------------------------------------------
//
// CollNet Chain: channel c (plan tree c, with its lanes and slice) has one
// head per node, the rank of local index c mod g, whose NIC the channel
// uses. Inside each node its chunks go up a chain through the node's ranks
// to the head (positions j = 0 .. g-1: local index head + 1 + j mod g, the
// head last), the heads all-reduce them through the network's switches
// (SHARP, as above, among the heads of the N nodes), and they come back
// down the chain. With s = lag + 1, position j works on chunk i at rounds
//   j s - 1 + i          receives it from position j - 1, reducing (j >= 1)
//   j s + i              sends it up to position j + 1 (j < g - 1)
//   B + ...              the head's SHARP exchange (B = (g - 1) s)
//   D + (g - 2 - j) s + lag + i   receives the result from position j + 1
//   D + (g - 1 - j) s + i         sends it down to position j - 1 (j >= 1)
// (D: the round the exchange has chunk 0 done at every head; B with one node).

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

// ---- closed forms ------------------------------------------------------------
//
// Default plans (one channel) reproduce the classic algorithms exactly:
// nccl:ring is the ring (all_reduce, all_gather, reduce_scatter) or the
// pipelined chain (broadcast, reduce); nccl:p2p is one step of concurrent
// transfers. Steps and bytes are exact for any plan (counted per rank);
// the tree and nvls times are NCCL-style estimates (pipelined rounds).

CostEstimate ring_family_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  const ChannelPlan& plan = *spec.plan;
  const int es = spec.elem_size;
  if (p == 1) return {};
  const Collective coll = spec.collective;
  if (coll == Collective::broadcast || coll == Collective::reduce) {
    const bool red = coll == Collective::reduce;
    if (spec.count == 0) return {};
    // Each channel's chain: (p + k - 2) rounds of one segment; steps and
    // elements counted per rank from the pipelines themselves.
    double time = 0;
    const std::vector<Slice> sl = slices(spec.count, plan.rings);
    for (const Slice& slice : sl) {
      if (slice.size == 0) continue;
      std::int64_t seg = segment_elems(spec, p - 1, red);
      seg = std::max(seg, (slice.size + kMaxChunks - 1) / kMaxChunks);
      const std::int64_t k = (slice.size + seg - 1) / seg;
      time = std::max(time, (p + k - 2) * message_time(c, es, seg, red));
    }
    std::int64_t steps = 0, sent = 0;
    for (int r = 0; r < p; ++r) {
      const std::vector<Pipeline> pipes = chain_pipes(spec, r, red);
      const PipeStats st = pipeline_stats(pipes);
      steps = std::max(steps, st.comm_steps);
      sent = std::max(sent, st.elems_sent);
    }
    return make_cost(time, steps, sent, es);
  }
  // all_reduce, all_gather, reduce_scatter: per rank, sum over rings of the
  // blocks it sends; each step set by its largest message.
  const int steps = coll == Collective::all_reduce ? 2 * (p - 1) : p - 1;
  std::int64_t max_sent = 0;
  const int channels = plan.channels();
  const Partition part{spec.count, p};
  std::vector<std::int64_t> step_max(static_cast<std::size_t>(steps), 0);
  for (int r = 0; r < p; ++r) {
    std::int64_t sent = 0;
    int first = 0;
    const std::vector<Slice> sl = slices(spec.count, plan.rings);
    for (std::size_t i = 0; i < plan.rings.size(); ++i) {
      const ChannelPlan::Ring& ring = plan.rings[i];
      const int pos = ring.position[r];
      for (int k = 0; k < steps; ++k) {
        std::int64_t m = 0;
        if (coll == Collective::all_reduce) {
          const Partition bp{sl[i].size, p};
          m = bp.size(mod(k < p - 1 ? pos - k - 1 : pos - (k - (p - 1)), p));
        } else {
          const int owner = coll == Collective::all_gather ? ring.order[mod(pos - k, p)]
                                                           : ring.order[mod(pos - 1 - k, p)];
          m = Partition{part.size(owner), channels}.span(first, ring.lanes);
        }
        sent += m;
        step_max[static_cast<std::size_t>(k)] = std::max(step_max[static_cast<std::size_t>(k)], m);
      }
      first += ring.lanes;
    }
    max_sent = std::max(max_sent, sent);
  }
  const bool red = coll != Collective::all_gather;
  double time = 0;
  for (int k = 0; k < steps; ++k) {
    const bool reduce_step = red && (coll != Collective::all_reduce || k < p - 1);
    time += message_time(c, es, step_max[static_cast<std::size_t>(k)], reduce_step);
  }
  return make_cost(time, steps, max_sent, es);
}

CostEstimate p2p_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  if (p == 1) return {};
  const Partition part{spec.count, p};
  const int es = spec.elem_size;
  const std::int64_t biggest = part.size(0);
  if (spec.collective == Collective::all_to_all)
    return make_cost(message_time(c, es, biggest, false), 1, spec.count - part.size(p - 1), es);
  // scatter and gather: the root sends (receives) every other block at once.
  std::int64_t root_sent = spec.count - part.size(spec.root);
  std::int64_t biggest_other = 0;
  for (int r = 0; r < p; ++r)
    if (r != spec.root) biggest_other = std::max(biggest_other, part.size(r));
  return make_cost(message_time(c, es, biggest_other, false), 1,
                   spec.collective == Collective::scatter ? root_sent : biggest_other, es);
}

// Counts a rank's communicating rounds (union of [start, start + len)
// intervals) for the tree schedules.
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

// ---- registration ----------------------------------------------------------

using Program = Generator<Step> (*)(ScheduleSpec, int);

Generator<Step> dispatch(const ScheduleSpec& spec, int rank) {
  const NcclVariant v = variant_of(spec);
  switch (spec.collective) {
    case Collective::all_reduce:
      if (v == NcclVariant::ring) return ring_all_reduce(spec, rank);
      if (v == NcclVariant::tree) return tree_all_reduce(spec, rank);
      if (v == NcclVariant::collnet_chain) return chain_program(spec, rank);
      return sharded_program(spec, rank, v);  // nvls, nvls_tree, collnet_direct
    case Collective::all_gather:
      if (v == NcclVariant::pat) return pat_all_gather(spec, rank);
      return ring_all_gather(spec, rank);
    case Collective::reduce_scatter:
      if (v == NcclVariant::pat) return pat_reduce_scatter(spec, rank);
      return ring_reduce_scatter(spec, rank);
    case Collective::broadcast:
      return ring_broadcast(spec, rank);
    case Collective::reduce:
      return ring_reduce(spec, rank);
    case Collective::all_to_all:
      return p2p_all_to_all(spec, rank);
    case Collective::scatter:
      return p2p_scatter(spec, rank);
    case Collective::gather:
      return p2p_gather(spec, rank);
    case Collective::barrier:
      break;
  }
  throw UsageError("nccl has no " + std::string(to_string(spec.collective)));
}

// nvls, nvls_tree and collnet_direct: the node-sharded all_reduce.
bool node_sharded(NcclVariant v) {
  return v == NcclVariant::nvls || v == NcclVariant::nvls_tree || v == NcclVariant::collnet_direct;
}

std::int64_t scratch_of(const ScheduleSpec& spec, int rank) {
  const NcclVariant v = variant_of(spec);
  if (spec.collective == Collective::reduce_scatter) return spec.count;
  if (spec.collective == Collective::reduce) return ring_reduce_scratch(spec, rank);
  if (spec.collective == Collective::all_reduce && node_sharded(v))
    return sharded_scratch(spec, rank, v);
  if (spec.collective == Collective::all_reduce && v == NcclVariant::collnet_chain)
    return chain_scratch(spec, rank);
  return 0;
}

CostEstimate cost_of(const ScheduleSpec& spec, const CostParams& c) {
  const NcclVariant v = variant_of(spec);
  switch (spec.collective) {
    case Collective::all_to_all:
    case Collective::scatter:
    case Collective::gather:
      return p2p_cost(spec, c);
    case Collective::all_reduce:
      if (v == NcclVariant::tree) return tree_cost(spec, c);
      if (node_sharded(v)) return sharded_cost(spec, c, v);
      if (v == NcclVariant::collnet_chain) return chain_cost(spec, c);
      return ring_family_cost(spec, c);
    case Collective::all_gather:
    case Collective::reduce_scatter:
      if (v == NcclVariant::pat) return pat_cost(spec, c);
      return ring_family_cost(spec, c);
    default:
      return ring_family_cost(spec, c);
  }
}

// The definition of nccl for `c`: NCCL's own choice (the default) and the
// variants named.
AlgorithmDef nccl_def(Collective c, std::initializer_list<NcclVariant> variants,
                      std::string formula, CostExactness exactness) {
  AlgorithmDef d;
  d.collective = c;
  d.name = "nccl";
  d.variants = {std::string(kNcclAuto)};
  for (NcclVariant v : variants) d.variants.emplace_back(to_string(v));
  d.cost_formula = std::move(formula);
  d.exactness = exactness;
  d.accepts =
      "any p; channels and rank orders from the topology (simulate), else spec.channels "
      "default rings and trees";
  d.program = [](const ScheduleSpec& spec, int rank) { return dispatch(spec, rank); };
  d.scratch = scratch_of;
  d.cost = cost_of;
  d.prepare = prepare_nccl;
  d.default_needs_topology = true;
  return d;
}

}  // namespace

void add_nccl(std::vector<AlgorithmDef>& defs) {
  defs.push_back(nccl_def(
      Collective::all_reduce,
      {NcclVariant::ring, NcclVariant::tree, NcclVariant::nvls, NcclVariant::nvls_tree,
       NcclVariant::collnet_direct, NcclVariant::collnet_chain},
      "auto: NCCL's choice per size on a topology. ring: per channel 2(p-1) a + 2(p-1)/p n_c b "
      "+ (p-1)/p n_c g (one channel: the ring's form). tree, nvls, nvls_tree, collnet_*: "
      "pipelined rounds, "
      "(2 H + K) (a + s b) for K chunks of s over height H (approximate, multi-port: every child "
      "served at once)",
      kCostApproximate));
  defs.push_back(
      nccl_def(Collective::all_gather, {NcclVariant::ring, NcclVariant::pat},
               "ring: per channel (p-1) a + (p-1)/p n_c b (one channel: the ring's form). pat: "
               "ceil(log2 p) rounds of a + (largest block) b (multi-port: on a shared link the "
               "round's blocks share it)",
               kCostExact));
  defs.push_back(nccl_def(Collective::reduce_scatter, {NcclVariant::ring, NcclVariant::pat},
                          "ring: per channel (p-1) a + (p-1)/p n_c (b + g) (one channel: the "
                          "ring's form). pat: ceil(log2 p) rounds of a + (largest block) (b + g) "
                          "(multi-port: on a shared link the round's blocks share it)",
                          kCostExact));
  defs.push_back(nccl_def(Collective::broadcast, {NcclVariant::ring},
                          "ring: per channel a chain along the ring, (p+k-2)(a + n/k b) (exact "
                          "when segment divides n)",
                          kCostExactWhenSegmentDivides));
  defs.push_back(nccl_def(Collective::reduce, {NcclVariant::ring},
                          "ring: per channel a chain along the ring, (p+k-2)(a + n/k (b+g)) "
                          "(exact when segment divides n)",
                          kCostExactWhenSegmentDivides));
  for (Collective c : {Collective::all_to_all, Collective::scatter, Collective::gather})
    defs.push_back(
        nccl_def(c, {NcclVariant::p2p},
                 "p2p: every transfer in one step, a + (largest block) b (multi-port: on a shared "
                 "link the transfers share it)",
                 kCostExact));
}

}  // namespace collkit
