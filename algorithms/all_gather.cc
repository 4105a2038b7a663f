// All_gather (ring, recursive doubling, Bruck, gather + broadcast) and the
// ring / recursive-doubling all_gather blocks of blocks.h.
//
// Block j of the output (Partition{n, p}) is rank j's input. Every message is
// sent even when it carries no element (n < p), so the step structure depends
// on p only and the closed-form step counts stay exact.
#include <algorithm>

#include "algorithms/blocks.h"
#include "algorithms/costs.h"
#include "algorithms/fold.h"
#include "algorithms/registry.h"

namespace collkit {

Generator<Step> ring_pass(BlockLayout layout, int lag, Combine combine) {
  const int p = layout.p;
  const int v = layout.vrank();
  const int next = layout.real(mod(v + 1, p));
  const int prev = layout.real(mod(v - 1, p));
  // Step k forwards the block received in step k-1.
  for (int k = 0; k + 1 < p; ++k) {
    Step s;
    s.ops.push_back(send_op(next, layout.block(mod(v - k - lag, p))));
    s.ops.push_back(recv_op(prev, layout.block(mod(v - k - lag - 1, p)), combine));
    co_yield std::move(s);
  }
}

// Own block first: after p - 1 hops every block has visited every rank.
Generator<Step> ring_all_gather(BlockLayout layout) { return ring_pass(layout, 0, Combine::copy); }

Generator<Step> member_all_gather(FoldGroup g) {
  const int i = g.member();
  if (i < 0) co_return;
  // Before the exchange with partner i ^ m, member i holds the m ranges of its
  // aligned group of m members.
  for (int m = 1; m < g.q(); m <<= 1) {
    const int partner = i ^ m;
    Step s;
    s.ops.push_back(send_op(g.member_real(partner), g.range(i & ~(m - 1), m)));
    s.ops.push_back(recv_op(g.member_real(partner), g.range(partner & ~(m - 1), m)));
    co_yield std::move(s);
  }
}

Generator<Step> rank_blocks_fold(BlockLayout layout, bool reduce) {
  const FoldGroup g{layout.p,    layout.shift, layout.rank, FoldGroup::Split::rank_blocks,
                    layout.part, layout.buf,   layout.base};
  // in(w): what sitter w hands its member; out(w): what it takes back.
  const auto in = [&](int w) { return reduce ? g.whole() : layout.block(w); };
  const auto out = [&](int w) { return reduce ? layout.block(w) : g.whole(); };
  const int v = g.vrank();
  if (g.sits_out()) {
    const int member = g.real(v - 1);
    Step give;
    give.ops.push_back(send_op(member, in(v)));
    co_yield std::move(give);
    Step take;
    take.ops.push_back(recv_op(member, out(v)));
    co_yield std::move(take);
    co_return;
  }
  const bool folded = g.member() < g.r();
  if (folded) {
    Step take;
    take.ops.push_back(recv_op(g.real(v + 1), in(v + 1), reduce ? Combine::reduce : Combine::copy));
    co_yield std::move(take);
  }
  for (Step& s : reduce ? member_reduce_scatter(g) : member_all_gather(g)) co_yield std::move(s);
  if (folded) {
    Step give;
    give.ops.push_back(send_op(g.real(v + 1), out(v + 1)));
    co_yield std::move(give);
  }
}

Generator<Step> recursive_doubling_all_gather(BlockLayout layout) {
  return rank_blocks_fold(layout, /*reduce=*/false);
}

namespace {

Step copy_input_to_own_block(const Partition& part, int rank) {
  Step s;
  s.ops.push_back(
      copy_op({Buf::input, 0, part.size(rank)}, {Buf::output, part.offset(rank), part.size(rank)}));
  return s;
}

BlockLayout output_layout(const ScheduleSpec& spec, int rank) {
  return {spec.ranks, rank, 0, Partition{spec.count, spec.ranks}, Buf::output, 0};
}

// A ring rank sends every block but one: n - (smallest block) elements at most.
std::int64_t all_but_smallest(const ScheduleSpec& spec) {
  return spec.count - spec.count / spec.ranks;
}

// The largest block, which bounds every step of the uneven ring.
std::int64_t largest_block(const ScheduleSpec& spec) {
  return Partition{spec.count, spec.ranks}.size(0);
}

Generator<Step> ring_program(ScheduleSpec spec, int rank) {
  co_yield copy_input_to_own_block(Partition{spec.count, spec.ranks}, rank);
  for (Step& s : ring_all_gather(output_layout(spec, rank))) co_yield std::move(s);
}

CostEstimate ring_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  const double t = (p - 1) * message_time(c, spec.elem_size, largest_block(spec), false);
  return make_cost(t, p - 1, all_but_smallest(spec), spec.elem_size);
}

Generator<Step> recursive_doubling_program(ScheduleSpec spec, int rank) {
  co_yield copy_input_to_own_block(Partition{spec.count, spec.ranks}, rank);
  for (Step& s : recursive_doubling_all_gather(output_layout(spec, rank))) co_yield std::move(s);
}

CostEstimate recursive_doubling_cost(const ScheduleSpec& spec, const CostParams& c) {
  const FoldGroup g{spec.ranks, 0, 0, FoldGroup::Split::rank_blocks,
                    Partition{spec.count, spec.ranks}};
  const int es = spec.elem_size;
  const bool folded = g.r() > 0;
  double t = 0;
  for (int m = 1; m < g.q(); m <<= 1) t += message_time(c, es, member_level_max(g, m), false);
  std::int64_t sent = member_all_gather_max_sent(g);
  std::int64_t steps = floor_log2(spec.ranks);
  if (folded) {
    // Sitter 1 (the largest sitter block) feeds member 0, which then returns n.
    const Partition part{spec.count, spec.ranks};
    t += message_time(c, es, part.size(1), false) + message_time(c, es, spec.count, false);
    sent += spec.count;
    steps += 2;
  }
  return make_cost(t, steps, sent, es);
}

// Bruck: rank r keeps the blocks r, r+1, ... (mod p) contiguously in scratch;
// step k sends its first min(2^k, p - 2^k) blocks to r - 2^k and appends the
// same number received from r + 2^k. A final local rotation puts them in place.
struct BruckLayout {
  Partition part;
  int r;
  // Elements of the rotated blocks r .. r+i-1 (mod p).
  std::int64_t offset(int i) const {
    const int p = part.p;
    if (r + i <= p) return part.offset(r + i) - part.offset(r);
    return (part.n - part.offset(r)) + part.offset(r + i - p);
  }
};

Generator<Step> bruck_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  const Partition part{n, p};
  const BruckLayout bl{part, rank};
  {
    Step s;
    s.ops.push_back(copy_op({Buf::input, 0, part.size(rank)}, {Buf::scratch, 0, part.size(rank)}));
    co_yield std::move(s);
  }
  for (int dist = 1; dist < p; dist <<= 1) {
    const int k = std::min(dist, p - dist);
    Step s;
    s.ops.push_back(send_op(mod(rank - dist, p), {Buf::scratch, 0, bl.offset(k)}));
    s.ops.push_back(recv_op(mod(rank + dist, p), {Buf::scratch, bl.offset(dist),
                                                  bl.offset(dist + k) - bl.offset(dist)}));
    co_yield std::move(s);
  }
  // Scratch holds blocks rank..p-1 then 0..rank-1.
  const std::int64_t head = n - part.offset(rank);
  Step s;
  s.ops.push_back(copy_op({Buf::scratch, 0, head}, {Buf::output, part.offset(rank), head}));
  if (head < n)
    s.ops.push_back(copy_op({Buf::scratch, head, n - head}, {Buf::output, 0, n - head}));
  co_yield std::move(s);
}

CostEstimate bruck_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  // Rank 0's rotated prefixes are the largest (blocks shrink with their index).
  // Every step resends the rank's own block, so rank 0 (largest blocks first)
  // sends the most.
  double t = 0;
  std::int64_t steps = 0, sent = 0;
  for (int dist = 1; dist < p; dist <<= 1) {
    const std::int64_t m = part.offset(std::min(dist, p - dist));
    t += message_time(c, spec.elem_size, m, false);
    sent += m;
    ++steps;
  }
  return make_cost(t, steps, sent, spec.elem_size);
}

// Binomial broadcast of the output from rank 0 (virtual = real): at mask m,
// ranks below m send to rank + m.
Generator<Step> binomial_broadcast_output(int p, int rank, std::int64_t n) {
  const Region all{Buf::output, 0, n};
  for (int m = 1; m < p; m <<= 1) {
    Step s;
    if (rank < m && rank + m < p) {
      s.ops.push_back(send_op(rank + m, all));
    } else if (rank >= m && rank < 2 * m) {
      s.ops.push_back(recv_op(rank - m, all));
    } else {
      continue;
    }
    co_yield std::move(s);
  }
}

Generator<Step> gather_broadcast_program(ScheduleSpec spec, int rank) {
  co_yield copy_input_to_own_block(Partition{spec.count, spec.ranks}, rank);
  for (Step& s : binomial_gather(output_layout(spec, rank))) co_yield std::move(s);
  for (Step& s : binomial_broadcast_output(spec.ranks, rank, spec.count)) co_yield std::move(s);
}

CostEstimate gather_broadcast_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  const int L = ceil_log2(p);
  const Partition part{spec.count, p};
  const int es = spec.elem_size;
  // Gather level m brings rank 0 the m blocks [m, 2m) (clipped to p); the
  // broadcast then sends the whole vector L times from rank 0.
  double t = 0;
  for (int m = 1; m < p; m <<= 1)
    t += message_time(c, es, part.span(m, std::min(m, p - m)), false) +
         message_time(c, es, spec.count, false);
  return make_cost(t, std::int64_t{2} * L, static_cast<std::int64_t>(L) * spec.count, es);
}

}  // namespace

void add_all_gather(std::vector<AlgorithmDef>& defs) {
  const auto no_scratch = [](const ScheduleSpec&, int) -> std::int64_t { return 0; };
  defs.push_back({Collective::all_gather,
                  "ring",
                  {},
                  "(p-1) a + (p-1)/p n b (uneven blocks: each step set by the largest block)",
                  kCostExact,
                  "any p",
                  ring_program,
                  no_scratch,
                  ring_cost});
  defs.push_back({Collective::all_gather,
                  "recursive_doubling",
                  {},
                  "log2 p a + (p-1)/p n b; p not a power of two: fold, floor(log2 p)+2 steps, "
                  "+ (n/p + n) b (levels set by member 0's message)",
                  kCostExact,
                  "any p (fold to 2^floor(log2 p))",
                  recursive_doubling_program,
                  no_scratch,
                  recursive_doubling_cost});
  defs.push_back({Collective::all_gather,
                  "bruck",
                  {},
                  "ceil(log2 p) a + (p-1)/p n b (+ local rotation; uneven blocks: each step "
                  "set by rank 0's message)",
                  kCostExact,
                  "any p",
                  bruck_program,
                  [](const ScheduleSpec& spec, int) -> std::int64_t { return spec.count; },
                  bruck_cost});
  defs.push_back({Collective::all_gather,
                  "gather_broadcast",
                  {},
                  "2 ceil(log2 p) a + (ceil(log2 p) + (p-1)/p) n b (binomial gather to rank 0, "
                  "binomial broadcast; otherwise the largest gather message sets each level)",
                  kCostExact,
                  "any p",
                  gather_broadcast_program,
                  no_scratch,
                  gather_broadcast_cost});
}

}  // namespace collkit
