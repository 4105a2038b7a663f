// `collkit schedule` and `collkit algorithms` as a user runs them: JSON that
// parses and matches the library, and one clear line with exit code 2 for
// every kind of bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "algorithms/schedule_json.h"
#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

using testing_cli::RunResult;

RunResult run(const std::string& args) {
  return testing_cli::run_collkit(args, ::testing::TempDir());
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(ScheduleCommand, DumpsTheLibrarySchedule) {
  const RunResult r = run("schedule --collective all_reduce --algorithm ring --ranks 5 --count 7");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ScheduleSpec spec;
  spec.collective = Collective::all_reduce;
  spec.algorithm = "ring";
  spec.ranks = 5;
  spec.count = 7;
  EXPECT_EQ(j, schedule_to_json(*make_schedule(spec)));
  EXPECT_EQ(j["programs"].size(), 5u);
  // Ring all_reduce: 2(p-1) communicating steps on every rank.
  for (const auto& prog : j["programs"]) {
    int comm = 0;
    for (const auto& step : prog["steps"]) {
      bool has = false;
      for (const auto& op : step) has |= op["op"] == "send" || op["op"] == "recv";
      comm += has;
    }
    EXPECT_EQ(comm, 8) << "rank " << prog["rank"];
  }
}

TEST(ScheduleCommand, VariantAndSingleRank) {
  const RunResult r =
      run("schedule --collective all_reduce --algorithm rabenseifner:blocks --ranks 6 --count 12 "
          "--rank 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["variant"], "blocks");
  ASSERT_EQ(j["programs"].size(), 1u);
  EXPECT_EQ(j["programs"][0]["rank"], 4);
}

struct BadCase {
  const char* args;
  const char* must_contain;
};

class ScheduleBadInput : public testing::TestWithParam<BadCase> {};

TEST_P(ScheduleBadInput, OneClearLineExitTwo) {
  const BadCase c = GetParam();
  const RunResult r = run(c.args);
  EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(c.must_contain), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ScheduleBadInput,
    testing::Values(
        BadCase{"schedule --collective allreduc --algorithm ring --ranks 4",
                "unknown collective 'allreduc'; did you mean 'all_reduce'? (valid: broadcast, "
                "reduce, all_gather"},
        BadCase{"schedule --collective all_reduce --algorithm rings --ranks 4",
                "unknown algorithm 'rings' for all_reduce; did you mean 'ring'? (valid: "},
        BadCase{"schedule --collective broadcast --algorithm pairwise --ranks 4",
                "unknown algorithm 'pairwise' for broadcast"},
        BadCase{"schedule --collective all_reduce --algorithm ring --ranks 0",
                "ranks must be >= 1 (got 0)"},
        BadCase{"schedule --collective all_reduce --algorithm ring --ranks -3",
                "ranks must be >= 1 (got -3)"},
        BadCase{"schedule --collective broadcast --algorithm linear --ranks 4 --root 4",
                "root 4 is out of range for 4 ranks"},
        BadCase{"schedule --collective reduce --algorithm linear --ranks 4 --root -1",
                "root -1 is out of range"},
        BadCase{"schedule --collective all_reduce --algorithm ring --ranks 4 --count -5",
                "count must be >= 0 (got -5)"},
        BadCase{"schedule --collective barrier --algorithm dissemination --ranks 4 --count 3",
                "barrier moves no data"},
        BadCase{"schedule --collective all_reduce --algorithm rabenseifner:zigzag --ranks 4",
                "unknown variant 'zigzag'"},
        BadCase{"schedule --collective all_reduce --algorithm ring --ranks 4 --rank 9",
                "--rank 9 is out of range"},
        BadCase{"schedule --collective all_reduce --algorithm ring --ranks four", "--ranks"}));

TEST(AlgorithmsCommand, ListsEveryRegisteredPair) {
  const RunResult r = run("algorithms");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const AlgorithmDef& d : algorithm_registry()) {
    EXPECT_NE(r.out.find(std::string(to_string(d.collective))), std::string::npos);
    EXPECT_NE(r.out.find("  " + d.name), std::string::npos) << d.name;
    EXPECT_NE(r.out.find(d.cost_formula), std::string::npos) << d.name;
  }
}

// --topology: the nccl family follows the channels the search finds on the
// network. On 2 DGX H100 (8 NICs per node, rail-optimised) every ring is a
// permutation of the 16 ranks, crosses between the nodes exactly twice, and
// each crossing stays on one rail (the same local GPU index, so the same NIC
// index, on both ends); 8 graph rings share the 16 run-time channels.
TEST(ScheduleCommand, NcclFollowsTheTopologysRails) {
  const std::string topo = std::string(COLLKIT_SOURCE_DIR) + "/topologies/h100-cluster-2x8.json";
  const RunResult r =
      run("schedule --collective all_reduce --algorithm nccl:ring --ranks 16 "
          "--count 4194304 --topology '" +
          topo + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("# nccl on "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ring/"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["variant"], "ring");
  EXPECT_EQ(j["channels"], 16);
  const auto& rings = j["plan"]["rings"];
  ASSERT_EQ(rings.size(), 8u);
  int lanes = 0;
  std::set<int> rails;
  for (const auto& ring : rings) {
    lanes += ring["lanes"].get<int>();
    std::vector<int> order = ring["order"].get<std::vector<int>>();
    ASSERT_EQ(order.size(), 16u);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 16; ++i) EXPECT_EQ(sorted[static_cast<std::size_t>(i)], i);
    int crossings = 0;
    for (std::size_t i = 0; i < 16; ++i) {
      const int a = order[i], b = order[(i + 1) % 16];
      if (a / 8 == b / 8) continue;
      ++crossings;
      EXPECT_EQ(a % 8, b % 8) << "a crossing leaves its rail: " << a << " -> " << b;
      rails.insert(a % 8);
    }
    EXPECT_EQ(crossings, 2);
  }
  EXPECT_EQ(lanes, 16);
  EXPECT_EQ(rails.size(), 8u) << "the rings together use every NIC";
  // The same schedule runs through the reference executor's check.
  const RunResult v = run("verify --collective all_reduce --algorithm nccl:ring --ranks 16");
  EXPECT_EQ(v.exit_code, 0) << v.err;
  // Other algorithms do not depend on the network.
  const RunResult bad =
      run("schedule --collective all_reduce --algorithm ring --ranks 16 "
          "--topology '" +
          topo + "'");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--topology: only the nccl family"), std::string::npos) << bad.err;
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
}

}  // namespace
}  // namespace collkit
