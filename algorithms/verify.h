// `collkit verify`: a schedule, built-in or from a schedule source, run by the
// reference executor at several counts, numerically (every reduction op, the
// four element types) and symbolically (every contribution exactly once).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/schedule.h"

namespace collkit {

struct VerifyCount {
  std::int64_t count = 0;
  std::string why;  // why this count is in the sweep
};

// The counts tried by default, with the reason for each: for a spec whose
// counts must be multiples of `unit` (a schedule source's count_unit, 1 for
// built-in algorithms): 0, 1, p-1, p, p+1 and 65537 (uneven for every p > 1)
// for unit 1; unit, 2 unit, 3 unit, (p+1) unit and a multiple past 65536
// otherwise. A barrier moves no data: 0 only.
std::vector<VerifyCount> default_verify_counts(Collective c, int ranks, std::int64_t unit);

struct VerifyRow {
  std::int64_t count = 0;
  std::string why;
  std::int64_t steps = 0;       // max over ranks of all steps
  std::int64_t comm_steps = 0;  // max over ranks of steps that communicate
  std::int64_t messages = 0;    // all sends of all ranks
  int numeric_runs = 0;         // (dtype, op) pairs checked
  bool symbolic = false;        // the symbolic run was done
  std::string note;             // e.g. what an imported schedule needed
};

struct VerifyResult {
  std::vector<VerifyRow> rows;  // the counts that passed, in order
  bool ok = true;
  std::int64_t failed_count = -1;
  std::string failure;  // the reference executor's message (rank, step, op, region)
};

// Builds the schedule for each count (make_schedule) and runs the checks.
// `note` (optional) adds a line per row about the built schedule. Stops at
// the first failure (a ScheduleError from the build or the executor); bad
// parameters (UsageError, FileError) propagate.
VerifyResult verify_counts(const ScheduleSpec& base, const std::vector<VerifyCount>& counts,
                           const std::function<std::string(const Schedule&)>& note = {},
                           const std::function<void(const VerifyRow&)>& on_row = {});

}  // namespace collkit
