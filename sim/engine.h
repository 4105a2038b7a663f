// The simulator: executes any Schedule on a Topology, event by event (no
// per-algorithm code here). See docs/SIMULATOR.md for the model.
#pragma once

#include <cstdint>

#include "algorithms/schedule.h"
#include "topologies/topology.h"

namespace collkit {

enum class NetModel : std::uint8_t {
  flow,        // concurrent flows share each directed link max-min fairly
  alpha_beta,  // no contention: each transfer sees its route's bottleneck alone
};

struct SimOptions {
  NetModel model = NetModel::flow;
};

struct SimResult {
  double time = 0;               // seconds until the last rank finishes
  std::int64_t messages = 0;     // point-to-point transfers simulated
  double bytes = 0;              // bytes moved by all transfers
  std::int64_t events = 0;       // events processed (for performance reports)
};

// Ranks of the schedule are placed on ranks 0..p-1 of the topology; the
// topology must have at least p ranks (UsageError otherwise). Bytes per
// element come from schedule.spec().elem_size.
SimResult simulate(const Schedule& schedule, const Topology& topology,
                   const SimOptions& options = {});

}  // namespace collkit
