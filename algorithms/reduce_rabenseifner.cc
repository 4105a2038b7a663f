// Reduce, Rabenseifner: recursive-halving reduce_scatter over the members of
// the fold (fold.h) on an even split of the vector, then a binomial gather of
// the reduced blocks to member 0, which is the root (virtual ranks are shifted
// by the root). p not a power of two: the r sitters first hand their whole
// vector to their member, one extra step.
#include <algorithm>

#include "algorithms/costs.h"
#include "algorithms/fold.h"
#include "algorithms/registry.h"

namespace collkit {
namespace {

FoldGroup reduce_group(const ScheduleSpec& spec, int rank) {
  const int q = 1 << floor_log2(spec.ranks);
  // The root reduces into its output; the others need a scratch work vector.
  const Buf work = rank == spec.root ? Buf::output : Buf::scratch;
  return {spec.ranks, spec.root, rank, FoldGroup::Split::even, Partition{spec.count, q}, work, 0};
}

Generator<Step> rabenseifner_program(ScheduleSpec spec, int rank) {
  const std::int64_t n = spec.count;
  const FoldGroup g = reduce_group(spec, rank);
  const int v = g.vrank();
  if (g.sits_out()) {
    Step give;
    give.ops.push_back(send_op(g.real(v - 1), {Buf::input, 0, n}));
    co_yield std::move(give);
    co_return;
  }
  {
    Step s;
    s.ops.push_back(copy_op({Buf::input, 0, n}, g.whole()));
    co_yield std::move(s);
  }
  const int i = g.member();
  if (i < g.r()) {
    Step take;
    take.ops.push_back(recv_op(g.real(v + 1), g.whole(), Combine::reduce));
    co_yield std::move(take);
  }
  for (Step& s : member_reduce_scatter(g)) co_yield std::move(s);
  // Binomial gather over members: member i collects [i, i + lowbit(i)) and
  // hands it to i - lowbit(i); member 0 ends with everything.
  for (int m = 1; m < g.q(); m <<= 1) {
    Step s;
    if (i & m) {
      s.ops.push_back(send_op(g.member_real(i - m), g.range(i, m)));
      co_yield std::move(s);
      break;
    }
    s.ops.push_back(recv_op(g.member_real(i + m), g.range(i + m, m)));
    co_yield std::move(s);
  }
}

std::int64_t rabenseifner_scratch(const ScheduleSpec& spec, int rank) {
  const FoldGroup g = reduce_group(spec, rank);
  return rank == spec.root || g.sits_out() ? 0 : spec.count;
}

// Max over members of elements sent by the halving plus the gather, where the
// first member of [lo, lo + len) also sends `lead` elements in an outer gather
// level. Runs of equal block sizes are solved in closed form: O(log q).
std::int64_t halving_gather_max_sent(const FoldGroup& g, int lo, int len, std::int64_t lead) {
  if (len == 1) return lead;
  const std::int64_t s = g.size(lo);
  const int half = len / 2;
  if (s == g.size(lo + len - 1)) return (len - 1) * s + std::max(lead, half * s);
  return std::max(
      g.span(lo + half, half) + halving_gather_max_sent(g, lo, half, lead),
      g.span(lo, half) + halving_gather_max_sent(g, lo + half, half, g.span(lo + half, half)));
}

CostEstimate rabenseifner_cost(const ScheduleSpec& spec, const CostParams& c) {
  const FoldGroup g = reduce_group(spec, spec.root);
  const std::int64_t n = spec.count;
  const int es = spec.elem_size;
  double t = 0;
  for (int m = 1; m < g.q(); m <<= 1)
    t += message_time(c, es, member_level_max(g, m), true) +
         message_time(c, es, g.span(m, m), false);
  std::int64_t steps = std::int64_t{2} * floor_log2(spec.ranks);
  std::int64_t sent = halving_gather_max_sent(g, 0, g.q(), 0);
  if (g.r() > 0) {
    t += message_time(c, es, n, true);
    steps += 1;
    sent = std::max(sent, n);
  }
  return make_cost(t, steps, sent, es);
}

}  // namespace

void add_reduce_rabenseifner(std::vector<AlgorithmDef>& defs) {
  defs.push_back({Collective::reduce,
                  "rabenseifner",
                  {},
                  "2 log2 p a + 2(p-1)/p n b + (p-1)/p n g; p not a power of two: fold, "
                  "2 floor(log2 p)+1 steps, + a + n (b + g) with p' = 2^floor(log2 p) for p "
                  "(levels set by member 0's message)",
                  kCostExact,
                  "any p, any root (fold to 2^floor(log2 p)), commutative op",
                  rabenseifner_program,
                  rabenseifner_scratch,
                  rabenseifner_cost});
}

}  // namespace collkit
