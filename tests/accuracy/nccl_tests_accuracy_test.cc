// How well the simulator predicts NCCL on real machines: every public
// nccl-tests table of tests/data/nccl-tests/ (SOURCES.md there) is simulated
// with the shipped topology of its machine, the `nccl` family as the run had
// it (NCCL's own choice, or nccl:ring where the run forced NCCL_ALGO=Ring),
// the run's data type and the run's launch mode (-g 8: one thread launches
// on 8 GPUs), and compared row by row with `collkit compare --match`'s band
// summary. The test asserts the median |error| per size band.
//
// The bounds are the targets (>= 64 MiB: 5% in a node, 8% across
// nodes; 1-64 MiB: 15%; < 1 MiB: 20%) where the model meets them; where it
// does not, the bound is the error the model has today (rounded up to the
// next whole percent) so that a change that makes it worse fails here, and
// docs/ACCURACY.md says why the residual is there. Nothing in the topology
// files was fitted to these tables (docs/HARDWARE.md gives every figure's
// source).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/dtypes.h"
#include "core/json.h"
#include "core/nccl_version.h"
#include "reports/compare.h"
#include "reports/inputs.h"
#include "reports/report_extra.h"
#include "reports/sweep_report.h"
#include "sim/engine.h"
#include "sim/sweep.h"
#include "tests/accuracy/bands.h"
#include "topologies/reshape.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

const std::string kTopologies = std::string(COLLKIT_SOURCE_DIR) + "/topologies/";

// Bands in compare's order: < 1 MiB, 1-64 MiB, >= 64 MiB. -1: the table has
// no row in the band.
struct Table {
  const char* file;
  Collective collective;
  int ranks;
  const char* topology;
  const char* algorithm;
  DataType dtype;
  int launch_devices;  // 8 for nccl-tests -g 8, 1 for one process per GPU
  double target[3];    // the targets, percent
  double bound[3];     // what is asserted, percent (== target where met)
  // 0: the topology file as it is (its first `ranks` ranks). g > 0: the
  // cluster file with only g GPUs of each node used (below).
  int gpus_per_node = 0;
};

// clang-format off
const Table kTables[] = {
    {"h100x8_allreduce_ring_together-nccl-tests.txt", Collective::all_reduce, 8, "dgx-h100",
     "nccl:ring", DataType::float32, 8, {20, 15, 5}, {20, 15, 5}},
    {"h100x8_allreduce_nvls_together-nccl-tests.txt", Collective::all_reduce, 8, "dgx-h100",
     "nccl", DataType::float32, 8, {20, 15, 5}, {20, 17, 5}},
    {"h100x8_allgather_ring_together-nccl-tests.txt", Collective::all_gather, 8, "dgx-h100",
     "nccl:ring", DataType::float32, 8, {20, 15, 5}, {20, 15, 7}},
    {"h100x8_reducescatter_nvls_together-nccl-tests.txt", Collective::reduce_scatter, 8,
     "dgx-h100", "nccl", DataType::float32, 8, {20, 15, 5}, {20, 15, 7}},
    {"h100x8_allreduce_xxrjun-cluster01-cnode3-002.txt", Collective::all_reduce, 8, "dgx-h100",
     "nccl", DataType::float64, 1, {-1, 15, 5}, {-1, 15, 5}},
    {"h100x8_allgather_xxrjun-cluster01-cnode3-002.txt", Collective::all_gather, 8, "dgx-h100",
     "nccl", DataType::float64, 1, {-1, 15, 5}, {-1, 15, 6}},
    {"h100x8_reducescatter_xxrjun-cluster01-cnode3-002.txt", Collective::reduce_scatter, 8,
     "dgx-h100", "nccl", DataType::float64, 1, {-1, 15, 5}, {-1, 15, 6}},
    {"h100x8_alltoall_xxrjun-cluster01-cnode3-002.txt", Collective::all_to_all, 8, "dgx-h100",
     "nccl", DataType::float64, 1, {-1, 15, 5}, {-1, 27, 10}},
    {"h100x16_2node_allreduce_ring_nccl-tests-issue309-gjaion-minctas24-qps2.txt",
     Collective::all_reduce, 16, "h100-cluster-2x8", "nccl:ring", DataType::float32, 1,
     {-1, 15, 8}, {-1, 11, 8}},
    // 2 nodes of 8 with NVLS, NCCL 2.26.2's own choice (an issue-38 run,
    // measurement only: nothing was set from it): NCCL 2.26 runs NVLSTree
    // from 1 MiB to 16 GiB there (docs/ACCURACY.md).
    {"h100x16_2node_allreduce_nccl-tests-issue309-qoofyk.txt", Collective::all_reduce, 16,
     "h100-cluster-2x8", "nccl", DataType::float32, 1, {20, 15, 8}, {20, 18, 10}},
    // 10 nodes of 8: the cluster file of 16 nodes, 80 of its ranks.
    {"h100x80_10node_allreduce_xxrjun-cluster01.txt", Collective::all_reduce, 80,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 48, 18}},
    {"h100x80_10node_allgather_xxrjun-cluster01.txt", Collective::all_gather, 80,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 42, 21}},
    {"h100x80_10node_reducescatter_xxrjun-cluster01.txt", Collective::reduce_scatter, 80,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 46, 19}},
    {"h100x80_10node_alltoall_xxrjun-cluster01.txt", Collective::all_to_all, 80,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 28, 8}},
    // The same 10 nodes running 1, 2 and 4 processes a node (GPUs 0..g-1).
    {"h100x10_10node-1pernode_allreduce_xxrjun-cluster01.txt", Collective::all_reduce, 10,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 15, 8}, 1},
    {"h100x10_10node-1pernode_allgather_xxrjun-cluster01.txt", Collective::all_gather, 10,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 15, 8}, 1},
    {"h100x10_10node-1pernode_reducescatter_xxrjun-cluster01.txt", Collective::reduce_scatter, 10,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 15, 8}, 1},
    {"h100x10_10node-1pernode_alltoall_xxrjun-cluster01.txt", Collective::all_to_all, 10,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 15, 8}, 1},
    {"h100x20_10node-2pernode_allreduce_xxrjun-cluster01.txt", Collective::all_reduce, 20,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 15, 8}, 2},
    {"h100x20_10node-2pernode_allgather_xxrjun-cluster01.txt", Collective::all_gather, 20,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 15, 8}, 2},
    {"h100x20_10node-2pernode_reducescatter_xxrjun-cluster01.txt", Collective::reduce_scatter, 20,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 15, 8}, 2},
    {"h100x20_10node-2pernode_alltoall_xxrjun-cluster01.txt", Collective::all_to_all, 20,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 15, 8}, 2},
    {"h100x40_10node-4pernode_allreduce_xxrjun-cluster01.txt", Collective::all_reduce, 40,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 28, 8}, 4},
    {"h100x40_10node-4pernode_allgather_xxrjun-cluster01.txt", Collective::all_gather, 40,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 15, 8}, 4},
    {"h100x40_10node-4pernode_reducescatter_xxrjun-cluster01.txt", Collective::reduce_scatter, 40,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 15, 8}, 4},
    {"h100x40_10node-4pernode_alltoall_xxrjun-cluster01.txt", Collective::all_to_all, 40,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 25, 8}, 4},
    // Measurement only: runs gathered for issue 38 that nothing in the
    // model was set from (tests/data/nccl-tests/SOURCES.md, "Runs added for
    // issue 38"); bounds are their error on the day they were added.
    // NVIDIA/nccl-tests issue 309, gj-aion's cluster, NCCL defaults (its
    // version not printed: collkit's default).
    {"h100x16_2node_allreduce_nccl-tests-issue309-gjaion.txt", Collective::all_reduce, 16,
     "h100-cluster-16x8", "nccl", DataType::float32, 1, {-1, 15, 8}, {-1, 30, 12}, 8},
    {"h100x32_4node_allreduce_nccl-tests-issue309-gjaion.txt", Collective::all_reduce, 32,
     "h100-cluster-16x8", "nccl", DataType::float32, 1, {-1, 15, 8}, {-1, 33, 18}, 8},
    {"h100x64_8node_allreduce_nccl-tests-issue309-gjaion.txt", Collective::all_reduce, 64,
     "h100-cluster-16x8", "nccl", DataType::float32, 1, {-1, 15, 8}, {-1, 24, 18}, 8},
    // The same issue, qoofyk's 4 nodes in virtual machines (NCCL 2.26.2).
    {"h100x32_4node_allreduce_nccl-tests-issue309-qoofyk-vm.txt", Collective::all_reduce, 32,
     "h100-cluster-16x8", "nccl", DataType::float32, 1, {20, 15, 8}, {20, 19, 8}, 8},
    // xxrjun's cluster01: all_to_all across 2 nodes (NCCL 2.29.2). (The
    // cluster00 runs are not here: that network is not the file's,
    // docs/ACCURACY.md.)
    {"h100x16_2node_alltoall_xxrjun-cluster01.txt", Collective::all_to_all, 16,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, -1, 8}, {-1, -1, 8}, 8},
    // Issue 42: the machines users buy now, each on its own shipped file,
    // the targets (1-64 MiB 20%, >= 64 MiB 10%); measurement only,
    // nothing was set from these runs. Where a bound is above its target it
    // is the error of the day and docs/ACCURACY.md ("Machines of issue 42")
    // says what is not modelled: the cloud runs' plugins and single NIC
    // pairs, RCCL's MSCCL kernels below 1 MiB.
    {"h100x16_2node_allreduce_oci-bm-gpu-h100-8.txt", Collective::all_reduce, 16,
     "h100-cluster-2x8-roce", "nccl", DataType::float32, 1, {-1, -1, 10}, {-1, -1, 10}},
    {"h100x16_2node_allreduce_gcp-a3mega-tcpxo.txt", Collective::all_reduce, 16,
     "h100-cluster-2x8-tcpxo", "nccl", DataType::float32, 1, {20, 20, 10}, {79, 75, 20}},
    {"h100x16_2node_allreduce_aws-p5-keitaw-nccl2.22.3.txt", Collective::all_reduce, 16,
     "h100-cluster-2x8-efa", "nccl", DataType::float32, 1, {20, 20, 10}, {61, 39, 12}},
    {"h200x16_2node_allreduce_nebius-ml-cookbook.txt", Collective::all_reduce, 16,
     "h200-cluster-2x8", "nccl", DataType::float32, 1, {-1, -1, 10}, {-1, -1, 10}},
    {"h200x2_2node-1pernode_allgather_dranet-gke-a3ultra.txt", Collective::all_gather, 2,
     "h200-cluster-2x8-roce", "nccl", DataType::float32, 1, {20, 20, 10}, {60, 46, 35}, 1},
    {"b200x16_2node_allgather_dranet-gke-a4.txt", Collective::all_gather, 16,
     "b200-cluster-2x8-roce", "nccl", DataType::float32, 1, {20, 20, 10}, {93, 93, 48}},
    {"b200x2_2node-1pernode_allgather_dranet-gke-a4.txt", Collective::all_gather, 2,
     "b200-cluster-2x8-roce", "nccl", DataType::float32, 1, {20, 20, 10}, {39, 26, 23}, 1},
    // One GB200 NVL72 rack: 72 GPUs in one NVLink domain (NVLS across it).
    {"gb200x72_nvl72_allreduce_coreweave-pr43.txt", Collective::all_reduce, 72, "gb200-nvl72",
     "nccl", DataType::float32, 1, {-1, -1, 10}, {-1, -1, 10}},
    {"mi300xx8_allreduce_rccl_hisohara-aac8.txt", Collective::all_reduce, 8, "mi300x-8", "rccl",
     DataType::float32, 1, {20, 20, 10}, {59, 21, 10}},
    {"mi300xx16_2node_allreduce_rccl_hisohara-aac10.txt", Collective::all_reduce, 16,
     "mi300x-cluster-2x8", "rccl", DataType::float32, 1, {20, 20, 10}, {87, 26, 10}},
};
// clang-format on

// A cluster file's machine with only GPUs 0..g-1 of each node used, as a run
// of g processes a node has it (topologies/reshape.h: GPU j sends through
// NIC j, NCCL's graph figures of the file's 8-GPU node are dropped).
std::unique_ptr<Topology> cluster_using(const std::string& path, int ranks, int g) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_topology(reshape_topology_text(text.str(), path, {ranks / g, g}),
                        path + " (" + std::to_string(g) + " GPUs a node)", ranks);
}

// Bands (0: < 1 MiB, 1: 1-64 MiB, 2: >= 64 MiB) where collkit's median
// error is above NCCL's own model's on the same rows today
// (docs/ACCURACY.md, "Against NCCL's own model", says why for each).
struct WorseBand {
  const char* file;
  int band;
};
// clang-format off
const WorseBand kWorseThanNcclModel[] = {
    {"h100x8_allreduce_ring_together-nccl-tests.txt", 2},  // 1.5% against 1.4%
    {"h100x8_allgather_ring_together-nccl-tests.txt", 2},  // 6.1% against 3.4%
    {"h100x8_reducescatter_nvls_together-nccl-tests.txt", 1},  // 8.9% against 7.9%
    {"h100x8_reducescatter_nvls_together-nccl-tests.txt", 2},  // 6.1% against 3.3%
    {"h100x8_allreduce_xxrjun-cluster01-cnode3-002.txt", 2},  // 1.9% against 1.3%
    {"h100x8_allgather_xxrjun-cluster01-cnode3-002.txt", 1},  // 8.7% against 6.8%
    {"h100x8_allgather_xxrjun-cluster01-cnode3-002.txt", 2},  // 5.3% against 2.5%
    {"h100x8_reducescatter_xxrjun-cluster01-cnode3-002.txt", 2},  // 5.2% against 2.4%
    {"h100x80_10node_allreduce_xxrjun-cluster01.txt", 2},  // 17.0% against 15.0%
    {"h100x80_10node_allgather_xxrjun-cluster01.txt", 2},  // 20.5% against 18.8%
    {"h100x80_10node_reducescatter_xxrjun-cluster01.txt", 2},  // 18.5% against 16.9%
    {"h100x10_10node-1pernode_allgather_xxrjun-cluster01.txt", 2},  // 1.6% against 1.1%
    {"h100x10_10node-1pernode_reducescatter_xxrjun-cluster01.txt", 2},  // 0.8% against 0.5%
    {"h100x40_10node-4pernode_allgather_xxrjun-cluster01.txt", 1},  // 12.2% against 10.3%
    {"h100x32_4node_allreduce_nccl-tests-issue309-gjaion.txt", 2},  // 17.8% against 13.8%
    {"h100x64_8node_allreduce_nccl-tests-issue309-gjaion.txt", 2},  // 17.6% against 13.9%
    {"h100x32_4node_allreduce_nccl-tests-issue309-qoofyk-vm.txt", 2},  // 6.3% against 3.6%
    {"h100x16_2node_allreduce_gcp-a3mega-tcpxo.txt", 2},  // 19.5% against 12.0%
    {"h100x16_2node_allreduce_aws-p5-keitaw-nccl2.22.3.txt", 1},  // 38.2% against 33.6%
    {"h200x2_2node-1pernode_allgather_dranet-gke-a3ultra.txt", 0},  // 60.0% against 52.4%
    {"b200x16_2node_allgather_dranet-gke-a4.txt", 0},  // 92.7% against 91.8%
    {"b200x16_2node_allgather_dranet-gke-a4.txt", 2},  // 47.9% against 46.6%
    {"b200x2_2node-1pernode_allgather_dranet-gke-a4.txt", 0},  // 38.4% against 23.4%
};
// clang-format on

bool worse_than_nccl_model(const char* file, int band) {
  for (const WorseBand& w : kWorseThanNcclModel)
    if (w.band == band && std::string(w.file) == file) return true;
  return false;
}

class NcclTestsAccuracy : public ::testing::TestWithParam<Table> {};

TEST_P(NcclTestsAccuracy, MedianErrorPerBandWithinBound) {
  const Table& t = GetParam();
  const std::string file = kTopologies + t.topology + ".json";
  const std::unique_ptr<Topology> topology = t.gpus_per_node > 0
                                                 ? cluster_using(file, t.ranks, t.gpus_per_node)
                                                 : load_topology(file, t.ranks);
  const testing::TableBands run = testing::table_bands(
      {t.file, t.collective, t.ranks, t.algorithm, t.dtype, t.launch_devices}, *topology);
  const CompareResult& c = run.compare;
  const std::string& version = run.version;
  ASSERT_EQ(c.bands.size(), 4u);
  for (int b = 0; b < 3; ++b) {
    const BandSummary& band = c.bands[static_cast<std::size_t>(b)];
    if (t.bound[b] < 0) {
      EXPECT_EQ(band.rows, 0u) << band.name;
      continue;
    }
    ASSERT_GT(band.rows, 0u) << band.name;
    const double median = 100 * band.median_abs_error;
    std::printf("%-70s %-21s %-15s %3zu rows  median %5.1f%%  worst %5.1f%%  (target %g%%)", t.file,
                version.c_str(), band.name.c_str(), band.rows, median, 100 * band.worst_abs_error,
                t.target[b]);
    EXPECT_LE(median, t.bound[b]) << t.file << ", " << band.name;
    if (!run.nccl_model) {
      std::printf("\n");
      continue;
    }
    // The per-table target: no band worse than NCCL's own model of
    // that version, except where kWorseThanNcclModel says so (and why).
    const BandSummary& own = run.nccl_model->bands[static_cast<std::size_t>(b)];
    ASSERT_EQ(own.rows, band.rows) << band.name;
    const double own_median = 100 * own.median_abs_error;
    const bool excepted = worse_than_nccl_model(t.file, b);
    // Worse: by more than the printed rounding (equal medians are not).
    const bool worse = median > own_median + 0.05;
    std::printf("  NCCL's model %5.1f%%%s\n", own_median,
                worse ? (excepted ? "  (worse: listed)" : "  (worse)") : "");
    if (excepted)
      EXPECT_TRUE(worse) << t.file << ", " << band.name
                         << ": no longer worse than NCCL's model; drop it from the list";
    else
      EXPECT_FALSE(worse) << t.file << ", " << band.name << ": median " << median
                          << "% is worse than NCCL's model's " << own_median << "%";
  }
}

INSTANTIATE_TEST_SUITE_P(PublicRuns, NcclTestsAccuracy, ::testing::ValuesIn(kTables),
                         [](const ::testing::TestParamInfo<Table>& info) {
                           return "t" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace collkit
