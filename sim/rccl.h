// RCCL's cost model on AMD Instinct MI300X and MI325X (gfx942): the figures
// and rules of ROCm/rccl src/graph/tuning.cc and src/enqueue.cc that differ
// from NCCL's (docs/NCCL.md, "RCCL"). RCCL is NCCL's fork for AMD GPUs: the
// same algorithms (ring, tree; no NVLS), the same protocols (LL, LL128,
// Simple), the same schedules, but its own tuning table, chosen by the
// machine model RCCL matches (src/graph/rome_models.cc: every 8-GPU MI300X
// model there names tuning model 5), its own thread counts and no channel
// planner. sim/nccl.cc computes RCCL's estimates and choice from this table
// when the topology's nccl.gpu is an AMD GPU; the time collkit reports is
// still the simulation of the chosen schedule.
#pragma once

#include <string_view>

namespace collkit {

struct RcclTuning {
  std::string_view version;  // the RCCL release the figures are of, "2.21.5"
  std::string_view source;   // where the figures were read
  // baseLat (us): [tree, ring][LL, LL128, Simple].
  double base_lat[2][3] = {};
  // The tuning model's hwLat (us): [xGMI (RCCL's NVLink row), PCI,
  // network][tree, ring][LL, LL128, Simple].
  double hw_lat[3][2][3] = {};
  // The tuning model's bwRatio: the share of the graph's bus bandwidth each
  // entry gets, [<= 2 nodes, more][tree, ring][LL, LL128, Simple] (0: off).
  double bw_ratio[2][2][3] = {};
  // Per-size corrections of the bandwidth by log2(bytes / 64), 64 B up (the
  // last entry applies beyond): the tree's always, the ring's across nodes.
  double tree_correction[3][27] = {};
  double ring_correction[3][27] = {};
  // Ring LL broadcast / reduce on one gfx94x node: x 1.65.
  double ring_ll_rooted_one_node = 1.65;
  // Threads per channel for every algorithm and protocol (RCCL's
  // NCCL_MAX_NTHREADS on AMD); bytes per thread before another channel (LL,
  // LL128, Simple; ring LL x ranks).
  int threads = 256;
  int thread_threshold[3] = {8, 8, 64};
  // The network post overhead of a ring step across nodes on an AMD host
  // (getNetOverhead), x3 for Simple.
  double net_overhead_us = 2.0;
};

// RCCL's table for gfx942 (MI300X, MI325X).
const RcclTuning& rccl_gfx942();

}  // namespace collkit
