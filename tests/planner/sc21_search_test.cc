// The planner's own choice for the rows of SC21 Table 1 it can search in
// seconds (1.7 B to 39 B, 32 to 512 GPUs): with the same software as the
// published runs (sc21_rows.h) but layout, micro-batch and recomputation
// its own, the plan fits the 80 GB and its predicted step is no longer than
// the published layout's. Label scale (the asan preset leaves it out).
#include <gtest/gtest.h>

#include <cstdio>

#include "planner/planner.h"
#include "planner_test_util.h"
#include "sc21_rows.h"

namespace collkit {
namespace {

using namespace testing_planner;

TEST(Sc21Table1, PlannersChoiceIsAtLeastAsFastAndFits) {
  const Device a100 = load_device(source("devices/a100-sxm4-80gb.json"));
  int searched = 0;
  for (const Row& r : table1()) {
    if (r.gpus > 512) continue;
    const auto topo = load_topology(source("topologies/a100-cluster-384x8.json"), r.gpus);
    const Model m = load_model(model_file(r.model));
    const PlanOptions given = sc21_options(r, a100);
    const Plan published = make_plan(m, *topo, given).plan;
    PlanOptions o = given;
    o.search = true;
    o.user.reset();
    o.micro_batch = 0;
    o.recompute.reset();
    const PlanResult res = make_plan(m, *topo, o);
    ASSERT_TRUE(res.fits) << r.model;
    EXPECT_LE(res.plan.memory.total(), res.usable_memory) << r.model;
    EXPECT_LE(res.plan.step_time(), published.step_time() * (1 + 1e-9)) << r.model;
    std::printf("%-9s published layout %.2f s, planner's t %d p %d d %d b %lld %s: %.2f s\n",
                r.model.c_str(), published.step_time(), res.plan.layout.tp, res.plan.layout.pp,
                res.plan.layout.dp, static_cast<long long>(res.plan.layout.micro_batch),
                std::string(to_string(res.plan.layout.recompute)).c_str(), res.plan.step_time());
    ++searched;
  }
  EXPECT_EQ(searched, 5);
}

}  // namespace
}  // namespace collkit
