// Size sweeps: the same collective at every size of nccl-tests' -b/-e/-f/-i
// loop, for a list of algorithms, timed by the simulator (or by any function:
// tests share the one loop). The points become a report in reports/
// (sweep_report.h), which adds the nccl-tests figures and the best algorithm
// per size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "core/dtypes.h"
#include "core/nccl_sizes.h"
#include "core/nccl_version.h"
#include "sim/engine.h"
#include "topologies/topology.h"

namespace collkit {

struct SweepSpec {
  Collective collective = Collective::all_reduce;
  std::vector<std::string> algorithms;  // names as make_schedule takes them
  int ranks = 1;
  int root = 0;
  DataType dtype = DataType::float32;
  RedOp op = RedOp::sum;
  std::vector<std::int64_t> sizes;  // bytes as the user gave them (sweep_sizes)
  std::int64_t segment_bytes = 0;   // pipelined algorithms; 0 = closed-form optimum
  int group_size = 0;               // hierarchical algorithms; 0 = automatic
  int node_size = 0;                // ranks per node; 0 = unknown (simulate_sweep: the topology's)
  std::int64_t nccl_buffsize = 0;   // msccl:FILE.xml: NCCL_BUFFSIZE (0 = NCCL's default)
  CostParams model{};               // only picks default segment sizes
  // The named nccl variants (nccl:ring, ...) as collkit bench runs them:
  // built from the spec with their default channel plan (bench knows no
  // topology), not NCCL's choice on the topology. Set when simulating a
  // measured run (simulate --segments-as a collkit report), so the
  // prediction is of the schedules that ran. "nccl" (NCCL's own choice)
  // is made on the topology either way.
  bool nccl_as_bench = false;
  // The NCCL version whose cost model makes NCCL's choice (--nccl-version);
  // none: the topology file's nccl.version, else kDefaultNcclVersion.
  std::optional<NcclVersion> nccl_version;
  // Threads that time the (algorithm, size) points at once (--jobs;
  // core/parallel.h; <= 0: every core). The points are stored by index, so
  // the result is the same, bit for bit, whatever it is; memory grows with
  // it, one simulation's state per thread.
  int jobs = 1;
};

// The ScheduleSpec of one (algorithm, size) of the sweep.
ScheduleSpec schedule_spec(const SweepSpec& sweep, const std::string& algorithm,
                           const SizeMapping& size);

// Seconds one schedule takes.
using TimeFn = std::function<double(const ScheduleSpec&)>;
// Called after every (algorithm, size) with the number done and the total
// (from one thread at a time, done increasing, whatever SweepSpec::jobs is).
using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

// One (algorithm, size) of a sweep and the time it took.
struct SweepPoint {
  std::string algorithm;
  SizeMapping size;
  double seconds = 0;
  // What ran, where the name leaves it open: for the nccl family the
  // algorithm, protocol and channels chosen at this size ("ring/LL/24ch").
  std::string note;
  // The engine's orbit reduction at this point (SimResult::orbit_note):
  // the turn taken, or "none: " and why; empty where nothing was simulated.
  std::string orbits;
};

// Runs every algorithm at every size (barrier: once, at size 0) and returns
// the points grouped by algorithm, sizes in the sweep's order; on
// sweep.jobs threads, so time_of must be safe to call from several at once.
std::vector<SweepPoint> run_sweep(const SweepSpec& sweep, const TimeFn& time_of,
                                  const ProgressFn& progress = {});

// Alpha-beta-gamma parameters read off the topology (the route from rank 0 to
// rank 1: summed latencies plus the sender's overhead, the bottleneck
// bandwidth, the reduce bandwidth), so default segment sizes suit the network
// being simulated. The defaults of CostParams for a single rank.
CostParams cost_params_of(const Topology& topology, int ranks);

// run_sweep with the simulator: validates every algorithm name and the rank
// count up front (so a typo fails before minutes of simulation), refuses
// with a UsageError the sizes at which a schedule source's runtime would
// hang (msccl:FILE.xml, runtime_hang in algorithms/registry.h), then times
// each schedule with simulate().
std::vector<SweepPoint> simulate_sweep(const SweepSpec& sweep, const Topology& topology,
                                       const SimOptions& options, const ProgressFn& progress = {});

}  // namespace collkit
