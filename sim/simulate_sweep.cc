// The sweep timed by the simulator, and the figures it reads off a topology.
#include <algorithm>
#include <string>

#include "algorithms/registry.h"
#include "core/error.h"
#include "sim/sweep.h"

namespace collkit {

CostParams cost_params_of(const Topology& topology, int ranks) {
  CostParams params;
  if (ranks < 2 || topology.num_ranks() < 2) return params;
  std::vector<LinkId> route;
  topology.route(0, 1, route);
  double latency = 0;
  double bandwidth = 0;
  for (LinkId id : route) {
    const LinkProps link = topology.link(id);
    latency += link.latency;
    bandwidth = bandwidth == 0 ? link.bandwidth : std::min(bandwidth, link.bandwidth);
  }
  const EndpointProps ep = topology.endpoint(0);
  params.alpha = latency + ep.overhead;
  if (bandwidth > 0) params.beta = 1.0 / bandwidth;
  params.gamma = ep.reduce_bw > 0 ? 1.0 / ep.reduce_bw : 0.0;
  return params;
}

std::vector<SweepPoint> simulate_sweep(const SweepSpec& sweep, const Topology& topology,
                                       const SimOptions& options, const ProgressFn& progress) {
  if (sweep.ranks > topology.num_ranks())
    throw UsageError("--ranks " + std::to_string(sweep.ranks) + " is more than the " +
                     std::to_string(topology.num_ranks()) + " ranks of topology '" + topology.name +
                     "'");
  // make_schedule validates name, variant, root, segment and group; building
  // the schedule generates no steps, so this costs nothing per algorithm.
  for (const std::string& algorithm : sweep.algorithms)
    make_schedule(schedule_spec(sweep, algorithm, map_size(sweep.collective, 0, 1, 1)));
  return run_sweep(
      sweep,
      [&](const ScheduleSpec& spec) {
        return simulate(*make_schedule(spec), topology, options).time;
      },
      progress);
}

}  // namespace collkit
