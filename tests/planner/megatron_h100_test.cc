// The planner's predicted step against a second set of published runs,
// measured only: Megatron-Core's weak scaling on H100 (NVIDIA/Megatron-LM
// README, images/model_table.png, commit 937571cf, 2024-07-15; nine GPT
// models of 1.7 B to 462 B parameters on 48 to 6,144 H100 GPUs,
// tests/data/training/). Nothing in the device file or the planner was set
// from these rows; what the README does not state (micro-batch, virtual
// stages, recomputation) is assumed as below and named in docs/PLANNER.md,
// "Validation: Megatron-Core on H100". The bounds hold today's errors so
// that a change to the model shows here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "planner/device.h"
#include "planner/planner.h"
#include "planner/planner_model.h"
#include "planner_test_util.h"
#include "sc21_rows.h"
#include "topologies/reshape.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

using testing_planner::fields;
using testing_planner::source;

struct H100Row {
  std::string model;
  double params_b = 0;
  int heads = 0, hidden = 0, layers = 0, tp = 0, pp = 0, dp = 0, gpus = 0;
  std::int64_t batch = 0;
  double tflops = 0;  // published, per GPU (Megatron's formula, no recomputation)
};

std::vector<H100Row> rows() {
  std::ifstream in(source("tests/data/training/megatron_core_h100_weak_scaling.csv"));
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> head = fields(line);
  const auto col = [&](const char* name) { return testing_planner::column(head, name); };
  std::vector<H100Row> out;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> f = fields(line);
    H100Row r;
    r.model = f[col("model")];
    r.params_b = std::stod(f[col("params_B")]);
    r.heads = std::stoi(f[col("heads")]);
    r.hidden = std::stoi(f[col("hidden")]);
    r.layers = std::stoi(f[col("layers")]);
    r.tp = std::stoi(f[col("tp")]);
    r.pp = std::stoi(f[col("pp")]);
    r.dp = std::stoi(f[col("dp")]);
    r.gpus = std::stoi(f[col("gpus")]);
    r.batch = std::stoll(f[col("global_batch")]);
    r.tflops = std::stod(f[col("tflops_per_gpu")]);
    out.push_back(r);
  }
  return out;
}

constexpr int kSeq = 4096;
constexpr int kVocab = 131072;

// The README's GPT: vocabulary 131,072, sequence 4,096, MLP 4h, input and
// output embeddings untied (the parameter counts say so: 7.1 B is 6.04 B of
// blocks and two 0.54 B embeddings), learned positions and dropout as
// Megatron-Core's defaults.
Model gpt(const H100Row& r) {
  const std::string h = std::to_string(r.hidden);
  const std::string text =
      R"({"name": ")" + r.model + R"(", "layers": [
    {"name": "embed", "kind": "embedding", "shape": {"vocab": 131072, "dim": )" +
      h + R"(, "tokens": 4096, "positions": 4096}},
    {"name": "blocks", "kind": "transformer_block", "shape": {"hidden": )" +
      h + R"(, "ffn": )" + std::to_string(4 * r.hidden) + R"(, "heads": )" +
      std::to_string(r.heads) + R"(, "seq": 4096, "dropout": true}, "repeat": )" +
      std::to_string(r.layers) + R"(},
    {"name": "final_norm", "kind": "norm", "shape": {"dim": )" +
      h + R"(, "tokens": 4096}},
    {"name": "lm_head", "kind": "linear", "shape": {"in_features": )" +
      h +
      R"(, "out_features": 131072, "tokens": 4096, "bias": false, "head": true, "tied": false}}
  ]})";
  return parse_model(text, r.model);
}

// Megatron-Core as the README ran it: bf16, Transformer Engine's fused
// attention, gradient reduction and parameter all_gather overlapped
// (--overlap-grad-reduce --overlap-param-gather: the distributed optimizer,
// ZeRO-1), tensor-parallel communication overlapped (--tp-comm-overlap,
// which needs sequence parallelism), pipeline sends overlapped, gradient
// accumulation fused. Assumed (not stated): micro-batch 1, no interleaving,
// no recomputation.
PlanOptions options(const H100Row& r, const Device& h100) {
  PlanOptions o;
  o.ranks = r.gpus;
  o.batch = r.batch;
  o.micro_batch = 1;
  o.dtype = DataType::bfloat16;
  o.device = h100;
  o.device_memory = h100.memory_bytes;
  o.nccl = true;
  o.recompute = Recompute::none;
  o.step.attention = AttentionKernel::flash;
  o.step.overlap_grad_reduce = o.step.overlap_param_gather = o.step.overlap_p2p = true;
  o.step.overlap_tp = true;
  o.step.fused_grad_accumulation = true;
  UserLayout u;
  u.tp = r.tp;
  u.pp = r.pp;
  u.dp = r.dp;
  u.zero = 1;
  u.micro_batch = 1;
  u.sequence_parallel = r.tp > 1;
  o.user = u;
  o.search = false;
  return o;
}

// Today's error of each row (2026-11-29; docs/PLANNER.md): every row 20-43%
// fast. The H100's matmul efficiency (0.803) is still the best of a
// brute-force shape search on 2025 software, an upper bound over shapes,
// as the A100's was when SC21's rows came out 13-27% fast
// (docs/DEVICES.md); the issue's 10% is not met here.
double measured_error(const std::string& model) {
  static const std::map<std::string, double> errors{
      {"GPT 1.7B", 0.425}, {"GPT 7.1B", 0.419}, {"GPT 16B", 0.311},
      {"GPT 32B", 0.207},  {"GPT 70B", 0.339},  {"GPT 119B", 0.319},
      {"GPT 177B", 0.305}, {"GPT 314B", 0.201}, {"GPT 462B", 0.226}};
  return errors.at(model);
}

TEST(MegatronCoreH100, PredictedThroughputAgainstPublished) {
  const Device h100 = load_device(source("devices/h100-sxm5-80gb.json"));
  const std::string file = source("topologies/h100-cluster-16x8.json");
  std::ifstream in(file);
  const std::string base((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<H100Row> table = rows();
  ASSERT_EQ(table.size(), 9u);
  std::vector<double> errors;
  std::printf("%-9s %5s %3s %3s %3s %9s %9s %7s %8s %s\n", "model", "GPUs", "tp", "pp", "dp",
              "published", "predicted", "error", "step(s)", "fits");
  for (const H100Row& r : table) {
    const Model m = gpt(r);
    EXPECT_NEAR(static_cast<double>(m.total_params()) / 1e9, r.params_b, 0.05 * r.params_b)
        << r.model;
    const auto topo = parse_topology(reshape_topology_text(base, file, {r.gpus / 8, 8}), file);
    const PlanOptions o = options(r, h100);
    const PlanResult res = make_plan(m, *topo, o);
    const Plan& p = res.plan;
    ASSERT_EQ(p.ranks_used(), r.gpus) << r.model;
    // Megatron's FLOPs per step (megatron/training/training.py,
    // num_floating_point_operations, no recomputation, MLP 4h, no GQA):
    // 72 B s l h^2 (1 + s / 6h + V / 12 l h).
    const double B = static_cast<double>(r.batch), s = kSeq, l = r.layers, h = r.hidden, V = kVocab;
    const double flops = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    const double tflops = flops / p.step_time() / r.gpus / 1e12;
    const double err = tflops / r.tflops - 1;
    errors.push_back(std::abs(err));
    std::printf("%-9s %5d %3d %3d %3d %9.1f %9.1f %+6.1f%% %8.2f %s\n", r.model.c_str(), r.gpus,
                r.tp, r.pp, r.dp, r.tflops, tflops, err * 100, p.step_time(),
                p.fits ? "yes" : "no");
    EXPECT_NEAR(err, measured_error(r.model), 0.01) << r.model;
  }
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  std::printf("median |error| %.1f%%, largest %.1f%%\n", sorted[sorted.size() / 2] * 100,
              sorted.back() * 100);
}

}  // namespace
}  // namespace collkit
