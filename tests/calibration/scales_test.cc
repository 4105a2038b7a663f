// Calibration that carries across scale: runs of one cluster at several
// sizes (a node alone, fewer GPUs a node: FILE@NODESxGPUS) are fitted
// together on the cluster's base, each simulated on the base resized to its
// shape; the fit is the base's figures, so the fitted file resized to a
// size never measured predicts it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "calibration/calibrate.h"
#include "core/error.h"
#include "core/json.h"
#include "reports/sweep_report.h"
#include "sim/sweep.h"
#include "topologies/reshape.h"

namespace collkit {
namespace {

// A cluster of 2 nodes x 4 GPUs: a switch inside each node, one NIC per
// GPU on rail switches, the GPU protocols of the shipped files.
std::string cluster(double nvlink_gbps, double nic_gbps, double nic_us, double base_us) {
  return R"({"name": "c", "endpoint": {"pipelined": true, "reduce_gbps": 1000},
    "protocols": {"default": "Simple",
      "Simple": {"efficiency": 1.0, "base_latency_us": )" +
         std::to_string(base_us) + R"(, "chunk_kib": 512}},
    "generator": {"kind": "hierarchical", "nodes": 2, "devices_per_node": 4,
      "intra": {"kind": "switch", "bandwidth_gbps": )" +
         std::to_string(nvlink_gbps) + R"(, "latency_us": 0.5},
      "nics_per_node": 4, "rail_optimized": true,
      "inter": {"kind": "switch", "bandwidth_gbps": )" +
         std::to_string(nic_gbps) + R"(, "latency_us": )" + std::to_string(nic_us) + "}}}";
}

const std::string kTruth = cluster(300, 40, 2.5, 12);
const std::string kBase = cluster(200, 20, 1.0, 5);

std::shared_ptr<const Topology> at(const std::string& text, ClusterShape shape) {
  return parse_topology(
      reshape_topology_text(text, "c.json", shape),
      "c.json@" + std::to_string(shape.nodes) + "x" + std::to_string(shape.devices));
}

// What nccl-tests would measure on the truth: ring and recursive doubling
// all_reduce and all_gather at `sizes`, segments cut as calibrate cuts
// them on `base`; appended to in.report.
void measure_rings(const Topology& truth, const Topology& base, std::vector<std::int64_t> sizes,
                   CalibrationInput& in) {
  for (Collective c : {Collective::all_reduce, Collective::all_gather}) {
    SweepSpec sweep;
    sweep.collective = c;
    sweep.algorithms = {"ring", "recursive_doubling"};
    sweep.ranks = truth.num_ranks();
    sweep.sizes = sizes;
    sweep.model = cost_params_of(base, sweep.ranks);
    Report r = simulate_report(sweep, truth, {});
    r.mode = ReportMode::measure;
    r.topology.reset();
    in.report.results.insert(in.report.results.end(), r.results.begin(), r.results.end());
    in.report.mode = ReportMode::measure;
    in.report.ranks = r.ranks;
  }
}

// What nccl-tests would measure on the truth at `shape`: ring all_reduce
// and all_gather at several sizes.
CalibrationInput measured(ClusterShape shape, const std::shared_ptr<const Topology>& base_at) {
  const std::shared_ptr<const Topology> truth = at(kTruth, shape);
  CalibrationInput in;
  in.file = "m" + std::to_string(shape.nodes) + "x" + std::to_string(shape.devices) + ".json";
  in.network = base_at;
  in.shape = std::to_string(shape.nodes) + "x" + std::to_string(shape.devices);
  measure_rings(*truth, *base_at, {65536, 1 << 20, 16 << 20, 64 << 20}, in);
  return in;
}

TEST(CalibrationScales, SmallRunsFitTheClusterThatPredictsTheLargeOne) {
  const std::unique_ptr<Topology> base = parse_topology(kBase, "c.json");
  // A node alone (NVLink only) and one GPU a node on two nodes (NICs only):
  // together they tell every figure.
  std::vector<CalibrationInput> in = {measured({1, 4}, at(kBase, {1, 4})),
                                      measured({2, 1}, at(kBase, {2, 1}))};
  const CalibrationResult r = calibrate(in, *base);
  // The descent stops once it stalls (docs/REPORTS.md): close to the
  // truth, not onto it.
  EXPECT_LT(r.median_abs_error, 1e-3) << format_calibration(r);
  EXPECT_LT(r.max_abs_error, 0.05) << format_calibration(r);
  EXPECT_TRUE(r.problems.empty()) << format_calibration(r);
  bool nvlink = false, nic = false, simple = false;
  for (const FittedParam& p : r.params) {
    if (p.kind == ParamKind::bandwidth && p.base == 200e9)
      nvlink = std::abs(p.fitted / 300e9 - 1) < 0.01;
    if (p.kind == ParamKind::bandwidth && p.base == 20e9 && p.constrained)
      nic = std::abs(p.fitted / 40e9 - 1) < 0.01;
    if (p.kind == ParamKind::base_latency) simple = std::abs(p.fitted / 12e-6 - 1) < 0.01;
  }
  EXPECT_TRUE(nvlink);
  EXPECT_TRUE(nic);
  EXPECT_TRUE(simple);

  // The fitted file, resized to the 2 x 4 cluster never measured, gives
  // the truth's times there.
  const std::string fitted = fitted_topology_text(kBase, "c.json", *base, r, "fitted");
  const std::shared_ptr<const Topology> big = at(fitted, {2, 4});
  const std::shared_ptr<const Topology> truth = at(kTruth, {2, 4});
  SweepSpec sweep;
  sweep.collective = Collective::all_reduce;
  sweep.algorithms = {"ring"};
  sweep.ranks = 8;
  sweep.sizes = {1 << 20, 64 << 20};
  sweep.model = cost_params_of(*truth, 8);
  const Report want = simulate_report(sweep, *truth, {});
  const Report got = simulate_report(sweep, *big, {});
  ASSERT_EQ(want.results.size(), got.results.size());
  for (std::size_t i = 0; i < want.results.size(); ++i)
    EXPECT_NEAR(got.results[i].time_us / want.results[i].time_us, 1, 0.01) << i;
}

TEST(CalibrationScales, RunsMustMatchTheirShapeAndTheBasesLinks) {
  const std::unique_ptr<Topology> base = parse_topology(kBase, "c.json");
  // A 1 x 4 run said to be 2 x 1: its rank count is not the network's.
  CalibrationInput wrong = measured({1, 4}, at(kBase, {2, 1}));
  try {
    calibrate({wrong}, *base);
    ADD_FAILURE() << "no error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("ranks: 4, but the topology has 2 ranks"),
              std::string::npos)
        << e.what();
  }
  // A run on a network with a kind of link the base lacks (another NIC rate).
  CalibrationInput other = measured({2, 1}, at(cluster(200, 25, 1.0, 5), {2, 1}));
  try {
    calibrate({measured({1, 4}, at(kBase, {1, 4})), other}, *base);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("a kind of link the base does not have"),
              std::string::npos)
        << e.what();
  }
  // Shapes.
  EXPECT_EQ(parse_cluster_shape("10x2", "x").nodes, 10);
  EXPECT_EQ(parse_cluster_shape("10x2", "x").devices, 2);
  for (const char* bad : {"10", "x2", "10x", "0x2", "10x-1", "10x2x3", "ax2"})
    EXPECT_THROW(parse_cluster_shape(bad, "measured"), UsageError) << bad;
  EXPECT_THROW(reshape_topology_text(kBase, "c.json", {2, 8}), FileError);
  EXPECT_THROW(
      reshape_topology_text(R"({"generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": 1}})",
                            "r.json", {2, 1}),
      FileError);
}

// --topology FILE@NODESxGPUS: every command's loader resizes the file the
// same way; a file whose name holds the '@' is read as itself.
TEST(Scales, LoaderTakesTheShapeAfterTheFile) {
  const std::string dir = testing::TempDir() + "collkit_scales_loader";
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/c.json";
  std::ofstream(file) << kBase;
  EXPECT_EQ(load_topology(file)->num_ranks(), 8);
  EXPECT_EQ(load_topology(file + "@3x4")->num_ranks(), 12);
  EXPECT_EQ(load_topology(file + "@5x1")->num_ranks(), 5);
  const std::unique_ptr<Topology> one = load_topology(file + "@1x2");
  EXPECT_EQ(one->num_ranks(), 2);
  // The 1x2 network is the resized text parsed: the same as parsing it.
  EXPECT_EQ(one->num_nodes(), at(kBase, {1, 2})->num_nodes());
  EXPECT_THROW(load_topology(file + "@4xq"), UsageError);
  EXPECT_THROW(load_topology(file + "@2x8"), FileError);
  EXPECT_THROW(load_topology(dir + "/missing.json@2x2"), FileError);
  // A file named like a shape is itself.
  std::string three = kBase;
  three.replace(three.find("\"nodes\": 2"), 10, "\"nodes\": 3");
  std::ofstream(file + "@2x2") << three;
  EXPECT_EQ(load_topology(file + "@2x2")->num_ranks(), 12);
  std::filesystem::remove_all(dir);
}

// A cluster file of NCCL's form: per-protocol latencies on the links
// (NVLink hop and network hop), none on the GPU's path to its NIC.
std::string nccl_form(double intra_us, double inter_us, double simple_scale) {
  const auto num = [](double v) { return std::to_string(v); };
  return R"({"name": "g", "endpoint": {"pipelined": true, "reduce_gbps": 1000},
    "protocols": {"default": "Simple",
      "LL128": {"efficiency": 0.9375, "base_latency_us": 14, "chunk_kib": 576},
      "Simple": {"efficiency": 1.0, "base_latency_us": 8.4, "chunk_kib": 512}},
    "generator": {"kind": "hierarchical", "nodes": 2, "devices_per_node": 4,
      "intra": {"kind": "switch", "bandwidth_gbps": 300, "latency_us": )" +
         num(intra_us) + R"(, "protocol_latency_us": {"LL128": 0.95, "Simple": )" +
         num(1.7 * simple_scale) + R"(}},
      "nics_per_node": 4, "rail_optimized": true,
      "inter": {"kind": "switch", "bandwidth_gbps": 40, "latency_us": )" +
         num(inter_us) + R"(, "protocol_latency_us": {"LL128": 2.0, "Simple": )" +
         num(7.0 * simple_scale) + "}}}}";
}

// A fit changes only what its rows measure (docs/REPORTS.md, "What a GPU
// fit leaves alone"): rows of Simple only, on GPU endpoints, fit Simple's
// per-hop latencies, not LL128's; no per-message overhead; and the NIC
// path without NCCL's figures keeps its latency of 0.
TEST(CalibrationScales, AGpuFitChangesOnlyWhatItsRowsMeasure) {
  const std::string truth_text = nccl_form(0.6, 2.7, 2.0);
  const std::string base_text = nccl_form(0.3, 1.35, 1.0);
  const std::unique_ptr<Topology> truth = parse_topology(truth_text, "g.json");
  const std::unique_ptr<Topology> base = parse_topology(base_text, "g.json");
  CalibrationInput in;
  in.file = "m.json";
  measure_rings(*truth, *base, {4096, 65536, 1 << 20, 16 << 20}, in);
  CalibrateOptions options;
  options.starts = 1;
  const CalibrationResult r = calibrate({in}, *base, options);
  int latencies = 0;
  for (const FittedParam& p : r.params) {
    EXPECT_NE(p.kind, ParamKind::overhead) << p.name;
    if (p.kind == ParamKind::latency) ++latencies;
  }
  // NVLink's and the network's links: not the GPU-to-NIC class.
  EXPECT_EQ(latencies, 2);
  const Json j = Json::parse(fitted_topology_text(base_text, "g.json", *base, r, "fit"));
  const Json& g = j["generator"];
  for (const char* side : {"intra", "inter"}) {
    const Json& pl = g[side]["protocol_latency_us"];
    const double base_ll128 = std::string(side) == "intra" ? 0.95 : 2.0;
    const double base_simple = std::string(side) == "intra" ? 1.7 : 7.0;
    const double ratio =
        g[side]["latency_us"].get<double>() / (std::string(side) == "intra" ? 0.3 : 1.35);
    EXPECT_DOUBLE_EQ(pl["LL128"].get<double>(), base_ll128) << side;
    EXPECT_NEAR(pl["Simple"].get<double>(), base_simple * ratio, 1e-9 * base_simple * ratio)
        << side;
  }
  EXPECT_FALSE(g.contains("nic_latency_us") && g["nic_latency_us"].get<double>() != 0);
  EXPECT_DOUBLE_EQ(j["endpoint"].value("overhead_us", 0.0), 0.0);
  // The fit moved Simple's hop toward the truth's doubled figures.
  EXPECT_GT(g["inter"]["protocol_latency_us"]["Simple"].get<double>(), 7.0);
  // And it loads as the fitted network.
  const std::unique_ptr<Topology> fit = parse_topology(j.dump(), "fit.json");
  EXPECT_EQ(fit->num_ranks(), 8);
}

}  // namespace
}  // namespace collkit
