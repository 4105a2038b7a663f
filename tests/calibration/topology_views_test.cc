// Calibration's two views of the base network keep everything they do not
// fit: the trial network (fitted links and endpoint) and the cache-size
// candidates. Before they shared TopologyView, the cache search's view kept
// only the name: a base with a cache size lost its nodes, protocols, NCCL
// graph and NVLS switch on that path.
#include <gtest/gtest.h>

#include <memory>

#include "calibration/cache_search.h"
#include "calibration/fit_problem.h"
#include "tests/topologies/metadata_check.h"

namespace collkit {
namespace {

TEST(CalibrationViews, CacheSizedKeepsTheBaseButTheCache) {
  const std::unique_ptr<Topology> base = testing::rich_topology();
  const CacheSized sized(*base, 8 * 1048576.0);
  testing::expect_carries(*base, sized);
  for (int r = 0; r < base->num_ranks(); ++r) {
    EXPECT_EQ(sized.endpoint(r).cache_bytes, 8 * 1048576.0);
    EXPECT_EQ(sized.endpoint(r).reduce_bw, base->endpoint(r).reduce_bw);
    EXPECT_EQ(sized.endpoint(r).launch, base->endpoint(r).launch);
  }
}

TEST(CalibrationViews, TrialKeepsTheBaseAndScalesProtocolLatencies) {
  const std::unique_ptr<Topology> base = testing::rich_topology();
  TrialTopology trial(*base);
  testing::expect_carries(*base, trial);
  // Through the cache search too: the trial of a candidate.
  const CacheSized sized(*base, 4 * 1048576.0);
  const TrialTopology trial_of_sized(sized);
  testing::expect_carries(*base, trial_of_sized);
  EXPECT_EQ(trial_of_sized.endpoint(0).cache_bytes, 4 * 1048576.0);

  // Starts at the base's figures; a fitted latency scales the class's
  // protocol latencies by fitted / base.
  for (LinkId id = 0; id < base->num_links(); ++id) {
    EXPECT_EQ(trial.link(id).bandwidth, base->link(id).bandwidth);
    EXPECT_EQ(trial.link(id).latency, base->link(id).latency);
  }
  LinkId with_protocols = -1;
  for (LinkId id = 0; id < base->num_links() && with_protocols < 0; ++id)
    if (base->link(id).has_protocol_latency() && base->link(id).latency > 0) with_protocols = id;
  ASSERT_GE(with_protocols, 0);
  const auto c = static_cast<std::size_t>(base->link_class(with_protocols));
  trial.classes[c].latency *= 3;
  for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple})
    EXPECT_DOUBLE_EQ(trial.link(with_protocols).latency_for(p),
                     3 * base->link(with_protocols).latency_for(p));
  // One fitted endpoint for all, on the base's hosts.
  trial.trial_endpoint.overhead = 2e-6;
  for (int r = 0; r < base->num_ranks(); ++r) {
    EXPECT_EQ(trial.endpoint(r).overhead, 2e-6);
    EXPECT_EQ(trial.endpoint(r).host, base->endpoint(r).host);
  }
}

}  // namespace
}  // namespace collkit
