// The layer planner against figures computed by hand: model parameter counts
// from PLANNER.md, the ZeRO paper's memory table, the seeds' AlexNet split and
// its crossover batch and Llama-2-7B on one DGX (GPT-3 175B on 1024 GPUs:
// scale_test.cc).
#include "planner/planner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "algorithms/registry.h"
#include "core/error.h"
#include "core/nccl_sizes.h"
#include "planner/planner_model.h"
#include "planner_test_util.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "sim/sweep.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

using testing_planner::layer;
using testing_planner::model;
using testing_planner::source;

// Bytes each rank sends for one collective over p ranks (nccl-tests' busbw
// convention: all_reduce 2(p-1)/p of the vector, all_gather and
// reduce_scatter (p-1)/p of the whole buffer).
double moved(const CollectiveUse& u) {
  return static_cast<double>(u.bytes) * busbw_factor(u.collective, u.group_size) *
         static_cast<double>(u.count);
}

double moved(const std::vector<CollectiveUse>& uses) {
  double total = 0;
  for (const CollectiveUse& u : uses) total += moved(u);
  return total;
}

TEST(PlannerModels, ParameterTotalsMatchPlannerMd) {
  const std::map<std::string, std::int64_t> totals = {
      {"alexnet", 61100840},      {"resnet50", 25557032},     {"gpt2-124m", 124439808},
      {"gpt2-1.5b", 1557611200},  {"llama2-7b", 6738415616},  {"llama2-70b", 68976648192},
      {"alexnet-2304", 32789288}, {"gpt3-175b", 174604259328}};
  for (const auto& [name, total] : totals) {
    const Model m = model(name);
    EXPECT_EQ(m.total_params(), total) << name;
  }
  // GPT-3: 96 blocks of 12 h^2 + 13 h at h = 12288.
  const Model g = model("gpt3-175b");
  EXPECT_EQ(g.layers[1].params, 1812099072);
  EXPECT_EQ(g.layers[1].params, 12LL * 12288 * 12288 + 13 * 12288);
  EXPECT_EQ(g.layers[1].repeat, 96);
  // The seeds' variant feeds 256 x 3 x 3 features to its first FC layer.
  EXPECT_EQ(model("alexnet-2304").layers[5].in_features, 2304);
}

TEST(PlannerModels, AlexNetLayersMatchTheTable) {
  const Model m = model("alexnet");
  struct Row {
    std::int64_t params, out, flops;
  };
  const Row rows[] = {{23296, 193600, 140553600}, {307392, 139968, 447897600},
                      {663936, 64896, 224280576}, {884992, 43264, 299040768},
                      {590080, 43264, 199360512}, {37752832, 4096, 75497472},
                      {16781312, 4096, 33554432}, {4097000, 1000, 8192000}};
  ASSERT_EQ(m.layers.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(m.layers[i].params, rows[i].params) << m.layers[i].name;
    EXPECT_EQ(m.layers[i].act_out, rows[i].out) << m.layers[i].name;
    EXPECT_EQ(m.layers[i].flops, rows[i].flops) << m.layers[i].name;
  }
  EXPECT_EQ(m.layers[5].act_in, 9216);
}

void expect_file_error(const std::string& text, const std::string& part) {
  try {
    parse_model(text, "bad.json");
    FAIL() << "accepted: " << text;
  } catch (const FileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad.json"), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(PlannerModels, BadFilesNameFileAndField) {
  const std::string fc = R"("shape": {"in_features": 10, "out_features": 4})";
  expect_file_error(
      R"({"name": "m", "layers": [{"name": "fc", "kind": "linear", "params": 40, )" + fc + "}]}",
      "layers[0] (fc).params = 40 disagrees with its shape, which gives 44");
  expect_file_error(
      R"({"name": "m", "params": 45, "layers": [{"name": "fc", "kind": "linear", )" + fc + "}]}",
      "bad.json.params = 45 disagrees with the layers, which sum to 44");
  expect_file_error(R"({"name": "m", "layers": [{"name": "x", "kind": "conv3d", "params": 1,
      "act_in": 1, "act_out": 1, "flops": 1}]})",
                    "layers[0] (x).kind = 'conv3d': unknown layer kind");
  expect_file_error(R"({"name": "m", "layers": [{"name": "x", "kind": "norm", "params": -5,
      "act_in": 1, "act_out": 1, "flops": 1}]})",
                    "layers[0] (x).params = -5: must be >= 0");
  expect_file_error(R"({"name": "m", "layers": [{"name": "fc", "kind": "linear",
      "shape": {"in_features": -3, "out_features": 4}}]})",
                    "shape.in_features = -3: must be >= 1");
  expect_file_error(R"({"name": "m", "layers": [{"name": "fc", "kind": "linear", "shape":
      {"in_features": 3, "out_features": 4, "biass": true}}]})",
                    "unknown key 'biass'");
  expect_file_error(R"({"name": "m", "layer": []})", "unknown key 'layer'");
  expect_file_error(
      R"({"name": "m", "layers": [{"name": "fc", "kind": "linear", )" + fc + R"(, "repeat": 0}]})",
      "repeat = 0: must be >= 1");
}

// PLANNER.md's table (Rajbhandari et al.): 7.5 B parameters, N_d = 64,
// mixed-precision Adam (2 + 2 + 12 bytes per parameter).
TEST(PlannerZero, MemoryTableExact) {
  const double psi = 7.5e9;
  const double expected[] = {16 * psi, 4 * psi + 12 * psi / 64, 2 * psi + 14 * psi / 64,
                             16 * psi / 64};
  const double table_gb[] = {120.0, 31.4, 16.6, 1.9};
  for (int z = 0; z <= 3; ++z) {
    const Memory m = model_state_memory(psi, z, 64, 2, 12);
    EXPECT_DOUBLE_EQ(m.total(), expected[z]) << "stage " << z;
    EXPECT_DOUBLE_EQ(std::round(m.total() / 1e8) / 10, table_gb[z]) << "stage " << z;
  }
  EXPECT_DOUBLE_EQ(model_state_memory(psi, 1, 64, 2, 12).total(), 31.40625e9);
  EXPECT_DOUBLE_EQ(model_state_memory(psi, 2, 64, 2, 12).total(), 16.640625e9);
  EXPECT_DOUBLE_EQ(model_state_memory(psi, 3, 64, 2, 12).total(), 1.875e9);
}

TEST(PlannerZero, Zero3MovesOneAndAHalfTimesDp) {
  Layer l;
  l.name = "w";
  l.kind = LayerKind::norm;
  l.params = 7'500'000'000 / 64;
  l.repeat = 64;
  const Layout lay{1, 1, 64, 1, 1};
  const double dp = moved(layer_collectives(l, {Strategy::dp, 0}, lay, 2));
  EXPECT_DOUBLE_EQ(dp, 2.0 * 63 / 64 * 7.5e9 * 2);
  EXPECT_DOUBLE_EQ(moved(layer_collectives(l, {Strategy::zero1, 1}, lay, 2)), dp);
  EXPECT_DOUBLE_EQ(moved(layer_collectives(l, {Strategy::zero2, 2}, lay, 2)), dp);
  EXPECT_DOUBLE_EQ(moved(layer_collectives(l, {Strategy::zero3, 3}, lay, 2)), 1.5 * dp);
  // With 4 micro-batches ZeRO-2 reduces gradients each time, ZeRO-3 also
  // gathers parameters each time: (4 + 1) / 2 and 12 / 2 times DP.
  const Layout acc{1, 1, 64, 1, 4};
  EXPECT_DOUBLE_EQ(moved(layer_collectives(l, {Strategy::dp, 0}, acc, 2)), dp);
  EXPECT_DOUBLE_EQ(moved(layer_collectives(l, {Strategy::zero2, 2}, acc, 2)), 2.5 * dp);
  EXPECT_DOUBLE_EQ(moved(layer_collectives(l, {Strategy::zero3, 3}, acc, 2)), 6 * dp);
}

// Nothing overlaps compute: every collective on the critical path.
PlanOptions no_overlap() {
  PlanOptions o;
  o.step.overlap_grad_reduce = o.step.overlap_param_gather = o.step.overlap_p2p = false;
  return o;
}

class AlexNetOnDgx : public ::testing::Test {
 protected:
  void SetUp() override {
    topo_ = load_topology(source("topologies/dgx-h100.json"));
    model_ = model("alexnet");
  }
  PlanResult plan(std::int64_t batch) {
    PlanOptions o;
    o.ranks = 8;
    o.batch = batch;
    return make_plan(model_, *topo_, o);
  }
  std::unique_ptr<Topology> topo_;
  Model model_;
};

// On a DGX H100 every collective pays the topology's protocol (Simple: 8.4
// us base latency per call, NCCL's figure): the split's four collectives
// pay four of them where dp's one all_reduce pays one. fc6 and fc7 still
// split at batch 256; fc8 (4.1 M weights, 7.8 MiB of gradients) runs data
// parallel: its split would move small messages for the price of four calls.
TEST_F(AlexNetOnDgx, ConvDataParallelLargeFcSplitAtBatch256) {
  const PlanResult r = plan(256);
  ASSERT_TRUE(r.fits);
  EXPECT_EQ(r.plan.layout.dp, 8);
  for (const char* conv : {"conv1", "conv2", "conv3", "conv4", "conv5"})
    EXPECT_EQ(layer(r, conv).choice.strategy, Strategy::dp) << conv;
  for (const char* fc : {"fc6", "fc7"}) {
    const LayerPlan& l = layer(r, fc);
    EXPECT_EQ(l.choice.strategy, Strategy::fc_split) << fc;
    // No gradient all_reduce for a split layer: only gathers and scatters.
    for (const CollectiveUse& u : l.collectives) EXPECT_NE(u.collective, Collective::all_reduce);
  }
  EXPECT_EQ(layer(r, "fc8").choice.strategy, Strategy::dp);
  // fc6 at 256 samples: all_gather of 256 x 9216 inputs, bf16.
  EXPECT_EQ(layer(r, "fc6").collectives[0].bytes, 256LL * 9216 * 2);
}

// The seeds' network (fc6 of 2304 inputs): convolutions data parallel, the
// two large FC layers split, fc8 data parallel as above.
TEST_F(AlexNetOnDgx, SeedsVariantSplitsTheLargeFcLayers) {
  model_ = model("alexnet-2304");
  const PlanResult r = plan(256);
  for (const char* conv : {"conv1", "conv2", "conv3", "conv4", "conv5"})
    EXPECT_EQ(layer(r, conv).choice.strategy, Strategy::dp) << conv;
  for (const char* fc : {"fc6", "fc7"})
    EXPECT_EQ(layer(r, fc).choice.strategy, Strategy::fc_split) << fc;
  EXPECT_EQ(layer(r, "fc8").choice.strategy, Strategy::dp);
  EXPECT_EQ(layer(r, "fc6").collectives[0].bytes, 256LL * 2304 * 2);
}

// Where the planner switches an FC layer from the split to dp: the bytes
// set the crossover (params / (in + out) samples), and the per-call costs
// move the switch below it. The trade-off in volume holds where nothing
// overlaps (--overlap none): with the gradient all_reduce hidden behind the
// backward pass dp wins earlier (ExposedAndHiddenCommunication). On a switch without protocol
// figures (base latency 0) the switch sits just below the volume crossover; on the DGX H100 the
// split's three extra calls move it further down, most for fc8 whose messages are smallest.
TEST_F(AlexNetOnDgx, FcLayersSwitchToDataParallelAtTheCrossover) {
  const PlanResult big = plan(65536);
  for (const char* fc : {"fc6", "fc7", "fc8"})
    EXPECT_EQ(layer(big, fc).choice.strategy, Strategy::dp) << fc;
  for (const char* conv : {"conv1", "conv5"})
    EXPECT_EQ(layer(big, conv).choice.strategy, Strategy::dp) << conv;

  const auto plain = load_topology(source("topologies/switch-16.json"), 8);
  for (int i = 5; i < 8; ++i) {
    const Layer& l = model_.layers[i];
    // Per-step bytes each rank sends: constant for dp, linear in the batch
    // for the split, so the crossover is where they meet.
    const Layout one{1, 1, 8, 1, 1};
    const double v_dp = moved(layer_collectives(l, {Strategy::dp, 0}, one, 2));
    const double v_split_per_sample =
        moved(layer_collectives(l, {Strategy::fc_split, 0}, one, 2)) / 8;
    const double crossover = v_dp / v_split_per_sample;
    // = params / (in + out): fc6 2836, fc7 2048, fc8 804 samples.
    EXPECT_NEAR(crossover, static_cast<double>(l.params) / (l.in_features + l.out_features), 1e-6);
    // The planner's switch on a topology, found by bisection over batches
    // divisible by 8: split at lo, dp at hi.
    const auto switch_at = [&](const Topology& topo) {
      const auto strategy = [&](std::int64_t batch) {
        PlanOptions o = no_overlap();
        o.ranks = 8;
        o.batch = batch;
        return layer(make_plan(model_, topo, o), l.name).choice.strategy;
      };
      std::int64_t lo = 8, hi = 65536;
      while (hi - lo > 8) {
        const std::int64_t mid = (lo + hi) / 16 * 8;
        (strategy(mid) == Strategy::fc_split ? lo : hi) = mid;
      }
      EXPECT_NE(strategy(hi), Strategy::fc_split);
      return std::pair{lo, hi};
    };
    const auto [plain_lo, plain_hi] = switch_at(*plain);
    const auto [dgx_lo, dgx_hi] = switch_at(*topo_);
    std::printf(
        "%s: volume crossover %.0f; switch-16 switches between %lld and %lld, dgx-h100 "
        "between %lld and %lld\n",
        l.name.c_str(), crossover, static_cast<long long>(plain_lo),
        static_cast<long long>(plain_hi), static_cast<long long>(dgx_lo),
        static_cast<long long>(dgx_hi));
    // Without per-call costs the volumes decide, a few latencies aside.
    EXPECT_LE(static_cast<double>(plain_hi), 1.02 * crossover) << l.name;
    EXPECT_GE(static_cast<double>(plain_hi), 0.8 * crossover) << l.name;
    // Per-call costs only favour dp (one call against four).
    EXPECT_LE(dgx_hi, plain_hi + 8) << l.name;
  }
  // fc6, the largest, still switches near its volume crossover on the DGX.
  PlanOptions o = no_overlap();
  o.ranks = 8;
  o.batch = 2048;
  EXPECT_EQ(layer(make_plan(model_, *topo_, o), "fc6").choice.strategy, Strategy::fc_split);
}

// A collective the planner prices over the whole machine costs what the
// simulator gives for the same schedule on the topology itself: the group
// keeps the machine's protocols (on the DGX H100 the classic algorithms move
// their data with Simple's base latency and efficiency, as `collkit
// simulate` times them).
TEST_F(AlexNetOnDgx, WholeMachineCollectiveCostsWhatSimulateGives) {
  const PlanResult r = plan(256);
  const LayerPlan& fc8 = layer(r, "fc8");
  ASSERT_EQ(fc8.collectives.size(), 1u);
  const CollectiveUse& u = fc8.collectives[0];
  ASSERT_EQ(u.collective, Collective::all_reduce);
  ASSERT_EQ(u.group_size, 8);
  ScheduleSpec spec;
  spec.collective = Collective::all_reduce;
  spec.algorithm = u.algorithm;
  spec.ranks = 8;
  spec.elem_size = 2;
  spec.count = u.bytes / 2;
  spec.model = cost_params_of(*topo_, 8);
  spec.node_size = 8;
  const double t = simulate(*make_schedule(spec), *topo_).time;
  EXPECT_NEAR(u.time, t, 1e-9 * t) << u.algorithm;
  // And that time carries the protocol: at least Simple's base latency.
  EXPECT_GE(u.time, topo_->protocol(Protocol::simple).base_latency);
}

// --collectives nccl: every collective is priced as NCCL runs it, its own
// choice of algorithm, protocol and channels on the group's ranks; over the
// whole DGX that is what simulating that choice on the topology gives.
TEST_F(AlexNetOnDgx, NcclPricingIsNcclsChoiceSimulated) {
  PlanOptions o;
  o.ranks = 8;
  o.batch = 256;
  o.nccl = true;
  const PlanResult r = make_plan(model_, *topo_, o);
  const NcclContext ctx = nccl_context(*topo_, 8);
  int checked = 0;
  for (const LayerPlan& lp : r.plan.layers) {
    for (const CollectiveUse& u : lp.collectives) {
      ASSERT_EQ(u.algorithm.rfind("nccl ", 0), 0u) << lp.name << ": " << u.algorithm;
      ASSERT_EQ(u.group_size, 8) << lp.name;
      ScheduleSpec spec;
      spec.collective = u.collective;
      spec.algorithm = "nccl";
      spec.ranks = 8;
      spec.elem_size = 2;
      spec.count = u.bytes / 2;
      // NCCL's choice, run as collkit can (NVLS all_gather has no collkit
      // schedule: the fastest candidate it has stands in, and says so).
      std::optional<NcclChoice> instead;
      const NcclChoice choice = nccl_runnable_choice(ctx, u.collective, u.bytes, DataType::bfloat16,
                                                     RedOp::sum, std::nullopt, &instead);
      EXPECT_EQ(u.algorithm, "nccl " + describe_run(choice, instead)) << lp.name;
      if (instead) {
        EXPECT_EQ(describe(*instead),
                  describe(nccl_choose(ctx, u.collective, u.bytes, DataType::bfloat16, RedOp::sum,
                                       std::nullopt)))
            << lp.name;
        EXPECT_FALSE(nccl_has_schedule(u.collective, instead->variant));
      }
      const double t =
          simulate(*make_schedule(nccl_schedule_spec(spec, ctx, choice, *topo_)), *topo_).time;
      EXPECT_NEAR(u.time, t, 1e-9 * t) << lp.name << " " << u.algorithm;
      ++checked;
    }
  }
  EXPECT_GE(checked, 8);
}

// A batch the ranks do not divide runs data parallel on the most ranks it
// splits over (100 = 5 x 20 on 5 of 8), the rest idle and said so.
TEST_F(AlexNetOnDgx, BatchNotDivisibleLeavesRanksIdle) {
  const PlanResult r = plan(100);
  EXPECT_EQ(r.plan.layout.dp, 5);
  EXPECT_EQ(r.plan.ranks_used(), 5);
  EXPECT_NE(r.verdict.find("3 of 8 ranks idle: batch 100 splits over at most 5"), std::string::npos)
      << r.verdict;
}

// The --tp --pp --dp --zero layout priced beside the choice: ZeRO-1 on
// every layer over 8 ranks with the whole per-rank batch in one
// micro-batch is exactly the uniform zero1 plan at that micro-batch, and
// its memory is the ZeRO table's by hand.
TEST_F(AlexNetOnDgx, UserLayoutIsPricedBesideTheChoice) {
  PlanOptions o;
  o.ranks = 8;
  o.batch = 256;
  o.user = UserLayout{1, 1, 8, 1, 32};
  const PlanResult r = make_plan(model_, *topo_, o);
  ASSERT_TRUE(r.user);
  const Plan& u = *r.user;
  EXPECT_EQ(u.layout.dp, 8);
  EXPECT_EQ(u.layout.micro_batch, 32);
  EXPECT_EQ(u.layout.micro_batches, 1);
  // Activations: what each layer's backward reads, its input (convolutions
  // and FC layers keep their input for the weight gradient), bf16.
  double act = 0;
  for (const Layer& l : model_.layers) act += 32.0 * l.act_in * l.repeat * 2;
  const double psi = 61100840;
  EXPECT_NEAR(u.memory.total(), 2 * psi + 2 * psi + 12 * psi / 8 + act, 1e-3);
  // Every layer's collectives: a reduce_scatter and an all_gather of its
  // bf16 weights over the 8 ranks, once per step.
  for (const LayerPlan& lp : u.layers) {
    ASSERT_EQ(lp.collectives.size(), 2u) << lp.name;
    EXPECT_EQ(lp.collectives[0].collective, Collective::reduce_scatter);
    EXPECT_EQ(lp.collectives[0].bytes, lp.params * 2);
    EXPECT_EQ(lp.collectives[0].group_size, 8);
  }
  // The same layout as the uniform zero1 row (micro-batch 32 is the choice's).
  ASSERT_EQ(r.uniform[1].name, "zero1");
  ASSERT_EQ(r.uniform[1].layout.micro_batch, 32);
  EXPECT_NEAR(u.comm_time, r.uniform[1].time, 1e-12);
  EXPECT_NEAR(u.memory.total(), r.uniform[1].memory.total(), 1e-3);
  // The difference: the step, the memory, and fc6's split against zero1.
  ASSERT_GE(r.user_diff.size(), 3u);
  EXPECT_NE(r.user_diff[0].find("slower per step than the planner's choice"), std::string::npos)
      << r.user_diff[0];
  EXPECT_NE(r.user_diff[0].find("communication +"), std::string::npos) << r.user_diff[0];
  bool fc6 = false;
  for (const std::string& l : r.user_diff)
    fc6 = fc6 || (l.rfind("fc6: yours zero1", 0) == 0 &&
                  l.find("the choice's fc_split") != std::string::npos);
  EXPECT_TRUE(fc6);
  EXPECT_GT(u.step_time(), r.plan.step_time());

  o.user = UserLayout{1, 1, 16, 0, 0};
  EXPECT_THROW(make_plan(model_, *topo_, o), UsageError);  // 16 ranks of 8
  o.user = UserLayout{1, 1, 8, 0, 5};
  EXPECT_THROW(make_plan(model_, *topo_, o), UsageError);  // 5 does not divide 32
}

// Small batches on many ranks (issue 16): AlexNet and ResNet-50 at batch 256
// on 1024 H100 run data parallel on 256 ranks, one sample each, and neither
// pipeline nor tensor parallelism (which had 8 stages and a 700% bubble);
// the step is compute (3 x forward FLOPs of one sample at 400 TFLOPS) plus
// communication.
TEST(PlannerSmallBatch, DataParallelWherePipelinesWouldNotHelp) {
  const auto topo = load_topology(source("topologies/h100-cluster-128x8.json"));
  for (const char* name : {"alexnet", "resnet50"}) {
    const Model m = model(name);
    PlanOptions o;
    o.ranks = 1024;
    o.batch = 256;
    const PlanResult r = make_plan(m, *topo, o);
    ASSERT_TRUE(r.fits) << name;
    EXPECT_EQ(r.plan.layout.tp, 1) << name;
    EXPECT_EQ(r.plan.layout.pp, 1) << name;
    EXPECT_EQ(r.plan.layout.dp, 256) << name;
    EXPECT_EQ(r.plan.ranks_used(), 256) << name;
    EXPECT_EQ(r.plan.bubble, 0) << name;
    double flops = 0;
    for (const Layer& l : m.layers) flops += static_cast<double>(l.flops) * l.repeat;
    EXPECT_NEAR(r.plan.compute_time, 3 * flops / 400e12, 1e-12) << name;
    EXPECT_NEAR(r.plan.step_time(), r.plan.compute_time + r.plan.comm_time, 1e-12) << name;
  }
}

// Whatever the planner picks with tensor or pipeline parallelism, it either
// is needed to fit or beats the best plain data-parallel plan by the margin.
TEST(PlannerSmallBatch, TensorParallelOnlyWhereItLowersTheStep) {
  const auto topo = load_topology(source("topologies/h100-cluster-128x8.json"));
  PlanOptions o;
  o.ranks = 1024;
  o.batch = 256;
  const PlanResult r = make_plan(model("gpt2-124m"), *topo, o);
  ASSERT_TRUE(r.fits);
  ASSERT_GT(r.simple_step_time, 0);
  if (r.plan.layout.tp > 1 || r.plan.layout.pp > 1) {
    EXPECT_LT(r.plan.step_time(), 0.95 * r.simple_step_time);
    EXPECT_NE(r.verdict.find("lowers the step from"), std::string::npos) << r.verdict;
  }
  // The uniform dp row is the plain data-parallel plan on 256 ranks.
  EXPECT_EQ(r.uniform[0].layout.dp, 256);
}

// Devices per node come from the topology's nodes, never from routes: the
// fat tree has none (its 4 hosts per edge switch are not a node), so GPT-2
// 1.5B runs without tensor parallelism there; --devices-per-node gives
// nodes; a plan that needs them on a topology without nodes is an error.
TEST(PlannerNodes, FromTheTopologyOrTheFlag) {
  EXPECT_EQ(load_topology(source("topologies/dgx-h100.json"))->ranks_per_node(8), 8);
  EXPECT_EQ(load_topology(source("topologies/dgx-h100.json"))->ranks_per_node(4), 4);
  EXPECT_EQ(load_topology(source("topologies/h100-cluster-4x8.json"))->ranks_per_node(32), 8);
  EXPECT_EQ(load_topology(source("topologies/h100-cluster-4x8.json"))->ranks_per_node(12), 0);
  for (const char* none : {"fat-tree-k8", "torus-4x4", "ring-8", "switch-16"})
    EXPECT_EQ(load_topology(source(std::string("topologies/") + none + ".json"))->ranks_per_node(8),
              0)
        << none;

  const auto fat = load_topology(source("topologies/fat-tree-k8.json"));
  PlanOptions o;
  o.ranks = fat->num_ranks();
  o.batch = 128;
  PlanResult r = make_plan(model("gpt2-1.5b"), *fat, o);
  EXPECT_EQ(r.devices_per_node, 0);
  EXPECT_EQ(r.plan.layout.tp, 1);
  EXPECT_NE(r.verdict.find("--devices-per-node"), std::string::npos) << r.verdict;

  o.devices_per_node = 4;
  r = make_plan(model("gpt2-1.5b"), *fat, o);
  EXPECT_EQ(r.devices_per_node, 4);
  o.devices_per_node = 3;
  EXPECT_THROW(make_plan(model("gpt2-1.5b"), *fat, o), UsageError);

  // Llama-2-70B on 8 ranks fits only with model parallelism: without nodes
  // that is an error naming the flag.
  PlanOptions small;
  small.ranks = 8;
  small.batch = 8;
  small.topology_file = "topologies/fat-tree-k8.json";
  try {
    make_plan(model("llama2-70b"), *load_topology(source("topologies/fat-tree-k8.json"), 8), small);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("give --devices-per-node N"), std::string::npos)
        << e.what();
  }
}

// The uniform rows use the chosen plan's micro-batch: Llama-2-70B on one
// DGX chooses ZeRO-3 for everything at micro-batch 1 x 8, so the uniform
// zero3 row is the chosen plan, memory for memory (it had said 875.9 GB
// against the choice's 143.7 GB, from 8-sample micro-batches).
TEST(PlannerLlama, UniformRowsUseTheChosenMicroBatch) {
  const auto topo = load_topology(source("topologies/dgx-h100.json"));
  const Model m = model("llama2-70b");
  PlanOptions o;
  o.ranks = 8;
  o.batch = 64;
  const PlanResult r = make_plan(m, *topo, o);
  const Layout& lay = r.plan.layout;
  for (const Alternative& a : r.uniform) {
    EXPECT_EQ(a.layout.micro_batch, lay.micro_batch) << a.name;
    EXPECT_EQ(a.layout.dp, 8) << a.name;
    EXPECT_EQ(a.layout.micro_batches, 64 / 8 / lay.micro_batch) << a.name;
  }
  // By hand: ZeRO-3 model states, 16 bytes per parameter over 8 ranks; the
  // activations are the compute model's (compute_test.cc checks them against
  // Korthikanti et al.'s formula).
  const double psi = 68976648192.0;
  const Memory& z3 = r.uniform[3].memory;
  EXPECT_NEAR(z3.params + z3.grads + z3.optimizer, 16 * psi / 8, 1e-9 * psi);
  EXPECT_GT(z3.activations, 0);
  bool all_zero3 = true;
  for (const LayerPlan& lp : r.plan.layers) all_zero3 = all_zero3 && lp.choice.zero_stage == 3;
  if (all_zero3 && lay.tp == 1 && lay.pp == 1) {
    EXPECT_NEAR(r.uniform[3].memory.total(), r.plan.memory.total(), 1.0);
  }
}

TEST(PlannerLlama, SevenBOnEightGpusNeedsZero) {
  const auto topo = load_topology(source("topologies/dgx-h100.json"));
  const Model m = model("llama2-7b");
  PlanOptions o;
  o.ranks = 8;
  o.batch = 64;
  o.device_memory = 80e9;
  const PlanResult r = make_plan(m, *topo, o);
  // Plain dp: 16 bytes per parameter of model states alone is 107.8 GB.
  ASSERT_EQ(r.uniform.size(), 4u);
  EXPECT_EQ(r.uniform[0].name, "dp");
  EXPECT_FALSE(r.uniform[0].fits);
  EXPECT_DOUBLE_EQ(
      r.uniform[0].memory.params + r.uniform[0].memory.grads + r.uniform[0].memory.optimizer,
      16.0 * 6738415616);
  for (int z = 1; z <= 3; ++z) EXPECT_TRUE(r.uniform[z].fits) << r.uniform[z].name;
  ASSERT_TRUE(r.fits);
  EXPECT_LE(r.plan.memory.total(), 80e9);
  EXPECT_NE(layer(r, "blocks").choice.strategy, Strategy::dp);
}

// Memory is made by greedy moves, the least added time per byte saved first,
// then every move whose faster choice still fits is taken back. So no
// uniform layout (every layer at one ZeRO stage, the plan's micro-batch)
// that fits has a shorter step than the plan: the per-layer choice is at
// least as fast as the best of them.
TEST(PlannerLlama, MovesTheLargeLayerNeedsAloneAreTakenBack) {
  const auto topo = load_topology(source("topologies/dgx-h100.json"));
  const Model m = model("llama2-7b");
  PlanOptions o;
  o.ranks = 8;
  o.batch = 64;
  o.device_memory = 80e9;
  o.nccl = true;
  const PlanResult r = make_plan(m, *topo, o);
  ASSERT_TRUE(r.fits);
  ASSERT_EQ(r.plan.layout.tp, 1);
  ASSERT_EQ(r.plan.layout.pp, 1);
  EXPECT_NE(layer(r, "blocks").choice.strategy, Strategy::dp);
  int fitting = 0;
  for (int zero = 0; zero <= 3; ++zero) {
    PlanOptions u = o;
    UserLayout ul;
    ul.tp = 1;
    ul.pp = 1;
    ul.dp = 8;
    ul.zero = zero;
    ul.micro_batch = r.plan.layout.micro_batch;
    u.user = ul;
    u.recompute = r.plan.layout.recompute;
    ul.recompute = r.plan.layout.recompute;
    u.user = ul;
    const PlanResult uniform = make_plan(m, *topo, u);
    ASSERT_TRUE(uniform.user.has_value());
    if (!uniform.user->fits) continue;
    ++fitting;
    EXPECT_GE(uniform.user->step_time(), r.plan.step_time() * (1 - 1e-9)) << "zero" << zero;
  }
  EXPECT_GE(fitting, 1);
}

}  // namespace
}  // namespace collkit

namespace collkit {
namespace {

TEST(PlannerOptions, DeviceMemorySizes) {
  EXPECT_DOUBLE_EQ(parse_memory_size("--device-memory", "80GiB"), 80.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(parse_memory_size("--device-memory", "80GB"), 80e9);
  EXPECT_DOUBLE_EQ(parse_memory_size("--device-memory", "141GB"), 141e9);
  EXPECT_DOUBLE_EQ(parse_memory_size("--device-memory", "1.5TB"), 1.5e12);
  EXPECT_DOUBLE_EQ(parse_memory_size("--device-memory", "1024"), 1024);
  for (const char* bad : {"", "GB", "80XB", "-1GB", "0GB", "8.0.0GB"})
    EXPECT_THROW(parse_memory_size("--device-memory", bad), UsageError) << bad;
}

}  // namespace
}  // namespace collkit
