// `collkit compare`: a prediction (simulate) against a measurement (bench),
// row by row, with the relative error and its distribution, so a user knows
// how far to trust the cost model (docs/REPORTS.md, "collkit compare").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reports/report.h"

namespace collkit {

// The identity of a row for matching. dtype/op/root are the row's effective
// values as the table prints them (op "none", root -1 where they do not
// apply), so rows of a `bench -d all` run do not collapse onto one another.
struct RowKey {
  Collective collective = Collective::all_reduce;
  std::string algorithm;
  std::int64_t bytes = 0;
  bool in_place = false;
  std::string dtype;
  std::string op;
  int root = -1;
  bool operator==(const RowKey&) const = default;
};

struct MatchedRow {
  RowKey key;  // in_place is the measured row's
  double predicted_us = 0;
  double measured_us = 0;
  // (predicted - measured) / measured; empty when the measured time is 0.
  std::optional<double> rel_error;
};

struct CompareResult {
  std::vector<MatchedRow> rows;  // in the measured report's order
  std::vector<RowKey> predicted_only;
  std::vector<RowKey> measured_only;
  std::size_t with_error = 0;  // rows that have a rel_error
  double median_abs_error = 0;
  double p90_abs_error = 0;
  std::vector<std::size_t> worst;  // indices into rows, largest |error| first, at most 5
};

// Each measured row is matched with the predicted row of the same key. A
// simulated report holds out-of-place rows only (its time does not depend on
// aliasing), so where the predicted report has no row of the measured row's
// in_place for that (collective, algorithm, bytes, ...), the other one stands
// in. Rows below `min_bytes` are left out of everything. Throws UsageError
// when the reports have different rank counts or nothing matches, saying why.
CompareResult compare_reports(const Report& predicted, const Report& measured,
                              std::int64_t min_bytes = 0,
                              const std::string& predicted_name = "predicted",
                              const std::string& measured_name = "measured");

// Repeats of one measurement (the same bench command run several times) as
// one report: the first report's rows, each row's time_us the median over the
// repeats (the mean of the middle two for an even count) and its bandwidths
// recomputed from it. Every repeat must hold the same rows (same keys, same
// ranks); otherwise FileError naming the repeat and the row. One report is
// returned unchanged.
Report median_of_repeats(const std::vector<Report>& repeats, const std::vector<std::string>& names);

// The q-quantile (0..1) of `values` with linear interpolation between the
// closest ranks (numpy's default): position q x (n - 1) of the sorted values.
// 0 for an empty vector.
double quantile(std::vector<double> values, double q);

// The printed report: one line per matched row, the summary, the worst rows
// and the unmatched rows.
std::string format_comparison(const CompareResult& result, const std::string& predicted_name,
                              const std::string& measured_name);

// The --json form (docs/REPORTS.md).
Json comparison_to_json(const CompareResult& result, const std::string& predicted_name,
                        const std::string& measured_name, std::int64_t min_bytes);

}  // namespace collkit
