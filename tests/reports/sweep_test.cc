#include "reports/sweep.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/error.h"

namespace collkit {
namespace {

using Sizes = std::vector<std::int64_t>;

TEST(ParseSize, SuffixesArePowersOf1024) {
  EXPECT_EQ(parse_size("-b", "8"), 8);
  EXPECT_EQ(parse_size("-b", "64K"), 65536);
  EXPECT_EQ(parse_size("-b", "64k"), 65536);
  EXPECT_EQ(parse_size("-e", "32M"), 32 << 20);
  EXPECT_EQ(parse_size("-e", "1G"), std::int64_t{1} << 30);
  EXPECT_EQ(parse_size("-e", "0"), 0);
}

std::string size_error(const std::string& flag, const std::string& text) {
  try {
    parse_size(flag, text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParseSize, ErrorsNameTheFlagAndValue) {
  EXPECT_EQ(size_error("-b", "12X"),
            "-b '12X': expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, "
            "1G)");
  EXPECT_EQ(size_error("-e", "1GB"),
            "-e '1GB': expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, "
            "1G)");
  EXPECT_EQ(size_error("-b", ""),
            "-b '': expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, 1G)");
  EXPECT_EQ(size_error("-b", "-8"), "-b '-8': sizes must be > 0 bytes");
  EXPECT_EQ(size_error("-e", "99999999999G"), "-e '99999999999G': too large");
  EXPECT_EQ(size_error("-e", "99999999999999999999"), "-e '99999999999999999999': too large");
}

TEST(SweepSizes, LikeNcclTestsLoop) {
  EXPECT_EQ(sweep_sizes(8, 128, 2, 0), (Sizes{8, 16, 32, 64, 128}));
  EXPECT_EQ(sweep_sizes(8, 100, 2, 0), (Sizes{8, 16, 32, 64}));
  EXPECT_EQ(sweep_sizes(10, 20, 2, 0), (Sizes{10, 20}));
  EXPECT_EQ(sweep_sizes(1024, 4096, 1, 1024), (Sizes{1024, 2048, 3072, 4096}));
  EXPECT_EQ(sweep_sizes(1000, 3500, 1, 1000), (Sizes{1000, 2000, 3000}));
  EXPECT_EQ(sweep_sizes(32 << 20, 32 << 20, 1, 1 << 20), (Sizes{32 << 20}));
  EXPECT_EQ(sweep_sizes(5, 5, 1, 0), (Sizes{5}));
  // 8 B .. 1 GiB by 2: 28 sizes.
  EXPECT_EQ(sweep_sizes(8, std::int64_t{1} << 30, 2, 0).size(), 28u);
  // Near the top of int64 the loop stops instead of overflowing.
  EXPECT_EQ(sweep_sizes(INT64_MAX / 2, INT64_MAX, 4, 0).size(), 1u);
  EXPECT_EQ(sweep_sizes(INT64_MAX - 10, INT64_MAX, 1, 8).size(), 2u);
}

TEST(SweepSizes, RejectsBadFlags) {
  EXPECT_THROW(sweep_sizes(0, 8, 2, 0), UsageError);
  EXPECT_THROW(sweep_sizes(-8, 8, 2, 0), UsageError);
  EXPECT_THROW(sweep_sizes(8, 0, 2, 0), UsageError);
  EXPECT_THROW(sweep_sizes(8, 16, 0, 0), UsageError);
  EXPECT_THROW(sweep_sizes(8, 16, 1, 0), UsageError);
  EXPECT_THROW(sweep_sizes(1, std::int64_t{1} << 30, 1, 1), UsageError);
  try {
    sweep_sizes(64, 8, 2, 0);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "-b 64 is larger than -e 8");
  }
}

TEST(ExpandAlgorithms, ListsAreSplitAndDeduplicated) {
  EXPECT_EQ(expand_algorithms(Collective::all_reduce, "ring"), std::vector<std::string>{"ring"});
  EXPECT_EQ(expand_algorithms(Collective::all_reduce, "ring,rabenseifner:blocks,ring"),
            (std::vector<std::string>{"ring", "rabenseifner:blocks"}));
  EXPECT_THROW(expand_algorithms(Collective::all_reduce, "ring,,tree"), UsageError);
  EXPECT_THROW(expand_algorithms(Collective::all_reduce, ""), UsageError);
}

SweepSpec spec_of(Collective c, std::vector<std::string> algorithms, Sizes sizes, int p) {
  SweepSpec s;
  s.collective = c;
  s.algorithms = std::move(algorithms);
  s.sizes = std::move(sizes);
  s.ranks = p;
  return s;
}

TEST(ScheduleSpecOfSweep, CarriesCollkitCountsAndSegments) {
  SweepSpec s = spec_of(Collective::all_gather, {"ring"}, {1 << 20}, 8);
  s.dtype = DataType::float64;
  s.root = 3;
  s.segment_bytes = 4096;
  s.group_size = 2;
  const ScheduleSpec spec =
      schedule_spec(s, "ring", map_size(Collective::all_gather, 1 << 20, 8, 8));
  EXPECT_EQ(spec.collective, Collective::all_gather);
  EXPECT_EQ(spec.algorithm, "ring");
  EXPECT_EQ(spec.count, 131072);  // total output of 1 MiB of doubles
  EXPECT_EQ(spec.elem_size, 8);
  EXPECT_EQ(spec.segment, 512);
  EXPECT_EQ(spec.root, 3);
  EXPECT_EQ(spec.ranks, 8);
  EXPECT_EQ(spec.group_size, 2);
  s.segment_bytes = 3;  // less than one element still means one
  EXPECT_EQ(schedule_spec(s, "ring", {}).segment, 1);
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
  const Report rep = run_sweep(s, fake_time, [&](std::size_t done, std::size_t total) {
    EXPECT_EQ(total, 12u);
    progress.push_back(done);
  });
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
  const Report rep = run_sweep(s, [&](const ScheduleSpec& spec) {
    ++calls;
    EXPECT_EQ(spec.count, 0);
    return 5e-6;
  });
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(rep.results.size(), 1u);
  EXPECT_EQ(rep.results[0].bytes, 0);
  EXPECT_DOUBLE_EQ(rep.results[0].time_us, 5.0);
  EXPECT_EQ(rep.results[0].busbw_gbps, 0.0);
}

TEST(NetModelNames, RoundTrip) {
  EXPECT_EQ(parse_net_model("flow"), NetModel::flow);
  EXPECT_EQ(parse_net_model("alpha-beta"), NetModel::alpha_beta);
  EXPECT_EQ(to_string(NetModel::alpha_beta), "alpha-beta");
  EXPECT_THROW(parse_net_model("alpha_beta"), UsageError);
}

}  // namespace
}  // namespace collkit
