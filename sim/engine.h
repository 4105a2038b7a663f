// The simulator: executes any Schedule on a Topology, event by event (no
// per-algorithm code here). See docs/SIMULATOR.md for the model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/schedule.h"
#include "topologies/topology.h"

namespace collkit {

enum class NetModel : std::uint8_t {
  flow,        // concurrent flows share each directed link max-min fairly
  alpha_beta,  // no contention: each transfer sees its route's bottleneck alone
};

std::string_view to_string(NetModel m);           // "flow" | "alpha-beta"
NetModel parse_net_model(std::string_view name);  // UsageError listing the names

// The --launch flag: "proc" (one process per device) is 1, "group:G" (one
// host thread launches on G devices, as nccl-tests -g G) is G; UsageError
// otherwise. See SimOptions::launch_devices.
int parse_launch_mode(const std::string& text);

struct SimOptions {
  NetModel model = NetModel::flow;
  // Also report when each rank finished (SimResult::rank_times): p doubles,
  // off by default so runs at 2^20 ranks do not pay for it.
  bool rank_times = false;
  // How the collective is launched (docs/SIMULATOR.md, "Launch"): one host
  // thread enqueues it on this many devices in turn (nccl-tests -g G; 1 =
  // one process per device). The call then takes at least this many times
  // the endpoints' launch cost (EndpointProps::launch): back-to-back calls
  // are paced by the host when it is slower than the devices.
  int launch_devices = 1;
  // The orbit reduction (docs/SIMULATOR.md, "Orbits"): where it is proven
  // (a turn of the ranks that maps the network, the schedule and the routes
  // onto themselves), ranks of one orbit are simulated once. The times are
  // the full run's to rounding; false runs every rank.
  bool orbits = true;
};

struct SimResult {
  double time = 0;                 // seconds until the last rank finishes
  std::int64_t messages = 0;       // point-to-point transfers simulated
  double bytes = 0;                // bytes moved by all transfers
  std::int64_t events = 0;         // events processed (for performance reports)
  std::vector<double> rank_times;  // per rank, when SimOptions::rank_times is set
  // Flow model: the most flows one directed link carried at once (1 = no link
  // was ever shared, so the run equals the alpha_beta answer). 0 under alpha_beta.
  std::int64_t max_link_flows = 0;
  // The host's launch floor of the call (SimOptions::launch_devices); `time`
  // is never below it.
  double launch_floor = 0;
  // The orbit reduction: ranks per orbit (1 = every rank ran) and the turn
  // taken or why none was ("off", or what the check found). Under it
  // `messages` and `bytes` count every rank's transfers (the simulated ones
  // times `orbit`); `events` and `max_link_flows` are the reduced run's.
  int orbit = 1;
  std::string orbit_note;
};

// Ranks of the schedule are placed on ranks 0..p-1 of the topology; the
// topology must have at least p ranks (UsageError otherwise). Bytes per
// element come from schedule.spec().elem_size.
SimResult simulate(const Schedule& schedule, const Topology& topology,
                   const SimOptions& options = {});

}  // namespace collkit
