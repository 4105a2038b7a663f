// Evaluating a grid (whatif/evaluate.h) and writing it (whatif/output.h):
// a point's row is what simulate gives on the shipped file of the same
// machine; rows do not depend on the threads or on how the points are
// shared out; the best marks agree with a plain search of the rows.
#include "whatif/evaluate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "core/nccl_sizes.h"
#include "planner/planner.h"
#include "planner/planner_model.h"
#include "sim/sweep.h"
#include "topologies/topology.h"
#include "whatif/output.h"

namespace collkit {
namespace {

const std::string kSource = COLLKIT_SOURCE_DIR;

const Grid& small_grid() {
  static const Grid g = read_grid(kSource + "/sweeps/small.json");
  return g;
}

const std::vector<Json>& small_rows() {
  static const std::vector<Json> rows = [] {
    std::vector<std::size_t> all(small_grid().points());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    return evaluate_points(small_grid(), all, 1);
  }();
  return rows;
}

// Point 5x4 + 1 + ... : machine nodes=4 nic_gbps=48 is the shipped 4x8
// cluster; its all_gather at 16M is simulated here straight from that file.
TEST(Evaluate, RowIsSimulateOnTheShippedMachine) {
  const Grid& g = small_grid();
  const std::size_t machine = 5;  // nodes=4 nic_gbps=48
  const std::size_t point = machine * g.per_machine() + 1 * g.sizes.size() + 1;
  const Json& row = small_rows()[point];
  EXPECT_EQ(row["point"], point);
  EXPECT_EQ(row["nodes"], 4);
  EXPECT_EQ(row["nic_gbps"], 48);
  EXPECT_EQ(row["collective"], "all_gather");
  EXPECT_EQ(row["ranks"], 32);

  const std::unique_ptr<Topology> t = load_topology(kSource + "/topologies/h100-cluster-4x8.json");
  SweepSpec spec;
  spec.collective = Collective::all_gather;
  spec.algorithms = {"nccl", "ring"};
  spec.sizes = {16 << 20};
  spec.ranks = 32;
  spec.model = cost_params_of(*t, 32);
  const std::vector<SweepPoint> want = simulate_sweep(spec, *t, SimOptions{});
  ASSERT_EQ(row["algorithms"].size(), 2u);
  double best = 1e300;
  std::string best_name;
  for (std::size_t i = 0; i < 2; ++i) {
    const Json& r = row["algorithms"][i];
    EXPECT_EQ(r["algorithm"], want[i].algorithm);
    EXPECT_EQ(r["time_us"].get<double>(), want[i].seconds * 1e6);
    const double algbw = double(want[i].size.bytes) / (want[i].seconds * 1e9);
    EXPECT_NEAR(r["busbw_gbps"].get<double>(), algbw * 31.0 / 32.0, 1e-9 * algbw);
    if (want[i].seconds < best) {
      best = want[i].seconds;
      best_name = want[i].algorithm;
    }
  }
  EXPECT_EQ(row["best"], best_name);
  EXPECT_EQ(row["time_us"].get<double>(), best * 1e6);
  EXPECT_EQ(row["bytes"], want[0].size.bytes);
}

TEST(Evaluate, RowsDoNotDependOnThreadsOrRanks) {
  const Grid& g = small_grid();
  std::string one;
  for (const Json& r : small_rows()) one += r.dump() + "\n";
  std::vector<std::size_t> all(g.points());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  for (int jobs : {2, 3}) {
    std::string many;
    for (const Json& r : evaluate_points(g, all, jobs)) many += r.dump() + "\n";
    EXPECT_EQ(many, one) << jobs;
  }
  // Three processes' shares: disjoint, together every point once, each
  // row the one-process row.
  std::set<std::size_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    const std::vector<std::size_t> mine = points_of_rank(g, rank, 3);
    const std::vector<Json> rows = evaluate_points(g, mine, 2);
    for (std::size_t i = 0; i < mine.size(); ++i) {
      EXPECT_TRUE(seen.insert(mine[i]).second);
      EXPECT_EQ(mine[i] % 3, static_cast<std::size_t>(rank));
      EXPECT_EQ(rows[i].dump(), small_rows()[mine[i]].dump());
    }
  }
  EXPECT_EQ(seen.size(), g.points());
}

// A plan point is collkit plan on the same machine: nodes=4 nic_gbps=48
// of sweeps/plan-small.json is the shipped 4x8 cluster.
TEST(Evaluate, PlanRowIsThePlannersPlan) {
  const Grid g = read_grid(kSource + "/sweeps/plan-small.json");
  const std::size_t point = 3 * g.per_machine() + 0;  // nodes=4 nic_gbps=48, gpt2-1.5b, 64
  const Json row = evaluate_point(g, point);
  EXPECT_EQ(row["model"], "gpt2-1.5b");
  EXPECT_EQ(row["batch"], 64);
  EXPECT_EQ(row["ranks"], 32);
  const std::unique_ptr<Topology> t = load_topology(kSource + "/topologies/h100-cluster-4x8.json");
  PlanOptions o;
  o.ranks = 32;
  o.batch = 64;
  o.device_memory = 40.0 * (1ull << 30);
  o.nccl = true;  // collkit plan's --collectives auto on a GPU topology
  const PlanResult want = make_plan(load_model(kSource + "/models/gpt2-1.5b.json"), *t, o);
  EXPECT_EQ(row["fits"], want.fits);
  EXPECT_EQ(row["step_time_s"].get<double>(), want.plan.step_time());
  EXPECT_EQ(row["comm_time_s"].get<double>(), want.plan.comm_time);
  EXPECT_EQ(row["tp"], want.plan.layout.tp);
  EXPECT_EQ(row["pp"], want.plan.layout.pp);
  EXPECT_EQ(row["dp"], want.plan.layout.dp);
  EXPECT_EQ(row["micro_batch"], want.plan.layout.micro_batch);
}

TEST(Output, BestMachinePerColumnAndFiles) {
  const Grid& g = small_grid();
  std::vector<Json> rows = small_rows();
  mark_best_machines(g, rows);
  // A plain search: for each (collective, size) the highest busbw.
  for (std::size_t k = 0; k < g.per_machine(); ++k) {
    std::size_t best = k;
    for (std::size_t m = 0; m < g.machines(); ++m) {
      const std::size_t p = m * g.per_machine() + k;
      if (rows[p]["busbw_gbps"].get<double>() > rows[best]["busbw_gbps"].get<double>()) best = p;
    }
    for (std::size_t m = 0; m < g.machines(); ++m) {
      const std::size_t p = m * g.per_machine() + k;
      EXPECT_EQ(rows[p]["best_machine"].get<bool>(), p == best) << p;
    }
  }
  const std::string csv = sweep_csv(g, rows);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), static_cast<long>(g.points() + 1));
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "point,nodes,nic_gbps,ranks,collective,bytes,best,time_us,busbw_gbps,best_machine,"
            "nccl.time_us,nccl.busbw_gbps,nccl.ran,ring.time_us,ring.busbw_gbps,ring.ran");
  const Json doc = Json::parse(sweep_json(g, rows));
  EXPECT_EQ(doc["points"], g.points());
  EXPECT_EQ(doc["rows"].size(), g.points());
  EXPECT_EQ(doc["rows"][7], rows[7]);
  // One starred cell per column of each heatmap: 2 collectives x 2 sizes.
  const std::string html = sweep_html(g, rows);
  std::size_t stars = 0;
  for (std::size_t at = html.find("&#9733;"); at != std::string::npos;
       at = html.find("&#9733;", at + 1))
    ++stars;
  EXPECT_EQ(stars, g.per_machine());
  EXPECT_NE(html.find("<h2>all_gather</h2>"), std::string::npos);
  const std::string table = sweep_table(g, rows);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), static_cast<long>(g.points() + 1));
}

}  // namespace
}  // namespace collkit
