#include "sim/rccl.h"

namespace collkit {
namespace {

// Indices: algorithm tree 0, ring 1; protocol LL, LL128, Simple; hardware
// xGMI 0, PCI 1, network 2.
void set3(double (&row)[3], double ll, double ll128, double simple) {
  row[0] = ll;
  row[1] = ll128;
  row[2] = simple;
}

void set27(double (&row)[27], const double (&values)[27]) {
  for (int i = 0; i < 27; ++i) row[i] = values[i];
}

// Every figure is from ROCm/rccl src/graph/tuning.cc at the commit of RCCL
// 2.21.5 (ROCm 6.3; makefiles/version.mk NCCL_MINOR 21, NCCL_PATCH 5),
// `tuning_model_5`, the model src/graph/rome_models.cc assigns to the 8-GPU
// MI300X machines (rome_model_79, 81, 84 and 87: "tuning=5"). Nothing here
// was fitted to a measurement. LL128's entries are 0: RCCL 2.21.5 enables
// LL128 by default on gfx90a only (ENABLE_LL128), so it never runs on
// gfx942.
RcclTuning build_gfx942() {
  RcclTuning t;
  t.version = "2.21.5";
  t.source = "ROCm/rccl 2.21.5 src/graph/tuning.cc tuning_model_5 (gfx942)";
  set3(t.base_lat[0], 12.0, 12.0, 17.0);
  set3(t.base_lat[1], 12.0, 12.0, 17.0);
  set3(t.hw_lat[0][0], 0.9, 0.0, 2.3);
  set3(t.hw_lat[0][1], 0.8, 0.0, 2.1);
  set3(t.hw_lat[1][0], 2.2, 2.2, 5.7);
  set3(t.hw_lat[1][1], 2.2, 2.2, 5.7);
  set3(t.hw_lat[2][0], 10.5, 0.0, 25.0);
  set3(t.hw_lat[2][1], 9.5, 0.0, 320.0);
  set3(t.bw_ratio[0][0], 0.06, 0.00, 0.11);
  set3(t.bw_ratio[0][1], 0.08, 0.00, 1.00);
  set3(t.bw_ratio[1][0], 0.06, 0.00, 0.59);
  set3(t.bw_ratio[1][1], 0.08, 0.00, 1.00);
  set27(t.tree_correction[0], {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 1.0, 1.0, 1.0, 1.0, 0.6, 1.0, 0.9,
                               1.0, 1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1});
  set27(t.tree_correction[1], {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                               0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0});
  set27(t.tree_correction[2], {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1,
                               0.1, 0.7, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.8});
  set27(t.ring_correction[0], {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 0.2, 1.0,
                               0.4, 0.4, 0.1, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1});
  set27(t.ring_correction[1], {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                               0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0});
  set27(t.ring_correction[2], {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1,
                               0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.8, 1.0, 1.0, 1.0});
  t.ring_ll_rooted_one_node = 1.65;
  t.threads = 256;             // src/include/device.h: NCCL_MAX_NTHREADS 256 (HIP)
  t.thread_threshold[0] = 8;   // NCCL_LL_THREAD_THRESHOLD
  t.thread_threshold[1] = 8;   // NCCL_LL128_THREAD_THRESHOLD
  t.thread_threshold[2] = 64;  // NCCL_SIMPLE_THREAD_THRESHOLD
  t.net_overhead_us = 2.0;     // getNetOverhead: x86 AMD host
  return t;
}

}  // namespace

const RcclTuning& rccl_gfx942() {
  static const RcclTuning kTable = build_gfx942();
  return kTable;
}

}  // namespace collkit
