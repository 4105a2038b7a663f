// The planner's predicted step against published training runs: the ten
// rows of Narayanan et al., SC21, Table 1 (tests/data/training/), each at
// its published layout, priced with one device file (A100-SXM4-80GB) and
// Megatron-LM's behaviour as the authors ran it (docs/PLANNER.md,
// "Validation"). Nothing here is set per row, and nothing in the device file
// is fitted to these rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "planner/device.h"
#include "planner/planner.h"
#include "planner/planner_model.h"
#include "planner_test_util.h"
#include "sc21_rows.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

using testing_planner::model_file;
using testing_planner::Row;
using testing_planner::sc21_options;
using testing_planner::source;
using testing_planner::table1;

// The error of each row as last measured (2026-11-28, third session:
// docs/PLANNER.md, "Validation").
double measured_error(const std::string& model) {
  static const std::map<std::string, double> errors{
      {"GPT 1.7B", 0.028}, {"GPT 3.6B", 0.039}, {"GPT 7.5B", 0.043}, {"GPT 18B", 0.063},
      {"GPT 39B", 0.015},  {"GPT 76B", 0.085},  {"GPT 145B", 0.030}, {"GPT 310B", 0.027},
      {"GPT 530B", 0.016}, {"GPT 1T", -0.027}};
  return errors.at(model);
}

TEST(Sc21Table1, PredictedThroughputAgainstPublished) {
  const Device a100 = load_device(source("devices/a100-sxm4-80gb.json"));
  const std::vector<Row> rows = table1();
  ASSERT_EQ(rows.size(), 10u);
  std::vector<double> errors;
  struct Parts {
    std::string model;
    double gemm, elementwise, compute, tp, pp, dp, bubble, optimizer;
  };
  std::vector<Parts> breakdown;
  std::printf("%-9s %5s %3s %3s %2s %9s %9s %7s %8s\n", "model", "GPUs", "tp", "pp", "v",
              "published", "predicted", "error", "step(s)");
  for (const Row& r : rows) {
    const auto topo = load_topology(source("topologies/a100-cluster-384x8.json"), r.gpus);
    const Model m = load_model(model_file(r.model));
    // The model file's parameters, to the table's one decimal.
    EXPECT_DOUBLE_EQ(std::round(static_cast<double>(m.total_params()) / 1e8) / 10, r.params_b)
        << r.model;
    const PlanOptions o = sc21_options(r, a100);
    const PlanResult res = make_plan(m, *topo, o);
    const Plan& p = res.plan;
    ASSERT_EQ(p.layout.tp, r.tp) << r.model;
    ASSERT_EQ(p.layout.pp, r.pp) << r.model;
    ASSERT_EQ(p.ranks_used(), r.gpus) << r.model;
    EXPECT_TRUE(p.fits) << r.model;
    // The paper's FLOPs per step with recomputation, by hand:
    // 96 B s l h^2 (1 + s / 6h + V / 16 l h).
    const double B = static_cast<double>(r.batch), s = r.seq, l = r.layers, h = r.hidden,
                 V = r.vocab;
    const double flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    EXPECT_NEAR(p.hardware_flops, flops, 1e-9 * flops) << r.model;
    const double tflops = flops / p.step_time() / r.gpus / 1e12;
    const Throughput th = throughput(p, res, o);
    EXPECT_NEAR(th.hardware_tflops_per_gpu, tflops, 1e-9 * tflops) << r.model;
    const double err = tflops / r.tflops - 1;
    errors.push_back(std::abs(err));
    std::printf("%-9s %5d %3d %3d %2d %9.0f %9.1f %+6.1f%% %8.2f\n", r.model.c_str(), r.gpus, r.tp,
                r.pp, p.layout.virtual_stages, r.tflops, tflops, err * 100, p.step_time());
    // Where the step goes: the blocks' matrix products and memory-bound
    // kernels on one rank (layers per stage x micro-batches; the first and
    // last stage's embedding, head and loss are in "compute" only), then
    // the parts of the step.
    const LayerPlan* blocks = nullptr;
    for (const LayerPlan& lp : p.layers)
      if (lp.repeat > 1) blocks = &lp;
    ASSERT_NE(blocks, nullptr);
    const double per_rank =
        static_cast<double>(blocks->repeat) / r.pp * static_cast<double>(p.layout.micro_batches);
    const StepBreakdown& st = p.step;
    breakdown.push_back({r.model, per_rank * blocks->compute.gemm,
                         per_rank * blocks->compute.elementwise, st.compute, st.tp, st.pp, st.dp,
                         st.bubble, st.optimizer});
    // Measured now (docs/PLANNER.md, "Validation"), held to a percentage
    // point either way so that a change to the model shows here; and the
    // issue's target, 10% on every row.
    EXPECT_NEAR(err, measured_error(r.model), 0.01) << r.model;
    EXPECT_LT(std::abs(err), 0.10) << r.model;
  }
  std::printf("\nseconds per step: %-9s %7s %7s %7s %6s %6s %6s %6s %6s\n", "model", "gemm",
              "elemwise", "compute", "tp", "pp", "dp", "bubble", "optim");
  for (const Parts& b : breakdown)
    std::printf("seconds per step: %-9s %7.2f %7.2f %7.2f %6.2f %6.2f %6.2f %6.2f %6.2f\n",
                b.model.c_str(), b.gemm, b.elementwise, b.compute, b.tp, b.pp, b.dp, b.bubble,
                b.optimizer);
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  const double median = (sorted[4] + sorted[5]) / 2;
  std::printf("median |error| %.1f%%, largest %.1f%%\n", median * 100, sorted.back() * 100);
  // Measured 2.9%; the target is 5%.
  EXPECT_LT(median, 0.04);
}

}  // namespace
}  // namespace collkit
