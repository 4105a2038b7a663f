// The cache-size search with a stand-in fit: which sizes it tries (hand-
// worked from the rows' footprints), that every candidate is fitted on a
// view with that cache size and nothing else changed, that the lowest loss
// wins (the first on ties) and only it gets the final search, warm-started
// from its own fit.
#include "calibration/cache_search.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/topologies/metadata_check.h"

namespace collkit {
namespace {

constexpr double kMiB = 1048576.0;

CalibrationInput rows(std::vector<std::int64_t> sizes, const std::string& algorithm = "ring") {
  CalibrationInput in;
  in.file = "m.json";
  in.report.mode = ReportMode::measure;
  for (std::int64_t b : sizes) {
    ResultRow r;
    r.algorithm = algorithm;
    r.bytes = b;
    r.time_us = 1;
    in.report.results.push_back(r);
  }
  return in;
}

TEST(CacheSearch, CandidatesSpanTheFootprints) {
  const std::unique_ptr<Topology> base = testing::rich_topology();  // 16 ranks, 64 MiB
  // Rows of 1 MiB .. 4 MiB: footprints 1 MiB / 16 .. 18 x 4 MiB = 72 MiB:
  // powers of two 1 .. 64 MiB, the base's 64 first and not repeated.
  const std::vector<double> c = cache_candidates({rows({1 << 20, 4 << 20})}, *base, {});
  EXPECT_EQ(c, (std::vector<double>{64 * kMiB, 1 * kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB, 16 * kMiB,
                                    32 * kMiB}));
  // Rows below --min-bytes and "native" rows without --match do not count;
  // 0-byte rows neither.
  CalibrateOptions o;
  o.min_bytes = 2 << 20;
  const std::vector<double> d =
      cache_candidates({rows({1 << 20, 2 << 20, 0}), rows({512 << 20}, "native")}, *base, o);
  // 2 MiB: 128 KiB .. 36 MiB.
  EXPECT_EQ(d, (std::vector<double>{64 * kMiB, 1 * kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB, 16 * kMiB,
                                    32 * kMiB}));
  o.match = "ring";  // the native rows now stand as ring: up to 18 x 512 MiB
  EXPECT_EQ(cache_candidates({rows({512 << 20}, "native")}, *base, o).back(), 8192 * kMiB);
}

TEST(CacheSearch, LowestLossWinsFirstOnTiesAndIsRefinedFromItsFit) {
  const std::unique_ptr<Topology> base = testing::rich_topology();
  const std::vector<double> candidates = {64 * kMiB, 1 * kMiB, 2 * kMiB, 4 * kMiB};
  // Losses by cache size: 2 and 4 MiB tie at the lowest.
  const auto loss_of = [](double cache) {
    return cache == 2 * kMiB || cache == 4 * kMiB ? 1.0 : 5.0;
  };
  struct Call {
    double cache;
    bool final;
    LmVector warm;
  };
  std::vector<Call> calls;
  const CalibrationResult r = search_cache(
      candidates, *base, [&](const Topology& net, const SearchPlan& plan, LmVector* theta) {
        testing::expect_carries(*base, net);
        const double cache = net.endpoint(0).cache_bytes;
        calls.push_back({cache, plan.final, plan.warm});
        if (theta != nullptr) *theta = {cache};
        CalibrationResult out;
        out.loss = loss_of(cache);
        out.iterations = 7;
        out.best_start = 0;
        out.endpoint.cache_bytes = cache;
        return out;
      });
  ASSERT_EQ(calls.size(), 5U);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(calls[i].cache, candidates[i]);
    EXPECT_FALSE(calls[i].final);
    EXPECT_TRUE(calls[i].warm.empty());
  }
  EXPECT_EQ(calls[4].cache, 2 * kMiB);
  EXPECT_TRUE(calls[4].final);
  EXPECT_EQ(calls[4].warm, (LmVector{2 * kMiB}));
  EXPECT_EQ(r.endpoint.cache_bytes, 2 * kMiB);
  EXPECT_EQ(r.iterations, 14) << "start 0 went on from the candidate's fit";
  ASSERT_EQ(r.cache_candidates.size(), 4U);
  EXPECT_EQ(r.cache_candidates[1], (std::pair<double, double>{1 * kMiB, 5.0}));
}

}  // namespace
}  // namespace collkit
