// Issue 40 item 13: the best algorithm per size compares out-of-place times
// (what nccl-tests users compare); in-place rows only where a size has no
// out-of-place row, and the summary says which.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/nccl_sizes.h"
#include "reports/report.h"
#include "reports/table.h"

namespace collkit {
namespace {

ResultRow row(const std::string& algorithm, std::int64_t bytes, double time_us, bool in_place) {
  return make_row(Collective::all_reduce, algorithm, map_size(Collective::all_reduce, bytes, 4, 4),
                  4, time_us, in_place, 0);
}

TEST(Best, OutOfPlaceTimesCompeteAndInPlaceOnlyWhereAloneAtItsSize) {
  Report r;
  r.collkit_version = "test";
  r.mode = ReportMode::measure;
  r.backend = Backend::mpi;
  r.ranks = 4;
  r.results = {row("ring", 1024, 50, false),   row("ring", 1024, 10, true),
               row("native", 1024, 40, false), row("native", 1024, 60, true),
               row("ring", 4096, 90, true),    row("native", 4096, 80, true)};
  r.best = compute_best(r.results);
  ASSERT_EQ(r.best.size(), 2u);
  // ring's in-place 10 us is faster, but out of place native wins.
  EXPECT_EQ(r.best[0].algorithm, "native");
  EXPECT_EQ(r.best[0].time_us, 40);
  EXPECT_FALSE(r.best[0].in_place);
  // 4 KiB ran in place only.
  EXPECT_EQ(r.best[1].algorithm, "native");
  EXPECT_TRUE(r.best[1].in_place);
  const std::string summary = format_best_summary(r);
  EXPECT_EQ(summary.rfind("# Best algorithm per size, by out-of-place time", 0), 0u) << summary;
  EXPECT_NE(summary.find("native (in-place)"), std::string::npos) << summary;
  // The JSON says so, and reads back the same.
  const Report back = report_from_json(to_json(r), "r.json");
  EXPECT_EQ(back.best, r.best);
}

TEST(Best, ReportsWithoutInPlaceRowsKeepTheirTitle) {
  Report r;
  r.ranks = 4;
  r.results = {row("ring", 1024, 50, false), row("native", 1024, 40, false)};
  r.best = compute_best(r.results);
  EXPECT_EQ(format_best_summary(r).rfind("# Best algorithm per size\n", 0), 0u);
}

}  // namespace
}  // namespace collkit
