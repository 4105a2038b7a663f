#include "reports/sweep_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/sizes.h"

namespace collkit {
namespace {

using Sizes = std::vector<std::int64_t>;

SweepSpec spec_of(Collective c, std::vector<std::string> algorithms, Sizes sizes, int p) {
  SweepSpec s;
  s.collective = c;
  s.algorithms = std::move(algorithms);
  s.sizes = std::move(sizes);
  s.ranks = p;
  return s;
}

// A made-up cost: fixed latency per algorithm plus bytes over a bandwidth,
// so the winner changes with size.
double fake_time(const ScheduleSpec& spec) {
  const double bytes = static_cast<double>(spec.count) * spec.elem_size;
  if (spec.algorithm == "latency") return 1e-6 + bytes / 1e9;
  return 10e-6 + bytes / 10e9;
}

TEST(RunSweep, RowsBestAndCrossover) {
  const SweepSpec s = spec_of(Collective::all_reduce, {"latency", "bandwidth"},
                              sweep_sizes(1024, 1 << 20, 4, 0), 4);
  std::vector<std::size_t> progress;
  const Report rep =
      sweep_report(s, run_sweep(s, fake_time, [&](std::size_t done, std::size_t total) {
                     EXPECT_EQ(total, 12u);
                     progress.push_back(done);
                   }));
  ASSERT_EQ(rep.results.size(), 12u);
  EXPECT_EQ(progress.size(), 12u);
  EXPECT_EQ(progress.back(), 12u);
  EXPECT_EQ(rep.ranks, 4);
  EXPECT_EQ(rep.results[0].algorithm, "latency");
  EXPECT_EQ(rep.results[6].algorithm, "bandwidth");
  EXPECT_EQ(rep.results[1].bytes, 4096);
  EXPECT_EQ(rep.results[1].count, 1024);
  EXPECT_DOUBLE_EQ(rep.results[1].time_us, 1 + 4096 / 1e3);
  EXPECT_DOUBLE_EQ(rep.results[1].busbw_gbps, rep.results[1].algbw_gbps * 1.5);
  EXPECT_EQ(rep.results[1].wrong, -1);
  ASSERT_EQ(rep.best.size(), 6u);
  // Crossover where 1 + b/1e3 = 10 + b/1e4 us: b = 10 KB, so 16 KiB is the
  // first size the bandwidth algorithm wins.
  EXPECT_EQ(rep.best[0].algorithm, "latency");
  EXPECT_EQ(rep.best[1].algorithm, "latency");
  EXPECT_EQ(rep.best[2].algorithm, "bandwidth");
  const auto cross = compute_crossovers(rep.best);
  ASSERT_EQ(cross.size(), 1u);
  EXPECT_EQ(cross[0], (Crossover{Collective::all_reduce, 16384, "latency", "bandwidth"}));
}

TEST(RunSweep, BarrierRunsOnceAtSizeZero) {
  const SweepSpec s = spec_of(Collective::barrier, {"dissemination"}, {8, 16, 32}, 4);
  int calls = 0;
  const Report rep = sweep_report(s, run_sweep(s, [&](const ScheduleSpec& spec) {
                                    ++calls;
                                    EXPECT_EQ(spec.count, 0);
                                    return 5e-6;
                                  }));
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(rep.results.size(), 1u);
  EXPECT_EQ(rep.results[0].bytes, 0);
  EXPECT_DOUBLE_EQ(rep.results[0].time_us, 5.0);
  EXPECT_EQ(rep.results[0].busbw_gbps, 0.0);
}

}  // namespace
}  // namespace collkit
