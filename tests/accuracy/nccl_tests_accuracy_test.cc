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
#include "topologies/topology.h"

namespace collkit {
namespace {

const std::string kData = std::string(COLLKIT_SOURCE_DIR) + "/tests/data/nccl-tests/";
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
     "nccl:ring", DataType::float32, 8, {20, 15, 5}, {20, 18, 7}},
    {"h100x8_reducescatter_nvls_together-nccl-tests.txt", Collective::reduce_scatter, 8,
     "dgx-h100", "nccl", DataType::float32, 8, {20, 15, 5}, {20, 15, 7}},
    {"h100x8_allreduce_xxrjun-cluster01-cnode3-002.txt", Collective::all_reduce, 8, "dgx-h100",
     "nccl", DataType::float64, 1, {-1, 15, 5}, {-1, 15, 5}},
    {"h100x8_allgather_xxrjun-cluster01-cnode3-002.txt", Collective::all_gather, 8, "dgx-h100",
     "nccl", DataType::float64, 1, {-1, 15, 5}, {-1, 15, 6}},
    {"h100x8_reducescatter_xxrjun-cluster01-cnode3-002.txt", Collective::reduce_scatter, 8,
     "dgx-h100", "nccl", DataType::float64, 1, {-1, 15, 5}, {-1, 15, 6}},
    {"h100x8_alltoall_xxrjun-cluster01-cnode3-002.txt", Collective::all_to_all, 8, "dgx-h100",
     "nccl", DataType::float64, 1, {-1, 15, 5}, {-1, 28, 11}},
    {"h100x16_2node_allreduce_ring_nccl-tests-issue309-gjaion-minctas24-qps2.txt",
     Collective::all_reduce, 16, "h100-cluster-2x8", "nccl:ring", DataType::float32, 1,
     {-1, 15, 8}, {-1, 12, 8}},
    // 2 nodes of 8 with NVLS, NCCL 2.26.2's own choice (an issue-38 run,
    // measurement only: nothing was set from it): NCCL 2.26 runs NVLSTree
    // from 1 MiB to 16 GiB there (docs/ACCURACY.md).
    {"h100x16_2node_allreduce_nccl-tests-issue309-qoofyk.txt", Collective::all_reduce, 16,
     "h100-cluster-2x8", "nccl", DataType::float32, 1, {20, 15, 8}, {28, 18, 10}},
    // 10 nodes of 8: the cluster file of 16 nodes, 80 of its ranks.
    {"h100x80_10node_allreduce_xxrjun-cluster01.txt", Collective::all_reduce, 80,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 48, 18}},
    {"h100x80_10node_allgather_xxrjun-cluster01.txt", Collective::all_gather, 80,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 44, 21}},
    {"h100x80_10node_reducescatter_xxrjun-cluster01.txt", Collective::reduce_scatter, 80,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 48, 19}},
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
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 24, 8}, 4},
    {"h100x40_10node-4pernode_reducescatter_xxrjun-cluster01.txt", Collective::reduce_scatter, 40,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 24, 8}, 4},
    {"h100x40_10node-4pernode_alltoall_xxrjun-cluster01.txt", Collective::all_to_all, 40,
     "h100-cluster-16x8", "nccl", DataType::float64, 1, {-1, 15, 8}, {-1, 25, 8}, 4},
    // Issue 42: the machines users buy now, each on its own shipped file,
    // the targets (1-64 MiB 20%, >= 64 MiB 10%); measurement only,
    // nothing was set from these runs. Where a bound is above its target it
    // is the error of the day and docs/ACCURACY.md ("Machines of issue 42")
    // says what is not modelled: the cloud runs' plugins and single NIC
    // pairs, RCCL's MSCCL kernels below 1 MiB.
    {"h100x16_2node_allreduce_oci-bm-gpu-h100-8.txt", Collective::all_reduce, 16,
     "h100-cluster-2x8-roce", "nccl", DataType::float32, 1, {-1, -1, 10}, {-1, -1, 10}},
    {"h100x16_2node_allreduce_gcp-a3mega-tcpxo.txt", Collective::all_reduce, 16,
     "h100-cluster-2x8-tcpxo", "nccl", DataType::float32, 1, {20, 20, 10}, {84, 75, 20}},
    {"h100x16_2node_allreduce_aws-p5-keitaw-nccl2.22.3.txt", Collective::all_reduce, 16,
     "h100-cluster-2x8-efa", "nccl", DataType::float32, 1, {20, 20, 10}, {71, 44, 12}},
    {"h200x16_2node_allreduce_nebius-ml-cookbook.txt", Collective::all_reduce, 16,
     "h200-cluster-2x8", "nccl", DataType::float32, 1, {-1, -1, 10}, {-1, -1, 10}},
    {"h200x2_2node-1pernode_allgather_dranet-gke-a3ultra.txt", Collective::all_gather, 2,
     "h200-cluster-2x8-roce", "nccl", DataType::float32, 1, {20, 20, 10}, {61, 46, 35}, 1},
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
// of g processes a node has it: GPU j sends through NIC j, so NICs 0..g-1
// carry the traffic. The file's generator gets `ranks / g` nodes of g
// devices and g NICs; everything else (links, protocols, switches) is the
// file's. NCCL's graph figures in the file's "nccl" block describe its
// search on 8 GPUs, so they are dropped and the channel search derives them.
std::unique_ptr<Topology> cluster_using(const std::string& path, int ranks, int g) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  Json top = Json::parse(text.str());
  Json& gen = top.at("generator");
  gen["nodes"] = ranks / g;
  gen["devices_per_node"] = g;
  gen["nics_per_node"] = g;
  for (const char* key : {"ring", "tree", "nvls", "runtime_channels"}) top["nccl"].erase(key);
  return parse_topology(top.dump(), path + " (" + std::to_string(g) + " GPUs a node)", ranks);
}

class NcclTestsAccuracy : public ::testing::TestWithParam<Table> {};

TEST_P(NcclTestsAccuracy, MedianErrorPerBandWithinBound) {
  const Table& t = GetParam();
  ReadOptions read;
  read.collective = t.collective;
  read.ranks = t.ranks;
  const Report measured = combine_runs(read_runs(kData + t.file, read));
  ASSERT_EQ(measured.ranks, t.ranks);

  SweepSpec sweep;
  sweep.collective = t.collective;
  sweep.algorithms = {t.algorithm};
  sweep.dtype = t.dtype;
  // NCCL's choice as the run's NCCL version makes it: the version its log
  // prints, else collkit's default (docs/NCCL.md, "Versions").
  const std::optional<NcclVersion> logged = extra_nccl_version(measured);
  if (logged && nccl_version_supported(*logged)) sweep.nccl_version = logged;
  // An rccl-tests log: RCCL's own model chooses, whatever NCCL version.
  const bool rccl = measured.extra.value("library", "") == "RCCL";
  const std::string version =
      rccl ? "(RCCL " + measured.extra.value("rccl_version", std::string("?")) + ")"
           : to_string(sweep.nccl_version.value_or(kDefaultNcclVersion)) +
                 (sweep.nccl_version ? "" : " (default)");
  for (const ResultRow& row : measured.results)
    if (row.bytes > 0 && (sweep.sizes.empty() || sweep.sizes.back() != row.bytes))
      sweep.sizes.push_back(row.bytes);
  const std::string file = kTopologies + t.topology + ".json";
  const std::unique_ptr<Topology> topology = t.gpus_per_node > 0
                                                 ? cluster_using(file, t.ranks, t.gpus_per_node)
                                                 : load_topology(file, t.ranks);
  sweep.ranks = topology->num_ranks();
  sweep.model = cost_params_of(*topology, sweep.ranks);
  SimOptions sim;
  sim.launch_devices = t.launch_devices;
  const Report predicted = simulate_report(sweep, *topology, sim);

  CompareOptions options;
  options.match = t.algorithm;
  options.bands = true;
  const CompareResult c = compare_reports(predicted, measured, options, "sim", "nccl-tests");
  ASSERT_EQ(c.bands.size(), 4u);
  for (int b = 0; b < 3; ++b) {
    const BandSummary& band = c.bands[static_cast<std::size_t>(b)];
    if (t.bound[b] < 0) {
      EXPECT_EQ(band.rows, 0u) << band.name;
      continue;
    }
    ASSERT_GT(band.rows, 0u) << band.name;
    const double median = 100 * band.median_abs_error;
    std::printf("%-70s %-21s %-15s %3zu rows  median %5.1f%%  worst %5.1f%%  (target %g%%)\n",
                t.file, ((rccl ? "" : "NCCL ") + version).c_str(), band.name.c_str(), band.rows,
                median, 100 * band.worst_abs_error, t.target[b]);
    EXPECT_LE(median, t.bound[b]) << t.file << ", " << band.name;
  }
}

INSTANTIATE_TEST_SUITE_P(PublicRuns, NcclTestsAccuracy, ::testing::ValuesIn(kTables),
                         [](const ::testing::TestParamInfo<Table>& info) {
                           return "t" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace collkit
