// Repeated measurements in calibration (docs/REPORTS.md, "Repeats"): which
// rows a fit takes (every row, or each row's fastest repeat, optionally with
// one repeat left out), which points form each repeat, and how far what the
// fit determines moves between fits (of the repeats, or of starts that end
// as low as the best).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calibration/calibrate.h"
#include "calibration/solver.h"
#include "reports/compare.h"

namespace collkit {

// Which measured rows a fit takes when several inputs measured the same row
// (row_key: collective, algorithm, size, type, op, root, in-place column).
class RepeatSelection {
 public:
  // `fastest`: only each row's fastest repeat (ties: the first in input
  // order); otherwise every row. `leave_out` >= 0 (with `fastest`): the
  // leave_out-th file that measured a row, for rows measured in two files
  // or more, is left out, and the fastest of the others taken.
  RepeatSelection(const std::vector<CalibrationInput>& inputs, bool fastest, int leave_out);

  enum class Verdict { take, slower, left_out };
  // Asked once per fittable row, in input order: a row of the fastest time
  // is taken once, the others of its key are `slower`.
  Verdict take(const CalibrationInput& in, const ResultRow& row);

  // The most files that measured one row (0 without `fastest`).
  std::size_t repeats() const;

 private:
  bool left_out(const CalibrationInput& in, const RowKey& key) const;
  bool fastest_;
  int leave_out_;
  // Each row's least time over the inputs, and whether it has been taken.
  std::map<RowKey, std::pair<double, bool>> best_;
  // The files that measured each row, in input order: the k-th is repeat k.
  std::map<RowKey, std::vector<const CalibrationInput*>> files_of_row_;
};

// The points of each repeat when every row is fitted: point i belongs to
// repeat k when its file is the (k mod m)-th of the m files that measured
// its distinct point (`same_as[i]`, the first point alike; `file[i]`).
// Empty when no point was measured twice.
std::vector<std::vector<char>> repeat_members(const std::vector<std::size_t>& same_as,
                                              const std::vector<std::string>& file);

// What a fit determines: one parameter, or a group of proportional ones as
// their combination (a sum of times; bandwidths in series as 1 / sum(1 / b)).
// Parameters are in log space (theta = log value).
struct Quantity {
  std::string name;
  std::vector<std::size_t> members;  // with repeats: a route crossing a class twice
  bool series = false;
  double value(const LmVector& theta) const;
};

// The quantities a fit determines: each route kind's latency (`routes`) that
// some parameter of it is used for, each group (`group`: proportional_groups)
// of used parameters that are not times, alone or as a series bandwidth of
// rates; a group mixing times with rates or factors is left out.
std::vector<Quantity> determined_quantities(const std::vector<FittedParam>& params,
                                            const std::vector<std::size_t>& group,
                                            const std::vector<bool>& unused,
                                            const std::vector<Quantity>& routes);

// Each quantity at the joint fit and at each other fit, with its spread.
std::vector<ParamSpread> spreads(const std::vector<Quantity>& quantities,
                                 const std::vector<FittedParam>& params, const LmVector& joint,
                                 const std::vector<const LmVector*>& others);

// "name lo..hi (N%); ..." for the spreads over kStabilityTolerance; "" if none.
std::string disagreements(const std::vector<ParamSpread>& spreads);

}  // namespace collkit
