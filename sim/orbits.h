// The orbit reduction of the engine (docs/SIMULATOR.md, "Orbits"): where a
// turn of the ranks (RankTurn) maps the network onto itself, the schedule
// commutes with it and the routes the run uses map to routes, ranks that
// behave identically are simulated once. This decides whether a run may
// take it; sim/engine.cc runs it. Private to sim/.
#pragma once

#include <optional>
#include <string>

#include "algorithms/schedule.h"
#include "sim/engine.h"
#include "topologies/topology.h"

namespace collkit::sim_detail {

// What the algorithm pays beyond the topology's figures on a transfer from
// src to dst (ScheduleSpec::hop_extra_latency): the engine's, and what the
// route check compares across an orbit.
double hop_extra(const ScheduleSpec& spec, int src, int dst);

struct OrbitPlan {
  std::optional<RankTurn> turn;  // none: the plain run
  std::string note;              // the turn taken, or why none
};

// The turn the run may take, proven for this schedule on this topology:
// the topology offers it (Topology::turn), the schedule has every rank of
// the topology, no endpoint model breaks the symmetry (shared hosts, cache
// or dirty-data factors), every rank's program is its representative's
// turned, op for op (kind, peer turned, counts, combine, lanes, fans), and
// every route between a pair the programs use maps to the route of its
// image (with equal hop_extra). Tried: the node turn, the node turn two
// nodes at a time (NCCL's rings alternate the order of GPUs from node to
// node), the rail turn; larger orbits first.
OrbitPlan plan_orbits(const Schedule& schedule, const Topology& topology,
                      const SimOptions& options);

}  // namespace collkit::sim_detail
