// Broadcast: linear, binomial tree, hypercube, pipelined chain, pipelined
// binary tree, NCCL's double binary tree, and the van de Geijn compositions
// (binomial scatter + ring or recursive-doubling all_gather). Also the
// pipelined-tree engine of tree_pipeline.h.
//
// The root reads `input` and copies it to its `output` with a local op; the
// other ranks receive into `output` and forward from there. n == 0 moves
// nothing (empty programs). Trees are built in virtual-rank space
// v = (rank - root) mod p.
#include <algorithm>
#include <bit>
#include <limits>
#include <utility>

#include "algorithms/blocks.h"
#include "algorithms/costs.h"
#include "algorithms/registry.h"
#include "algorithms/tree_pipeline.h"
#include "core/nccl_tree.h"

namespace collkit {

// ---------------------------------------------------------------------------
// Pipelined-tree engine (tree_pipeline.h).

std::int64_t pipeline_rounds(int max_arrival, int pace, std::int64_t segments) {
  if (segments == 0 || max_arrival < 0) return 0;
  return max_arrival + 1 + pace * (segments - 1);
}

namespace {

Region segment_of(Region base, const Pipeline& pl, std::int64_t i) {
  const std::int64_t first = i * pl.seg;
  return {base.buf, base.offset + first, std::min(pl.seg, pl.n - first)};
}

// Index i of the segment handled at tree round u by an op whose segment 0 is
// in round `start`, or -1.
std::int64_t segment_at(std::int64_t u, std::int64_t start, const Pipeline& pl) {
  const std::int64_t d = u - start;
  if (d < 0 || d % pl.pace != 0 || d / pl.pace >= pl.segments()) return -1;
  return d / pl.pace;
}

void ops_at(const Pipeline& pl, std::int64_t t, std::vector<Op>& out) {
  std::int64_t u = t - pl.first_round;
  if (u < 0 || u >= pl.rounds) return;
  if (pl.reduce) u = pl.rounds - 1 - u;
  const PipeNode& nd = pl.node;
  if (nd.parent >= 0) {
    const std::int64_t i = segment_at(u, nd.arrival, pl);
    if (i >= 0) {
      out.push_back(pl.reduce ? send_op(nd.parent, segment_of(pl.send_from, pl, i))
                              : recv_op(nd.parent, segment_of(pl.recv_at, pl, i)));
      out.back().lanes = pl.lanes;
    }
  }
  for (int j = 0; j < 2; ++j) {
    if (nd.child[j] < 0) continue;
    const std::int64_t i = segment_at(u, nd.arrival + 1 + j, pl);
    if (i < 0) continue;
    out.push_back(pl.reduce ? recv_op(nd.child[j], segment_of(pl.recv_at, pl, i), Combine::reduce)
                            : send_op(nd.child[j], segment_of(pl.send_from, pl, i)));
    out.back().lanes = pl.lanes;
  }
}

// The rounds of one pipeline in which this rank communicates, as arithmetic
// progressions {start + 2i : i < count} (pace 1 splits into two of them).
struct Progression {
  std::int64_t start;
  std::int64_t count;
};

void add_progressions(const Pipeline& pl, std::int64_t start, std::vector<Progression>& out) {
  const std::int64_t k = pl.segments();
  if (k == 0) return;
  // Tree rounds start + pace*i, mapped to global rounds (a reduction runs
  // them backwards: the same set, first element mirrored from the last).
  std::int64_t s = pl.reduce ? pl.rounds - 1 - (start + pl.pace * (k - 1)) : start;
  s += pl.first_round;
  if (pl.pace == 2) {
    out.push_back({s, k});
  } else {
    out.push_back({s, (k + 1) / 2});
    out.push_back({s + 1, k / 2});
  }
}

}  // namespace

Generator<Step> run_pipelines(std::vector<Pipeline> pipes, std::vector<Op> prologue) {
  if (!prologue.empty()) {
    Step s;
    s.ops = std::move(prologue);
    co_yield std::move(s);
  }
  std::int64_t begin = 0, end = 0;
  bool any = false;
  for (const Pipeline& pl : pipes) {
    if (pl.rounds == 0 || pl.segments() == 0) continue;
    begin = any ? std::min(begin, pl.first_round) : pl.first_round;
    end = any ? std::max(end, pl.first_round + pl.rounds) : pl.first_round + pl.rounds;
    any = true;
  }
  if (!any) co_return;
  for (std::int64_t t = begin; t < end; ++t) {
    Step s;
    for (const Pipeline& pl : pipes) ops_at(pl, t, s.ops);
    if (!s.ops.empty()) co_yield std::move(s);
  }
}

PipeStats pipeline_stats(std::span<const Pipeline> pipes) {
  PipeStats st;
  std::vector<Progression> prog;
  prog.reserve(6 * pipes.size());
  for (const Pipeline& pl : pipes) {
    const PipeNode& nd = pl.node;
    if (pl.rounds == 0 || pl.segments() == 0) continue;
    if (nd.parent >= 0) {
      add_progressions(pl, nd.arrival, prog);
      if (pl.reduce) st.elems_sent += pl.n;
    }
    for (int j = 0; j < 2; ++j) {
      if (nd.child[j] < 0) continue;
      add_progressions(pl, nd.arrival + 1 + j, prog);
      if (!pl.reduce) st.elems_sent += pl.n;
    }
  }
  // Union size: per parity class, merge the index intervals.
  std::sort(prog.begin(), prog.end(),
            [](const Progression& a, const Progression& b) { return a.start < b.start; });
  for (int parity = 0; parity < 2; ++parity) {
    std::int64_t covered_to = std::numeric_limits<std::int64_t>::min();
    for (const Progression& g : prog) {
      if (g.count <= 0 || ((g.start % 2) + 2) % 2 != parity) continue;
      const std::int64_t lo = std::max((g.start - parity) / 2, covered_to);
      const std::int64_t hi = (g.start - parity) / 2 + g.count;
      if (hi > lo) st.comm_steps += hi - lo;
      covered_to = std::max(covered_to, hi);
    }
  }
  return st;
}

namespace {

int lowbit(int v) { return v & -v; }

int btree_root_child(int m) { return nccl_btree_children(m, 0)[0]; }

int btree_parent(int m, int r) { return nccl_btree_parent(m, r); }

std::array<int, 2> btree_children(int m, int r) { return nccl_btree_children(m, r); }

// Deepest arrival in the subtree of r (arrival arr). A subtree that fits
// entirely below m is complete: every level adds 2 through second children.
int btree_max_arrival_below(int m, int r, int arr) {
  const int b = lowbit(r);
  if (r + b - 1 < m) return arr + 2 * floor_log2(b);
  const auto ch = btree_children(m, r);
  int best = arr;
  if (ch[0] >= 0) best = std::max(best, btree_max_arrival_below(m, ch[0], arr + 1));
  if (ch[1] >= 0) best = std::max(best, btree_max_arrival_below(m, ch[1], arr + 2));
  return best;
}

}  // namespace

PipeNode nccl_btree_node(int m, int r) {
  PipeNode nd;
  nd.child = btree_children(m, r);
  if (r == 0) return nd;
  nd.parent = btree_parent(m, r);
  // Walk up to the root adding 1 for a first child, 2 for a second child.
  int arrival = -1;
  for (int x = r; x != 0;) {
    const int up = btree_parent(m, x);
    arrival += btree_children(m, up)[0] == x ? 1 : 2;
    x = up;
  }
  nd.arrival = arrival;
  return nd;
}

int nccl_btree_max_arrival(int m) {
  if (m <= 1) return -1;
  return btree_max_arrival_below(m, btree_root_child(m), 0);
}

PipeNode nccl_dbt_node(int m, int tree, int r) {
  if (tree == 0) return nccl_btree_node(m, r);
  const bool mirror = m % 2 == 0;
  const auto to_tree = [&](int x) { return mirror ? m - 1 - x : (x - 1 + m) % m; };
  const auto from_tree = [&](int x) { return x < 0 ? -1 : mirror ? m - 1 - x : (x + 1) % m; };
  PipeNode nd = nccl_btree_node(m, to_tree(r));
  nd.parent = from_tree(nd.parent);
  nd.child = {from_tree(nd.child[0]), from_tree(nd.child[1])};
  return nd;
}

std::vector<PipeNode> nccl_dbt_nodes(int m, int tree) {
  std::vector<PipeNode> nodes(m);
  for (int r = 0; r < m; ++r) {
    nodes[r].child = btree_children(m, r);
    nodes[r].parent = r == 0 ? -1 : btree_parent(m, r);
  }
  // Arrivals top-down from the root.
  std::vector<int> pending{0};
  while (!pending.empty()) {
    const int r = pending.back();
    pending.pop_back();
    for (int j = 0; j < 2; ++j) {
      const int c = nodes[r].child[j];
      if (c < 0) continue;
      nodes[c].arrival = nodes[r].arrival + 1 + j;
      pending.push_back(c);
    }
  }
  if (tree == 0) return nodes;
  const bool mirror = m % 2 == 0;
  const auto from_tree = [&](int x) { return x < 0 ? -1 : mirror ? m - 1 - x : (x + 1) % m; };
  std::vector<PipeNode> out(m);
  for (int x = 0; x < m; ++x) {
    PipeNode nd = nodes[x];
    nd.parent = from_tree(nd.parent);
    nd.child = {from_tree(nd.child[0]), from_tree(nd.child[1])};
    out[from_tree(x)] = nd;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Broadcast algorithms.

namespace {

int vrank_of(const ScheduleSpec& spec, int rank) {
  return (rank - spec.root + spec.ranks) % spec.ranks;
}
int real_of(const ScheduleSpec& spec, int v) { return (v + spec.root) % spec.ranks; }

Op root_copy(std::int64_t n) { return copy_op({Buf::input, 0, n}, {Buf::output, 0, n}); }

double message(const ScheduleSpec& spec, const CostParams& m, std::int64_t elems) {
  return m.alpha + static_cast<double>(elems) * spec.elem_size * m.beta;
}

CostEstimate make(double time, std::int64_t steps, std::int64_t elems, const ScheduleSpec& spec) {
  return {time, steps, static_cast<double>(elems) * spec.elem_size};
}

// Linear: the root sends the whole vector to each rank in turn.
Generator<Step> linear_program(ScheduleSpec spec, int rank) {
  const std::int64_t n = spec.count;
  if (n == 0) co_return;
  const Region out{Buf::output, 0, n};
  if (rank != spec.root) {
    Step s;
    s.ops.push_back(recv_op(spec.root, out));
    co_yield std::move(s);
    co_return;
  }
  Step first;
  first.ops.push_back(root_copy(n));
  co_yield std::move(first);
  for (int i = 1; i < spec.ranks; ++i) {
    Step s;
    s.ops.push_back(send_op(real_of(spec, i), {Buf::input, 0, n}));
    co_yield std::move(s);
  }
}

CostEstimate linear_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  return make((p - 1) * message(spec, m, spec.count), p - 1, (p - 1) * spec.count, spec);
}

// Binomial tree (MPICH numbering): v > 0 receives from v - lowbit(v) and then
// serves its children v + lowbit(v)/2, v + lowbit(v)/4, ... largest subtree
// first.
Generator<Step> binomial_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  if (n == 0) co_return;
  const int v = vrank_of(spec, rank);
  const Region out{Buf::output, 0, n};
  Region src = out;
  int top = 1 << ceil_log2(p);
  if (v == 0) {
    Step s;
    s.ops.push_back(root_copy(n));
    co_yield std::move(s);
    src = {Buf::input, 0, n};
  } else {
    top = lowbit(v);
    Step s;
    s.ops.push_back(recv_op(real_of(spec, v - top), out));
    co_yield std::move(s);
  }
  for (int mask = top >> 1; mask >= 1; mask >>= 1) {
    if (v + mask >= p) continue;
    Step s;
    s.ops.push_back(send_op(real_of(spec, v + mask), src));
    co_yield std::move(s);
  }
}

// Hypercube in dimension order: in step d (d = 0, 1, ..., ceil(log2 p) - 1)
// every rank v < 2^d that holds the data sends along dimension d to v ^ 2^d
// (= v + 2^d), skipped when that partner does not exist (p not a power of
// two). A binomial tree too, but grown lowest dimension first: v receives in
// step floor(log2 v) from v - 2^floor(log2 v).
Generator<Step> hypercube_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  if (n == 0) co_return;
  const int v = vrank_of(spec, rank);
  const Region out{Buf::output, 0, n};
  Region src = out;
  int first_dim = 0;
  if (v == 0) {
    Step s;
    s.ops.push_back(root_copy(n));
    co_yield std::move(s);
    src = {Buf::input, 0, n};
  } else {
    const int d = floor_log2(v);
    Step s;
    s.ops.push_back(recv_op(real_of(spec, v ^ (1 << d)), out));
    co_yield std::move(s);
    first_dim = d + 1;
  }
  for (int d = first_dim; (1 << d) < p; ++d) {
    const int partner = v ^ (1 << d);
    if (partner >= p) continue;
    Step s;
    s.ops.push_back(send_op(real_of(spec, partner), src));
    co_yield std::move(s);
  }
}

// Binomial and hypercube: every rank finishes within ceil(log2 p) messages of
// the full vector (exact for any p); the root sends ceil(log2 p) times.
CostEstimate tree_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  const int L = ceil_log2(p);
  return make(L * message(spec, m, spec.count), L, L * spec.count, spec);
}

// --- Pipelined trees -------------------------------------------------------

// Forward pipeline of one tree for a broadcast: the root sends from input,
// the others receive into output at `offset` and forward from there.
Pipeline broadcast_pipe(PipeNode nd, int pace, std::int64_t offset, std::int64_t n,
                        std::int64_t seg, std::int64_t rounds) {
  Pipeline pl;
  pl.node = nd;
  pl.pace = pace;
  pl.n = n;
  pl.seg = seg;
  pl.rounds = rounds;
  pl.recv_at = {Buf::output, offset, n};
  pl.send_from = {nd.parent < 0 ? Buf::input : Buf::output, offset, n};
  return pl;
}

// Chain v -> v + 1: node v receives segment 0 in round v - 1.
std::int64_t chain_seg(const ScheduleSpec& spec) {
  return segment_elems(spec, spec.ranks - 1, false);
}

Pipeline chain_pipe(const ScheduleSpec& spec, int rank) {
  const int p = spec.ranks;
  const int v = vrank_of(spec, rank);
  PipeNode nd;
  nd.parent = v > 0 ? real_of(spec, v - 1) : -1;
  nd.child[0] = v + 1 < p ? real_of(spec, v + 1) : -1;
  nd.arrival = v - 1;
  const std::int64_t seg = chain_seg(spec);
  Pipeline pl = broadcast_pipe(nd, 1, 0, spec.count, seg, 0);
  pl.rounds = pipeline_rounds(p - 2, 1, pl.segments());
  return pl;
}

// A broadcast made of one pipeline: the root copies its input to its output,
// then the pipeline runs. `pipe` is only asked for when there is data.
template <typename PipeOf>
Generator<Step> one_pipeline_program(const ScheduleSpec& spec, int rank, PipeOf pipe) {
  if (spec.count == 0) return run_pipelines({}, {});
  std::vector<Op> prologue;
  if (rank == spec.root) prologue.push_back(root_copy(spec.count));
  return run_pipelines({pipe(spec, rank)}, std::move(prologue));
}

Generator<Step> chain_program(ScheduleSpec spec, int rank) {
  return one_pipeline_program(spec, rank, chain_pipe);
}

// Heap-ordered binary tree: v has children 2v+1 (served first) and 2v+2.
// Node v (1-based v+1 in binary) arrives in round depth + (right turns) - 1.
int heap_arrival(int v) {
  const int d = floor_log2(v + 1);
  return d + (std::popcount(static_cast<unsigned>(v + 1)) - 1) - 1;
}

int heap_max_arrival(int p) {
  if (p <= 1) return -1;
  const int D = floor_log2(p);               // depth of node p-1
  int best = D >= 1 ? 2 * (D - 1) - 1 : -1;  // rightmost node of the last full level
  // Deepest level: nodes 2^D-1 .. p-1, i.e. heap numbers [2^D, p]; most
  // right turns = most set bits in that range.
  int pop = std::popcount(static_cast<unsigned>(p));
  for (int b = 0; b < D; ++b) {
    if (!(p & (1 << b))) continue;
    const unsigned cand = (static_cast<unsigned>(p) & ~(1u << b)) | ((1u << b) - 1);
    pop = std::max(pop, std::popcount(cand));
  }
  return std::max(best, D + pop - 2);
}

int heap_pace(int p) { return p >= 3 ? 2 : 1; }

std::int64_t binary_tree_seg(const ScheduleSpec& spec) {
  return segment_elems(spec, std::max(1, (heap_max_arrival(spec.ranks) + 2) / 2), false);
}

Pipeline binary_tree_pipe(const ScheduleSpec& spec, int rank) {
  const int p = spec.ranks;
  const int v = vrank_of(spec, rank);
  PipeNode nd;
  nd.parent = v > 0 ? real_of(spec, (v - 1) / 2) : -1;
  nd.child[0] = 2 * v + 1 < p ? real_of(spec, 2 * v + 1) : -1;
  nd.child[1] = 2 * v + 2 < p ? real_of(spec, 2 * v + 2) : -1;
  nd.arrival = heap_arrival(v);
  Pipeline pl = broadcast_pipe(nd, heap_pace(p), 0, spec.count, binary_tree_seg(spec), 0);
  pl.rounds = pipeline_rounds(heap_max_arrival(p), pl.pace, pl.segments());
  return pl;
}

Generator<Step> binary_tree_program(ScheduleSpec spec, int rank) {
  return one_pipeline_program(spec, rank, binary_tree_pipe);
}

// Double binary tree. NCCL's trees have no root to broadcast from, so the
// broadcast root feeds both: the other m = p - 1 ranks (w = v - 1) form NCCL's
// double binary tree, and the root sends the first half of the vector
// (ceil(n/2) elements) to the root of tree 0 and the second half to the root
// of tree 1, each pipelined in segments. The root thus sends n in all, every
// other rank at most n (it is inner in one tree only). The two trees run at
// once: a step may hold one send and one receive per tree (and the root two
// sends), which is the double binary tree's point.
std::int64_t dbt_half(std::int64_t n, int tree) { return tree == 0 ? (n + 1) / 2 : n / 2; }

// Deepest arrival in the extended trees (root on top adds one round).
int dbt_max_arrival(int p) { return p <= 1 ? -1 : nccl_btree_max_arrival(p - 1) + 1; }
// NCCL's trees over fewer than 4 ranks are chains: one round per segment.
int dbt_pace(int p) { return p - 1 >= 4 ? 2 : 1; }

std::int64_t dbt_seg(const ScheduleSpec& spec) {
  ScheduleSpec half = spec;
  half.count = dbt_half(spec.count, 0);
  return segment_elems(half, std::max(1, (dbt_max_arrival(spec.ranks) + 2) / 2), false);
}

// `nodes`, when given, holds nccl_dbt_nodes(p - 1, tree) for both trees.
// What every rank's pipelines share; `nodes`, when set, holds
// nccl_dbt_nodes(p - 1, tree) for both trees (costs visit every rank).
struct DbtShape {
  std::int64_t seg = 1;
  int max_arrival = -1;
  const std::vector<PipeNode>* nodes = nullptr;
};

DbtShape dbt_shape(const ScheduleSpec& spec) {
  return {dbt_seg(spec), dbt_max_arrival(spec.ranks)};
}

// The rank's nodes in both trees, as real ranks.
std::array<PipeNode, 2> dbt_nodes(const ScheduleSpec& spec, int rank, const DbtShape& shape) {
  const int m = spec.ranks - 1;
  const int v = vrank_of(spec, rank);
  std::array<PipeNode, 2> out;
  for (int tree = 0; tree < 2; ++tree) {
    // The root of NCCL tree `tree` over m ranks: 0 for tree 0; m-1 (mirror)
    // or 1 (shift) for tree 1.
    const int top = tree == 0 ? 0 : (m % 2 == 0 ? m - 1 : 1 % m);
    PipeNode& nd = out[tree];
    if (v == 0) {
      nd.child[0] = real_of(spec, 1 + top);
      continue;
    }
    nd = shape.nodes ? shape.nodes[tree][v - 1] : nccl_dbt_node(m, tree, v - 1);
    const auto real_w = [&](int w) { return w < 0 ? -1 : real_of(spec, w + 1); };
    nd.parent = nd.parent < 0 ? real_of(spec, 0) : real_w(nd.parent);
    nd.child = {real_w(nd.child[0]), real_w(nd.child[1])};
    nd.arrival += 1;
  }
  return out;
}

std::vector<Pipeline> dbt_pipes_of(const ScheduleSpec& spec, const DbtShape& shape,
                                   const std::array<PipeNode, 2>& nodes) {
  const int p = spec.ranks;
  std::vector<Pipeline> pipes;
  for (int tree = 0; tree < 2; ++tree) {
    const std::int64_t n = dbt_half(spec.count, tree);
    if (n == 0) continue;
    Pipeline pl = broadcast_pipe(nodes[tree], dbt_pace(p), tree == 0 ? 0 : dbt_half(spec.count, 0),
                                 n, shape.seg, 0);
    pl.rounds = pipeline_rounds(shape.max_arrival, pl.pace, pl.segments());
    // With p = 2 both trees are the same link: tree 1 follows tree 0.
    if (p == 2 && tree == 1 && !pipes.empty()) pl.first_round = pipes.front().rounds;
    pipes.push_back(pl);
  }
  return pipes;
}

std::vector<Pipeline> dbt_pipes(const ScheduleSpec& spec, int rank, const DbtShape& shape) {
  return dbt_pipes_of(spec, shape, dbt_nodes(spec, rank, shape));
}

Generator<Step> dbt_program(ScheduleSpec spec, int rank) {
  if (spec.count == 0 || spec.ranks == 1) {
    std::vector<Op> prologue;
    if (spec.count > 0) prologue.push_back(root_copy(spec.count));
    return run_pipelines({}, std::move(prologue));
  }
  std::vector<Op> prologue;
  if (rank == spec.root) prologue.push_back(root_copy(spec.count));
  return run_pipelines(dbt_pipes(spec, rank, dbt_shape(spec)), std::move(prologue));
}

// Time: rounds x one segment message. Exact when every segment has the same
// size (n divisible by the segment); otherwise the last, shorter segment is
// charged as a full one (an upper bound).
CostEstimate chain_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  const Pipeline pl = chain_pipe(spec, spec.root);
  // Inner ranks receive segment i+1 while forwarding segment i: k + 1 steps.
  const std::int64_t k = pl.segments();
  return make(pl.rounds * message(spec, m, pl.seg), p == 2 ? k : k + 1, spec.count, spec);
}

CostEstimate binary_tree_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  const Pipeline pl = binary_tree_pipe(spec, spec.root);
  // Two children: the root sends twice per segment (2k steps); a non-root
  // inner rank (there is one from p = 5) also receives first (2k + 1).
  const std::int64_t k = pl.segments();
  const std::int64_t steps = p == 2 ? k : p <= 4 ? 2 * k : 2 * k + 1;
  return make(pl.rounds * message(spec, m, pl.seg), steps, (p == 2 ? 1 : 2) * spec.count, spec);
}

CostEstimate dbt_cost(const ScheduleSpec& spec, const CostParams& m) {
  if (spec.count == 0 || spec.ranks == 1) return {};
  const std::vector<PipeNode> nodes[2] = {nccl_dbt_nodes(spec.ranks - 1, 0),
                                          nccl_dbt_nodes(spec.ranks - 1, 1)};
  DbtShape shape = dbt_shape(spec);
  shape.nodes = nodes;
  const PipeStats st = max_pipeline_stats(
      spec.ranks, [&](int r) { return dbt_nodes(spec, r, shape); },
      [&](const std::array<PipeNode, 2>& nd) { return dbt_pipes_of(spec, shape, nd); });
  std::int64_t rounds = 0;
  for (const Pipeline& pl : dbt_pipes(spec, spec.root, shape))
    rounds = std::max(rounds, pl.first_round + pl.rounds);
  return make(rounds * message(spec, m, shape.seg), st.comm_steps, st.elems_sent, spec);
}

// --- Scatter + all_gather (van de Geijn) ----------------------------------

BlockLayout bcast_layout(const ScheduleSpec& spec, int rank) {
  return BlockLayout{spec.ranks,  rank, spec.root, Partition{spec.count, spec.ranks},
                     Buf::output, 0};
}

// Binomial scatter of the blocks from the root, then `all_gather` of them.
Generator<Step> scatter_allgather_program(ScheduleSpec spec, int rank,
                                          Generator<Step> (*all_gather)(BlockLayout)) {
  if (spec.count == 0) co_return;
  if (rank == spec.root) {
    Step s;
    s.ops.push_back(root_copy(spec.count));
    co_yield std::move(s);
  }
  for (Step& s : binomial_scatter(bcast_layout(spec, rank))) co_yield std::move(s);
  for (Step& s : all_gather(bcast_layout(spec, rank))) co_yield std::move(s);
}

Generator<Step> scatter_ring_program(const ScheduleSpec& spec, int rank) {
  return scatter_allgather_program(spec, rank, ring_all_gather);
}

Generator<Step> scatter_rd_program(const ScheduleSpec& spec, int rank) {
  return scatter_allgather_program(spec, rank, recursive_doubling_all_gather);
}

// Binomial scatter of blocks.h: virtual rank v's steps and elements sent.
std::pair<std::int64_t, std::int64_t> scatter_stats(const Partition& part, int v) {
  const int p = part.p;
  const int top = v == 0 ? 1 << ceil_log2(p) : lowbit(v);
  std::int64_t steps = v == 0 ? 0 : 1, sent = 0;
  for (int mask = top >> 1; mask >= 1; mask >>= 1) {
    const int c = v + mask;
    if (c >= p) continue;
    ++steps;
    sent += part.span(c, std::min(mask, p - c));
  }
  return {steps, sent};
}

CostEstimate scatter_ring_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  const Partition part{spec.count, p};
  std::int64_t steps = 0, sent = 0;
  for (int v = 0; v < p; ++v) {
    const auto [sc_steps, sc_sent] = scatter_stats(part, v);
    // The ring sends every block but the one of virtual rank v + 1.
    steps = std::max(steps, sc_steps + p - 1);
    sent = std::max(sent, sc_sent + spec.count - part.size((v + 1) % p));
  }
  const double elem = spec.elem_size;
  // Exact for p a power of two and n divisible by p.
  const double time = (ceil_log2(p) + p - 1) * m.alpha +
                      2.0 * static_cast<double>(spec.count - part.size(0)) * elem * m.beta;
  return {time, steps, static_cast<double>(sent) * elem};
}

// recursive_doubling_all_gather (all_gather.cc) folds for p not a power of
// two: with q = 2^floor(log2 p), r = p - q, virtual ranks 2i+1 (i < r) hand
// their block to 2i and get the whole vector back; members run log2 q
// exchanges of doubling ranges.
CostEstimate scatter_rd_cost(const ScheduleSpec& spec, const CostParams& m) {
  const int p = spec.ranks;
  if (spec.count == 0 || p == 1) return {};
  const Partition part{spec.count, p};
  const int q = 1 << floor_log2(p);
  const int r = p - q;
  // Member i's range: blocks of virtual ranks 2i, 2i+1 (i < r) or i + r.
  const auto member_off = [&](int i) { return part.offset(i < r ? 2 * i : i + r); };
  const auto range = [&](int i, int k) { return member_off(i + k) - member_off(i); };
  std::int64_t steps = 0, sent = 0;
  for (int v = 0; v < p; ++v) {
    const auto [sc_steps, sc_sent] = scatter_stats(part, v);
    std::int64_t ag_steps = 0, ag_sent = 0;
    if (v < 2 * r && v % 2 == 1) {
      ag_steps = 2;
      ag_sent = part.size(v);
    } else {
      const int i = v < 2 * r ? v / 2 : v - r;
      for (int mk = 1; mk < q; mk <<= 1) {
        ++ag_steps;
        ag_sent += range(i & ~(mk - 1), mk);
      }
      if (i < r) {
        ag_steps += 2;
        ag_sent += spec.count;
      }
    }
    steps = std::max(steps, sc_steps + ag_steps);
    sent = std::max(sent, sc_sent + ag_sent);
  }
  const double elem = spec.elem_size;
  // Exact for p a power of two and n divisible by p: 2 log2 p a + 2(p-1)/p n b.
  // Otherwise an approximation along the fold: scatter, sitters hand over
  // their block, members gather all but member 0's two blocks, and the whole
  // vector goes back to the sitters.
  const std::int64_t n = spec.count;
  double time = ceil_log2(p) * m.alpha + static_cast<double>(n - part.size(0)) * elem * m.beta;
  if (r == 0) {
    time += floor_log2(p) * m.alpha + static_cast<double>(n - part.size(0)) * elem * m.beta;
  } else {
    time += (floor_log2(p) + 2) * m.alpha +
            static_cast<double>(part.size(1) + n - part.span(0, 2) + n) * elem * m.beta;
  }
  return {time, steps, static_cast<double>(sent) * elem};
}

}  // namespace

void add_broadcast(std::vector<AlgorithmDef>& defs) {
  const auto c = Collective::broadcast;
  defs.push_back({c,
                  "linear",
                  {},
                  "(p-1)(a + n b)",
                  kCostExact,
                  "any p",
                  linear_program,
                  nullptr,
                  linear_cost});
  defs.push_back({c,
                  "binomial_tree",
                  {},
                  "ceil(log2 p)(a + n b)",
                  kCostExact,
                  "any p",
                  binomial_program,
                  nullptr,
                  tree_cost});
  defs.push_back({c,
                  "hypercube",
                  {},
                  "ceil(log2 p)(a + n b)",
                  kCostExact,
                  "any p (dimension order; missing partners skipped)",
                  hypercube_program,
                  nullptr,
                  tree_cost});
  defs.push_back({c,
                  "pipelined_chain",
                  {},
                  "(p+k-2)(a + n/k b), k = ceil(n/segment) (exact when segment divides n)",
                  kCostExactWhenSegmentDivides,
                  "any p",
                  chain_program,
                  nullptr,
                  chain_cost});
  defs.push_back({c,
                  "pipelined_binary_tree",
                  {},
                  "(A+1+2(k-1))(a + n/k b), A = deepest arrival round of the heap tree "
                  "(<= 2 log2 p; exact when segment divides n)",
                  kCostExactWhenSegmentDivides,
                  "any p",
                  binary_tree_program,
                  nullptr,
                  binary_tree_cost});
  defs.push_back({c,
                  "double_binary_tree",
                  {},
                  "(A+1+2(k-1))(a + n/(2k) b): root feeds NCCL's two trees over the other "
                  "p-1 ranks, each with n/2 in k segments (exact when segment divides n/2)",
                  kCostExactWhenSegmentDivides,
                  "any p (mirror for even p-1, shift for odd)",
                  dbt_program,
                  nullptr,
                  dbt_cost});
  defs.push_back({c,
                  "scatter_ring_allgather",
                  {},
                  "(ceil(log2 p)+p-1) a + 2(p-1)/p n b (exact for p a power of two, p | n)",
                  kCostExactForPowersOfTwo,
                  "any p",
                  scatter_ring_program,
                  nullptr,
                  scatter_ring_cost});
  defs.push_back({c,
                  "scatter_rd_allgather",
                  {},
                  "2 log2 p a + 2(p-1)/p n b (exact for p a power of two, p | n); other p "
                  "fold: 2 extra steps and about n b more (approximate)",
                  kCostExactForPowersOfTwo,
                  "any p (recursive doubling folds r = p - 2^floor(log2 p) ranks)",
                  scatter_rd_program,
                  nullptr,
                  scatter_rd_cost});
}

}  // namespace collkit
