#include "sim/nccl.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/registry.h"
#include "core/error.h"
#include "sim/rccl.h"

namespace collkit {
namespace {

// NCCL's cost model is table-driven by release (sim/nccl_versions.h); what
// is here is the arithmetic of src/graph/tuning.cc and src/enqueue.cc that
// every supported release shares, with the release's figures and rules
// read from ctx.tuning. Indices: algorithms in NCCL's order, protocols LL,
// LL128, Simple, hardware NVLink, PCI, network.
constexpr int kTreeA = 0, kRingA = 1, kCollnetDirectA = 2, kCollnetChainA = 3, kNvlsA = 4,
              kNvlsTreeA = 5, kPatA = 6;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;
// Threads per channel (src/include/device.h): NCCL_LL_MAX_NTHREADS,
// NCCL_LL128_MAX_NTHREADS, NCCL_SIMPLE_MAX_NTHREADS (256 on a ring graph of
// at most PCI_BW = 12 GB/s), NCCL_MAX_NTHREADS for CollNet and NVLS; PAT's
// entry is never set (0).
constexpr int kLlThreads = 512, kLl128Threads = 640, kSimpleThreads = 512, kMaxThreads = 640;
constexpr double kPciBw = 12.0;
// Bytes per thread before another channel is used (tuning.cc
// threadThresholds: NCCL_LL/LL128/SIMPLE_THREAD_THRESHOLD, ring LL x ranks,
// CollNet 512).
constexpr int kThreadThreshold[3] = {8, 8, 64};
constexpr int kCollnetThreadThreshold = 512;
// NCCL's network post overhead per ring step across nodes on an Intel host
// (getNetOverhead), x3 for Simple.
constexpr double kNetOverhead = 1.0;
// The all-reduce ring's Simple latency grows by this once a rank's chunk of
// a channel is 64 bytes or more across nodes (the "plateau", sm80 and later).
constexpr double kRingPlateau = 1.4;
// PAT's latency (tuning.cc): 8 us + log2(nodes) x the network hop / 3.5 +
// 2.8 us per rank.
constexpr double kPatBase = 8.0, kPatPerRank = 2.8, kPatLogDivisor = 3.5;
// CollNet Direct on Hopper: 0.85 of the bandwidth (tuning.cc).
constexpr double kCollnetHopperFactor = 0.85;
// NCCL_MAX_NVLS_ARITY, NCCL_MAX_DIRECT_ARITY + 1.
constexpr int kMaxNvlsArity = 32, kMaxDirectLocalRanks = 8;
// NCCL's search speeds inside a node, GB/s (src/graph/search.cc,
// sm90SpeedArrayIntra and sm100SpeedArrayIntra; the sm100 list's 45 and 18
// of later releases lie outside what the NVLS raise below reaches on the
// shipped machines): the NVLS graph's network side is raised through them to
// twice its NVLink side.
constexpr double kSm90SpeedsIntra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                       15.0, 12.0, 11.0, 6.0,  3.0};
constexpr double kSm100SpeedsIntra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0};
// NVLSTree's mid-size correction on Blackwell has a 24th entry (256 MiB up)
// from 2.29.2 (tuning.cc, treeCorrectionFactor).
constexpr double kNcclTreeCorrection24[3] = {1.0, 1.0, .9};
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

// floor(log2(x)), -1 for 0 (NCCL's log2Down).
int log2_down(std::int64_t x) {
  if (x <= 0) return -1;
  int l = 0;
  while (x >>= 1) ++l;
  return l;
}

std::int64_t div_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Every variant nccl_choose weighs: NCCL's algorithms in NCCL's order (the
// first of equal estimates wins), then collkit's p2p.
constexpr NcclVariant kVariants[] = {
    NcclVariant::tree,          NcclVariant::ring, NcclVariant::collnet_direct,
    NcclVariant::collnet_chain, NcclVariant::nvls, NcclVariant::nvls_tree,
    NcclVariant::pat,           NcclVariant::p2p};

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

// RCCL (sim/rccl.h): the entry of its tuning table for `a` (tree 0, ring
// 1) and protocol `p`, as ncclTopoTuneModel computes it on AMD
// (ROCm/rccl src/graph/tuning.cc, the HIP branches).
std::optional<NcclModelEntry> rccl_entry(const NcclContext& ctx, Collective c, int a, int p) {
  const RcclTuning& t = rccl_gfx942();
  const int n = ctx.ranks;
  const int nodes = ctx.nodes;
  const bool ar = c == Collective::all_reduce;
  const bool gs = c == Collective::all_gather || c == Collective::reduce_scatter;
  const bool rooted = c == Collective::broadcast || c == Collective::reduce;
  if (!ar && !gs && !rooted) return std::nullopt;
  if (a != 1 && !ar) return std::nullopt;  // the tree is all_reduce only
  // Tree Simple is skipped on one gfx94x node (every rank on it).
  if (a == 0 && p == 2 && nodes == 1) return std::nullopt;
  // busBw: the graph's channels x per-channel bw, which RCCL's machine
  // models set to the GPU's total link bandwidth over the channels, times
  // the tuning model's ratio (rows: <= 2 nodes, more).
  const double graph_bw =
      a == 1 ? ctx.ring_channels * ctx.ring_bw : ctx.tree_channels * ctx.tree_bw;
  double bus = graph_bw * t.bw_ratio[nodes <= 2 ? 0 : 1][a][p];
  if (a == 1 && p == 0 && rooted && nodes == 1) bus *= t.ring_ll_rooted_one_node;
  const int nsteps = ar ? 2 * (n - 1) : gs ? n - 1 : n;
  const double alg = bus * (a == 1 ? static_cast<double>(n) / nsteps : 0.5);
  if (!(alg > 0)) return std::nullopt;
  // Latency: base + hops; across nodes the ring pays RCCL's 2 (nodes)
  // network steps of an all_reduce and an AMD host's post overhead a step.
  const int hw = nodes == 1 ? 0 : 2;
  double intra = t.hw_lat[0][a][p];
  // A plugin's latency replaces RCCL's network hop (NCCL adds it instead),
  // and is added once more for Simple.
  const double inter =
      (ctx.net_latency > 0 ? ctx.net_latency : t.hw_lat[2][a][p]) + (p == 2 ? ctx.net_latency : 0);
  double lat = t.base_lat[a][p];
  if (a == 1) {
    if (rooted) {
      lat += ctx.ring_same_channels ? t.hw_lat[hw][1][p] : nsteps * t.hw_lat[hw][p == 2 ? 0 : 1][p];
    } else {
      if (nodes > 1) intra = std::max(intra, t.net_overhead_us * (p == 2 ? 3 : 1));
      const int inter_steps = nodes == 1 ? 0 : ar ? 2 * nodes : nodes - 1;
      lat += (nsteps - inter_steps) * intra + inter_steps * inter;
    }
  } else {
    int lg = 0;
    for (int x = nodes; x >= 2; x /= 2) ++lg;
    const int per_node = n / nodes;  // ranks a node: whole by construction
    lat += 2 * ((per_node - 1) * intra + lg * inter);
  }
  return NcclModelEntry{lat, alg};
}

bool nvls_supported(DataType t, RedOp op) {
  if (t == DataType::int8 || t == DataType::uint8) return false;
  if (op == RedOp::sum) return true;
  if (op == RedOp::min || op == RedOp::max) return t != DataType::float32 && t != DataType::float64;
  return false;
}

}  // namespace

bool is_nccl_algorithm(const std::string& name) {
  return name == "nccl" || name.rfind("nccl:", 0) == 0 || is_rccl_algorithm(name);
}

bool is_rccl_algorithm(const std::string& name) {
  return name == "rccl" || name.rfind("rccl:", 0) == 0;
}

void check_library(const NcclContext& ctx, const std::string& algorithm) {
  if (is_rccl_algorithm(algorithm) && !ctx.rccl)
    throw UsageError(algorithm + ": RCCL runs on AMD GPUs, and this topology's GPU is " +
                     to_string(ctx.gpu) + " (nccl.gpu), whose library is NCCL: use " + "nccl" +
                     algorithm.substr(4));
}

std::optional<NcclVariant> nccl_variant(const std::string& name) {
  std::optional<NcclVariant> variant;
  if (!pinned_variant(name, variant)) {
    std::string valid(kNcclAuto);
    for (NcclVariant v : kNcclVariants) valid += ", " + std::string(to_string(v));
    throw UsageError("unknown variant '" + name.substr(name.find(':') + 1) + "' of algorithm '" +
                     name.substr(0, name.find(':')) + "'; valid: " + valid);
  }
  return variant;
}

bool nccl_applies(const NcclContext& ctx, Collective c, const std::string& algorithm, DataType type,
                  RedOp op) {
  if (!is_nccl_algorithm(algorithm)) return false;
  if (is_rccl_algorithm(algorithm) && !ctx.rccl) return false;
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

NcclContext nccl_context(const Topology& topology, int ranks, std::optional<NcclVersion> version) {
  NcclContext ctx;
  ctx.version = version.value_or(topology.nccl.version.value_or(kDefaultNcclVersion));
  ctx.tuning = &nccl_tuning(ctx.version);
  ctx.ranks = ranks;
  ctx.search = search_channels(topology, ranks);
  ctx.nodes = ctx.search.nodes;
  ctx.ranks_per_node = std::max(1, ctx.search.ranks_per_node);
  ctx.runtime_channels = ctx.search.runtime_channels;
  ctx.ring_same_channels = ctx.nodes == 1;
  const NcclGraphInfo& g = topology.nccl;
  // NCCL's graphs: declared in the file, else what the search found.
  ctx.ring_channels =
      g.ring_channels > 0 && ctx.nodes == 1 ? g.ring_channels : ctx.search.graph_channels;
  ctx.ring_bw = (g.ring_bw > 0 && ctx.nodes == 1 ? g.ring_bw : ctx.search.channel_bw) / 1e9;
  ctx.tree_channels = g.tree_channels > 0 && ctx.nodes == 1 ? g.tree_channels : ctx.ring_channels;
  ctx.tree_bw = (g.tree_bw > 0 && ctx.nodes == 1 ? g.tree_bw / 1e9 : ctx.ring_bw);
  // A switch joins the devices of a node when the route between two of them
  // takes more than one link.
  if (ranks > 1 && ctx.ranks_per_node > 1) {
    std::vector<LinkId> r;
    topology.route(0, 1, r);
    ctx.nvswitch = r.size() >= 2;
  }
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
  // NCCL's NVLS search finds at most NCCL_MAX_NVLS_ARITY heads (search.cc).
  ctx.nvls_heads = std::min(ctx.nvls_heads, kMaxNvlsArity);
  if (ctx.nvls_heads > 0 && ctx.nodes > 1) {
    // Across nodes NCCL's NVLS search starts at the fastest network speed
    // the GPU-NIC path holds and finds every head there; it cannot raise it
    // (src/graph/search.cc, ncclTopoCompute).
    ctx.nvls_bw = ctx.nvls_bw_inter = ctx.search.channel_bw / 1e9;
  } else if (ctx.nvls_heads > 0) {
    // One node: the search's second pass raises the graph's network side
    // through the speeds while it is below twice the NVLink side.
    ctx.nvls_bw_inter = ctx.nvls_bw;
    const bool sm100 = g.gpu == NcclGpu::b200 || g.gpu == NcclGpu::gb200;
    const double* speeds = sm100 ? std::begin(kSm100SpeedsIntra) : std::begin(kSm90SpeedsIntra);
    const double* end = sm100 ? std::end(kSm100SpeedsIntra) : std::end(kSm90SpeedsIntra);
    for (const double* it = end; it != speeds;) {
      --it;
      if (*it > ctx.nvls_bw_inter + 1e-9 && ctx.nvls_bw_inter < 2 * ctx.nvls_bw - 1e-9)
        ctx.nvls_bw_inter = *it;
    }
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
  ctx.gpu = g.gpu;
  ctx.rccl = is_amd(g.gpu);
  if (ctx.rccl) {
    // RCCL's machine models set each graph channel's bandwidth to the GPU's
    // total link bandwidth over the channels (src/graph/rome_models.cc:
    // bwIntra = bwInter = totalBw / nChannels; NCCL's totalBw is the GPU's
    // NVLink-class links, xGMI on AMD, whatever the NICs): the sum of the
    // GPU's links to the other devices of its node.
    double total = 0;
    if (ctx.ranks_per_node > 1) {
      std::vector<LinkId> seen, r;
      for (int peer = 1; peer < ctx.ranks_per_node && peer < ranks; ++peer) {
        topology.route(0, peer, r);
        if (!r.empty() && std::find(seen.begin(), seen.end(), r.front()) == seen.end()) {
          seen.push_back(r.front());
          total += topology.link(r.front()).bandwidth / 1e9;
        }
      }
    }
    if (total > 0) {
      ctx.ring_bw = total / ctx.ring_channels;
      ctx.tree_bw = total / ctx.tree_channels;
    }
    ctx.nvls_heads = 0;
    ctx.collnet_heads = 0;
  }
  ctx.arch = g.gpu == NcclGpu::a100 ? 0 : g.gpu == NcclGpu::b200 || g.gpu == NcclGpu::gb200 ? 2 : 1;
  ctx.x86_host = g.gpu != NcclGpu::gb200;
  ctx.net_latency = g.net_latency_us;
  // NVLS channels: 16 on sm90; on sm100 the release's count inside one
  // NVLink domain or across, and from 2.30.3 across domains by the NICs'
  // speed (ncclNvlsTreeSm100Tuning: 32 on 2 domains with NICs of 48 GB/s
  // or more, else 24 at 48 GB/s and up; 32 below).
  if (ctx.arch == 2) {
    const NcclTuning& t = *ctx.tuning;
    ctx.nvls_channels = ctx.nodes > 1 ? t.nvls_channels_sm100_multi : t.nvls_channels_sm100_one;
    if (t.nvls_sm100_by_nic && ctx.nodes > 1) {
      const double nic = ctx.search.channel_bw / 1e9;
      if (ctx.nodes == 2 && nic >= 48.0)
        ctx.nvls_channels = 32;
      else if (nic >= 96.0)
        ctx.nvls_channels = ctx.ranks_per_node <= 8 ? 24 : 32;
      else if (nic >= 48.0)
        ctx.nvls_channels = 24;
    }
  }
  return ctx;
}

namespace {

// One call as NCCL's model sees it (tuning.cc's locals).
struct ModelCall {
  const NcclContext& ctx;
  const NcclTuning& t;
  Collective c;
  int a = 0;  // algorithm index
  int p = 0;  // protocol index
  int n = 0, nodes = 0;
  double ppn = 0;
  int local = 0;  // NCCL's nRanks / nNodes (integer)
  bool ar = false, gs = false, rooted = false;
  bool nvls = false, collnet = false;
};

// Whether NCCL weighs algorithm c.a with protocol c.p for the call at all.
bool model_applies(const ModelCall& m, DataType type, RedOp op) {
  const NcclContext& ctx = m.ctx;
  const NcclTuning& t = m.t;
  const Collective c = m.c;
  const int a = m.a, p = m.p, n = m.n, nodes = m.nodes, local = m.local;
  const bool ar = m.ar, gs = m.gs, rooted = m.rooted, nvls = m.nvls, collnet = m.collnet;
  // Which algorithms NCCL weighs for the collective (tuning.cc's loop):
  // broadcast and reduce the ring; all_gather and reduce_scatter the ring,
  // NVLS (2.19+) and PAT (2.23+) (CollNet Direct's needs a plugin with
  // those collectives: not modelled); all_reduce all but PAT.
  if (rooted && a != kRingA) return false;
  if (gs && a != kRingA && !(a == kNvlsA && t.nvls_gather_scatter) && !(a == kPatA && t.pat_bw > 0))
    return false;
  if (ar && a == kPatA) return false;
  // Protocols: NVLS, NVLSTree, CollNet and PAT are Simple only; LL128 only
  // where the GPUs of a node are NVLink peers.
  if (a != kRingA && a != kTreeA && p != kSimple) return false;
  if (p == kLL128 && !ctx.nvlink) return false;
  // What the machine and the call allow (tuning.cc's enables, enqueue.cc's
  // filters).
  if (nvls) {
    if (ctx.nvls_heads == 0) return false;
    if (c == Collective::all_gather ? !t.nvls_gather_any_type && !nvls_supported(type, RedOp::sum)
                                    : !nvls_supported(type, op))
      return false;
    // NVLSTree needs several nodes, NVLS across nodes needs CollNet, NVLS
    // all_gather / reduce_scatter one node of at most 32 GPUs.
    if (a == kNvlsTreeA && nodes == 1) return false;
    if (a == kNvlsA && nodes > 1 && ctx.collnet_heads == 0) return false;
    if (gs && (nodes > 1 || n > kMaxNvlsArity)) return false;
    if (t.nvls == NcclNvlsModel::v2_28 && ctx.nvls_heads < 2) return false;
  }
  if (collnet) {
    // SHARP across nodes, all_reduce only; CollNet Direct on NVSwitch
    // systems (those with an NVLS switch here) of at most 8 GPUs a node.
    if (!ar || ctx.collnet_heads == 0 || nodes == 1) return false;
    if (a == kCollnetDirectA && (!ctx.nvswitch || local > kMaxDirectLocalRanks)) return false;
    if (a == kCollnetChainA && t.collnet_chain_max_8 && local > kMaxDirectLocalRanks) return false;
  }
  if (a == kPatA) {
    // One GPU per node (ncclPatEnable); no scaled reduce-scatter (avg).
    if (nodes != n) return false;
    if (c == Collective::reduce_scatter && op == RedOp::avg) return false;
  }
  return true;
}

// NCCL's algorithm bandwidth for the call, GB/s (ncclTopoTuneModel).
double model_bandwidth(const ModelCall& m) {
  const NcclContext& ctx = m.ctx;
  const NcclTuning& t = m.t;
  const Collective c = m.c;
  const int a = m.a, p = m.p, n = m.n, nodes = m.nodes;
  const double ppn = m.ppn;
  const bool ar = m.ar, gs = m.gs, nvls = m.nvls, collnet = m.collnet;
  // Bandwidth (ncclTopoTuneModel): the graph's channels x per-channel bw,
  // refined per algorithm and protocol, converted to algorithm bw.
  int channels = 0;
  double intra = 0, inter = 0;
  if (a == kRingA) {
    channels = ctx.ring_channels;
    intra = inter = ctx.ring_bw;
  } else if (a == kTreeA || a == kPatA) {
    channels = ctx.tree_channels;
    intra = inter = ctx.tree_bw;
  } else if (nvls) {
    channels = ctx.nvls_heads;
    intra = ctx.nvls_bw;
    inter = ctx.nvls_bw_inter;
  } else {
    channels = ctx.collnet_heads;
    intra = inter = ctx.collnet_bw;
  }
  const int gpu = ctx.arch;
  const int ni = nodes == 1 ? 0 : nodes == 2 ? 1 : 2;
  double bw = nodes <= 2 || collnet ? intra : inter;
  if (nvls && t.nvls == NcclNvlsModel::v2_28) {
    double intra_bw = intra * t.nvls_efficiency[gpu] * (channels - 1) / channels;
    intra_bw *= ar ? 2.0 : (ppn - 1) / ppn;
    const double inter_bw = inter * (nodes <= 2 && a == kNvlsTreeA ? 2 : 1);
    bw = std::min(intra_bw, inter_bw);
    if (a == kNvlsTreeA) bw = std::min(bw, t.nvls_tree_per_ch[gpu][ni]);
  } else if (nvls && t.nvls != NcclNvlsModel::v2_18) {
    if (a == kNvlsTreeA)
      bw = std::min(intra, nodes <= 2 ? inter : inter / 2);
    else if (gs && t.nvls == NcclNvlsModel::v2_27)
      bw = std::min(intra * (ppn - 1) / ppn, inter * 0.9);
    else
      bw = std::min(intra, inter);
  }
  double bus = channels * bw;
  const double ll_max = nodes == 1 ? t.ll_max_bw_one_node[gpu] : t.ll_max_bw_intel[ni];
  if (a == kRingA && p == kLL) {
    const double share =
        t.ring_ll_half ? 0.5 : (nodes > 1 || ar || c == Collective::reduce ? 0.25 : 1.0 / 3.0);
    bus = std::min(ll_max, bus * share);
  }
  if (a == kRingA && p == kLL128)
    bus = std::min(bus * (ppn < 2 ? t.ring_ll128_one_gpu_per_node : 0.92),
                   channels * t.ring_ll128_per_ch[gpu][ni]);
  if (a == kTreeA) {
    bus = std::min(bus * 0.92, channels * t.tree_per_ch[gpu][ni]);
    if (p == kLL) bus = std::min(bus / 3.8, ll_max);
    if (p == kLL128)
      bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                     channels * t.tree_ll128_per_ch[gpu][ni]);
  }
  if (a == kPatA) bus *= t.pat_bw;
  if (a == kCollnetDirectA) {
    // Direct wants a NIC per GPU: (1 + GPUs per NIC) / 2 less bw otherwise.
    double factor = ppn / channels;
    factor -= (factor - 1) / 2;
    bus /= factor;
    if (ctx.arch >= 1) bus *= kCollnetHopperFactor;
  }
  // Bus to algorithm bandwidth: not for all_gather / reduce_scatter other
  // than the ring (2.23+; before, NVLS's was converted too).
  double alg = bus;
  if (!gs || a == kRingA || (a == kNvlsA && t.nvls_gather_scatter_ratio)) {
    const int nsteps = ar ? 2 * (n - 1) : gs ? n - 1 : n;
    double ratio = 0.5;
    if (a == kRingA || (nvls && t.nvls == NcclNvlsModel::v2_28))
      ratio = static_cast<double>(n) / nsteps;
    else if (nvls && t.nvls == NcclNvlsModel::v2_18)
      ratio = a == kNvlsA ? t.nvls_ratio : 0.70 * nodes / (2.0 * (nodes - 1));
    else if (nvls)
      ratio = 5.0 / 6.0;
    alg = bus * ratio;
  }
  return alg;
}

// NCCL's latency for the call, us.
double model_latency(const ModelCall& m) {
  const NcclContext& ctx = m.ctx;
  const NcclTuning& t = m.t;
  const int a = m.a, p = m.p, n = m.n, nodes = m.nodes, local = m.local;
  const double ppn = m.ppn;
  const bool ar = m.ar, gs = m.gs, rooted = m.rooted;
  const int intra_hw = ctx.nvlink ? kHwNvlink : kHwPci;
  double intra_lat = t.hw_lat[intra_hw][a][p];
  // At one GPU per node (2.23+) every algorithm pays the tree's network hop.
  // The network plugin's latency (graphs' latencyInter) adds to it, twice
  // for Simple (NCCL's "flush extra latency").
  const double inter_lat =
      (ppn == 1 && t.one_gpu_per_node_tree_latency ? t.hw_lat[kHwNet][kTreeA][p]
                                                   : t.hw_lat[kHwNet][a][p]) +
      ctx.net_latency * (p == kSimple ? 2 : 1);
  double lat = t.base_lat[a][p];
  if (a == kRingA) {
    const int nsteps = ar ? 2 * (n - 1) : gs ? n - 1 : n;
    const int hw = nodes == 1 ? intra_hw : kHwNet;
    if (rooted) {
      // A pipeline along the ring: one hop where every channel takes the
      // same path, else a hop per rank (Simple at the tree's hop).
      if (ctx.ring_same_channels) {
        lat += t.hw_lat[hw][kRingA][p];
      } else {
        lat += nsteps * (p == kSimple ? t.hw_lat[hw][kTreeA][p] : t.hw_lat[hw][kRingA][p]);
      }
    } else {
      // Across nodes every step pays the host's network post overhead.
      if (nodes > 1) intra_lat = std::max(intra_lat, kNetOverhead * (p == kSimple ? 3 : 1));
      const int inter_steps = nodes == 1                     ? 0
                              : !ar                          ? nodes - 1
                              : t.ring_inter_steps_minus_one ? 2 * (nodes - 1)
                                                             : 2 * nodes;
      lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
    }
  } else if (a == kTreeA) {
    lat += 2 * ((local - 1) * intra_lat + log2i(nodes) * inter_lat);
  } else if (a == kCollnetDirectA) {
    lat += 2 * (std::min(1, local - 1) * intra_lat + (local - 1) * t.collnet_arity_lat) + inter_lat;
  } else if (a == kCollnetChainA) {
    lat += 2 * (local - 1) * intra_lat + inter_lat;
  } else if (a == kNvlsA) {
    if (t.nvls == NcclNvlsModel::v2_18)
      lat += nodes > 1 ? t.hw_lat[kHwNet][kNvlsA][p] : 0;
    else
      lat = intra_lat + (nodes > 1 ? inter_lat : 0);
  } else if (a == kNvlsTreeA) {
    if (t.nvls == NcclNvlsModel::v2_18)
      lat += 2 * (nodes - 1) * t.hw_lat[kHwNet][kNvlsTreeA][p];
    else
      lat += intra_lat + 2 * log2i(nodes) * inter_lat;
  } else if (a == kPatA) {
    lat = kPatBase + log2i(nodes) * (inter_lat / kPatLogDivisor) + n * kPatPerRank;
  }
  return lat;
}

}  // namespace

std::optional<NcclModelEntry> nccl_model_entry(const NcclContext& ctx, Collective c,
                                               NcclVariant variant, Protocol protocol,
                                               DataType type, RedOp op) {
  const int p = protocol_index(protocol);
  if (p < 0 || variant == NcclVariant::p2p || ctx.ranks <= 1) return std::nullopt;
  // RCCL: the ring and the tree with its own table (LL128 off on gfx942,
  // no NVLS, no PAT; CollNet not modelled on AMD).
  if (ctx.rccl) {
    if (variant != NcclVariant::ring && variant != NcclVariant::tree) return std::nullopt;
    return rccl_entry(ctx, c, variant == NcclVariant::ring ? 1 : 0, p);
  }
  const int n = ctx.ranks;
  const int nodes = ctx.nodes;
  const double ppn = static_cast<double>(n) / nodes;
  const int local = n / nodes;  // NCCL's nRanks / nNodes (integer)
  const bool ar = c == Collective::all_reduce;
  const bool gs = c == Collective::all_gather || c == Collective::reduce_scatter;
  const bool rooted = c == Collective::broadcast || c == Collective::reduce;
  if (!ar && !gs && !rooted) return std::nullopt;
  const NcclTuning& t = *ctx.tuning;
  const int a = nccl_algorithm_index(variant);
  const ModelCall m{ctx,
                    t,
                    c,
                    a,
                    p,
                    n,
                    nodes,
                    ppn,
                    local,
                    ar,
                    gs,
                    rooted,
                    a == kNvlsA || a == kNvlsTreeA,
                    a == kCollnetDirectA || a == kCollnetChainA};
  if (!model_applies(m, type, op)) return std::nullopt;
  const double alg = model_bandwidth(m);
  if (!(alg > 0)) return std::nullopt;
  return NcclModelEntry{model_latency(m), alg};
}

std::optional<double> nccl_model_time(const NcclContext& ctx, Collective c, NcclVariant variant,
                                      Protocol protocol, std::int64_t bytes_in, DataType type,
                                      RedOp op) {
  const int p = protocol_index(protocol);
  if (p < 0) return std::nullopt;
  const int n = ctx.ranks;
  if (n == 1) {
    if (variant == NcclVariant::ring && protocol == Protocol::simple) return 0.0;
    return std::nullopt;
  }
  const double bytes = static_cast<double>(bytes_in);
  if (variant == NcclVariant::p2p) {
    if (c != Collective::all_to_all && c != Collective::scatter && c != Collective::gather)
      return std::nullopt;
    // Not NCCL's model (it has none for p2p): LL for small messages, else Simple.
    const double per_peer = bytes / n;
    const bool ll = per_peer <= kP2pLlThreshold;
    if ((protocol == Protocol::ll) != ll || protocol == Protocol::ll128) return std::nullopt;
    return 0.0;
  }
  const std::optional<NcclModelEntry> entry = nccl_model_entry(ctx, c, variant, protocol, type, op);
  if (!entry) return std::nullopt;
  const NcclTuning& t = *ctx.tuning;
  const int a = nccl_algorithm_index(variant);
  double lat = entry->latency_us;
  double alg = entry->bandwidth_gbps;
  if (ctx.rccl) {
    // RCCL's per-size corrections (ncclTopoGetAlgoTime, HIP): the tree's
    // always, the ring's across nodes; log2i is the shift loop (0 for 0),
    // the last entry applies beyond.
    const RcclTuning& r = rccl_gfx942();
    const int log_size = std::min(26, log2i(static_cast<double>(bytes_in >> 6)));
    if (variant == NcclVariant::tree) alg *= r.tree_correction[p][log_size];
    if (variant == NcclVariant::ring && ctx.nodes > 1) alg *= r.ring_correction[p][log_size];
    if (!(alg > 0)) return std::nullopt;
    return lat + bytes / (1000.0 * alg);
  }
  // Per call (ncclTopoGetAlgoTime): the tree's mid-size correction, the
  // ring's plateau across nodes.
  if (a == kTreeA && c == Collective::all_reduce) {
    int log_size = log2_down(bytes_in >> 6);
    if (log_size < 0 && t.tree_correction_below_64) log_size = 0;
    if (log_size >= 0 && log_size < 23) alg *= kNcclTreeCorrection[p][log_size];
  }
  if (a == kNvlsTreeA && c == Collective::all_reduce && t.nvls_tree_correction_sm100 &&
      ctx.arch == 2 && ctx.x86_host) {
    const int log_size = log2_down(bytes_in >> 6);
    if (log_size >= 0 && log_size < 23) alg *= kNcclTreeCorrection[p][log_size];
    if (log_size == 23) alg *= kNcclTreeCorrection24[p];
  }
  if (a == kRingA && p == kSimple && ctx.nodes > 1 && c == Collective::all_reduce &&
      bytes_in / (static_cast<std::int64_t>(ctx.runtime_channels) * n) >= 64)
    lat *= kRingPlateau;
  return lat + bytes / (1000.0 * alg);
}

std::vector<NcclChoice> nccl_candidates(const NcclContext& ctx, Collective c, std::int64_t bytes,
                                        DataType type, RedOp op,
                                        std::optional<NcclVariant> variant) {
  std::vector<NcclChoice> out;
  for (NcclVariant v : kVariants) {
    if (variant && v != *variant) continue;
    for (Protocol pr : kAllProtocols) {
      const std::optional<double> t = nccl_model_time(ctx, c, v, pr, bytes, type, op);
      if (!t) continue;
      out.push_back({v, pr, nccl_channels(ctx, c, bytes, v, pr), *t});
    }
  }
  return out;
}

NcclChoice nccl_choose(const NcclContext& ctx, Collective c, std::int64_t bytes, DataType type,
                       RedOp op, std::optional<NcclVariant> variant) {
  const std::vector<NcclChoice> all = nccl_candidates(ctx, c, bytes, type, op, variant);
  if (all.empty()) {
    const std::string name = variant ? std::string(to_string(*variant)) : std::string();
    const std::string lib = ctx.rccl ? "rccl" : "nccl";
    throw UsageError(lib + (variant ? ":" + name : std::string()) + ": " +
                     (ctx.rccl ? "RCCL" : "NCCL") + " has no " +
                     (variant ? name : std::string("algorithm")) + " for " +
                     std::string(to_string(c)) + " with " + std::string(to_string(type)) + " " +
                     std::string(to_string(op)) + " on this topology (" +
                     std::to_string(ctx.ranks) + " ranks, " + std::to_string(ctx.nodes) +
                     " node(s)" + (ctx.nvls_heads == 0 ? ", no NVLS switch" : "") + ")");
  }
  // The first of the fastest, in NCCL's order (topoGetAlgoInfo).
  const NcclChoice* best = &all.front();
  for (const NcclChoice& x : all)
    if (x.model_us < best->model_us) best = &x;
  return *best;
}

bool nccl_has_schedule(Collective c, NcclVariant variant) {
  try {
    const AlgorithmDef& def = find_algorithm(c, "nccl");
    const std::string name(to_string(variant));
    return std::find(def.variants.begin(), def.variants.end(), name) != def.variants.end();
  } catch (const UsageError&) {
    return false;
  }
}

NcclChoice nccl_runnable_choice(const NcclContext& ctx, Collective c, std::int64_t bytes,
                                DataType type, RedOp op, std::optional<NcclVariant> variant,
                                std::optional<NcclChoice>* instead) {
  const NcclChoice nccl = nccl_choose(ctx, c, bytes, type, op, variant);
  if (instead) instead->reset();
  if (nccl_has_schedule(c, nccl.variant)) return nccl;
  const std::vector<NcclChoice> all = nccl_candidates(ctx, c, bytes, type, op, variant);
  const NcclChoice* best = nullptr;
  for (const NcclChoice& x : all)
    if (nccl_has_schedule(c, x.variant) && (!best || x.model_us < best->model_us)) best = &x;
  if (!best)
    throw UsageError("nccl: NCCL runs " + describe(nccl) + " for " + std::string(to_string(c)) +
                     ", which collkit has no schedule for, and nothing else applies");
  if (instead) *instead = nccl;
  return *best;
}

std::string describe_run(const NcclChoice& ran, const std::optional<NcclChoice>& instead) {
  if (!instead) return describe(ran);
  return describe(ran) + " (NCCL: " + describe(*instead) + ", no collkit schedule)";
}

namespace {

// enqueue.cc's planner (scheduleCollTasksToPlan, 2.22+) for a call alone in
// its plan: it cuts the per-rank data into cells and gives each channel
// its share of the traffic, at least the least traffic a channel gets;
// `nc` is what topoGetAlgoInfo allowed, `kind_max` the channels of the
// call's kind (the comm's, or NVLS's).
int planned_channels(const NcclTuning& t, Collective c, int n, std::int64_t bytes, bool ll, int nc,
                     int kind_max) {
  const bool gs = c == Collective::all_gather || c == Collective::reduce_scatter;
  const std::int64_t per_rank = gs ? bytes / n : bytes;  // count x element size
  if (per_rank <= 0) return nc;
  std::int64_t per_byte = c == Collective::all_reduce ? 2 : gs ? n : 1;
  if (ll && t.ll_traffic_x4) per_byte *= 4;
  const std::int64_t min_traffic = t.min_traffic_per_channel;
  const std::int64_t traffic = per_rank * per_byte;
  const std::int64_t sharing = std::min(nc, kind_max);
  std::int64_t per_channel = 0;
  if (t.planner_cells_16)
    per_channel = std::max(min_traffic, traffic / sharing);
  else if (t.traffic_per_channel_rounded)
    per_channel = div_up(std::max(min_traffic, traffic) / sharing, 16) * 16;
  else
    per_channel = std::max(min_traffic, std::max(min_traffic, traffic) / sharing);
  const std::int64_t cell =
      t.planner_cells_16 ? 16 : div_up(div_up(min_traffic, per_byte), 16) * 16;
  const std::int64_t cells = div_up(per_rank, cell);
  const std::int64_t cell_traffic = cell * per_byte;
  std::int64_t per_ch_cells = std::min(cells, div_up(per_channel, cell_traffic));
  std::int64_t lo = kind_max == 1        ? cells
                    : t.planner_cells_16 ? std::min(cells, per_channel / cell_traffic)
                                         : std::min(cells, div_up(per_channel, cell_traffic));
  std::int64_t mid = per_ch_cells > 0 ? (cells - lo) / per_ch_cells : 0;
  std::int64_t hi = per_ch_cells > 0 ? (cells - lo) % per_ch_cells : 0;
  const std::int64_t used = (lo != 0 ? 1 : 0) + mid + (hi != 0 ? 1 : 0);
  if (kind_max < used) {  // more than the kind's channels: the last takes the rest
    mid = kind_max - 2;
    per_ch_cells = (cells - lo) / (mid + 1);
    hi = per_ch_cells + (cells - lo) % (mid + 1);
  }
  if (hi == 0 && mid != 0) {
    hi = per_ch_cells;
    mid -= 1;
  }
  if (lo == 0) {  // the first channel got nothing: the next one is the first
    if (mid == 0) {
      lo = hi;
      hi = 0;
    } else {
      lo = per_ch_cells;
      mid -= 1;
    }
  }
  return static_cast<int>((lo != 0 ? 1 : 0) + mid + (hi != 0 ? 1 : 0));
}

}  // namespace

int nccl_channels(const NcclContext& ctx, Collective c, std::int64_t bytes, NcclVariant variant,
                  Protocol protocol) {
  // topoGetAlgoInfo (enqueue.cc): CollNet Direct fewer channels while each
  // gets less than its threshold per thread of every head (halving the
  // threshold past each switch point); NVLS its own channel count; ring,
  // tree and CollNet Chain one channel less while the call is smaller than
  // channels x threads x threshold.
  const int pi = std::max(0, protocol_index(protocol));
  int nc = ctx.runtime_channels;
  if (variant == NcclVariant::p2p || ctx.ranks == 1) return nc;
  if (ctx.rccl) {
    // RCCL (getChannnelThreadInfo, HIP): one channel less while the call is
    // smaller than channels x 256 threads x the threshold; no planner.
    const RcclTuning& r = rccl_gfx942();
    std::int64_t threshold = r.thread_threshold[pi];
    if (variant == NcclVariant::ring && pi == 0) threshold *= ctx.ranks;
    while (bytes < static_cast<std::int64_t>(nc) * r.threads * threshold && nc >= 2) --nc;
    return nc;
  }
  const NcclTuning& t = *ctx.tuning;
  const int a = nccl_algorithm_index(variant);
  const bool nvls = a == kNvlsA || a == kNvlsTreeA;
  const bool collnet = a == kCollnetDirectA || a == kCollnetChainA;
  int threads = kMaxThreads;
  if (a == kRingA || a == kTreeA)
    threads = pi == kLL                                                  ? kLlThreads
              : pi == kLL128                                             ? kLl128Threads
              : a == kRingA && ctx.ring_channels * ctx.ring_bw <= kPciBw ? 256
                                                                         : kSimpleThreads;
  if (a == kPatA) threads = 0;
  int threshold = collnet ? kCollnetThreadThreshold : kThreadThreshold[pi];
  if (a == kRingA && pi == kLL) threshold *= ctx.ranks;
  const double b = static_cast<double>(bytes);
  if (a == kCollnetDirectA) {
    const double heads = ctx.collnet_heads;
    bool smaller = true;
    for (int sw = 16; sw >= 1 && smaller; sw /= 2) {
      while ((smaller = b < static_cast<double>(nc) * threads * heads * threshold) && nc > sw) {
        if (nc == sw + sw / 2) threshold /= 2;
        --nc;
      }
    }
  } else if (nvls) {
    nc = ctx.nvls_channels;
    if (t.nvls_multinode_ring_channels && ctx.nodes > 1 && a == kNvlsA)
      nc = std::min(ctx.nvls_channels, ctx.runtime_channels);
  } else {
    while (b < static_cast<double>(nc) * threads * threshold && nc >= 2) --nc;
  }
  // The planner (2.22+) spreads the call over channels by its traffic;
  // CollNet calls (NVLS across nodes among them) keep their count.
  const bool collnet_kind = collnet || (a == kNvlsA && ctx.nodes > 1);
  if (t.min_traffic_per_channel > 0 && !collnet_kind)
    nc = planned_channels(t, c, ctx.ranks, bytes, pi == kLL, nc,
                          nvls ? ctx.nvls_channels : ctx.runtime_channels);
  return std::max(1, nc);
}

double nccl_rank_rate(const NcclContext& ctx, const NcclChoice& choice) {
  if (ctx.rccl || ctx.tuning == nullptr || ctx.nodes < 1) return 0;
  const bool ring = choice.variant == NcclVariant::ring;
  const bool tree = choice.variant == NcclVariant::tree;
  const int p = protocol_index(choice.protocol);
  if ((!ring && !tree) || p < 0 || (ring && p == kSimple)) return 0;
  const NcclTuning& t = *ctx.tuning;
  const int gpu = ctx.arch;
  const int ni = ctx.nodes == 1 ? 0 : ctx.nodes == 2 ? 1 : 2;
  const double ll_max = ctx.nodes == 1 ? t.ll_max_bw_one_node[gpu] : t.ll_max_bw_intel[ni];
  // The graph's channels run as runtime_channels at run time; the call
  // uses choice.channels of them.
  const int graph = ring ? ctx.ring_channels : ctx.tree_channels;
  const double share =
      static_cast<double>(std::max(choice.channels, 1)) / std::max(ctx.runtime_channels, graph);
  double gbps = 0;
  if (ring) {
    gbps = p == kLL ? ll_max : share * graph * t.ring_ll128_per_ch[gpu][ni];
  } else {
    const double tree_bw = share * graph * t.tree_per_ch[gpu][ni];
    if (p == kSimple) gbps = tree_bw;
    if (p == kLL) gbps = std::min(tree_bw / 3.8, ll_max);
    if (p == kLL128)
      gbps = std::min(tree_bw * (ctx.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                      share * graph * t.tree_ll128_per_ch[gpu][ni]);
  }
  return gbps > 0 ? gbps * 1e9 : 0;
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
  // The tree's latencies in NCCL's table beyond the ring's, which the
  // topology's figures are (docs/NCCL.md, "Latencies by algorithm").
  const int p = protocol_index(choice.protocol);
  if (choice.variant == NcclVariant::tree && !ctx.rccl && ctx.tuning && p >= 0) {
    const NcclTuning& t = *ctx.tuning;
    const int intra = ctx.nvlink ? kHwNvlink : kHwPci;
    base.hop_extra_latency[0] = 1e-6 * (t.hw_lat[intra][kTreeA][p] - t.hw_lat[intra][kRingA][p]);
    base.hop_extra_latency[1] = 1e-6 * (t.hw_lat[kHwNet][kTreeA][p] - t.hw_lat[kHwNet][kRingA][p]);
    base.base_extra_latency = 1e-6 * (t.base_lat[kTreeA][p] - t.base_lat[kRingA][p]);
  }
  const double chunk = topology.protocol(choice.protocol).chunk_bytes;
  if (base.segment == 0 && chunk > 0)
    base.segment = std::max<std::int64_t>(1, static_cast<std::int64_t>(chunk) / base.elem_size);
  base.rank_rate = nccl_rank_rate(ctx, choice);
  return base;
}

std::string describe(const NcclChoice& choice) {
  return std::string(to_string(choice.variant)) + "/" + std::string(to_string(choice.protocol)) +
         "/" + std::to_string(choice.channels) + "ch";
}

}  // namespace collkit
