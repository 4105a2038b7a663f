// The layer planner at scale: GPT-3 175B on 1024 H100 (128 nodes of 8),
// against figures computed by hand. Its own executable so that the asan test
// preset can leave it out (label scale, docs/QUALITY.md): it prices hundreds
// of collectives on 1024 ranks, which under ASan took about 240 s of CPU
// for code paths that the planner's other tests run there.
#include <gtest/gtest.h>

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

// GPT-3 175B on 128 DGX H100 (1024 GPUs, 80 GiB each), global batch 2048.
TEST(PlannerGpt3, FitsOn1024H100WithTensorAndPipelineParallel) {
  const auto topo = load_topology(source("topologies/h100-cluster-128x8.json"));
  ASSERT_EQ(topo->num_ranks(), 1024);
  const Model m = model("gpt3-175b");
  PlanOptions o;
  o.ranks = 1024;
  o.batch = 2048;
  const double device = 80.0 * (1ull << 30);
  const PlanResult r = make_plan(m, *topo, o);
  EXPECT_EQ(r.devices_per_node, 8);

  // dp, zero1 and zero2 over all 1024 ranks do not fit; each one's memory is shown.
  const double psi = 174604259328.0;
  // The chosen micro-batch (1 sample), every layer output, bf16.
  const double uniform_act = 1.0 * 2048 * 12288 * 2 * (96 + 2);
  const double expected_uniform[] = {16 * psi, 4 * psi + 12 * psi / 1024,
                                     2 * psi + 14 * psi / 1024};
  for (int z = 0; z < 3; ++z) {
    const Alternative& a = r.uniform[z];
    ASSERT_TRUE(a.valid) << a.name;
    EXPECT_FALSE(a.fits) << a.name;
    EXPECT_NEAR(a.memory.total(), expected_uniform[z] + uniform_act, 1e-6 * a.memory.total())
        << a.name;
    EXPECT_GT(a.memory.total(), device);
  }

  ASSERT_TRUE(r.fits);
  const Plan& p = r.plan;
  // Nothing fits without ZeRO-3 at pp = 1, so pipelines compete, and win on
  // communication plus bubble: Megatron over 4 GPUs, 16 stages of 8 nodes,
  // data parallel over 16, micro-batches of 1 sample, 128 per step.
  ASSERT_EQ(p.layout.tp, 4);
  ASSERT_EQ(p.layout.pp, 16);
  ASSERT_EQ(p.layout.dp, 16);
  ASSERT_EQ(p.layout.micro_batch, 1);
  ASSERT_EQ(p.layout.micro_batches, 128);
  EXPECT_DOUBLE_EQ(p.bubble, 15.0 / 128);
  ASSERT_EQ(layer(r, "embed").choice, (Choice{Strategy::dp, 0}));
  ASSERT_EQ(layer(r, "blocks").choice, (Choice{Strategy::tensor_parallel, 0}));
  ASSERT_EQ(layer(r, "final_norm").choice, (Choice{Strategy::dp, 0}));

  // Stages are cut by parameter count (10.9 B each): the first holds the
  // embedding and 6 blocks, and is the fullest.
  const double embed = 50257.0 * 12288 + 2048.0 * 12288;
  const double block = 1812099072.0;
  const double norm = 2.0 * 12288;
  EXPECT_DOUBLE_EQ(embed + 96 * block + norm, psi);
  EXPECT_EQ(layer(r, "blocks").instances_per_rank, 6);
  EXPECT_EQ(layer(r, "embed").first_stage, 0);
  EXPECT_EQ(layer(r, "final_norm").first_stage, 15);
  // Memory by hand: 16 bytes per parameter (no ZeRO), blocks split over 4;
  // activations: 16 micro-batches in flight on stage 0 (1F1B, min(pp, m)),
  // 1 sample x 2048 x 12288 bf16 per layer output, 7 outputs (embedding + 6
  // blocks).
  const double states = 16 * embed + 16 * 6 * block / 4;
  const double acts = 16 * 7 * (2048.0 * 12288 * 2);
  EXPECT_NEAR(p.memory.total(), states + acts, 1.0);
  EXPECT_NEAR(p.memory.activations, acts, 1.0);
  EXPECT_LE(p.memory.total(), device);

  // Bytes per step of a stage-0 rank by hand (nccl-tests sizes x count):
  // the embedding's gradient all_reduce; per block and micro-batch 4
  // Megatron all_reduces of 2048 x 12288 bf16, per block one gradient
  // all_reduce of its quarter; a send forward and one backward per
  // micro-batch to the next stage.
  const double act = 2048.0 * 12288 * 2;
  const double expected_bytes = 2 * embed + 6 * 4 * 128 * act + 6 * (2 * block / 4) + 2 * 128 * act;
  double bytes = 0;
  for (const char* name : {"embed", "blocks"})
    for (const CollectiveUse& u : layer(r, name).collectives)
      bytes += static_cast<double>(u.bytes) * static_cast<double>(u.count);
  for (const CollectiveUse& u : p.pipeline) bytes += static_cast<double>(u.bytes) * u.count;
  EXPECT_DOUBLE_EQ(bytes, expected_bytes);
  // Time = communication of the slowest stage + bubble x compute, compute =
  // 3 x forward FLOPs x 128 samples / 16 stages at 400 TFLOPS, the blocks'
  // FLOPs split over the 4 ranks of their tensor-parallel group.
  double flops = 0;
  for (const Layer& l : m.layers)
    flops += static_cast<double>(l.flops) * l.repeat / (l.name == "blocks" ? 4 : 1);
  EXPECT_NEAR(p.compute_time, 3 * flops * 128 / 16 / 400e12, 1e-9);
  EXPECT_NEAR(p.time, p.comm_time + 15.0 / 128 * p.compute_time, 1e-9);
  EXPECT_GT(p.time, 0);
}

}  // namespace
}  // namespace collkit
