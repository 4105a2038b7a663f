#include "sim/nccl_versions.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace collkit {
namespace {

// Indices (sim/nccl_versions.h): algorithms in NCCL's order, protocols LL,
// LL128, Simple, hardware NVLink, PCI, network, GPU A100 then H100.
constexpr int kTree = 0, kRing = 1, kCollnetDirect = 2, kCollnetChain = 3, kNvls = 4, kNvlsTree = 5;
constexpr int kSimple = 2;
constexpr int kNvlink = 0, kPci = 1, kNet = 2;
constexpr int kA100 = 0, kH100 = 1, kB200 = 2;

void set3(double (&row)[3], double ll, double ll128, double simple) {
  row[0] = ll;
  row[1] = ll128;
  row[2] = simple;
}

// Each release is the one before it with what its tag changed, the only
// place the figures are written (docs/NCCL.md, "Versions", lists the same
// changes). Every figure is from src/graph/tuning.cc or src/enqueue.cc of
// the tag named; nothing here was fitted to a measurement. One function
// per release, applied in order (kReleaseSteps).

// v2.18.1-1: the oldest release collkit models.
void v2_18_1(NcclTuning& t) {
  set3(t.base_lat[kTree], 6.8, 14.0, 0);
  set3(t.base_lat[kRing], 6.6, 14.0, 8.4);
  set3(t.base_lat[kCollnetDirect], 6.8, 14.0, 0);
  set3(t.base_lat[kCollnetChain], 6.8, 14.0, 0);
  set3(t.base_lat[kNvls], 0, 0, 23.0);
  set3(t.base_lat[kNvlsTree], 0, 0, 23.0);
  set3(t.hw_lat[kNvlink][kTree], 0.6, 1.25, 28);
  set3(t.hw_lat[kNvlink][kRing], 0.6, 1.9, 3.4);
  set3(t.hw_lat[kNvlink][kCollnetDirect], 0, 0, 8.0);
  set3(t.hw_lat[kNvlink][kCollnetChain], 0, 0, 4.75);
  set3(t.hw_lat[kPci][kTree], 1.0, 1.9, 28);
  set3(t.hw_lat[kPci][kRing], 1.0, 2.5, 5.7);
  set3(t.hw_lat[kPci][kCollnetDirect], 0, 0, 8.0);
  set3(t.hw_lat[kPci][kCollnetChain], 0, 0, 8.0);
  set3(t.hw_lat[kNet][kTree], 5.0, 8.5, 28);
  set3(t.hw_lat[kNet][kRing], 2.7, 4.0, 14.0);
  set3(t.hw_lat[kNet][kCollnetDirect], 0, 0, 10.7);
  set3(t.hw_lat[kNet][kCollnetChain], 0, 0, 14);
  set3(t.hw_lat[kNet][kNvls], 0, 0, 18);
  set3(t.hw_lat[kNet][kNvlsTree], 0, 0, 19);
  t.ll_max_bw_one_node[kA100] = 87.7;
  t.ll_max_bw_one_node[kH100] = 87.7;
  set3(t.ll_max_bw_intel, 39.0, 39.0, 20.4);
  set3(t.ring_ll128_per_ch[kA100], 20.0, 20.0, 20.0);
  set3(t.ring_ll128_per_ch[kH100], 36.7, 36.7, 36.7);
  set3(t.tree_ll128_per_ch[kA100], 20.0, 20.0, 20.0);
  set3(t.tree_ll128_per_ch[kH100], 36.7, 36.7, 36.7);
  set3(t.tree_per_ch[kA100], 24.0, 23.6, 17.8);
  set3(t.tree_per_ch[kH100], 38.7, 41.4, 33.0);
  t.ring_ll_half = false;
  t.ring_ll128_one_gpu_per_node = 0.7;
  t.ring_inter_steps_minus_one = false;
  t.one_gpu_per_node_tree_latency = false;
  t.nvls = NcclNvlsModel::v2_18;
  t.nvls_ratio = 0.75;
  t.nvls_gather_scatter = false;
  t.nvls_gather_scatter_ratio = false;
  t.pat_bw = 0;
  t.collnet_arity_lat = 0.5;
  t.tree_correction_below_64 = true;
  t.min_traffic_per_channel = 0;
  t.planner_cells_16 = false;
  t.traffic_per_channel_rounded = false;
  t.nvls_gather_any_type = true;
  t.ll_traffic_x4 = false;
  t.nvls_multinode_ring_channels = false;
  t.collnet_chain_max_8 = false;
}

// v2.18.3-1: the tree's Simple hop 4 / 6 / 14 us; per-channel tree caps
// for LL128 (H100 29 GB/s beyond 2 nodes) and Simple (36.0); NVLS
// converts bus to algorithm bw at 5/6.
void v2_18_3(NcclTuning& t) {
  t.hw_lat[kNvlink][kTree][kSimple] = 4;
  t.hw_lat[kPci][kTree][kSimple] = 6;
  t.hw_lat[kNet][kTree][kSimple] = 14;
  set3(t.tree_ll128_per_ch[kH100], 36.7, 36.7, 29.0);
  t.tree_per_ch[kH100][2] = 36.0;
  t.nvls_ratio = 5.0 / 6.0;
}

// v2.19.1-1 (branched before 2.18.3's tree figures: the tree's Simple hop
// is 28 us again): CollNet's and NVLS's latencies move from the base to
// the hops (CollNet Direct 3.7 / 31, Chain 2.8 / 30, NVLS 23 / 18,
// NVLSTree 23 / 14 us), the arity latency is 0.4 us; NVLS's bw is
// min(intra, inter) and NVLS is weighed for all_gather and reduce_scatter
// on one node.
void v2_19_1(NcclTuning& t) {
  set3(t.base_lat[kCollnetDirect], 0, 0, 0);
  set3(t.base_lat[kCollnetChain], 0, 0, 0);
  set3(t.base_lat[kNvls], 0, 0, 0);
  set3(t.base_lat[kNvlsTree], 0, 0, 0);
  for (int hw : {kNvlink, kPci, kNet}) t.hw_lat[hw][kTree][kSimple] = 28;
  set3(t.hw_lat[kNvlink][kCollnetDirect], 0, 0, 3.7);
  set3(t.hw_lat[kNvlink][kCollnetChain], 0, 0, 2.8);
  set3(t.hw_lat[kNvlink][kNvls], 0, 0, 23);
  set3(t.hw_lat[kNvlink][kNvlsTree], 0, 0, 23);
  set3(t.hw_lat[kPci][kCollnetDirect], 0, 0, 3.7);
  set3(t.hw_lat[kPci][kCollnetChain], 0, 0, 2.8);
  set3(t.hw_lat[kNet][kCollnetDirect], 0, 0, 31);
  set3(t.hw_lat[kNet][kCollnetChain], 0, 0, 30);
  set3(t.hw_lat[kNet][kNvlsTree], 0, 0, 14);
  t.nvls = NcclNvlsModel::v2_19;
  t.nvls_gather_scatter = true;
  t.nvls_gather_scatter_ratio = true;
  t.collnet_arity_lat = 0.4;
}

// v2.20.3-1: NVLS all_gather only for the types and ops NVLS reduces
// (enqueue.cc); the rest is MNNVL and CollNet all_gather / reduce_scatter,
// not modelled.
void v2_20_3(NcclTuning& t) { t.nvls_gather_any_type = false; }

// v2.21.5-1: the NVLS hop 25 us; ring LL at half the bus bw; one H100
// node's LL cap 141 GB/s.
void v2_21_5(NcclTuning& t) {
  t.hw_lat[kNvlink][kNvls][kSimple] = 25;
  t.hw_lat[kNvlink][kNvlsTree][kSimple] = 25;
  t.ring_ll_half = true;
  t.ll_max_bw_one_node[kH100] = 141.0;
}

// v2.22.3-1: log2i becomes log2Down (no tree correction below 64 bytes);
// the new planner spreads a call over channels by traffic, at least 512
// bytes a channel, in cells of 16 bytes; NVLS all_gather for any type.
void v2_22_3(NcclTuning& t) {
  t.nvls_gather_any_type = true;
  t.tree_correction_below_64 = false;
  t.min_traffic_per_channel = 512;
  t.planner_cells_16 = true;
}

// v2.23.4-1: the tree's Simple base 8.4 us and hop 4 / 4 / 14 us; PAT
// (x 0.85); ring LL128 at 0.92 even at one GPU per node; the all-reduce
// ring's network steps 2 (nodes - 1); at one GPU per node every
// algorithm pays the tree's network hop; NVLS all_gather / reduce_scatter
// bw no longer converted; 16 KiB of traffic a channel, cells of it.
void v2_23_4(NcclTuning& t) {
  t.base_lat[kTree][kSimple] = 8.4;
  t.hw_lat[kNvlink][kTree][kSimple] = 4.0;
  t.hw_lat[kPci][kTree][kSimple] = 4.0;
  t.hw_lat[kNet][kTree][kSimple] = 14;
  t.pat_bw = 0.85;
  t.ring_ll128_one_gpu_per_node = 0.92;
  t.ring_inter_steps_minus_one = true;
  t.one_gpu_per_node_tree_latency = true;
  t.nvls_gather_scatter_ratio = false;
  t.min_traffic_per_channel = 16 << 10;
  t.planner_cells_16 = false;
}

// v2.24.3-1: PAT at 0.75.
void v2_24_3(NcclTuning& t) { t.pat_bw = 0.75; }

// v2.25.1-1: Blackwell rows (BLACKWELL_COMPCAP_IDX), twice Hopper's: one
// node's LL cap 2 x 141, ring LL128 2 x 36.7 a channel, tree LL128 2 x
// 36.7 / 36.7 / 29.0, tree 2 x 38.7 / 41.4 / 36.0; 32 NVLS channels on
// sm100 (src/transport/nvls.cc, NVLS_NCHANNELS_SM100).
void v2_25_1(NcclTuning& t) {
  t.ll_max_bw_one_node[kB200] = 2 * 141.0;
  set3(t.ring_ll128_per_ch[kB200], 2 * 36.7, 2 * 36.7, 2 * 36.7);
  set3(t.tree_ll128_per_ch[kB200], 2 * 36.7, 2 * 36.7, 2 * 29.0);
  set3(t.tree_per_ch[kB200], 2 * 38.7, 2 * 41.4, 2 * 36.0);
  t.nvls_channels_sm100_one = t.nvls_channels_sm100_multi = 32;
}

// v2.26.2-1: LL's traffic counts 4x in the channel planner.
void v2_26_2(NcclTuning& t) { t.ll_traffic_x4 = true; }

// v2.27.3-1: NVLS all_gather / reduce_scatter bw min(intra (ppn-1)/ppn,
// 0.9 inter).
void v2_27_3(NcclTuning& t) {
  t.nvls = NcclNvlsModel::v2_27;
  // Blackwell: 24 NVLS channels inside one NVLink domain, 32 across
  // (src/transport/nvls.cc, NVLS_NCHANNELS_SM100_NVL).
  t.nvls_channels_sm100_one = 24;
}

// v2.28.3-1: NVLS's bw from the graph's per-channel bw, an efficiency
// (0.85 on Hopper), two pipelined operations for all_reduce, and a
// per-channel cap for NVLSTree, converted like the ring's; NVLS across
// nodes runs at most the ring's channels; CollNet Chain at most 8 GPUs a
// node. (v2.28.7-1 changes Blackwell rows only.)
void v2_28_3(NcclTuning& t) {
  t.nvls = NcclNvlsModel::v2_28;
  t.nvls_efficiency[kA100] = 0;
  t.nvls_efficiency[kH100] = 0.85;
  set3(t.nvls_tree_per_ch[kA100], 24.0, 23.6, 17.8);
  set3(t.nvls_tree_per_ch[kH100], 0.0, 57.7, 45.5);
  t.nvls_multinode_ring_channels = true;
  t.collnet_chain_max_8 = true;
  // Blackwell: NVLS efficiency 0.74; tree LL128 55.6 / 31.67 / 20.0 and
  // tree 70.0 / 42.8 / 24.0 a channel; NVLSTree's cap 96.0 / 43.1.
  t.nvls_efficiency[kB200] = 0.74;
  set3(t.tree_ll128_per_ch[kB200], 55.6, 31.67, 20.0);
  set3(t.tree_per_ch[kB200], 70.0, 42.8, 24.0);
  set3(t.nvls_tree_per_ch[kB200], 0.0, 96.0, 43.1);
}

// v2.28.7-1: Blackwell's ring LL128 cap on two nodes 34.6 GB/s a channel.
void v2_28_7(NcclTuning& t) { set3(t.ring_ll128_per_ch[kB200], 2 * 36.7, 34.6, 2 * 36.7); }

// v2.28.9-1: NVLSTree's network hop 20.9 us.
void v2_28_9(NcclTuning& t) {
  t.hw_lat[kNet][kNvlsTree][kSimple] = 20.9;
  t.nvls_tree_per_ch[kB200][2] = 43.8;  // Blackwell, more than 2 nodes
}

// v2.29.2-1: 32 KiB of traffic a channel (rounded to 16 bytes). (v2.29.7-1
// and v2.30.x change Blackwell rows and CollNet plugin checks only.)
void v2_29_2(NcclTuning& t) {
  t.min_traffic_per_channel = 32 << 10;
  t.traffic_per_channel_rounded = true;
  // Blackwell: ring LL128 34.5 / 34.6 / 34.5 a channel; NVLSTree
  // all_reduce takes the tree's mid-size correction on x86 hosts.
  set3(t.ring_ll128_per_ch[kB200], 34.5, 34.6, 34.5);
  t.nvls_tree_correction_sm100 = true;
}

// v2.29.7-1: Blackwell's ring LL128 cap 40 GB/s a channel.
void v2_29_7(NcclTuning& t) { set3(t.ring_ll128_per_ch[kB200], 40.0, 40.0, 40.0); }

// v2.30.3-1: Blackwell's NVLSTree cap beyond 2 nodes 80 GB/s; NVLS
// channels across NVLink domains by the NICs' speed
// (src/transport/nvls.cc, ncclNvlsTreeSm100Tuning).
void v2_30_3(NcclTuning& t) {
  t.nvls_tree_per_ch[kB200][2] = 80.0;
  t.nvls_sm100_by_nic = true;
}

// The releases in order, each applying what its tag changed.
struct ReleaseStep {
  NcclVersion release;
  const char* tag;
  void (*apply)(NcclTuning&);
};
constexpr ReleaseStep kReleaseSteps[] = {
    {{2, 18, 1}, "v2.18.1-1", v2_18_1}, {{2, 18, 3}, "v2.18.3-1", v2_18_3},
    {{2, 19, 1}, "v2.19.1-1", v2_19_1}, {{2, 20, 3}, "v2.20.3-1", v2_20_3},
    {{2, 21, 5}, "v2.21.5-1", v2_21_5}, {{2, 22, 3}, "v2.22.3-1", v2_22_3},
    {{2, 23, 4}, "v2.23.4-1", v2_23_4}, {{2, 24, 3}, "v2.24.3-1", v2_24_3},
    {{2, 25, 1}, "v2.25.1-1", v2_25_1}, {{2, 26, 2}, "v2.26.2-1", v2_26_2},
    {{2, 27, 3}, "v2.27.3-1", v2_27_3}, {{2, 28, 3}, "v2.28.3-1", v2_28_3},
    {{2, 28, 7}, "v2.28.7-1", v2_28_7}, {{2, 28, 9}, "v2.28.9-1", v2_28_9},
    {{2, 29, 2}, "v2.29.2-1", v2_29_2}, {{2, 29, 7}, "v2.29.7-1", v2_29_7},
    {{2, 30, 3}, "v2.30.3-1", v2_30_3},
};

std::vector<NcclTuning> build_releases() {
  std::vector<NcclTuning> out;
  NcclTuning t;
  for (const ReleaseStep& step : kReleaseSteps) {
    t.release = step.release;
    t.tag = step.tag;
    step.apply(t);
    // Before v2.25.1-1 NCCL's compute-capability index stops at Hopper
    // (minCompCap >= 90), so an sm100 GPU gets Hopper's rows.
    NcclTuning r = t;
    if (r.release < NcclVersion{2, 25, 1}) {
      r.ll_max_bw_one_node[kB200] = r.ll_max_bw_one_node[kH100];
      for (int n = 0; n < 3; ++n) {
        r.ring_ll128_per_ch[kB200][n] = r.ring_ll128_per_ch[kH100][n];
        r.tree_ll128_per_ch[kB200][n] = r.tree_ll128_per_ch[kH100][n];
        r.tree_per_ch[kB200][n] = r.tree_per_ch[kH100][n];
        r.nvls_tree_per_ch[kB200][n] = r.nvls_tree_per_ch[kH100][n];
      }
      r.nvls_efficiency[kB200] = r.nvls_efficiency[kH100];
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace

const double kNcclTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

int nccl_algorithm_index(NcclVariant v) {
  for (std::size_t i = 0; i < kNcclAlgorithmOrder.size(); ++i)
    if (kNcclAlgorithmOrder[i] == v) return static_cast<int>(i);
  return -1;
}

std::string_view nccl_algorithm_name(NcclVariant v) {
  constexpr std::string_view kNames[] = {
      "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  const int i = nccl_algorithm_index(v);
  return i < 0 ? std::string_view() : kNames[i];
}

const std::vector<NcclTuning>& nccl_releases() {
  static const std::vector<NcclTuning> kReleases = build_releases();
  return kReleases;
}

const NcclTuning& nccl_tuning(const NcclVersion& v) {
  if (!nccl_version_supported(v))
    throw UsageError("NCCL " + to_string(v) +
                     " is outside the versions collkit has NCCL's cost model for (" +
                     nccl_supported_range() + ")");
  const std::vector<NcclTuning>& rs = nccl_releases();
  const NcclTuning* best = &rs.front();
  for (const NcclTuning& r : rs)
    if (r.release <= v) best = &r;
  return *best;
}

}  // namespace collkit
