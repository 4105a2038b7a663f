// Calibration that carries across scale, on public runs (docs/ACCURACY.md,
// "Calibrated on a small run"): a cluster's small runs are fitted on the
// shipped cluster file, each run simulated on the file resized to its shape
// (FILE@NODESxGPUS), and the fitted file resized to the cluster's larger
// runs predicts them. The test prints, per checked table and band, the
// error before and after the fit and asserts the fitted one: at the
// issue's targets (>= 64 MiB 5%, 1-64 MiB 10%) where met, else at today's
// error rounded up, so a change that makes it worse fails.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "calibration/calibrate.h"
#include "tests/accuracy/bands.h"
#include "topologies/reshape.h"

namespace collkit {
namespace {

struct Shaped {
  testing::TableRun run;
  ClusterShape shape;
};

struct Check {
  Shaped table;
  double bound[2];  // 1-64 MiB, >= 64 MiB: percent
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string shape_name(ClusterShape s) {
  return std::to_string(s.nodes) + "x" + std::to_string(s.devices);
}

// Fits `fit` on the cluster file, then checks each table of `checks`.
void fit_then_check(const std::string& cluster, const std::vector<Shaped>& fit,
                    const std::vector<Check>& checks, int starts = 2) {
  const std::string file = std::string(COLLKIT_SOURCE_DIR) + "/topologies/" + cluster + ".json";
  const std::string base_text = slurp(file);
  const std::unique_ptr<Topology> base = parse_topology(base_text, file);
  std::vector<CalibrationInput> inputs;
  for (const Shaped& f : fit) {
    ReadOptions read;
    read.collective = f.run.collective;
    read.ranks = f.run.ranks;
    CalibrationInput in;
    in.file = f.run.file;
    in.report = combine_runs(read_runs(testing::kNcclTestsData + f.run.file, read));
    in.network = parse_topology(reshape_topology_text(base_text, file, f.shape), file);
    in.shape = shape_name(f.shape);
    inputs.push_back(std::move(in));
  }
  CalibrateOptions options;
  options.jobs = 0;
  options.starts = starts;
  const CalibrationResult r = calibrate(inputs, *base, options);
  std::printf("%s",
              format_calibration(r).substr(0, format_calibration(r).find("# collective")).c_str());
  const std::string fitted = fitted_topology_text(base_text, file, *base, r, "fitted");
  for (const Check& c : checks) {
    const std::unique_ptr<Topology> before =
        parse_topology(reshape_topology_text(base_text, file, c.table.shape), file);
    const std::unique_ptr<Topology> after =
        parse_topology(reshape_topology_text(fitted, file, c.table.shape), file);
    const testing::TableBands b = testing::table_bands(c.table.run, *before);
    const testing::TableBands a = testing::table_bands(c.table.run, *after);
    for (int band = 1; band <= 2; ++band) {
      const BandSummary& x = b.compare.bands[static_cast<std::size_t>(band)];
      const BandSummary& y = a.compare.bands[static_cast<std::size_t>(band)];
      ASSERT_GT(y.rows, 0u) << c.table.run.file << " " << y.name;
      std::printf("%-62s %-6s %-15s uncalibrated %5.1f%%  calibrated %5.1f%%  (target %s)\n",
                  c.table.run.file.c_str(), shape_name(c.table.shape).c_str(), y.name.c_str(),
                  100 * x.median_abs_error, 100 * y.median_abs_error, band == 1 ? "10%" : "5%");
      EXPECT_LE(100 * y.median_abs_error, c.bound[band - 1]) << c.table.run.file << " " << y.name;
    }
  }
}

// NVIDIA/nccl-tests issue 309, gj-aion's cluster (defaults; NCCL's version
// not printed): its 2-node run fits the cluster; its 4- and 8-node runs check.
// 1-64 MiB at the target (10%). The >= 64 MiB bounds are today's error
// (target 5%): from 512 MiB the larger runs use the ring over all 8 NICs,
// which moves about 40 GB/s a NIC there, and the 2-node run (NVLSTree at
// every size, limited by the NVLS switch) does not measure the NICs, so the
// fit keeps their 48 (docs/ACCURACY.md, "Calibrated on a small run").
TEST(CalibrationScales, TwoNodesPredictFourAndEight) {
  const auto ar = [](const char* f, int ranks) {
    return testing::TableRun{f, Collective::all_reduce, ranks, "nccl", DataType::float32, 1};
  };
  fit_then_check(
      "h100-cluster-16x8",
      {{ar("h100x16_2node_allreduce_nccl-tests-issue309-gjaion.txt", 16), {2, 8}}},
      {{{ar("h100x32_4node_allreduce_nccl-tests-issue309-gjaion.txt", 32), {4, 8}}, {10, 16}},
       {{ar("h100x64_8node_allreduce_nccl-tests-issue309-gjaion.txt", 64), {8, 8}}, {10, 15}}});
}

// xxrjun/nccl-tests-cluster, cluster01 (NCCL 2.29.2): a node alone, 10
// nodes x 1 GPU and x 2 GPUs fit the cluster; 10 x 4 and 10 x 8 check.
// The fit does not carry here (docs/ACCURACY.md, "Calibrated on a small
// run": the larger runs pay costs that runs of 1 or 2 GPUs a node never
// show); the bounds hold today's error so that it cannot get worse
// unnoticed, and one start keeps the fit to about a minute.
TEST(CalibrationScales, OneAndTwoGpusANodePredictFourAndEight) {
  const auto t = [](const char* f, Collective c, int ranks) {
    return testing::TableRun{f, c, ranks, "nccl", DataType::float64, 1};
  };
  const Collective ar = Collective::all_reduce, ag = Collective::all_gather;
  fit_then_check(
      "h100-cluster-16x8",
      {{t("h100x8_allreduce_xxrjun-cluster01-cnode3-002.txt", ar, 8), {1, 8}},
       {t("h100x8_allgather_xxrjun-cluster01-cnode3-002.txt", ag, 8), {1, 8}},
       {t("h100x10_10node-1pernode_allreduce_xxrjun-cluster01.txt", ar, 10), {10, 1}},
       {t("h100x10_10node-1pernode_allgather_xxrjun-cluster01.txt", ag, 10), {10, 1}},
       {t("h100x20_10node-2pernode_allreduce_xxrjun-cluster01.txt", ar, 20), {10, 2}},
       {t("h100x20_10node-2pernode_allgather_xxrjun-cluster01.txt", ag, 20), {10, 2}}},
      {{{t("h100x40_10node-4pernode_allreduce_xxrjun-cluster01.txt", ar, 40), {10, 4}}, {35, 5}},
       {{t("h100x40_10node-4pernode_allgather_xxrjun-cluster01.txt", ag, 40), {10, 4}}, {13, 5}},
       {{t("h100x80_10node_allreduce_xxrjun-cluster01.txt", ar, 80), {10, 8}}, {55, 20}},
       {{t("h100x80_10node_allgather_xxrjun-cluster01.txt", ag, 80), {10, 8}}, {42, 26}}},
      1);
}

}  // namespace
}  // namespace collkit
