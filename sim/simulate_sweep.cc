// The sweep timed by the simulator, and the figures it reads off a topology.
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "algorithms/registry.h"
#include "core/error.h"
#include "sim/nccl.h"
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

std::vector<SweepPoint> simulate_sweep(const SweepSpec& spec, const Topology& topology,
                                       const SimOptions& options, const ProgressFn& progress) {
  // Defaults that follow the machine (hierarchical's group = a node) come
  // from the topology's node structure.
  SweepSpec sweep = spec;
  if (sweep.node_size == 0) sweep.node_size = topology.ranks_per_node(sweep.ranks);
  if (sweep.ranks > topology.num_ranks())
    throw UsageError("--ranks " + std::to_string(sweep.ranks) + " is more than the " +
                     std::to_string(topology.num_ranks()) + " ranks of topology '" + topology.name +
                     "'");
  // make_schedule validates name, variant, root, segment and group; building
  // the schedule generates no steps, so this costs nothing per algorithm.
  // The nccl family is resolved on the topology (sim/nccl.h): its plan,
  // protocol and channels come from there (named variants with
  // nccl_as_bench: as bench builds them, like any other schedule).
  const auto on_topology = [&](const std::string& algorithm) {
    return is_nccl_algorithm(algorithm) && (!sweep.nccl_as_bench || !nccl_variant(algorithm));
  };
  bool any_nccl = false;
  for (const std::string& algorithm : sweep.algorithms) {
    if (on_topology(algorithm)) {
      any_nccl = true;
      continue;
    }
    make_schedule(schedule_spec(sweep, algorithm, map_size(sweep.collective, 0, 1, 1)));
  }
  // A size at which the runtime the schedule comes from would hang has no
  // time to simulate: refused before anything runs, naming the size.
  for (const std::string& algorithm : sweep.algorithms) {
    if (on_topology(algorithm) || !find_schedule_source(algorithm)) continue;
    for (std::int64_t bytes : sweep.sizes) {
      const SizeMapping size = map_size(sweep.collective, bytes, size_of(sweep.dtype), sweep.ranks);
      const std::string hang = runtime_hang(schedule_spec(sweep, algorithm, size));
      if (!hang.empty())
        throw UsageError("size " + std::to_string(bytes) + " of the sweep: " + hang);
    }
  }
  std::optional<NcclContext> ctx;
  if (any_nccl) ctx = nccl_context(topology, sweep.ranks, sweep.nccl_version);
  // NCCL's choice, run as collkit can (sim/nccl.h: a choice collkit has no
  // schedule for runs as the fastest one it has, and the note says so).
  const auto choose_noting = [&](const ScheduleSpec& spec, std::optional<NcclChoice>* instead) {
    return nccl_runnable_choice(*ctx, spec.collective, spec.count * spec.elem_size, sweep.dtype,
                                sweep.op, nccl_variant(spec.algorithm), instead);
  };
  const auto choose = [&](const ScheduleSpec& spec) { return choose_noting(spec, nullptr); };
  if (any_nccl) {
    // Fail before the sweep when a named variant does not apply here at all.
    for (const std::string& algorithm : sweep.algorithms)
      if (on_topology(algorithm)) {
        check_library(*ctx, algorithm);
        const ScheduleSpec spec =
            schedule_spec(sweep, algorithm, map_size(sweep.collective, 1 << 20, 1, sweep.ranks));
        make_schedule(nccl_schedule_spec(spec, *ctx, choose(spec), topology));
      }
  }
  // NCCL discards a collective of no elements before it plans or launches
  // anything (src/enqueue.cc, taskAppend: "Empty collectives can be
  // discarded"), so such a call costs the device nothing: no launch, no
  // protocol base latency. nccl-tests prints those rows (a size below
  // ranks x element size); their time is the host's loop alone.
  const auto discarded = [&](const ScheduleSpec& spec) {
    return on_topology(spec.algorithm) && spec.count == 0 && spec.collective != Collective::barrier;
  };
  // Each point's orbit note, by (algorithm, count): time_of runs on
  // several threads and returns only the time.
  std::mutex orbits_mutex;
  std::map<std::pair<std::string, std::int64_t>, std::string> orbits;
  const auto timed = [&](const ScheduleSpec& spec, const SimResult& r) {
    const std::lock_guard<std::mutex> lock(orbits_mutex);
    orbits[{spec.algorithm, spec.count}] = r.orbit_note;
    return r.time;
  };
  std::vector<SweepPoint> points = run_sweep(
      sweep,
      [&](const ScheduleSpec& spec) {
        if (discarded(spec)) return 0.0;
        if (on_topology(spec.algorithm))
          return timed(
              spec, simulate(*make_schedule(nccl_schedule_spec(spec, *ctx, choose(spec), topology)),
                             topology, options));
        return timed(spec, simulate(*make_schedule(spec), topology, options));
      },
      progress);
  for (SweepPoint& pt : points) {
    const auto it = orbits.find({pt.algorithm, schedule_spec(sweep, pt.algorithm, pt.size).count});
    if (it != orbits.end()) pt.orbits = it->second;
  }
  for (SweepPoint& pt : points) {
    // A definition that declares what it serves (an MSCCL file): rows
    // outside it say so (simulate's rows are out-of-place calls).
    if (!on_topology(pt.algorithm)) {
      pt.note = outside_declaration(schedule_spec(sweep, pt.algorithm, pt.size), false);
      continue;
    }
    const ScheduleSpec spec = schedule_spec(sweep, pt.algorithm, pt.size);
    if (discarded(spec)) {
      pt.note = "none (no elements: NCCL discards the call)";
    } else {
      std::optional<NcclChoice> instead;
      const NcclChoice ran = choose_noting(spec, &instead);
      pt.note = describe_run(ran, instead);
    }
  }
  return points;
}

}  // namespace collkit
