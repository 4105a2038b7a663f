// Reduce_scatter (ring, recursive halving, pairwise) and the ring /
// recursive-halving reduce_scatter blocks of blocks.h.
//
// Rank j's output is block j (Partition{n, p}) of the reduced input. Partial
// results arrive with recv(..., Combine::reduce), which is valid for any
// commutative op. Every message is sent even when it carries no element, so
// the step structure depends on p only.
#include <algorithm>

#include "algorithms/blocks.h"
#include "algorithms/costs.h"
#include "algorithms/fold.h"
#include "algorithms/registry.h"

namespace collkit {

// Block b starts at virtual rank b + 1 and gathers one contribution per hop,
// arriving complete at virtual rank b after p - 1 hops.
Generator<Step> ring_reduce_scatter(BlockLayout layout) {
  return ring_pass(layout, 1, Combine::reduce);
}

Generator<Step> member_reduce_scatter(FoldGroup g) {
  const int i = g.member();
  if (i < 0) co_return;
  // Member i keeps the half of its aligned group of 2m members that holds i.
  for (int m = g.q() / 2; m >= 1; m >>= 1) {
    const int lo = i & ~(2 * m - 1);
    const int keep = (i & m) ? lo + m : lo;
    const int give = (i & m) ? lo : lo + m;
    const int peer = g.member_real(i ^ m);
    Step s;
    s.ops.push_back(send_op(peer, g.range(give, m)));
    s.ops.push_back(recv_op(peer, g.range(keep, m), Combine::reduce));
    co_yield std::move(s);
  }
}

Generator<Step> recursive_halving_reduce_scatter(BlockLayout layout) {
  return rank_blocks_fold(layout, /*reduce=*/true);
}

namespace {

// Ring and recursive halving reduce in place, so they work on a scratch copy
// of the input (the input is read-only) and copy their block out at the end.
Step copy_input_to_scratch(std::int64_t n) {
  Step s;
  s.ops.push_back(copy_op({Buf::input, 0, n}, {Buf::scratch, 0, n}));
  return s;
}

Step copy_own_block_out(const Partition& part, int rank) {
  Step s;
  s.ops.push_back(copy_op({Buf::scratch, part.offset(rank), part.size(rank)},
                          {Buf::output, 0, part.size(rank)}));
  return s;
}

BlockLayout scratch_layout(const ScheduleSpec& spec, int rank) {
  return {spec.ranks, rank, 0, Partition{spec.count, spec.ranks}, Buf::scratch, 0};
}

Generator<Step> ring_program(ScheduleSpec spec, int rank) {
  const Partition part{spec.count, spec.ranks};
  co_yield copy_input_to_scratch(spec.count);
  for (Step& s : ring_reduce_scatter(scratch_layout(spec, rank))) co_yield std::move(s);
  co_yield copy_own_block_out(part, rank);
}

// Ring and pairwise send every block but their own.
CostEstimate ring_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  const double t = (p - 1) * message_time(c, spec.elem_size, part.size(0), true);
  return make_cost(t, p - 1, spec.count - spec.count / p, spec.elem_size);
}

Generator<Step> recursive_halving_program(ScheduleSpec spec, int rank) {
  const Partition part{spec.count, spec.ranks};
  co_yield copy_input_to_scratch(spec.count);
  for (Step& s : recursive_halving_reduce_scatter(scratch_layout(spec, rank)))
    co_yield std::move(s);
  co_yield copy_own_block_out(part, rank);
}

CostEstimate recursive_halving_cost(const ScheduleSpec& spec, const CostParams& c) {
  const Partition part{spec.count, spec.ranks};
  const FoldGroup g{spec.ranks, 0, 0, FoldGroup::Split::rank_blocks, part};
  const int es = spec.elem_size;
  const int r = g.r();
  double t = 0;
  for (int m = g.q() / 2; m >= 1; m >>= 1) t += message_time(c, es, member_level_max(g, m), true);
  std::int64_t steps = floor_log2(spec.ranks);
  // A folded member also returns its sitter's block.
  const auto extra = [&](int i) -> std::int64_t { return i < r ? part.size(2 * i + 1) : 0; };
  std::int64_t sent = member_reduce_scatter_max_sent(g, extra, 0, g.q());
  if (r > 0) {
    t += message_time(c, es, spec.count, true) + message_time(c, es, part.size(1), false);
    steps += 2;
    sent = std::max(sent, spec.count);
  }
  return make_cost(t, steps, sent, es);
}

// Pairwise: at step k rank r sends its contribution to block r + k straight to
// its owner and folds the contribution of rank r - k into its own block.
Generator<Step> pairwise_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  const Region own{Buf::output, 0, part.size(rank)};
  {
    Step s;
    s.ops.push_back(copy_op({Buf::input, part.offset(rank), part.size(rank)}, own));
    co_yield std::move(s);
  }
  for (int k = 1; k < p; ++k) {
    const int to = (rank + k) % p;
    Step s;
    s.ops.push_back(send_op(to, {Buf::input, part.offset(to), part.size(to)}));
    s.ops.push_back(recv_op(mod(rank - k, p), own, Combine::reduce));
    co_yield std::move(s);
  }
}

}  // namespace

void add_reduce_scatter(std::vector<AlgorithmDef>& defs) {
  const auto n_scratch = [](const ScheduleSpec& spec, int) -> std::int64_t { return spec.count; };
  defs.push_back({Collective::reduce_scatter,
                  "ring",
                  {},
                  "(p-1) a + (p-1)/p n (b + g) (uneven blocks: each step set by the largest "
                  "block)",
                  kCostExact,
                  "any p, commutative op",
                  ring_program,
                  n_scratch,
                  ring_cost});
  defs.push_back({Collective::reduce_scatter,
                  "recursive_halving",
                  {},
                  "log2 p a + (p-1)/p n (b + g); p not a power of two: fold, floor(log2 p)+2 "
                  "steps, + n (b + g) + n/p b (levels set by member 0's message)",
                  kCostExact,
                  "any p (fold to 2^floor(log2 p)), commutative op",
                  recursive_halving_program,
                  n_scratch,
                  recursive_halving_cost});
  defs.push_back({Collective::reduce_scatter,
                  "pairwise",
                  {},
                  "(p-1) a + (p-1)/p n (b + g) (uneven blocks: each step set by the largest "
                  "block)",
                  kCostExact,
                  "any p, commutative op",
                  pairwise_program,
                  [](const ScheduleSpec&, int) -> std::int64_t { return 0; },
                  ring_cost});
}

}  // namespace collkit
