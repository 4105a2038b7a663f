#include "sim/nccl.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "core/error.h"

namespace collkit {
namespace {

// NCCL 2.26's cost model constants (src/graph/tuning.cc at v2.26.2-1; the
// table in docs/NCCL.md). Index: LL, LL128, Simple.
constexpr double kRingBase[3] = {6.6, 14.0, 8.4};
constexpr double kTreeBase[3] = {6.8, 14.0, 8.4};
constexpr double kRingNvlink[3] = {0.6, 1.9, 3.4};
constexpr double kRingPci[3] = {1.0, 2.5, 5.7};
constexpr double kRingNet[3] = {2.7, 4.0, 14.0};
constexpr double kTreeNvlink[3] = {0.6, 1.25, 4.0};
constexpr double kTreePci[3] = {1.0, 1.9, 4.0};
constexpr double kTreeNet[3] = {5.0, 8.5, 14.0};
constexpr double kNvlsIntra = 25.0;
constexpr double kNvlsNet = 18.0;
constexpr double kNvlsTreeNet = 14.0;
// CollNet Direct (SHARP; tuning.cc): per NVLink hop 3.7 us (NVLink and PCI
// alike), the network 31 us, and 0.4 us per local rank of arity
// serialization; base latency 0. Bandwidth: the CollNet graph's channels x
// their bandwidth, divided by (1 + GPUs per NIC) / 2 where GPUs outnumber
// NICs, x 0.85 on Hopper, then halved to algorithm bandwidth.
constexpr double kCollnetDirectIntra = 3.7, kCollnetDirectNet = 31.0, kCollnetArity = 0.4;
constexpr double kCollnetHopperFactor = 0.85;
// CollNet Chain (tuning.cc): per NVLink hop 2.8 us, the network 30 us; the
// graph's bandwidth, halved to algorithm bandwidth.
constexpr double kCollnetChainIntra = 2.8, kCollnetChainNet = 30.0;
// CollNet Direct's per-thread work before another channel is used
// (threadThresholds[COLLNET_DIRECT][SIMPLE], tuning.cc).
constexpr int kCollnetThreadThreshold = 512;
// PAT (NCCL 2.23+, tuning.cc): latency 8 us + log2(nodes) x the tree's
// network hop / 3.5 + 2.8 us per rank, bandwidth 0.75 x the graph's.
constexpr double kPatBase = 8.0, kPatPerRank = 2.8, kPatLogDivisor = 3.5, kPatBwFactor = 0.75;
// Ring LL bandwidth cap (llMaxBw), GB/s: one node H100 / A100; more nodes
// (Intel hosts) 2 nodes / more.
constexpr double kLlMaxBwH100 = 141.0, kLlMaxBwA100 = 87.7, kLlMaxBw2 = 39.0, kLlMaxBwN = 20.4;
// Ring LL128 per-channel cap, GB/s.
constexpr double kRingLl128PerChH100 = 36.7, kRingLl128PerChA100 = 20.0;
// Tree per-channel cap on H100 for 1, 2 and more nodes, GB/s.
constexpr double kTreePerCh[3] = {38.7, 41.4, 36.0};
// Tree bandwidth correction for mid sizes, by log2(bytes / 64), 64 B .. 128 MiB
// (treeCorrectionFactor).
constexpr double kTreeCorrection[3][22] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9}};
// Channel tuning (src/enqueue.cc topoGetAlgoInfo): threads per channel and
// bytes per thread before another channel is used; 16 KiB of traffic per
// channel at least (scheduleCollTasksToPlan).
constexpr int kMaxThreads[3] = {512, 640, 512};
constexpr int kThreadThreshold[3] = {8, 8, 64};
constexpr double kMinTrafficPerChannel = 16384;
constexpr int kNvlsChannels = 16;
// Point-to-point: LL up to this many bytes per peer (NCCL_P2P_LL_THRESHOLD).
constexpr double kP2pLlThreshold = 16384;

int log2i(double x) {
  int l = 0;
  while (x >= 2) {
    x /= 2;
    ++l;
  }
  return l;
}

// Every variant nccl_choose weighs, in NCCL's order of preference on ties.
constexpr NcclVariant kVariants[] = {NcclVariant::ring,
                                     NcclVariant::tree,
                                     NcclVariant::nvls,
                                     NcclVariant::nvls_tree,
                                     NcclVariant::collnet_direct,
                                     NcclVariant::collnet_chain,
                                     NcclVariant::p2p,
                                     NcclVariant::pat};

// The first in-network switch entry on the route src -> dst other than
// `skip`; false when none.
bool in_network_entry(const Topology& topology, int src, int dst, LinkId skip, LinkId& entry,
                      double& bw) {
  std::vector<LinkId> r;
  topology.route(src, dst, r);
  for (LinkId id : r) {
    double b = 0;
    if (id != skip && topology.in_network_side(id, b) == 1) {
      entry = id;
      bw = b;
      return true;
    }
  }
  return false;
}

// The variant a nccl name pins into `variant` (nullopt: NCCL's own choice,
// "nccl", "nccl:" or "nccl:auto"); false when the name after "nccl:" is no
// variant.
bool pinned_variant(const std::string& name, std::optional<NcclVariant>& variant) {
  const std::size_t colon = name.find(':');
  const std::string v = colon == std::string::npos ? std::string() : name.substr(colon + 1);
  variant.reset();
  if (v.empty() || v == kNcclAuto) return true;
  variant = parse_nccl_variant(v);
  return variant.has_value();
}

bool nvls_supported(DataType t, RedOp op) {
  if (t == DataType::int8 || t == DataType::uint8) return false;
  if (op == RedOp::sum) return true;
  if (op == RedOp::min || op == RedOp::max) return t != DataType::float32 && t != DataType::float64;
  return false;
}

}  // namespace

bool is_nccl_algorithm(const std::string& name) {
  return name == "nccl" || name.rfind("nccl:", 0) == 0;
}

std::optional<NcclVariant> nccl_variant(const std::string& name) {
  std::optional<NcclVariant> variant;
  if (!pinned_variant(name, variant)) {
    std::string valid(kNcclAuto);
    for (NcclVariant v : kNcclVariants) valid += ", " + std::string(to_string(v));
    throw UsageError("unknown variant '" + name.substr(name.find(':') + 1) +
                     "' of algorithm 'nccl'; valid: " + valid);
  }
  return variant;
}

bool nccl_applies(const NcclContext& ctx, Collective c, const std::string& algorithm, DataType type,
                  RedOp op) {
  if (!is_nccl_algorithm(algorithm)) return false;
  std::optional<NcclVariant> variant;
  if (!pinned_variant(algorithm, variant)) return false;
  for (NcclVariant v : kVariants) {
    if (variant && *variant != v) continue;
    for (Protocol pr : kAllProtocols)
      for (std::int64_t bytes : {std::int64_t{1024}, std::int64_t{1} << 24})
        if (nccl_model_time(ctx, c, v, pr, bytes, type, op)) return true;
  }
  return false;
}

NcclContext nccl_context(const Topology& topology, int ranks) {
  NcclContext ctx;
  ctx.ranks = ranks;
  ctx.search = search_channels(topology, ranks);
  ctx.nodes = ctx.search.nodes;
  ctx.ranks_per_node = std::max(1, ctx.search.ranks_per_node);
  ctx.runtime_channels = ctx.search.runtime_channels;
  const NcclGraphInfo& g = topology.nccl;
  // NCCL's graphs: declared in the file, else what the search found.
  ctx.ring_channels =
      g.ring_channels > 0 && ctx.nodes == 1 ? g.ring_channels : ctx.search.graph_channels;
  ctx.ring_bw = (g.ring_bw > 0 && ctx.nodes == 1 ? g.ring_bw : ctx.search.channel_bw) / 1e9;
  ctx.tree_channels = g.tree_channels > 0 && ctx.nodes == 1 ? g.tree_channels : ctx.ring_channels;
  ctx.tree_bw = (g.tree_bw > 0 && ctx.nodes == 1 ? g.tree_bw / 1e9 : ctx.ring_bw);
  // NVLS needs a switch inside the node that multicasts and reduces.
  LinkId nvswitch = ~LinkId{0};
  double bw = 0;
  if (ranks > 1 && ctx.ranks_per_node > 1 &&
      in_network_entry(topology, 0, 1, nvswitch, nvswitch, bw)) {
    ctx.nvls_heads = ctx.ranks_per_node;
    ctx.nvls_bw = bw / 1e9 / ctx.ranks_per_node;
  }
  if (g.nvls_heads > 0) {
    ctx.nvls_heads = g.nvls_heads;
    ctx.nvls_bw = g.nvls_bw / 1e9;
  }
  // CollNet: a switch that reduces on the way from rank 0 to the rank of
  // equal local index on the next node, other than the node's own NVSwitch.
  // NCCL runs one CollNet channel per NIC (HPC-X: one SHARP streaming flow
  // per HCA rail).
  LinkId sharp = 0;
  if (ctx.nodes > 1 && ctx.ranks_per_node >= 1 && ranks > ctx.ranks_per_node &&
      in_network_entry(topology, 0, ctx.ranks_per_node, nvswitch, sharp, bw)) {
    ctx.collnet_heads = ctx.search.graph_channels;
    ctx.collnet_bw = std::min(ctx.search.channel_bw, bw) / 1e9;
  }
  ctx.sm80 = g.sm80;
  return ctx;
}

std::optional<double> nccl_model_time(const NcclContext& ctx, Collective c, NcclVariant variant,
                                      Protocol protocol, std::int64_t bytes_in, DataType type,
                                      RedOp op) {
  const int p = protocol_index(protocol);
  if (p < 0) return std::nullopt;
  const int n = ctx.ranks;
  const int nodes = ctx.nodes;
  const double ppn = static_cast<double>(n) / nodes;
  const double bytes = static_cast<double>(bytes_in);
  if (n == 1) {
    if (variant == NcclVariant::ring && protocol == Protocol::simple) return 0.0;
    return std::nullopt;
  }
  const bool ar = c == Collective::all_reduce;
  if (variant == NcclVariant::p2p) {
    if (c != Collective::all_to_all && c != Collective::scatter && c != Collective::gather)
      return std::nullopt;
    // Not NCCL's model (it has none for p2p): LL for small messages, else Simple.
    const double per_peer = bytes / n;
    const bool ll = per_peer <= kP2pLlThreshold;
    if ((protocol == Protocol::ll) != ll || protocol == Protocol::ll128) return std::nullopt;
    return 0.0;
  }
  if (c == Collective::all_to_all || c == Collective::scatter || c == Collective::gather ||
      c == Collective::barrier)
    return std::nullopt;
  double bus = 0, lat = 0, alg = 0;
  const double* intra_ring = ctx.nvlink ? kRingNvlink : kRingPci;
  const double* intra_tree = ctx.nvlink ? kTreeNvlink : kTreePci;
  if (variant == NcclVariant::ring) {
    const int nsteps = ar ? 2 * (n - 1)
                       : c == Collective::all_gather || c == Collective::reduce_scatter ? n - 1
                                                                                        : n;
    const int inter_steps = ar ? 2 * (nodes - 1)
                            : c == Collective::all_gather || c == Collective::reduce_scatter
                                ? nodes - 1
                                : nodes;
    bus = ctx.ring_channels * ctx.ring_bw;
    if (protocol == Protocol::ll) {
      const double cap = nodes == 1 ? (ctx.sm80 ? kLlMaxBwA100 : kLlMaxBwH100)
                                    : (nodes == 2 ? kLlMaxBw2 : kLlMaxBwN);
      bus = std::min(cap, 0.5 * bus);
    } else if (protocol == Protocol::ll128) {
      bus = std::min(0.92 * bus,
                     ctx.ring_channels * (ctx.sm80 ? kRingLl128PerChA100 : kRingLl128PerChH100));
    }
    alg = bus * n / nsteps;
    double intra = intra_ring[p];
    // Across nodes a per-step host overhead (1 us, x3 for Simple) is a floor.
    if (nodes > 1) intra = std::max(intra, protocol == Protocol::simple ? 3.0 : 1.0);
    lat = kRingBase[p] + (nsteps - inter_steps) * intra + inter_steps * kRingNet[p];
    if (ar && nodes > 1 && protocol == Protocol::simple && bytes >= n / 16.0 * 65536) lat *= 1.4;
  } else if (variant == NcclVariant::tree) {
    if (!ar) return std::nullopt;
    bus = ctx.tree_channels * ctx.tree_bw;
    const double per_ch = kTreePerCh[nodes == 1 ? 0 : nodes == 2 ? 1 : 2];
    bus = std::min(0.92 * bus, ctx.tree_channels * per_ch);
    if (protocol == Protocol::ll) bus /= 3.8;
    if (protocol == Protocol::ll128) bus *= nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
    alg = 0.5 * bus;
    const int log_size = log2i(bytes / 64);
    if (log_size < 22) alg *= kTreeCorrection[p][std::max(0, log_size)];
    lat = kTreeBase[p] + 2 * ((ppn - 1) * intra_tree[p] + log2i(nodes) * kTreeNet[p]);
  } else if (variant == NcclVariant::nvls || variant == NcclVariant::nvls_tree) {
    if (!ar || ctx.nvls_heads == 0 || protocol != Protocol::simple || !nvls_supported(type, op))
      return std::nullopt;
    // NVLS across nodes needs CollNet (the network's switches reduce); NVLS
    // tree needs several nodes.
    if (variant == NcclVariant::nvls && nodes > 1 && ctx.collnet_heads == 0) return std::nullopt;
    if (variant == NcclVariant::nvls_tree && nodes == 1) return std::nullopt;
    bus = ctx.nvls_heads * ctx.nvls_bw;
    alg = bus * 5.0 / 6.0;
    if (variant == NcclVariant::nvls) {
      lat = kNvlsIntra;
      if (nodes > 1) {
        // The NVLS graph's bandwidth is the lower of NVLink's and the NIC's.
        alg = ctx.nvls_heads * std::min(ctx.nvls_bw, ctx.collnet_bw) * 5.0 / 6.0;
        lat += kNvlsNet;
      }
    } else {
      // NVLS inside, a tree across: no faster than the tree's own bandwidth.
      alg = std::min(alg, 0.5 * std::min(0.92 * ctx.tree_channels * ctx.tree_bw,
                                         ctx.tree_channels * kTreePerCh[nodes == 2 ? 1 : 2]));
      lat = kNvlsIntra + 2 * log2i(nodes) * kNvlsTreeNet;
    }
  } else if (variant == NcclVariant::collnet_direct) {
    // SHARP across nodes, direct NVLink transfers inside (NCCL: an NVSwitch
    // system, at most 8 GPUs per node); Simple only; all_reduce (NCCL's
    // all_gather / reduce_scatter over CollNet need a plugin with those
    // collectives, not modelled). Not on one node.
    if (!ar || ctx.collnet_heads == 0 || nodes == 1 || protocol != Protocol::simple)
      return std::nullopt;
    if (ctx.nvls_heads == 0 || ppn > 8) return std::nullopt;
    bus = ctx.collnet_heads * ctx.collnet_bw;
    double factor = ppn / ctx.collnet_heads;  // GPUs per NIC
    factor -= (factor - 1) / 2;
    bus /= factor;
    if (!ctx.sm80) bus *= kCollnetHopperFactor;
    alg = 0.5 * bus;
    const int local = static_cast<int>(ppn) - 1;
    lat =
        2 * (std::min(1, local) * kCollnetDirectIntra + local * kCollnetArity) + kCollnetDirectNet;
  } else if (variant == NcclVariant::collnet_chain) {
    // SHARP across nodes, a chain through each node's GPUs to the head of
    // the channel; Simple only; all_reduce; not on one node.
    if (!ar || ctx.collnet_heads == 0 || nodes == 1 || protocol != Protocol::simple)
      return std::nullopt;
    alg = 0.5 * ctx.collnet_heads * ctx.collnet_bw;
    lat = 2 * (ppn - 1) * kCollnetChainIntra + kCollnetChainNet;
  } else if (variant == NcclVariant::pat) {
    // One GPU per node only (ncclPatEnable), Simple only; no scaled
    // reduce-scatter (avg). The tree graph's channels and bandwidth; the
    // all_gather / reduce_scatter bandwidth is not converted to algbw.
    if (c != Collective::all_gather && c != Collective::reduce_scatter) return std::nullopt;
    if (nodes != n || protocol != Protocol::simple) return std::nullopt;
    if (c == Collective::reduce_scatter && op == RedOp::avg) return std::nullopt;
    alg = kPatBwFactor * ctx.tree_channels * ctx.tree_bw;
    lat = kPatBase + log2i(nodes) * kTreeNet[p] / kPatLogDivisor + n * kPatPerRank;
  } else {
    return std::nullopt;
  }
  if (!(alg > 0)) return std::nullopt;
  return lat + bytes / (1000.0 * alg);
}

NcclChoice nccl_choose(const NcclContext& ctx, Collective c, std::int64_t bytes, DataType type,
                       RedOp op, std::optional<NcclVariant> variant) {
  NcclChoice best;
  std::optional<double> best_t;
  for (NcclVariant v : kVariants) {
    if (variant && v != *variant) continue;
    for (Protocol pr : kAllProtocols) {
      const std::optional<double> t = nccl_model_time(ctx, c, v, pr, bytes, type, op);
      if (!t) continue;
      if (!best_t || *t < *best_t) {
        best_t = t;
        best.variant = v;
        best.protocol = pr;
      }
    }
  }
  if (!best_t) {
    const std::string name = variant ? std::string(to_string(*variant)) : std::string();
    throw UsageError("nccl" + (variant ? ":" + name : std::string()) + ": NCCL has no " +
                     (variant ? name : std::string("algorithm")) + " for " +
                     std::string(to_string(c)) + " with " + std::string(to_string(type)) + " " +
                     std::string(to_string(op)) + " on this topology (" +
                     std::to_string(ctx.ranks) + " ranks, " + std::to_string(ctx.nodes) +
                     " node(s)" + (ctx.nvls_heads == 0 ? ", no NVLS switch" : "") + ")");
  }
  best.model_us = *best_t;
  best.channels = nccl_channels(ctx, c, bytes, best.variant, best.protocol);
  return best;
}

int nccl_channels(const NcclContext& ctx, Collective c, std::int64_t bytes, NcclVariant variant,
                  Protocol protocol) {
  // Channels (enqueue.cc): NVLS a fixed count; ring and tree fewer for small
  // sizes, and never more than 16 KiB of traffic per channel allows.
  const int pi = std::max(0, protocol_index(protocol));
  int nc = ctx.runtime_channels;
  if (variant == NcclVariant::nvls || variant == NcclVariant::nvls_tree) {
    nc = std::min(nc, kNvlsChannels);
  } else if (variant == NcclVariant::collnet_direct || variant == NcclVariant::collnet_chain) {
    // Fewer channels while each would get less than the threshold per
    // thread of every head (enqueue.cc's CollNet loop, without its halving
    // of the threshold past 1.5x each switch point).
    const double per_channel =
        static_cast<double>(kMaxThreads[pi]) * kCollnetThreadThreshold * ctx.collnet_heads;
    while (static_cast<double>(bytes) < nc * per_channel && nc >= 2) --nc;
  } else if (variant != NcclVariant::p2p) {
    const double threshold =
        kThreadThreshold[pi] *
        (variant == NcclVariant::ring && protocol == Protocol::ll ? ctx.ranks : 1);
    while (static_cast<double>(bytes) < nc * kMaxThreads[pi] * threshold && nc >= 2) --nc;
    double traffic = static_cast<double>(bytes) * (c == Collective::all_reduce ? 2 : 1);
    if (protocol == Protocol::ll) traffic *= 4;
    nc = std::max(1, std::min(nc, static_cast<int>(std::ceil(traffic / kMinTrafficPerChannel))));
  }
  return nc;
}

ScheduleSpec nccl_schedule_spec(ScheduleSpec base, const NcclContext& ctx, const NcclChoice& choice,
                                const Topology& topology) {
  base.algorithm = "nccl";
  base.variant = std::string(to_string(choice.variant));
  base.protocol = choice.protocol;
  ChannelPlan plan = first_channels(ctx.search.plan, choice.channels);
  // GPU endpoints send eagerly into their peers' FIFOs: a pipelined schedule
  // receives each chunk a round after it was sent, so one chunk's latency
  // overlaps the next chunk's transfer (docs/NCCL.md, "Pipelines").
  bool eager = ctx.ranks > 0;
  for (int r = 0; r < ctx.ranks; ++r) eager = eager && topology.endpoint(r).pipelined;
  if (eager) {
    plan.lag = 1;
    plan.finish(ctx.ranks);
  }
  base.plan = std::make_shared<ChannelPlan>(std::move(plan));
  base.channels = choice.channels;
  const double chunk = topology.protocol(choice.protocol).chunk_bytes;
  if (base.segment == 0 && chunk > 0)
    base.segment = std::max<std::int64_t>(1, static_cast<std::int64_t>(chunk) / base.elem_size);
  return base;
}

std::string describe(const NcclChoice& choice) {
  return std::string(to_string(choice.variant)) + "/" + std::string(to_string(choice.protocol)) +
         "/" + std::to_string(choice.channels) + "ch";
}

}  // namespace collkit
