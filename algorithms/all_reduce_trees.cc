// All_reduce on trees: linear (linear reduce + linear broadcast), binomial
// tree (binomial reduce + binomial broadcast) and NCCL's double binary tree.
//
// The compositions reuse the registered reduce and broadcast programs with
// root 0 and rename buffers: the reduce's scratch accumulator becomes the
// rank's output (every rank has one here, and the broadcast overwrites it
// only after it was sent), and the broadcast root reads the reduced result
// from its output instead of its input.
#include <algorithm>

#include "algorithms/costs.h"
#include "algorithms/registry.h"
#include "algorithms/tree_pipeline.h"

namespace collkit {
namespace {

Region rename(Region r, Buf from, Buf to) {
  if (r.buf == from) r.buf = to;
  return r;
}

// The steps of `inner` with buffer `from` renamed to `to`; local copies that
// become no-ops (same source and destination) are dropped, and so are steps
// left empty.
Generator<Step> rename_buffer(Generator<Step> inner, Buf from, Buf to) {
  for (Step& s : inner) {
    Step out;
    for (Op op : s.ops) {
      op.src = rename(op.src, from, to);
      op.dst = rename(op.dst, from, to);
      if (op.kind == OpKind::copy && op.src == op.dst) continue;
      out.ops.push_back(op);
    }
    if (!out.ops.empty()) co_yield std::move(out);
  }
}

ScheduleSpec phase_spec(const ScheduleSpec& spec, Collective c) {
  ScheduleSpec s = spec;
  s.collective = c;
  s.root = 0;
  s.variant.clear();
  return s;
}

// Reduce to rank 0 then broadcast from rank 0, both with algorithm `name`.
Generator<Step> reduce_broadcast(ScheduleSpec spec, int rank) {
  const AlgorithmDef& reduce = find_algorithm(Collective::reduce, spec.algorithm);
  const AlgorithmDef& bcast = find_algorithm(Collective::broadcast, spec.algorithm);
  const ScheduleSpec rs = phase_spec(spec, Collective::reduce);
  const ScheduleSpec bs = phase_spec(spec, Collective::broadcast);
  for (Step& s : rename_buffer(reduce.program(rs, rank), Buf::scratch, Buf::output))
    co_yield std::move(s);
  for (Step& s : rename_buffer(bcast.program(bs, rank), Buf::input, Buf::output))
    co_yield std::move(s);
}

double message(const ScheduleSpec& spec, const CostParams& m, std::int64_t elems, bool reduce) {
  const double bytes = static_cast<double>(elems) * spec.elem_size;
  return m.alpha + bytes * (m.beta + (reduce ? m.gamma : 0.0));
}

// Exact for any p: the root receives p-1 vectors one after the other, then
// sends p-1.
CostEstimate linear_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  const std::int64_t n = spec.count;
  return {(p - 1) * (message(spec, m, n, true) + message(spec, m, n, false)),
          std::int64_t{2} * (p - 1), static_cast<double>((p - 1) * n) * spec.elem_size};
}

// 2L steps at rank 0; rank 0 sends L n (a rank with L-1 children sends as
// much: n up, (L-1) n down). Exact for any p.
CostEstimate binomial_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  const std::int64_t n = spec.count;
  const int L = ceil_log2(p);
  return {L * (message(spec, m, n, true) + message(spec, m, n, false)), std::int64_t{2} * L,
          static_cast<double>(L * n) * spec.elem_size};
}

// Double binary tree (NCCL): tree 0 carries the first ceil(n/2) elements,
// tree 1 the rest. In each tree the vector is reduced up to the tree's root
// in pipelined segments (the pipeline of tree_pipeline.h run backwards), then
// broadcast back down; the broadcast phase starts in the round after the
// longer reduce phase ends. Every rank accumulates in its output (a local
// copy of its input first). Both trees run at once, so a step may hold one
// send and one receive per tree: two of each, which is the algorithm's point
// (every rank is inner in at most one tree, so each link carries n/2).
std::int64_t half(std::int64_t n, int tree) { return tree == 0 ? (n + 1) / 2 : n / 2; }
int dbt_pace(int p) { return p >= 4 ? 2 : 1; }

std::int64_t dbt_seg(const ScheduleSpec& spec) {
  ScheduleSpec h = spec;
  h.count = half(spec.count, 0);
  return segment_elems(h, std::max(1, (nccl_btree_max_arrival(spec.ranks) + 2) / 2), true);
}

// What every rank's pipelines share; `nodes`, when set, holds
// nccl_dbt_nodes(p, tree) for both trees (costs visit every rank).
struct DbtShape {
  std::int64_t seg = 1;
  int max_arrival = -1;
  const std::vector<PipeNode>* nodes = nullptr;
};

DbtShape dbt_shape(const ScheduleSpec& spec) {
  return {dbt_seg(spec), nccl_btree_max_arrival(spec.ranks)};
}

std::array<PipeNode, 2> dbt_nodes(const ScheduleSpec& spec, int rank, const DbtShape& shape) {
  const int p = spec.ranks;
  if (shape.nodes) return {shape.nodes[0][rank], shape.nodes[1][rank]};
  return {nccl_dbt_node(p, 0, rank), nccl_dbt_node(p, 1, rank)};
}

std::vector<Pipeline> dbt_pipes_of(const ScheduleSpec& spec, const DbtShape& shape,
                                   const std::array<PipeNode, 2>& nodes) {
  const int p = spec.ranks;
  const std::int64_t seg = shape.seg;
  std::vector<Pipeline> up, down;
  std::int64_t up_rounds = 0;
  for (int tree = 0; tree < 2; ++tree) {
    const std::int64_t n = half(spec.count, tree);
    if (n == 0) continue;
    Pipeline pl;
    pl.node = nodes[tree];
    pl.pace = dbt_pace(p);
    pl.n = n;
    pl.seg = seg;
    pl.rounds = pipeline_rounds(shape.max_arrival, pl.pace, pl.segments());
    pl.recv_at = pl.send_from = {Buf::output, tree == 0 ? 0 : half(spec.count, 0), n};
    pl.reduce = true;
    up.push_back(pl);
    pl.reduce = false;
    down.push_back(pl);
    up_rounds = std::max(up_rounds, pl.rounds);
  }
  for (Pipeline& pl : down) pl.first_round = up_rounds;
  up.insert(up.end(), down.begin(), down.end());
  return up;
}

std::vector<Pipeline> dbt_pipes(const ScheduleSpec& spec, int rank, const DbtShape& shape) {
  return dbt_pipes_of(spec, shape, dbt_nodes(spec, rank, shape));
}

Generator<Step> dbt_program(ScheduleSpec spec, int rank) {
  if (spec.count == 0) return run_pipelines({}, {});
  std::vector<Op> prologue{copy_op({Buf::input, 0, spec.count}, {Buf::output, 0, spec.count})};
  if (spec.ranks == 1) return run_pipelines({}, std::move(prologue));
  return run_pipelines(dbt_pipes(spec, rank, dbt_shape(spec)), std::move(prologue));
}

// Time: reduce rounds x (a + s (b+g)) + broadcast rounds x (a + s b), s the
// segment. Exact when the segment divides n/2; otherwise the last, shorter
// segment is charged as a full one.
CostEstimate dbt_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  const std::vector<PipeNode> nodes[2] = {nccl_dbt_nodes(p, 0), nccl_dbt_nodes(p, 1)};
  DbtShape shape = dbt_shape(spec);
  shape.nodes = nodes;
  const PipeStats st = max_pipeline_stats(
      p, [&](int r) { return dbt_nodes(spec, r, shape); },
      [&](const std::array<PipeNode, 2>& nd) { return dbt_pipes_of(spec, shape, nd); });
  const std::vector<Pipeline> pipes = dbt_pipes(spec, 0, shape);
  const std::int64_t rounds = pipes.front().rounds;  // tree 0 carries the larger half
  return {rounds * (message(spec, m, shape.seg, true) + message(spec, m, shape.seg, false)),
          st.comm_steps, static_cast<double>(st.elems_sent) * spec.elem_size};
}

}  // namespace

void add_all_reduce_trees(std::vector<AlgorithmDef>& defs) {
  const auto c = Collective::all_reduce;
  defs.push_back({c,
                  "linear",
                  {},
                  "(p-1)(2a + 2n b + n g)",
                  kCostExact,
                  "any p (linear reduce to rank 0 + linear broadcast)",
                  reduce_broadcast,
                  nullptr,
                  linear_cost});
  defs.push_back({c,
                  "binomial_tree",
                  {},
                  "ceil(log2 p)(2a + 2n b + n g)",
                  kCostExact,
                  "any p (binomial reduce to rank 0 + binomial broadcast)",
                  reduce_broadcast,
                  nullptr,
                  binomial_cost});
  defs.push_back({c,
                  "double_binary_tree",
                  {},
                  "(A+1+2(k-1))(2a + n/k (2b+g)), k segments of n/2 per tree, A = deepest "
                  "arrival round of NCCL's tree (<= 2 log2 p); exact when the segment divides n/2",
                  kCostExactWhenSegmentDivides,
                  "any p (tree 1 mirrors tree 0 for even p, shifts it for odd p)",
                  dbt_program,
                  nullptr,
                  dbt_cost});
}

}  // namespace collkit
