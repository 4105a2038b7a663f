// nccl:ring and nccl:p2p (docs/NCCL.md): NCCL's ring for all_reduce,
// all_gather and reduce_scatter, pipelined chains along the rings for
// broadcast and reduce, and NCCL's grouped send/recv for all_to_all,
// scatter and gather; with their closed forms.
#include <algorithm>
#include <vector>

#include "algorithms/fold.h"
#include "algorithms/nccl_common.h"
#include "algorithms/tree_pipeline.h"

namespace collkit::nccl {

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

namespace {

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
  // Each ring's neighbours, and the move of the step being sent and of the
  // one being received, cut into slices (a step's move is computed once,
  // not once a slice: this loop is what calibrate's every evaluation runs).
  struct Cut {
    int step = -1;
    Region region;
    std::int64_t q = 0, rem = 0;  // slice size and how many slices are one larger
    Combine combine = Combine::copy;
    // Slice s: lock step (one slice) keeps every message, empty ones too,
    // as the classic ring does; slices of an empty piece are left out on
    // both ends.
    Region piece(std::int64_t s) const {
      return Region{region.buf, region.offset + s * q + std::min(s, rem), q + (s < rem ? 1 : 0)};
    }
  };
  const auto cut = [&](Cut& c, int step, int i, bool send) {
    if (c.step == step) return;
    const RingMove m = move(step, i);
    c.step = step;
    c.region = send ? m.send : m.recv;
    c.combine = m.combine;
    c.q = c.region.count / slices;
    c.rem = c.region.count % slices;
  };
  std::vector<int> next(static_cast<std::size_t>(rings)), prev(static_cast<std::size_t>(rings));
  for (int i = 0; i < rings; ++i) {
    const ChannelPlan::Ring& ring = plan.rings[static_cast<std::size_t>(i)];
    const int pos = ring.position[rank];
    next[static_cast<std::size_t>(i)] = ring.order[mod(pos + 1, p)];
    prev[static_cast<std::size_t>(i)] = ring.order[mod(pos - 1, p)];
  }
  std::vector<Cut> sending(static_cast<std::size_t>(rings)), receiving(sending);
  for (std::int64_t t = 0; t < rounds + lag; ++t) {
    Step st;
    const std::int64_t u = t - lag;
    for (int i = 0; i < rings; ++i) {
      const auto ii = static_cast<std::size_t>(i);
      const ChannelPlan::Ring& ring = plan.rings[ii];
      if (t < rounds) {
        cut(sending[ii], static_cast<int>(t / slices), i, true);
        const Region out = sending[ii].piece(t % slices);
        if (out.count > 0 || slices == 1)
          st.ops.push_back(with_lanes(send_op(next[ii], out), ring.lanes));
      }
      if (t >= lag) {
        cut(receiving[ii], static_cast<int>(u / slices), i, false);
        const Region in = receiving[ii].piece(u % slices);
        if (in.count > 0 || slices == 1)
          st.ops.push_back(with_lanes(recv_op(prev[ii], in, receiving[ii].combine), ring.lanes));
      }
    }
    if (!st.ops.empty()) co_yield std::move(st);
  }
}

}  // namespace

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

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

// The closed form of the ring family (nccl.cc, "closed forms").
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

}  // namespace collkit::nccl
