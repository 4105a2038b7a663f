// Reduce: linear, binomial tree, pipelined chain (Rabenseifner lives in
// reduce_rabenseifner.cc).
//
// Every rank contributes `input`; the root's `output` gets the result. A rank
// that combines partial results first copies its input into an accumulator
// (the root's output, scratch elsewhere) in a local step, so each received
// message is reduced exactly once, at its receiver. n == 0 moves nothing.
#include <algorithm>

#include "algorithms/costs.h"
#include "algorithms/registry.h"
#include "algorithms/tree_pipeline.h"

namespace collkit {
namespace {

int vrank_of(const ScheduleSpec& spec, int rank) {
  return (rank - spec.root + spec.ranks) % spec.ranks;
}
int real_of(const ScheduleSpec& spec, int v) { return (v + spec.root) % spec.ranks; }
int lowbit(int v) { return v & -v; }

// One message of `elems` reduced at its receiver.
double reduce_message(const ScheduleSpec& spec, const CostParams& m, std::int64_t elems) {
  const double bytes = static_cast<double>(elems) * spec.elem_size;
  return m.alpha + bytes * (m.beta + m.gamma);
}

Step init_acc(Region acc) {
  Step s;
  s.ops.push_back(copy_op({Buf::input, 0, acc.count}, acc));
  return s;
}

// Linear: the root combines the other ranks' vectors one after the other.
Generator<Step> linear_program(ScheduleSpec spec, int rank) {
  const std::int64_t n = spec.count;
  if (n == 0) co_return;
  if (rank != spec.root) {
    Step s;
    s.ops.push_back(send_op(spec.root, {Buf::input, 0, n}));
    co_yield std::move(s);
    co_return;
  }
  const Region out{Buf::output, 0, n};
  co_yield init_acc(out);
  for (int i = 1; i < spec.ranks; ++i) {
    Step s;
    s.ops.push_back(recv_op(real_of(spec, i), out, Combine::reduce));
    co_yield std::move(s);
  }
}

// Exact for any p: the root's receives are sequential.
CostEstimate linear_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  return {(p - 1) * reduce_message(spec, m, spec.count), p - 1,
          static_cast<double>(spec.count) * spec.elem_size};
}

// Binomial tree, the broadcast tree run backwards: v combines the vectors of
// its children v+1, v+2, v+4, ... (smallest subtree, ready first, first) and
// sends the partial result to v - lowbit(v).
std::int64_t binomial_scratch(const ScheduleSpec& spec, int rank) {
  const int v = vrank_of(spec, rank);
  // Inner non-root ranks accumulate in scratch; leaves send their input.
  return v != 0 && lowbit(v) > 1 && v + 1 < spec.ranks ? spec.count : 0;
}

Generator<Step> binomial_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  if (n == 0) co_return;
  const int v = vrank_of(spec, rank);
  const int top = v == 0 ? 1 << ceil_log2(p) : lowbit(v);
  const bool has_children = top > 1 && v + 1 < p;
  const Region acc{v == 0 ? Buf::output : Buf::scratch, 0, n};
  if (has_children || v == 0) co_yield init_acc(acc);
  for (int mask = 1; mask < top && v + mask < p; mask <<= 1) {
    Step s;
    s.ops.push_back(recv_op(real_of(spec, v + mask), acc, Combine::reduce));
    co_yield std::move(s);
  }
  if (v != 0) {
    Step s;
    s.ops.push_back(send_op(real_of(spec, v - top), has_children ? acc : Region{Buf::input, 0, n}));
    co_yield std::move(s);
  }
}

// L (a + n b + n g), L = ceil(log2 p): exact for any p (the root's children,
// served in order of subtree size, are ready exactly when it reaches them).
CostEstimate binomial_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  const int L = ceil_log2(p);
  return {L * reduce_message(spec, m, spec.count), L,
          static_cast<double>(spec.count) * spec.elem_size};
}

// Pipelined chain p-1 -> ... -> 1 -> 0 (virtual), the broadcast chain of
// tree_pipeline.h run backwards: segment i leaves the tail first and each
// rank adds its own part on the way to the root.
std::int64_t chain_seg(const ScheduleSpec& spec) {
  return segment_elems(spec, spec.ranks - 1, true);
}

Pipeline chain_pipe(const ScheduleSpec& spec, int rank) {
  const int p = spec.ranks;
  const int v = vrank_of(spec, rank);
  Pipeline pl;
  pl.node.parent = v > 0 ? real_of(spec, v - 1) : -1;
  pl.node.child[0] = v + 1 < p ? real_of(spec, v + 1) : -1;
  pl.node.arrival = v - 1;
  pl.pace = 1;
  pl.n = spec.count;
  pl.seg = chain_seg(spec);
  pl.rounds = pipeline_rounds(p - 2, 1, pl.segments());
  pl.reduce = true;
  const Region acc{v == 0 ? Buf::output : Buf::scratch, 0, spec.count};
  pl.recv_at = acc;
  pl.send_from = v + 1 < p ? acc : Region{Buf::input, 0, spec.count};
  return pl;
}

std::int64_t chain_scratch(const ScheduleSpec& spec, int rank) {
  const int v = vrank_of(spec, rank);
  return v != 0 && v + 1 < spec.ranks ? spec.count : 0;
}

Generator<Step> chain_program(ScheduleSpec spec, int rank) {
  if (spec.count == 0) return run_pipelines({}, {});
  const Pipeline pl = chain_pipe(spec, rank);
  std::vector<Op> prologue;
  if (pl.node.child[0] >= 0 || rank == spec.root)
    prologue.push_back(copy_op({Buf::input, 0, spec.count}, pl.recv_at));
  return run_pipelines({pl}, std::move(prologue));
}

// (p+k-2)(a + n/k (b+g)): rounds x one segment message reduced at its
// receiver. Exact when the segment divides n (the last segment is otherwise
// charged as a full one).
CostEstimate chain_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  const Pipeline pl = chain_pipe(spec, spec.root);
  // Inner ranks send segment i while combining segment i+1: k + 1 steps.
  const std::int64_t k = pl.segments();
  const std::int64_t steps = p == 2 ? k : k + 1;
  return {pl.rounds * reduce_message(spec, m, pl.seg), steps,
          static_cast<double>(spec.count) * spec.elem_size};
}

}  // namespace

void add_reduce(std::vector<AlgorithmDef>& defs) {
  const auto c = Collective::reduce;
  defs.push_back({c,
                  "linear",
                  {},
                  "(p-1)(a + n b + n g)",
                  kCostExact,
                  "any p",
                  linear_program,
                  nullptr,
                  linear_cost});
  defs.push_back({c,
                  "binomial_tree",
                  {},
                  "ceil(log2 p)(a + n b + n g)",
                  kCostExact,
                  "any p",
                  binomial_program,
                  binomial_scratch,
                  binomial_cost});
  defs.push_back({c,
                  "pipelined_chain",
                  {},
                  "(p+k-2)(a + n/k (b+g)), k = ceil(n/segment) (exact when segment divides n)",
                  kCostExactWhenSegmentDivides,
                  "any p",
                  chain_program,
                  chain_scratch,
                  chain_cost});
}

}  // namespace collkit
