// Runs the built `collkit plan` as a user would: exit codes, messages, the
// printed table and the JSON file it leaves behind.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

using testing_cli::RunResult;
using testing_cli::slurp;

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_plan_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string src(const std::string& rel) {
    return std::string(COLLKIT_SOURCE_DIR) + "/" + rel;
  }

  // `args` is appended to "collkit plan" (shell words).
  RunResult run(const std::string& args) { return testing_cli::run_collkit("plan " + args, dir_); }

  std::string alexnet_on_dgx() const {
    return "--model '" + src("models/alexnet.json") + "' --topology '" +
           src("topologies/dgx-h100.json") + "'";
  }

  fs::path dir_;
};

TEST_F(PlanCli, AlexNetPlanPrintsAndWritesJson) {
  const fs::path json = dir_ / "plan.json";
  const RunResult r = run(alexnet_on_dgx() + " --batch 256 --json '" + json.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fc6            fc_split"), std::string::npos) << r.out;
  // conv1's gradients are sharded (ZeRO-1: reduce_scatter, then all_gather
  // of the updated shard): with NCCL's LL limit (141 GB/s a rank on one
  // H100 node) that plan's step is the shortest.
  EXPECT_NE(r.out.find("conv1          zero1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# fits:"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j["mode"], "plan");
  EXPECT_EQ(j["ranks"], 8);
  EXPECT_EQ(j["layers"].size(), 8u);
  EXPECT_EQ(j["layers"][5]["strategy"], "fc_split");
  EXPECT_EQ(j["layers"][0]["collectives"][0]["collective"], "reduce_scatter");
  EXPECT_EQ(j["layers"][0]["collectives"][0]["bytes"], 23296 * 2);
  EXPECT_EQ(j["totals"]["fits"], true);
  EXPECT_GT(j["totals"]["time_us"].get<double>(), 0);
  // On GPUs the collectives are priced as NCCL runs them unless told otherwise.
  EXPECT_EQ(j["collectives"], "nccl");
  EXPECT_NE(r.out.find("# collectives: priced as NCCL runs them"), std::string::npos) << r.out;
  // Atomic write: no temporary left next to the file.
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1);  // plan.json only
}

// --tp --pp --dp --zero: the layout a user runs, priced beside the choice in
// the table and in the JSON, with what separates them.
TEST_F(PlanCli, UserLayoutPrintedBesideTheChoice) {
  const fs::path json = dir_ / "plan.json";
  const RunResult r = run(alexnet_on_dgx() + " --batch 256 --dp 8 --zero 1 --micro-batch 32 " +
                          "--json '" + json.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# your layout (--tp 1 --pp 1 --dp 8 --zero 1 --micro-batch 32): "
                       "micro-batch 32 x 1 per step, recompute none\n#   step "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("slower per step than the planner's choice"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#   fc6: yours zero1"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j["user_layout"]["layout"]["zero_stage"], 1);
  EXPECT_EQ(j["user_layout"]["layout"]["data_parallel"], 8);
  EXPECT_EQ(j["user_layout"]["layers"][5]["strategy"], "zero1");
  // The user's step is compute + communication + bubble.
  const auto& t = j["user_layout"]["totals"];
  EXPECT_NEAR(t["step_time_us"].get<double>(),
              t["compute_time_us"].get<double>() + t["comm_time_us"].get<double>() +
                  t["bubble_time_us"].get<double>(),
              1e-6);
  EXPECT_GT(t["step_time_us"].get<double>(), j["totals"]["step_time_us"].get<double>());
}

// A topology without nodes: the plan says tensor and pipeline parallelism
// were not considered and JSON's devices_per_node is null.
TEST_F(PlanCli, TopologyWithoutNodes) {
  const fs::path json = dir_ / "plan.json";
  const RunResult r =
      run("--model '" + src("models/gpt2-1.5b.json") + "' --topology '" +
          src("topologies/fat-tree-k8.json") + "' --batch 128 --json '" + json.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("on 128 ranks (no nodes)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tensor_parallel 1 x pipeline 1 x data_parallel 128"), std::string::npos);
  const auto j = nlohmann::json::parse(slurp(json));
  EXPECT_TRUE(j["devices_per_node"].is_null());
  const RunResult four =
      run("--model '" + src("models/gpt2-1.5b.json") + "' --topology '" +
          src("topologies/fat-tree-k8.json") + "' --batch 128 --devices-per-node 4");
  ASSERT_EQ(four.exit_code, 0) << four.err;
  EXPECT_NE(four.out.find("on 128 ranks (4 per node)"), std::string::npos) << four.out;
}

// --collectives auto (the default): nccl where every rank is a GPU
// (pipelined endpoints), best elsewhere; best and nccl are obeyed anywhere.
TEST_F(PlanCli, CollectivesDefaultFollowTheTopology) {
  struct Case {
    const char* topology;
    const char* flag;
    const char* expected;
  };
  for (const Case& c : {Case{"topologies/dgx-h100.json", "", "nccl"},
                        Case{"topologies/dgx-h100.json", " --collectives best", "best"},
                        Case{"topologies/dgx-h100.json", " --collectives auto", "nccl"},
                        Case{"topologies/switch-16.json", "", "best"},
                        Case{"topologies/switch-16.json", " --collectives nccl", "nccl"}}) {
    SCOPED_TRACE(std::string(c.topology) + c.flag);
    const fs::path json = dir_ / "plan.json";
    fs::remove(json);
    const RunResult r =
        run("--model '" + src("models/alexnet.json") + "' --topology '" + src(c.topology) +
            "' --batch 256" + c.flag + " --json '" + json.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(slurp(json))["collectives"], c.expected);
    EXPECT_EQ(r.out.find("# collectives: priced as NCCL") != std::string::npos,
              std::string(c.expected) == "nccl")
        << r.out;
  }
}

TEST_F(PlanCli, NothingFitsIsSaidClearly) {
  const RunResult r = run(alexnet_on_dgx() + " --batch 256 --device-memory 1MB --memory-reserve 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("NOTHING FITS"), std::string::npos) << r.out;
}

TEST_F(PlanCli, BadInputExitsTwoWithAMessage) {
  struct Case {
    std::string args, message;
  };
  const fs::path bad_kind = dir_ / "bad-kind.json";
  std::ofstream(bad_kind) << R"({"name": "m", "layers": [{"name": "x", "kind": "lstm",
      "params": 1, "act_in": 1, "act_out": 1, "flops": 1}]})";
  const fs::path bad_total = dir_ / "bad-total.json";
  std::ofstream(bad_total) << R"({"name": "m", "params": 99, "layers": [{"name": "fc",
      "kind": "linear", "shape": {"in_features": 10, "out_features": 4}}]})";
  const fs::path negative = dir_ / "negative.json";
  std::ofstream(negative) << R"({"name": "m", "layers": [{"name": "fc",
      "kind": "linear", "shape": {"in_features": 10, "out_features": -4}}]})";
  const std::string topo = " --topology '" + src("topologies/dgx-h100.json") + "'";
  const Case cases[] = {
      {alexnet_on_dgx() + " --batch 100 --micro-batch 3",
       "--micro-batch 3 divides no per-rank batch of --batch 100"},
      {alexnet_on_dgx() + " --batch 256 --tp 0", "--tp '0': must be >= 1"},
      {alexnet_on_dgx() + " --batch 256 --zero 4", "--zero '4': expected 0, 1, 2 or 3"},
      {alexnet_on_dgx() + " --batch 256 --dp 16",
       "--tp 1 x --pp 1 x --dp 16 = 16 ranks, more than the 8"},
      {alexnet_on_dgx() + " --batch 256 --dp 3", "--dp 3: does not divide --batch 256"},
      {alexnet_on_dgx() + " --batch 256 --devices-per-node 3",
       "--devices-per-node 3: must divide the 8 ranks"},
      {alexnet_on_dgx() + " --batch 256 --devices-per-node x", "--devices-per-node 'x'"},
      {alexnet_on_dgx() + " --batch 0", "--batch '0': must be >= 1"},
      {alexnet_on_dgx() + " --batch 256 --collectives NCCL", "--collectives 'NCCL': expected auto"},
      {alexnet_on_dgx() + " --batch 256 --device-memory 80XB", "--device-memory '80XB'"},
      {alexnet_on_dgx() + " --batch 256 --dtype float7", "float7"},
      {"--model '" + (dir_ / "missing.json").string() + "'" + topo + " --batch 8",
       "missing.json: cannot open the model file: No such file or directory"},
      {"--model '" + bad_kind.string() + "'" + topo + " --batch 8",
       "bad-kind.json: layers[0] (x).kind = 'lstm': unknown layer kind"},
      {"--model '" + bad_total.string() + "'" + topo + " --batch 8",
       "bad-total.json.params = 99 disagrees with the layers, which sum to 44"},
      {"--model '" + negative.string() + "'" + topo + " --batch 8",
       "negative.json: layers[0] (fc).shape.out_features = -4: must be >= 1"},
      {alexnet_on_dgx() + " --batch 256 --recompute some", "--recompute 'some': expected none"},
      {alexnet_on_dgx() + " --batch 256 --overlap grad,dp", "'dp' is none of grad, param, p2p"},
      {alexnet_on_dgx() + " --batch 256 --measured-step -3", "--measured-step '-3'"},
      {alexnet_on_dgx() + " --batch 256 --no-search", "--no-search: give the layout to price"},
      {alexnet_on_dgx() + " --batch 256 --device '" + bad_kind.string() + "'",
       "bad-kind.json: unknown key 'layers'"},
      {alexnet_on_dgx() + " --batch 256 --sequence-parallel", "--sequence-parallel"},
      {alexnet_on_dgx() + " --batch 256 --virtual-stages 2", "--virtual-stages 2"},
  };
  for (const Case& c : cases) {
    const RunResult r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
}

// --no-search prices the given layout alone as the plan, and
// --measured-step prints and records the error against it: (predicted -
// measured) / measured, from the JSON's own step.
TEST_F(PlanCli, NoSearchAndMeasuredStep) {
  const fs::path json = dir_ / "plan.json";
  const RunResult r = run(alexnet_on_dgx() +
                          " --batch 256 --dp 8 --zero 1 --micro-batch 32 --no-search "
                          "--measured-step 2ms --json '" +
                          json.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("as given (--no-search)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("# uniform plans"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(slurp(json));
  EXPECT_EQ(j["layouts_priced"], 1);
  EXPECT_EQ(j["layers"][0]["strategy"], "zero1");
  const double step = j["step"]["step_time_us"].get<double>();
  EXPECT_DOUBLE_EQ(j["measured"]["step_time_us"].get<double>(), 2000.0);
  EXPECT_NEAR(j["measured"]["error"].get<double>(), (step - 2000.0) / 2000.0, 1e-12);
  // The breakdown adds up to the step.
  const auto& st = j["step"];
  const double parts =
      st["compute_us"].get<double>() + st["bubble_us"].get<double>() +
      st["optimizer_us"].get<double>() + st["exposed_us"]["tensor_parallel"].get<double>() +
      st["exposed_us"]["pipeline"].get<double>() + st["exposed_us"]["data_parallel"].get<double>();
  EXPECT_NEAR(parts, step, 1e-9 * step);
  EXPECT_NE(r.out.find("# measured step 2.000 ms against the plan's"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace collkit
