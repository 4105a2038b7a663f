// The NCCL version on the command line (--nccl-version on simulate,
// calibrate and plan; compare's note) and simulate's / plan's --explain
// (docs/NCCL.md, "Versions" and "NCCL's choice"; docs/REPORTS.md,
// "nccl_explain"). The explained figures are checked against NCCL's model
// worked out by hand here (tuning.cc at v2.26.2-1), not against collkit's code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/json.h"
#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::run_collkit;
using testing_cli::RunResult;
using testing_cli::slurp;

const std::string kRoot = COLLKIT_SOURCE_DIR;

class NcclVersionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_ncclv_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::string& args) { return run_collkit(args, dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

const std::string kTwoNodes = kRoot + "/topologies/h100-cluster-2x8.json";

// Every bad --nccl-version: exit 2, one line naming the flag and the value,
// nothing written.
TEST_F(NcclVersionCli, BadVersionsExitTwoNamingFlagAndValue) {
  for (const char* bad : {"2.17.1", "2.31.0", "2.26", "latest", "v2.x.1"}) {
    for (const std::string& cmd :
         {"simulate --topology " + kTwoNodes + " --collective all_reduce --algorithm nccl --json " +
              path("out.json"),
          "plan --model " + kRoot + "/models/alexnet.json --topology " + kRoot +
              "/topologies/dgx-h100.json --batch 256 --json " + path("out.json"),
          "calibrate " + kRoot +
              "/tests/data/nccl-tests/h100x8_allreduce_nvls_together-nccl-tests.txt "
              "--topology " +
              kRoot + "/topologies/dgx-h100.json -o " + path("fit.json")}) {
      const RunResult r = run(cmd + " --nccl-version " + bad);
      SCOPED_TRACE(cmd + " " + bad);
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_NE(r.err.find(std::string("--nccl-version '") + bad + "'"), std::string::npos)
          << r.err;
      EXPECT_FALSE(fs::exists(path("out.json")));
      EXPECT_FALSE(fs::exists(path("fit.json")));
    }
  }
}

// simulate follows the version: NCCL 2.26.2 runs NVLSTree at 1 MiB on two
// nodes, 2.18.1 the tree with LL128; the report names the version.
TEST_F(NcclVersionCli, SimulateFollowsTheVersionAndSaysWhich) {
  const std::string base = "simulate --topology " + kTwoNodes +
                           " --collective all_reduce --algorithm nccl -b 1M -e 1M --json ";
  RunResult r = run(base + path("a.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("nvls_tree/Simple/16ch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# NCCL's choice: NCCL 2.26.2's cost model, collkit's default"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(Json::parse(slurp(path("a.json")))["nccl_model_version"], "2.26.2");
  r = run(base + path("b.json") + " --nccl-version v2.18.5-1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tree/LL128/16ch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NCCL 2.18.5's cost model (release 2.18.3's figures), from --nccl-version"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(Json::parse(slurp(path("b.json")))["nccl_model_version"], "2.18.5");
}

// --explain at 1 MiB on two nodes of 8 H100, NCCL 2.26.2. By hand (graphs:
// ring and tree 8 x 48 GB/s, NVLS 8 heads x 48; 16 channels):
//   tree/LL128   14 + 2 (7 x 1.25 + 8.5) = 48.5 us; min(0.92 x 384, 8 x 41.4)
//                = 331.2, x 120/128 capped at 8 x 36.7 = 293.6, halved, x the
//                correction 0.6 at log2(1 MiB / 64) = 14: 88.08 GB/s
//   ring/Simple  (8.4 + 28 x 3.4 + 2 x 14) x 1.4 = 184.24 us; 384 x 16/30 =
//                204.8 GB/s
//   nvls_tree    25 + 2 x 14 = 53 us; 8 x 48 x 5/6 = 320 GB/s: chosen
// NCCL_ALGO=^NVLSTree leaves the tree with LL128; releases before 2.19 and
// from 2.28.9 choose it too.
TEST_F(NcclVersionCli, ExplainGivesEveryCandidateWithHandCheckedEstimates) {
  const RunResult r = run(
      "simulate --topology " + kTwoNodes +
      " --collective all_reduce --algorithm nccl -b 1M -e 1M --explain --json " + path("x.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double b = 1048576;
  const Json x = Json::parse(slurp(path("x.json")))["nccl_explain"];
  ASSERT_EQ(x.size(), 1u);
  const Json& e = x[0];
  EXPECT_EQ(e["bytes"], 1048576);
  EXPECT_EQ(e["nccl_version"], "2.26.2");
  EXPECT_EQ(e["chosen"]["algorithm"], "nvls_tree");
  EXPECT_EQ(e["chosen"]["nccl_algorithm"], "NVLSTree");
  EXPECT_EQ(e["chosen"]["protocol"], "Simple");
  EXPECT_EQ(e["chosen"]["channels"], 16);
  EXPECT_NEAR(e["chosen"]["nccl_us"].get<double>(), 53 + b / 320e3, 1e-6);
  const auto find = [&](const char* a, const char* p) {
    for (const Json& c : e["candidates"])
      if (c["algorithm"] == a && c["protocol"] == p) return c;
    ADD_FAILURE() << "no candidate " << a << "/" << p;
    return Json();
  };
  EXPECT_NEAR(find("tree", "LL128")["nccl_us"].get<double>(), 48.5 + b / 88.08e3, 1e-6);
  EXPECT_NEAR(find("ring", "Simple")["nccl_us"].get<double>(), 184.24 + b / 204.8e3, 1e-6);
  EXPECT_EQ(e["candidates"].size(), 7u);  // tree and ring x 3, NVLSTree
  // Every candidate was simulated; the chosen one's time is the table's.
  for (const Json& c : e["candidates"]) EXPECT_GT(c["simulated_us"].get<double>(), 0) << c.dump();
  const Json report = Json::parse(slurp(path("x.json")));
  EXPECT_NEAR(e["chosen"]["simulated_us"].get<double>(),
              report["results"][0]["time_us"].get<double>(), 1e-9 * b);
  bool algo = false, proto = false, older = false, newer = false;
  for (const Json& c : e["changes"]) {
    const std::string s = c["setting"], res = c["result"];
    if (s == "NCCL_ALGO=^NVLSTree") algo = res.rfind("tree/LL128/16ch", 0) == 0;
    if (s == "NCCL_PROTO=^Simple") proto = res.rfind("tree/LL128/16ch", 0) == 0;
    if (s == "NCCL 2.18.1-2.18.3") older = res == "tree/LL128/16ch";
    if (s == "NCCL 2.28.9+") newer = res == "tree/LL128/16ch";
  }
  EXPECT_TRUE(algo && proto && older && newer) << e["changes"].dump();
  // The text after the table says the same.
  EXPECT_NE(r.out.find("#  * nvls_tree/Simple/16ch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#    NCCL_ALGO=^NVLSTree: tree/LL128/16ch (NCCL 60.4 us)"),
            std::string::npos)
      << r.out;
}

TEST_F(NcclVersionCli, ExplainNeedsAnNcclAlgorithm) {
  const RunResult r = run("simulate --topology " + kTwoNodes +
                          " --collective all_reduce --algorithm ring --explain");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--explain:"), std::string::npos) << r.err;
}

// compare does not simulate: it says when the prediction followed another
// version than the log's, and how to predict that one.
TEST_F(NcclVersionCli, CompareNotesAnotherVersionThanTheLogs) {
  const std::string log =
      kRoot + "/tests/data/nccl-tests/h100x16_2node_allreduce_nccl-tests-issue309-qoofyk.txt";
  const std::string sim = "simulate --topology " + kTwoNodes +
                          " --collective all_reduce --algorithm nccl -b 1G -e 2G -f 2 --json ";
  ASSERT_EQ(run(sim + path("p.json") + " --nccl-version 2.29.2").exit_code, 0);
  RunResult r =
      run("compare " + path("p.json") + " " + log + " --collective all_reduce --ranks 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("chose as NCCL 2.29.2 does"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ran NCCL 2.26.2 (from the log); collkit simulate --nccl-version 2.26.2"),
            std::string::npos)
      << r.err;
  // The same release: no note.
  ASSERT_EQ(run(sim + path("q.json") + " --nccl-version 2.26.6").exit_code, 0);
  r = run("compare " + path("q.json") + " " + log + " --collective all_reduce --ranks 16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("chose as NCCL"), std::string::npos) << r.err;
}

// calibrate takes the version from the log, says so, and --nccl-version
// overrides it.
TEST_F(NcclVersionCli, CalibrateSaysWhereTheVersionCameFrom) {
  const std::string log =
      kRoot + "/tests/data/nccl-tests/h100x8_allreduce_xxrjun-cluster01-cnode3-002.txt";
  const std::string cmd = "calibrate " + log + " --collective all_reduce --ranks 8 --topology " +
                          kRoot +
                          "/topologies/dgx-h100.json --max-iterations 1 --starts 1 --accept -o ";
  RunResult r = run(cmd + path("a.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(": NCCL 2.29.2 from the log"), std::string::npos) << r.out;
  r = run(cmd + path("b.json") + " --nccl-version 2.21.5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(": NCCL 2.21.5 from --nccl-version"), std::string::npos) << r.out;
}

// plan --explain puts each collective's explanation into the JSON.
TEST_F(NcclVersionCli, PlanExplainsEachCollectiveInItsJson) {
  const std::string cmd = "plan --model " + kRoot + "/models/alexnet.json --topology " + kRoot +
                          "/topologies/dgx-h100.json --batch 256 --dp 8 --micro-batch 32 ";
  RunResult r = run(cmd + "--explain");
  EXPECT_EQ(r.exit_code, 2);  // the explanation goes into --json
  r = run(cmd + "--explain --nccl-version 2.29.2 --json " + path("p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(slurp(path("p.json")));
  EXPECT_EQ(j["nccl_version"], "2.29.2");
  int explained = 0;
  for (const Json& l : j["layers"])
    for (const Json& c : l["collectives"]) {
      ASSERT_TRUE(c.contains("nccl_explain")) << c.dump();
      const Json& e = c["nccl_explain"];
      EXPECT_EQ(e["nccl_version"], "2.29.2");
      EXPECT_EQ(e["bytes"], c["bytes"]);
      EXPECT_FALSE(e["candidates"].empty());
      ++explained;
    }
  EXPECT_GT(explained, 0);
}

}  // namespace
}  // namespace collkit
