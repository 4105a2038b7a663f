// NCCL's cost model, release by release: the constants and rules of
// src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime) and
// src/enqueue.cc (which algorithms a call weighs, how many channels it gets)
// that differ between the releases collkit supports, 2.18.1 to 2.30.x
// (core/nccl_version.h). sim/nccl.cc computes NCCL's estimates and choice
// from the table of the release a context names; docs/NCCL.md ("Versions")
// lists what changes from one release to the next, with each tag.
//
// Only the rows collkit's topologies can reach are kept: A100 (sm80), H100
// and H200 (sm90), B200 and GB200 (sm100) GPUs, Intel (or Arm) hosts across
// nodes (NCCL picks its multi-node LL bandwidth by CPU vendor), no NCCL_*
// variable set. Before 2.25.1 NCCL had no Blackwell rows and ran sm100 on
// Hopper's (its compute-capability index stopped at Hopper); the tables do
// the same.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "algorithms/nccl_variant.h"
#include "core/nccl_version.h"

namespace collkit {

// NCCL's algorithms in NCCL's own order (NCCL_ALGO_TREE = 0 ... NCCL_ALGO_PAT
// = 6): NCCL keeps the first of equal estimates, so this order breaks ties.
inline constexpr std::array<NcclVariant, 7> kNcclAlgorithmOrder = {NcclVariant::tree,
                                                                   NcclVariant::ring,
                                                                   NcclVariant::collnet_direct,
                                                                   NcclVariant::collnet_chain,
                                                                   NcclVariant::nvls,
                                                                   NcclVariant::nvls_tree,
                                                                   NcclVariant::pat};
// The index of `v` in kNcclAlgorithmOrder; -1 for p2p (no NCCL algorithm).
int nccl_algorithm_index(NcclVariant v);
// NCCL's name of the algorithm (NCCL_ALGO's spelling): "Tree", "Ring",
// "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"; "" for p2p.
std::string_view nccl_algorithm_name(NcclVariant v);

// How a release models NVLS and NVLSTree bandwidth and latency.
enum class NcclNvlsModel : std::uint8_t {
  v2_18,  // bw: the graph's intra bw (<= 2 nodes) or inter; NVLS x ratio, NVLSTree x
          // .70 n / 2(n-1); latency: base + network hops
  v2_19,  // bw: min(intra, inter) (NVLSTree: inter / 2 beyond 2 nodes); x 5/6;
          // latency: the NVLS hop, + network hops
  v2_27,  // as v2_19; all_gather / reduce_scatter: min(intra (ppn-1)/ppn, 0.9 inter)
  v2_28,  // per channel: intra x efficiency x (c-1)/c (x2 for all_reduce, else
          // x (ppn-1)/ppn), inter (x2 for NVLSTree on <= 2 nodes), NVLSTree's cap;
          // x n / nsteps like the ring
};

// NCCL's compute-capability rows: 0 Ampere (sm80), 1 Hopper (sm90), 2
// Blackwell (sm100).
inline constexpr int kNcclArchs = 3;

// One release's model. Indices: algorithm as kNcclAlgorithmOrder, protocol
// as protocol_index (LL, LL128, Simple), hardware 0 NVLink, 1 PCI, 2
// network, architecture as kNcclArchs, nodes 0 one, 1 two, 2 more.
struct NcclTuning {
  NcclVersion release;   // the first release with these figures
  std::string_view tag;  // its git tag, "v2.26.2-1"
  // tuning.cc baseLat and hwLat, microseconds.
  double base_lat[7][3] = {};
  double hw_lat[3][7][3] = {};
  // llMaxBws (GB/s): one node by GPU, several by the host CPU (Intel).
  double ll_max_bw_one_node[kNcclArchs] = {};
  double ll_max_bw_intel[3] = {};
  // Per-channel caps, GB/s (by architecture, then nodes).
  double ring_ll128_per_ch[kNcclArchs][3] = {};
  double tree_ll128_per_ch[kNcclArchs][3] = {};
  double tree_per_ch[kNcclArchs][3] = {};
  double nvls_tree_per_ch[kNcclArchs][3] = {};  // v2_28 only
  double nvls_efficiency[kNcclArchs] = {};      // v2_28 only
  // NVLS channels (src/transport/nvls.cc): sm90 16; sm100 32 to 2.26, then
  // 24 inside one NVLink domain and 32 across (2.27.3), and from 2.30.3 by
  // the NICs' speed across domains (nvls_sm100_by_nic).
  int nvls_channels_sm100_one = 32;
  int nvls_channels_sm100_multi = 32;
  bool nvls_sm100_by_nic = false;
  // 2.29.2+: NVLSTree all_reduce gets the tree's mid-size correction on
  // Blackwell with an x86 host (ncclTopoGetAlgoTime).
  bool nvls_tree_correction_sm100 = false;
  // Ring LL: bus bw x 1/2 (true), or x 1/4 across nodes and for all_reduce
  // and reduce, else 1/3 (false).
  bool ring_ll_half = true;
  // Ring LL128's share of the bus bw at one GPU per node (else 0.92).
  double ring_ll128_one_gpu_per_node = 0.92;
  // All-reduce ring's network steps: 2 (nodes - 1) (true) or 2 nodes.
  bool ring_inter_steps_minus_one = true;
  // At one GPU per node every algorithm pays the tree's network latency.
  bool one_gpu_per_node_tree_latency = true;
  NcclNvlsModel nvls = NcclNvlsModel::v2_28;
  double nvls_ratio = 5.0 / 6.0;  // v2_18: NVLS's bus to algorithm bw
  // NVLS weighed for all_gather / reduce_scatter on one node, and whether
  // their bw is converted to algorithm bw (x 5/6).
  bool nvls_gather_scatter = true;
  bool nvls_gather_scatter_ratio = false;
  // NVLS all_gather needs a type and op NVLS reduces (2.20, 2.21), or not.
  bool nvls_gather_any_type = true;
  // PAT (all_gather / reduce_scatter at one GPU per node): 0 = none, else
  // its share of the tree graph's bw.
  double pat_bw = 0.75;
  double collnet_arity_lat = 0.4;  // CollNet Direct, per local rank
  // ncclTopoGetAlgoTime's tree correction below 64 bytes: log2i(0) was 0
  // (the first entry applies) before log2i became log2Down (-1: none).
  bool tree_correction_below_64 = false;
  // enqueue.cc's planner: the least traffic per channel (bytes; 0: no such
  // step, the channel rule alone), cells of 16 bytes (2.22) or of that
  // traffic, and LL counted as 4x the traffic.
  int min_traffic_per_channel = 32 << 10;
  bool planner_cells_16 = false;
  // 2.29+: a channel's share is the traffic over the channels rounded up to
  // 16 bytes (before: at least the least traffic per channel).
  bool traffic_per_channel_rounded = true;
  bool ll_traffic_x4 = true;
  // NVLS across nodes (with CollNet) runs at most the ring's channels.
  bool nvls_multinode_ring_channels = true;
  // CollNet Chain needs at most 8 GPUs a node.
  bool collnet_chain_max_8 = true;
};

// Every release collkit has a table for, oldest first.
const std::vector<NcclTuning>& nccl_releases();

// The table NCCL `v` follows: the newest release at or below it. Throws
// UsageError for a version outside nccl_version_supported().
const NcclTuning& nccl_tuning(const NcclVersion& v);

// NCCL's tree bandwidth correction for mid sizes (ncclTopoGetAlgoTime,
// treeCorrectionFactor), by protocol and log2(bytes / 64), 64 B .. 256 MiB:
// the same figures in every supported release.
extern const double kNcclTreeCorrection[3][23];

}  // namespace collkit
