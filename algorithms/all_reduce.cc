// All_reduce: ring, recursive doubling, Rabenseifner (fold / binary blocks)
// and hierarchical. Every message is sent even when it carries no element, so
// the step structure depends on p only and the closed-form counts stay exact.
#include <algorithm>
#include <bit>
#include <vector>

#include "algorithms/blocks.h"
#include "algorithms/costs.h"
#include "algorithms/fold.h"
#include "algorithms/registry.h"

namespace collkit {

Generator<Step> remap_peers(Generator<Step> steps, int stride, int offset) {
  for (Step& s : steps) {
    for (Op& op : s.ops)
      if (op.kind == OpKind::send || op.kind == OpKind::recv) op.peer = op.peer * stride + offset;
    co_yield std::move(s);
  }
}

namespace {

Step copy_input_to_output(std::int64_t n) {
  Step s;
  s.ops.push_back(copy_op({Buf::input, 0, n}, {Buf::output, 0, n}));
  return s;
}

// min over v of size(v) + size(v + 1 mod p): the two blocks a ring rank does
// not send (its own in the reduce_scatter, its successor's in the all_gather).
std::int64_t ring_unsent(const Partition& part) {
  if (part.p == 1) return 2 * part.n;
  const std::int64_t a = part.n / part.p;
  const std::int64_t e = part.n % part.p;
  // Two adjacent small blocks exist unless only the last block is small.
  return (e == 0 || part.p - e >= 2) ? 2 * a : 2 * a + 1;
}

// ---- ring ----

Generator<Step> ring_program(ScheduleSpec spec, int rank) {
  const BlockLayout layout{spec.ranks, rank, 0, Partition{spec.count, spec.ranks}, Buf::output, 0};
  co_yield copy_input_to_output(spec.count);
  for (Step& s : ring_reduce_scatter(layout)) co_yield std::move(s);
  for (Step& s : ring_all_gather(layout)) co_yield std::move(s);
}

CostEstimate ring_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  const int es = spec.elem_size;
  const double t = (p - 1) * (message_time(c, es, part.size(0), true) +
                              message_time(c, es, part.size(0), false));
  return make_cost(t, std::int64_t{2} * (p - 1), 2 * spec.count - ring_unsent(part), es);
}

// ---- recursive doubling (full vector) ----

// The fold over the whole vector, split evenly among the q members.
FoldGroup even_group(const ScheduleSpec& spec, int rank) {
  const int q = 1 << floor_log2(spec.ranks);
  return {spec.ranks, 0, rank, FoldGroup::Split::even, Partition{spec.count, q}, Buf::output, 0};
}

// All_reduce over the even fold of the whole vector: a sitter hands its input
// to its member and takes the result back; a member reduces its partner's
// vector into its own, runs `members` over the q members and hands the result
// back.
Generator<Step> even_fold_program(ScheduleSpec spec, int rank,
                                  Generator<Step> (*members)(FoldGroup)) {
  const std::int64_t n = spec.count;
  const FoldGroup g = even_group(spec, rank);
  const Region out{Buf::output, 0, n};
  const int v = g.vrank();
  if (g.sits_out()) {
    Step give;
    give.ops.push_back(send_op(v - 1, {Buf::input, 0, n}));
    co_yield std::move(give);
    Step take;
    take.ops.push_back(recv_op(v - 1, out));
    co_yield std::move(take);
    co_return;
  }
  co_yield copy_input_to_output(n);
  const bool folded = g.member() < g.r();
  if (folded) {
    Step take;
    take.ops.push_back(recv_op(v + 1, out, Combine::reduce));
    co_yield std::move(take);
  }
  for (Step& s : members(g)) co_yield std::move(s);
  if (folded) {
    Step give;
    give.ops.push_back(send_op(v + 1, out));
    co_yield std::move(give);
  }
}

// The partner's vector lands in scratch and is reduced in a local step: a
// receive may not reduce into the region the same step sends.
Generator<Step> recursive_doubling_members(FoldGroup g) {
  const Region out = g.whole();
  const Region partner{Buf::scratch, 0, out.count};
  const int i = g.member();
  for (int m = 1; m < g.q(); m <<= 1) {
    const int peer = g.member_real(i ^ m);
    Step x;
    x.ops.push_back(send_op(peer, out));
    x.ops.push_back(recv_op(peer, partner));
    co_yield std::move(x);
    Step fold_in;
    fold_in.ops.push_back(reduce_op(partner, out));
    co_yield std::move(fold_in);
  }
}

Generator<Step> recursive_doubling_program(const ScheduleSpec& spec, int rank) {
  return even_fold_program(spec, rank, recursive_doubling_members);
}

std::int64_t recursive_doubling_scratch(const ScheduleSpec& spec, int rank) {
  const FoldGroup g = even_group(spec, rank);
  return g.q() > 1 && !g.sits_out() ? spec.count : 0;
}

CostEstimate recursive_doubling_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  const int es = spec.elem_size;
  const int levels = floor_log2(p);
  const bool folded = !is_power_of_two(p);
  const int steps = levels + (folded ? 2 : 0);
  // Every member is on the critical path of every level, so this is exact.
  double t = levels * message_time(c, es, n, true);
  if (folded) t += message_time(c, es, n, true) + message_time(c, es, n, false);
  return make_cost(t, steps, static_cast<std::int64_t>(levels + (folded ? 1 : 0)) * n, es);
}

// ---- Rabenseifner, fold (MPICH) ----

// Recursive-halving reduce_scatter + recursive-doubling all_gather over the q
// members, on an even split of the whole vector into q blocks.
Generator<Step> rabenseifner_members(FoldGroup g) {
  for (Step& s : member_reduce_scatter(g)) co_yield std::move(s);
  for (Step& s : member_all_gather(g)) co_yield std::move(s);
}

Generator<Step> rabenseifner_fold_program(const ScheduleSpec& spec, int rank) {
  return even_fold_program(spec, rank, rabenseifner_members);
}

CostEstimate rabenseifner_fold_cost(const ScheduleSpec& spec, const CostParams& c) {
  const FoldGroup g = even_group(spec, 0);
  const std::int64_t n = spec.count;
  const int es = spec.elem_size;
  const bool folded = g.r() > 0;
  double t = 0;
  std::int64_t sent = 0;
  // Per level, member i sends one half of its aligned group of 2m members in
  // the reduce_scatter and the other half in the all_gather: member 0 sends
  // the most.
  for (int m = 1; m < g.q(); m <<= 1) {
    t += message_time(c, es, member_level_max(g, m), true) +
         message_time(c, es, member_level_max(g, m), false);
    sent += g.span(0, 2 * m);
  }
  int steps = 2 * floor_log2(spec.ranks);
  if (folded) {
    t += message_time(c, es, n, true) + message_time(c, es, n, false);
    sent += n;
    steps += 2;
  }
  return make_cost(t, steps, sent, es);
}

// ---- Rabenseifner, binary blocks (gloo) ----
//
// p = s_0 + s_1 + ... with s_0 > s_1 > ... powers of two; block b holds ranks
// [start_b, start_b + s_b), largest first. The vector is split into s_0 fine
// blocks (Partition{n, s_0}); rank i of block b owns the s_0 / s_b fine blocks
// from i * s_0 / s_b on (its chunk), so the chunks of all blocks nest.
//   1. every block runs a recursive-halving reduce_scatter on its chunks;
//   2. from the smallest block up, rank i of block b+1 hands the pieces of its
//      chunk to the ratio = s_b / s_{b+1} ranks i * ratio + k of block b, one
//      message per step (gloo posts them at once; the one-port model
//      serialises them), and they reduce it into their chunks;
//   3. block 0 then holds the full result; it flows back down the same way
//      and every block ends with a recursive-doubling all_gather.
// No rank sits out, but a rank of a much smaller block pays 2 * ratio steps.
struct BinaryBlocks {
  int p = 1;
  int count() const { return std::popcount(static_cast<unsigned>(p)); }
  int size(int b) const {
    int seen = 0;
    for (int bit = 30; bit >= 0; --bit) {
      if (!(p & (1 << bit))) continue;
      if (seen++ == b) return 1 << bit;
    }
    return 0;
  }
  int start(int b) const {
    int s = 0;
    for (int k = 0; k < b; ++k) s += size(k);
    return s;
  }
  int block_of(int rank) const {
    int b = 0;
    while (rank >= start(b) + size(b)) ++b;
    return b;
  }
  // Block b's group, with this rank's index in it (0 when the rank is not in b).
  FoldGroup group(int b, int rank, std::int64_t n) const {
    const int s0 = size(0), sb = size(b), first = start(b);
    const int in_block = rank >= first && rank < first + sb ? rank - first : 0;
    FoldGroup g{sb, 0, in_block, FoldGroup::Split::even, Partition{n, s0}, Buf::output, 0};
    g.stride = s0 / sb;
    return g;
  }
};

Generator<Step> rabenseifner_blocks_program(ScheduleSpec spec, int rank) {
  const std::int64_t n = spec.count;
  const BinaryBlocks bb{spec.ranks};
  const int nb = bb.count();
  const int b = bb.block_of(rank);
  const int start = bb.start(b);
  const FoldGroup g = bb.group(b, rank, n);
  const int i = rank - start;
  co_yield copy_input_to_output(n);
  for (Step& s : remap_peers(member_reduce_scatter(g), 1, start)) co_yield std::move(s);
  if (b + 1 < nb) {
    const int ratio = g.p / bb.size(b + 1);
    Step s;
    s.ops.push_back(recv_op(bb.start(b + 1) + i / ratio, g.range(i, 1), Combine::reduce));
    co_yield std::move(s);
  }
  if (b > 0) {
    const FoldGroup big = bb.group(b - 1, -1, n);
    const int ratio = big.p / g.p;
    for (int k = 0; k < ratio; ++k) {
      const int j = i * ratio + k;
      Step s;
      s.ops.push_back(send_op(bb.start(b - 1) + j, big.range(j, 1)));
      co_yield std::move(s);
    }
    for (int k = 0; k < ratio; ++k) {
      const int j = i * ratio + k;
      Step s;
      s.ops.push_back(recv_op(bb.start(b - 1) + j, big.range(j, 1)));
      co_yield std::move(s);
    }
  }
  if (b + 1 < nb) {
    const int ratio = g.p / bb.size(b + 1);
    Step s;
    s.ops.push_back(send_op(bb.start(b + 1) + i / ratio, g.range(i, 1)));
    co_yield std::move(s);
  }
  for (Step& s : remap_peers(member_all_gather(g), 1, start)) co_yield std::move(s);
}

// Sum over the halving levels of block g of the largest half (rank 0's side).
double halving_time(const FoldGroup& g, const CostParams& c, int es, bool reduce) {
  double t = 0;
  for (int m = 1; m < g.q(); m <<= 1) t += message_time(c, es, member_level_max(g, m), reduce);
  return t;
}

CostEstimate rabenseifner_blocks_cost(const ScheduleSpec& spec, const CostParams& c) {
  const std::int64_t n = spec.count;
  const int es = spec.elem_size;
  const BinaryBlocks bb{spec.ranks};
  const int nb = bb.count();
  std::int64_t steps = 0, sent = 0;
  for (int b = 0; b < nb; ++b) {
    const FoldGroup g = bb.group(b, -1, n);
    std::int64_t s = std::int64_t{2} * floor_log2(g.p), e = 0;
    for (int m = 1; m < g.p; m <<= 1) e += g.span(0, 2 * m);
    if (b + 1 < nb) s += 2, e += g.size(0);
    if (b > 0) s += std::int64_t{2} * (bb.size(b - 1) / g.p), e += g.size(0);
    steps = std::max(steps, s);
    sent = std::max(sent, e);
  }
  // Per-rank replay of the chain between blocks (the halving and doubling
  // inside a block are symmetric and cost their level sums). A transfer
  // starts once both sides have posted, as in the simulator; a rank posts its
  // next message when the previous one is done. For block b, rank j:
  //   ready[b][j]:  its chunk is reduced over blocks >= b
  //   handed[b][j]: it has sent its chunk up (last of its up messages)
  //   final[b][j]:  its chunk holds the full result
  //   gave[b][j]:   it has sent its chunk down
  std::vector<std::vector<double>> ready(nb), handed(nb), final_at(nb), gave(nb);
  for (int b = 0; b < nb; ++b) {
    const double rs = halving_time(bb.group(b, -1, n), c, es, true);
    ready[b].assign(bb.size(b), rs);
    handed[b] = final_at[b] = gave[b] = ready[b];
  }
  for (int b = nb - 2; b >= 0; --b) {
    const FoldGroup g = bb.group(b, -1, n);
    const int ratio = g.p / bb.size(b + 1);
    const double msg = message_time(c, es, g.size(0), false);
    const double rs = ready[b][0];
    for (int i = 0; i < bb.size(b + 1); ++i) {
      double at = ready[b + 1][i];
      for (int k = 0; k < ratio; ++k) {
        at = std::max(at, rs) + msg;
        ready[b][i * ratio + k] = at + static_cast<double>(g.size(0)) * es * c.gamma;
      }
      handed[b + 1][i] = at;
    }
  }
  final_at[0] = ready[0];
  for (int b = 0; b + 1 < nb; ++b) {
    const FoldGroup g = bb.group(b, -1, n);
    const int ratio = g.p / bb.size(b + 1);
    const double msg = message_time(c, es, g.size(0), false);
    for (int i = 0; i < bb.size(b + 1); ++i) {
      double at = handed[b + 1][i];
      for (int k = 0; k < ratio; ++k) {
        at = std::max(at, final_at[b][i * ratio + k]) + msg;
        gave[b][i * ratio + k] = at;
      }
      final_at[b + 1][i] = at;
    }
  }
  if (nb > 0) gave[nb - 1] = final_at[nb - 1];
  // The all_gather of a block couples all its ranks: it ends its level sum
  // after the last of them has handed its chunk down.
  double t = 0;
  for (int b = 0; b < nb; ++b) {
    const double start = *std::max_element(gave[b].begin(), gave[b].end());
    t = std::max(t, start + halving_time(bb.group(b, -1, n), c, es, false));
  }
  return make_cost(t, steps, sent, es);
}

// ---- hierarchical ----
//
// Groups of g consecutive ranks: ring reduce_scatter inside the group on
// Partition{n, g}; ring all_reduce of chunk l across the G = p / g ranks with
// local index l; ring all_gather inside the group. This is the
// bandwidth-optimal RS / AR / AG form (every rank carries 1/g of the
// inter-group traffic), not the leader-only reduce / ring / broadcast form.
int group_size(const ScheduleSpec& spec) {
  if (spec.group_size > 0) return spec.group_size;
  // One group per node: the inner rings stay on the node's fabric and only
  // the across-group ring crosses the network.
  if (spec.node_size > 1 && spec.node_size < spec.ranks && spec.ranks % spec.node_size == 0)
    return spec.node_size;
  int g = 1;
  for (int d = 1; static_cast<std::int64_t>(d) * d <= spec.ranks; ++d)
    if (spec.ranks % d == 0) g = d;
  return g;
}

Generator<Step> hierarchical_program(ScheduleSpec spec, int rank) {
  const std::int64_t n = spec.count;
  const int g = group_size(spec);
  const int groups = spec.ranks / g;
  const int j = rank / g, l = rank % g;
  const Partition inner{n, g};
  const BlockLayout in_group{g, l, 0, inner, Buf::output, 0};
  const BlockLayout across{groups,         j, 0, Partition{inner.size(l), groups}, Buf::output,
                           inner.offset(l)};
  co_yield copy_input_to_output(n);
  for (Step& s : remap_peers(ring_reduce_scatter(in_group), 1, j * g)) co_yield std::move(s);
  for (Step& s : remap_peers(ring_reduce_scatter(across), g, l)) co_yield std::move(s);
  for (Step& s : remap_peers(ring_all_gather(across), g, l)) co_yield std::move(s);
  for (Step& s : remap_peers(ring_all_gather(in_group), 1, j * g)) co_yield std::move(s);
}

CostEstimate hierarchical_cost(const ScheduleSpec& spec, const CostParams& c) {
  const std::int64_t n = spec.count;
  const int es = spec.elem_size;
  const int g = group_size(spec);
  const int groups = spec.ranks / g;
  const Partition inner{n, g};
  // Rank (j, l) sends n - s(l) and n - s(l+1) inside its group and
  // 2 s(l) - (two adjacent blocks of chunk l) across.
  std::int64_t sent = 0;
  for (int l = 0; l < g; ++l) {
    const std::int64_t s = inner.size(l);
    sent = std::max(
        sent, 2 * n - s - inner.size((l + 1) % g) + 2 * s - ring_unsent(Partition{s, groups}));
  }
  const std::int64_t chunk = Partition{inner.size(0), groups}.size(0);
  const double t =
      (g - 1) *
          (message_time(c, es, inner.size(0), true) + message_time(c, es, inner.size(0), false)) +
      (groups - 1) * (message_time(c, es, chunk, true) + message_time(c, es, chunk, false));
  return make_cost(t, 2 * (g - 1) + 2 * (groups - 1), sent, es);
}

}  // namespace

void add_all_reduce(std::vector<AlgorithmDef>& defs) {
  const auto no_scratch = [](const ScheduleSpec&, int) -> std::int64_t { return 0; };
  defs.push_back({Collective::all_reduce,
                  "ring",
                  {},
                  "2(p-1) a + 2(p-1)/p n b + (p-1)/p n g (uneven blocks: each step set by "
                  "the largest block)",
                  kCostExact,
                  "any p, commutative op",
                  ring_program,
                  no_scratch,
                  ring_cost});
  defs.push_back({Collective::all_reduce,
                  "recursive_doubling",
                  {},
                  "log2 p (a + n b + n g); p not a power of two: fold, (floor(log2 p)+2) (a + n "
                  "b) + (floor(log2 p)+1) n g",
                  kCostExact,
                  "any p (fold to 2^floor(log2 p)), commutative op",
                  recursive_doubling_program,
                  recursive_doubling_scratch,
                  recursive_doubling_cost});
  defs.push_back(
      {Collective::all_reduce,
       "rabenseifner",
       {"fold", "blocks"},
       "fold: 2 log2 p a + 2(p-1)/p n b + (p-1)/p n g; p not a power of two: + 2 (a + n b) + n g "
       "with p' = 2^floor(log2 p) for p (levels set by member 0's message). blocks: the same "
       "for p a power of two; otherwise binary blocks s_0 > s_1 > ..., block b pays "
       "2 log2 s_b + 2 + 2 s_(b-1)/s_b steps (time: per-rank replay of the chain between "
       "blocks; exact when chunks are even, else each message rounded up to the largest chunk)",
       kCostExact,
       "any p (fold: 2^floor(log2 p) members; blocks: binary blocks of p), commutative op",
       [](const ScheduleSpec& spec, int rank) {
         return spec.variant == "blocks" ? rabenseifner_blocks_program(spec, rank)
                                         : rabenseifner_fold_program(spec, rank);
       },
       no_scratch,
       [](const ScheduleSpec& spec, const CostParams& c) {
         return spec.variant == "blocks" ? rabenseifner_blocks_cost(spec, c)
                                         : rabenseifner_fold_cost(spec, c);
       }});
  defs.push_back({Collective::all_reduce,
                  "hierarchical",
                  {},
                  "groups of g (--group; default: the devices per node where the topology has "
                  "nodes, else the largest divisor of p <= sqrt p), G = p/g: "
                  "ring RS in group, ring AR across groups on n/g, ring AG in group: "
                  "(2(g-1) + 2(G-1)) a + (2(g-1)/g + 2(G-1)/p) n b + (p-1)/p n g (uneven blocks: "
                  "set by the largest block)",
                  kCostExact,
                  "any p, g | p, commutative op",
                  hierarchical_program,
                  no_scratch,
                  hierarchical_cost});
  defs.back().uses_group = true;
}

}  // namespace collkit
