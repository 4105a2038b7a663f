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
//
// This file: the default plans, the spec's preparation, and each variant's
// program, scratch and closed form by collective; the algorithms are in
// nccl_ring.cc, nccl_tree.cc, nccl_sharded.cc, nccl_chain.cc and
// nccl_pat.cc (the layout: algorithms/nccl_common.h).
#include <algorithm>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/fold.h"
#include "algorithms/nccl_common.h"
#include "algorithms/nccl_pat.h"
#include "algorithms/nccl_variant.h"
#include "algorithms/registry.h"
#include "algorithms/tree_pipeline.h"
#include "core/error.h"

namespace collkit {
namespace nccl {
namespace {

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

// ---- programs and scratch by variant ----------------------------------------

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

// ---- closed forms ------------------------------------------------------------
//
// Default plans (one channel) reproduce the classic algorithms exactly:
// nccl:ring is the ring (all_reduce, all_gather, reduce_scatter) or the
// pipelined chain (broadcast, reduce); nccl:p2p is one step of concurrent
// transfers. Steps and bytes are exact for any plan (counted per rank);
// the tree and nvls times are NCCL-style estimates (pipelined rounds).

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

// ---- registration ----------------------------------------------------------

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
}  // namespace nccl

void add_nccl(std::vector<AlgorithmDef>& defs) {
  using nccl::nccl_def;
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
