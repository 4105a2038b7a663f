// A sweep's points as a report: the nccl-tests figures of every (algorithm,
// size) and the best algorithm per size. The sweep itself (sim/sweep.h) knows
// only times; what a report is lives here.
#pragma once

#include <vector>

#include "reports/report.h"
#include "sim/engine.h"
#include "sim/sweep.h"
#include "topologies/topology.h"

namespace collkit {

// One row per point (out-of-place, wrong = N/A), in the points' order
// (grouped by algorithm), with `best` filled. mode/backend are left at
// simulate/sim, collkit_version and topology empty: the caller owns those.
Report sweep_report(const SweepSpec& sweep, const std::vector<SweepPoint>& points);

// simulate_sweep as a report of mode simulate, backend sim, with the
// topology and extra["model"] filled. `orbits`, when given, receives each
// row's orbit note (SweepPoint::orbits) in row order: not part of the
// report, whose files stay as they were.
Report simulate_report(const SweepSpec& sweep, const Topology& topology, const SimOptions& options,
                       const ProgressFn& progress = {}, std::vector<std::string>* orbits = nullptr);

}  // namespace collkit
