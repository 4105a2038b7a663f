// Why NCCL chose what it chose (`collkit simulate --explain`, `collkit plan
// --explain`; docs/NCCL.md, "NCCL's choice"): every (algorithm, protocol,
// channels) NCCL's cost model weighs at a size, its estimate, the time the
// simulator gives each, and the NCCL settings that would change the choice
// (NCCL_ALGO, NCCL_PROTO, the channel counts, the NCCL version).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "sim/sweep.h"
#include "topologies/topology.h"

namespace collkit {

struct NcclCandidate {
  NcclChoice choice;                   // variant, protocol, channels, NCCL's estimate
  std::optional<double> simulated_us;  // the simulator's time of that schedule
  std::string note;                    // why there is no simulated time
};

// A setting and what NCCL would run under it ("NCCL_ALGO=^NVLSTree",
// "tree/LL128/16ch").
struct NcclSettingEffect {
  std::string setting;
  std::string result;
};

struct NcclExplanation {
  std::string algorithm;  // "nccl", "nccl:ring"
  Collective collective = Collective::all_reduce;
  std::int64_t bytes = 0;
  NcclVersion version;
  NcclVersion release;                    // the release whose cost model that version follows
  std::vector<NcclCandidate> candidates;  // NCCL's order: algorithm, then protocol
  std::size_t chosen = 0;
  // What the simulator runs instead where collkit has no schedule for
  // NCCL's choice (sim/nccl.h, nccl_runnable_choice); none: the choice.
  std::optional<NcclChoice> simulated_as;
  std::vector<NcclSettingEffect> changes;
};

// NCCL's side of the explanation at `bytes` (nccl_candidates, nccl_choose,
// and the choice under each setting); simulated times left empty. Throws
// UsageError as nccl_choose does when nothing applies.
NcclExplanation explain_nccl_choice(const NcclContext& ctx, Collective c, std::int64_t bytes,
                                    DataType type, RedOp op, std::optional<NcclVariant> variant);

// Fills each candidate's simulated time: the schedule `base` (collective,
// sizes, root) run as that candidate on `topology`; a candidate collkit has
// no schedule for gets a note instead.
void simulate_candidates(NcclExplanation& e, const ScheduleSpec& base, const NcclContext& ctx,
                         const Topology& topology, const SimOptions& options);

// The explanation of every nccl algorithm of the sweep (NCCL's own choice
// and named variants) at every size, simulated; sizes of no elements (NCCL
// discards the call) are left out.
std::vector<NcclExplanation> explain_sweep(const SweepSpec& sweep, const Topology& topology,
                                           const SimOptions& options);

// The JSON form (docs/REPORTS.md, "nccl_explain") and the text printed
// after simulate's table.
Json nccl_explanation_json(const NcclExplanation& e);
std::string format_nccl_explanations(const std::vector<NcclExplanation>& all);

}  // namespace collkit
