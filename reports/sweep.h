// Size sweeps: the same collective at every size of nccl-tests' -b/-e/-f/-i
// loop, for a list of algorithms, into one Report with the best algorithm per
// size. The timing is a parameter, so the simulator and tests share one loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "reports/dtypes.h"
#include "reports/report.h"
#include "sim/engine.h"
#include "topologies/topology.h"

namespace collkit {

// Most sizes one sweep may have; "-i 1" up to 1G would otherwise run for days.
inline constexpr std::size_t kMaxSweepSizes = 100000;

// A size flag's value: an integer number of bytes with an optional K, M or G
// suffix (either case; powers of 1024), as nccl-tests' parsesize. Throws
// UsageError naming the flag and the value, e.g. "-b 12X: ...".
std::int64_t parse_size(const std::string& flag, const std::string& text);

// nccl-tests' loop: size = min, then size * factor when factor > 1, else
// size + increment, while size <= max. Throws UsageError naming the flag
// (-b, -e, -f, -i) for min <= 0, min > max, factor < 1, an increment <= 0
// when it is needed, or more than kMaxSweepSizes sizes.
std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes,
                                      std::int64_t factor, std::int64_t increment);

// "all" = every registered algorithm of the collective, each variant of it
// ("name" for the default, "name:variant" for the others); otherwise the
// comma-separated names, duplicates dropped. Throws UsageError for an empty
// name or when no algorithm is registered.
std::vector<std::string> expand_algorithms(Collective c, const std::string& list);

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
  CostParams model{};               // only picks default segment sizes
};

// The ScheduleSpec of one (algorithm, size) of the sweep.
ScheduleSpec schedule_spec(const SweepSpec& sweep, const std::string& algorithm,
                           const SizeMapping& size);

// Seconds one schedule takes.
using TimeFn = std::function<double(const ScheduleSpec&)>;
// Called after every (algorithm, size) with the number done and the total.
using ProgressFn = std::function<void(std::size_t done, std::size_t total)>;

// Runs every algorithm at every size (barrier: once, at size 0) and returns
// the rows (out-of-place, wrong = N/A) grouped by algorithm, with `best`
// filled. mode/backend are left at simulate/sim, collkit_version and
// topology empty: the caller owns those.
Report run_sweep(const SweepSpec& sweep, const TimeFn& time_of, const ProgressFn& progress = {});

// Alpha-beta-gamma parameters read off the topology (the route from rank 0 to
// rank 1: summed latencies plus the sender's overhead, the bottleneck
// bandwidth, the reduce bandwidth), so default segment sizes suit the network
// being simulated. The defaults of CostParams for a single rank.
CostParams cost_params_of(const Topology& topology, int ranks);

// run_sweep with the simulator: validates every algorithm name and the rank
// count up front (so a typo fails before minutes of simulation), then times
// each schedule with simulate(). Fills topology and extra["model"].
Report simulate_sweep(const SweepSpec& sweep, const Topology& topology, const SimOptions& options,
                      const ProgressFn& progress = {});

std::string_view to_string(NetModel m);           // "flow" | "alpha-beta"
NetModel parse_net_model(std::string_view name);  // UsageError listing the names

}  // namespace collkit
