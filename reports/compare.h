// `collkit compare`: a prediction (simulate) against a measurement (bench),
// row by row, with the relative error and its distribution, so a user knows
// how far to trust the cost model (docs/REPORTS.md, "collkit compare").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
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
  bool operator<(const RowKey& o) const {
    return std::tie(collective, algorithm, bytes, in_place, dtype, op, root) <
           std::tie(o.collective, o.algorithm, o.bytes, o.in_place, o.dtype, o.op, o.root);
  }
};

// The key of a report's row (dtype/op/root effective, as printed).
RowKey row_key(const Report& report, const ResultRow& row);

struct MatchedRow {
  RowKey key;  // in_place is the measured row's; algorithm the predicted one's
  // With --match: the measured row's algorithm ("nccl", "native"); else empty.
  std::string measured_algorithm;
  double predicted_us = 0;
  double measured_us = 0;
  // (predicted - measured) / measured; empty when either time is 0.
  std::optional<double> rel_error;
};

// The |error| of the rows whose nccl-tests size column lies in [lo, hi).
struct BandSummary {
  std::string name;      // "< 1 MiB", "1 MiB - 64 MiB", ">= 64 MiB", "all"
  std::int64_t lo = 0;   // bytes, inclusive
  std::int64_t hi = -1;  // bytes, exclusive; -1 = no bound
  std::size_t rows = 0;  // rows with an error in the band
  double median_abs_error = 0;
  double worst_abs_error = 0;
};

// The size bands of the band summary: below 1 MiB, 1 MiB to below 64 MiB,
// 64 MiB and more (the size is nccl-tests' size column).
inline constexpr std::int64_t kBandEdges[] = {1 << 20, 64 << 20};

struct CompareOptions {
  std::int64_t min_bytes = 0;
  // --match ALGO: the predicted rows of ALGO against the measured rows of
  // algorithm "nccl" or "native" (a library's own collective, e.g. what
  // nccl-tests measured), row by row; other rows of either report are left
  // out. Empty: rows match by algorithm name.
  std::string match;
  // Add the per-band summary (BandSummary): on with --match and for
  // nccl-tests inputs.
  bool bands = false;
};

struct CompareResult {
  std::string match;               // CompareOptions::match
  std::vector<BandSummary> bands;  // the three bands, then "all"; empty unless asked
  std::vector<MatchedRow> rows;    // in the measured report's order
  std::vector<RowKey> predicted_only;
  std::vector<RowKey> measured_only;
  // Measured rows left out because their check failed (#wrong > 0), with
  // how many elements were wrong.
  std::vector<std::pair<RowKey, std::int64_t>> failed_check;
  std::size_t with_error = 0;  // rows that have a rel_error
  // Matched rows predicted at 0 us against a measured time (no rel_error).
  std::size_t predicted_no_time = 0;
  double median_abs_error = 0;
  double p90_abs_error = 0;
  std::vector<std::size_t> worst;  // indices into rows, largest |error| first, at most 5
};

// Each measured row is matched with the predicted row of the same key (the
// n-th measured row of a repeated key with the n-th predicted one). A
// simulated report holds out-of-place rows only (its time does not depend on
// aliasing), so where the predicted report has no row of the measured row's
// in_place for that (collective, algorithm, bytes, ...), the other one stands
// in. Rows below `min_bytes` are left out of everything. Throws UsageError
// when the reports have different rank counts or nothing matches, saying why.
CompareResult compare_reports(const Report& predicted, const Report& measured,
                              std::int64_t min_bytes = 0,
                              const std::string& predicted_name = "predicted",
                              const std::string& measured_name = "measured");

// The same with --match and the band summary (CompareOptions). With a match,
// UsageError also when the predicted report has no row of that algorithm or
// the measured one no "nccl"/"native" row.
CompareResult compare_reports(const Report& predicted, const Report& measured,
                              const CompareOptions& options, const std::string& predicted_name,
                              const std::string& measured_name);

// Which of a row's repeated measurements stands for it.
enum class RepeatStat : std::uint8_t {
  median,   // the median (the mean of the middle two for an even count)
  fastest,  // the least time: the machine at its best, where what varies
            // between repeats only slows a run down (docs/REPORTS.md,
            // "Repeats")
};

// "median" or "fastest"; UsageError naming `flag` otherwise.
RepeatStat parse_repeat_stat(const std::string& flag, const std::string& text);

// Repeats of one measurement (the same bench command run several times) as
// one report: the first report's rows, each row's time_us the median (or
// the least, RepeatStat::fastest) over the repeats and its bandwidths
// recomputed from it. Every repeat must hold the same rows (same keys, same
// ranks; a row that appears several times in a run, e.g. nccl-tests' rows of
// 0 bytes, pairs by occurrence); otherwise FileError naming the repeat and
// the row. One report is returned unchanged.
Report median_of_repeats(const std::vector<Report>& repeats, const std::vector<std::string>& names,
                         RepeatStat stat = RepeatStat::median);

// The q-quantile (0..1) of `values` with linear interpolation between the
// closest ranks (numpy's default): position q x (n - 1) of the sorted values.
// 0 for an empty vector.
double quantile(std::vector<double> values, double q);

// The printed report: one line per matched row, the summary (and the band
// summary when there is one), the worst rows and the unmatched rows.
std::string format_comparison(const CompareResult& result, const std::string& predicted_name,
                              const std::string& measured_name);

// The --json form (docs/REPORTS.md); "match" and "bands" only when set.
Json comparison_to_json(const CompareResult& result, const std::string& predicted_name,
                        const std::string& measured_name, std::int64_t min_bytes);

}  // namespace collkit
