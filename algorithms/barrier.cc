// Barrier: dissemination and binomial tree. Messages carry no data: they are
// zero-element send/recv pairs, which still cost alpha each and still order
// the ranks (a receive completes only after its sender reached the send).
#include "algorithms/costs.h"
#include "algorithms/registry.h"

namespace collkit {
namespace {

const Region kEmpty{Buf::input, 0, 0};

// Dissemination (Hensgen, Finkel, Manber): in round k every rank signals
// rank + 2^k and waits for rank - 2^k; after ceil(log2 p) rounds every rank
// has heard, directly or not, from every other.
Generator<Step> dissemination_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  for (int d = 1; d < p; d <<= 1) {
    Step s;
    s.ops.push_back(send_op((rank + d) % p, kEmpty));
    s.ops.push_back(recv_op((rank - d % p + p) % p, kEmpty));
    co_yield std::move(s);
  }
}

CostEstimate dissemination_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int L = ceil_log2(spec.ranks);
  return {L * m.alpha, L, 0.0};
}

// Binomial tree: a zero-size gather to rank 0 followed by a zero-size
// broadcast back, on the MPICH binomial tree (children v + 1, v + 2, v + 4,
// ... below the lowest set bit of v).
Generator<Step> binomial_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const int top = rank == 0 ? 1 << ceil_log2(p) : rank & -rank;
  for (int mask = 1; mask < top && rank + mask < p; mask <<= 1) {
    Step s;
    s.ops.push_back(recv_op(rank + mask, kEmpty));
    co_yield std::move(s);
  }
  if (rank != 0) {
    Step up;
    up.ops.push_back(send_op(rank - top, kEmpty));
    co_yield std::move(up);
    Step down;
    down.ops.push_back(recv_op(rank - top, kEmpty));
    co_yield std::move(down);
  }
  for (int mask = top >> 1; mask >= 1; mask >>= 1) {
    if (rank + mask >= p) continue;
    Step s;
    s.ops.push_back(send_op(rank + mask, kEmpty));
    co_yield std::move(s);
  }
}

// 2 ceil(log2 p) a: rank 0 receives ceil(log2 p) signals, then sends as many.
CostEstimate binomial_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int L = ceil_log2(spec.ranks);
  return {2 * L * m.alpha, std::int64_t{2} * L, 0.0};
}

}  // namespace

void add_barrier(std::vector<AlgorithmDef>& defs) {
  const auto c = Collective::barrier;
  defs.push_back({c,
                  "dissemination",
                  {},
                  "ceil(log2 p) a",
                  kCostExact,
                  "any p",
                  dissemination_program,
                  nullptr,
                  dissemination_cost});
  defs.push_back({c,
                  "binomial_tree",
                  {},
                  "2 ceil(log2 p) a",
                  kCostExact,
                  "any p",
                  binomial_program,
                  nullptr,
                  binomial_cost});
}

}  // namespace collkit
