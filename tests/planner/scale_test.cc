// The layer planner at scale: GPT-3 175B on 1024 H100 (128 nodes of 8),
// against figures computed by hand. Its own executable so that the asan test
// preset can leave it out (label scale, docs/QUALITY.md): it prices hundreds
// of collectives on 1024 ranks, which under ASan took about 240 s of CPU
// for code paths that the planner's other tests run there.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "planner/planner.h"
#include "planner/planner_model.h"
#include "planner_test_util.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

using testing_planner::layer;
using testing_planner::model;
using testing_planner::source;

// GPT-3 175B on 128 DGX H100 (1024 GPUs, 80 GiB each), global batch 2048,
// no device file: matrix products at the flat 400 TFLOP/s, memory-bound work
// not priced, so the compute is FLOPs over the rate, by hand.
TEST(PlannerGpt3, FitsOn1024H100WithTensorAndPipelineParallel) {
  const auto topo = load_topology(source("topologies/h100-cluster-128x8.json"));
  ASSERT_EQ(topo->num_ranks(), 1024);
  const Model m = model("gpt3-175b");
  PlanOptions o;
  o.ranks = 1024;
  o.batch = 2048;
  const PlanResult r = make_plan(m, *topo, o);
  EXPECT_EQ(r.devices_per_node, 8);
  const double usable = 80.0 * (1ull << 30) - default_memory_reserve(80.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(r.usable_memory, usable);

  // dp, zero1 and zero2 over all 1024 ranks do not fit: their model states
  // alone (the ZeRO table's, by hand) are more than the device.
  const double psi = 174604259328.0;
  const double expected_states[] = {16 * psi, 4 * psi + 12 * psi / 1024, 2 * psi + 14 * psi / 1024};
  for (int z = 0; z < 3; ++z) {
    const Alternative& a = r.uniform[z];
    ASSERT_TRUE(a.valid) << a.name;
    EXPECT_FALSE(a.fits) << a.name;
    EXPECT_NEAR(a.memory.params + a.memory.grads + a.memory.optimizer, expected_states[z],
                1e-9 * psi)
        << a.name;
  }

  ASSERT_TRUE(r.fits);
  const Plan& p = r.plan;
  // Tensor parallelism inside a node, pipeline stages of whole nodes.
  EXPECT_GT(p.layout.tp, 1);
  EXPECT_EQ(8 % p.layout.tp, 0);
  EXPECT_GT(p.layout.pp, 1);
  EXPECT_LE(p.ranks_used(), 1024);
  EXPECT_EQ(2048 % (p.layout.dp * p.layout.micro_batch), 0);
  EXPECT_EQ(p.layout.micro_batches * p.layout.micro_batch * p.layout.dp, 2048);
  EXPECT_LE(p.memory.total(), usable);
  EXPECT_DOUBLE_EQ(p.bubble, (p.layout.pp - 1.0) / (p.layout.virtual_stages *
                                                    static_cast<double>(p.layout.micro_batches)));
  ASSERT_EQ(layer(r, "blocks").choice.strategy, Strategy::tensor_parallel);

  // The step is the sum of its parts.
  const StepBreakdown& b = p.step;
  EXPECT_NEAR(p.step_time(), b.compute + b.tp + b.pp + b.dp + b.bubble + b.optimizer,
              1e-12 * p.step_time());
  EXPECT_GT(b.tp, 0);

  // Compute of the critical stage by hand: its blocks, each forward +
  // backward = 3 x the forward FLOPs (24 s h^2 + 4 s^2 h per sample, split
  // over the tensor-parallel ranks) per micro-batch at 400 TFLOP/s, plus the
  // forward again under full recomputation or the attention core under
  // selective; the embedding and the norm are memory-bound (not priced).
  const double h = 12288, s = 2048;
  const double block = 24 * s * h * h + 4 * s * s * h;
  EXPECT_DOUBLE_EQ(static_cast<double>(m.layers[1].flops), block);
  const double t = p.layout.tp;
  const double mb = static_cast<double>(p.layout.micro_batch);
  double per = 3 * block;
  if (p.layout.recompute == Recompute::full) per += block;
  if (p.layout.recompute == Recompute::selective) per += 4 * s * s * h;
  const double k = static_cast<double>(layer(r, "blocks").instances_per_rank);
  EXPECT_EQ(k, std::ceil(96.0 / p.layout.pp));
  const double expected = static_cast<double>(p.layout.micro_batches) * k * per * mb / t / 400e12;
  EXPECT_NEAR(b.compute, expected, 1e-9 * expected);
  // The bubble: the other stages' per-micro-batch time, (p - 1) of them, over
  // v (every stage the same compute here; the first and the last add their
  // embedding and norm collectives).
  EXPECT_GE(b.bubble, (p.layout.pp - 1) * expected / static_cast<double>(p.layout.micro_batches) /
                          p.layout.virtual_stages * (1 - 1e-9));
}

}  // namespace
}  // namespace collkit
