#include "whatif/evaluate.h"

#include <memory>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "core/nccl_sizes.h"
#include "core/parallel.h"
#include "planner/planner.h"
#include "planner/planner_model.h"
#include "sim/sweep.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

// The point's index and the axes' values: the first keys of every row.
Json row_head(const Grid& grid, std::size_t point, std::size_t machine) {
  Json row;
  row["point"] = point;
  const std::vector<std::size_t> at = machine_coordinates(grid, machine);
  for (std::size_t i = 0; i < grid.axes.size(); ++i)
    row[grid.axes[i].name] = grid.axes[i].values[at[i]];
  return row;
}

Json simulate_point(const Grid& grid, std::size_t point, std::size_t machine, std::size_t rest,
                    const Topology& topology) {
  SweepSpec spec;
  spec.collective = grid.collectives[rest / grid.sizes.size()];
  spec.algorithms = grid.algorithms;
  spec.sizes = {grid.sizes[rest % grid.sizes.size()]};
  spec.ranks = topology.num_ranks();
  spec.dtype = grid.dtype;
  spec.op = grid.op;
  spec.nccl_version = machine_nccl_version(grid, machine);
  spec.model = cost_params_of(topology, spec.ranks);
  const std::vector<SweepPoint> points = simulate_sweep(spec, topology, SimOptions{});

  Json row = row_head(grid, point, machine);
  row["ranks"] = spec.ranks;
  row["collective"] = std::string(to_string(spec.collective));
  row["bytes"] = points.front().size.bytes;
  Json results = Json::array();
  std::size_t best = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& p = points[i];
    const double us = p.seconds * 1e6;
    const double algbw = algbw_gbps(p.size.bytes, us);
    Json r;
    r["algorithm"] = p.algorithm;
    r["time_us"] = us;
    r["algbw_gbps"] = algbw;
    r["busbw_gbps"] = algbw * busbw_factor(spec.collective, spec.ranks);
    if (!p.note.empty()) r["ran"] = p.note;
    results.push_back(r);
    if (p.seconds < points[best].seconds) best = i;
  }
  row["best"] = points[best].algorithm;
  row["time_us"] = results[best]["time_us"];
  row["busbw_gbps"] = results[best]["busbw_gbps"];
  row["algorithms"] = results;
  return row;
}

Json plan_point(const Grid& grid, std::size_t point, std::size_t machine, std::size_t rest,
                const Topology& topology) {
  const std::size_t m = rest / grid.batches.size();
  const Model model = load_model(grid.models[m]);
  PlanOptions opts;
  opts.ranks = topology.num_ranks();
  opts.batch = grid.batches[rest % grid.batches.size()];
  opts.dtype = grid.plan_dtype;
  opts.device_memory = grid.device_memory;
  opts.device_tflops = grid.device_tflops;
  opts.topology_file = grid.topology_file;
  // As plan's --collectives auto: NCCL's choice on GPUs, else the best.
  opts.nccl = gpu_topology(topology, opts.ranks);
  opts.nccl_version = machine_nccl_version(grid, machine);

  Json row = row_head(grid, point, machine);
  row["ranks"] = opts.ranks;
  row["model"] = grid.model_names[m];
  row["batch"] = opts.batch;
  try {
    const PlanResult result = make_plan(model, topology, opts);
    const Plan& plan = result.plan;
    row["fits"] = result.fits;
    row["step_time_s"] = plan.step_time();
    row["comm_time_s"] = plan.comm_time;
    row["compute_time_s"] = plan.compute_time;
    row["bubble_time_s"] = plan.bubble_time;
    row["tp"] = plan.layout.tp;
    row["pp"] = plan.layout.pp;
    row["dp"] = plan.layout.dp;
    row["micro_batch"] = plan.layout.micro_batch;
    row["micro_batches"] = plan.layout.micro_batches;
    row["memory_gib"] = plan.memory.total() / double(1ull << 30);
  } catch (const UsageError& e) {
    // A batch that no data-parallel degree splits: the point has no plan.
    row["fits"] = false;
    row["no_plan"] = e.what();
  }
  return row;
}

}  // namespace

Json evaluate_point(const Grid& grid, std::size_t point) {
  const std::size_t machine = point / grid.per_machine();
  const std::size_t rest = point % grid.per_machine();
  const std::unique_ptr<Topology> topology =
      parse_topology(machine_topology(grid, machine).dump(), grid.topology_file);
  return grid.kind == GridKind::simulate ? simulate_point(grid, point, machine, rest, *topology)
                                         : plan_point(grid, point, machine, rest, *topology);
}

std::vector<Json> evaluate_points(const Grid& grid, const std::vector<std::size_t>& points,
                                  int jobs, const std::function<void(std::size_t)>& progress) {
  std::vector<Json> rows(points.size());
  std::mutex mutex;
  std::size_t done = 0;
  parallel_for(points.size(), jobs, [&](std::size_t i) {
    rows[i] = evaluate_point(grid, points[i]);
    const std::lock_guard<std::mutex> lock(mutex);
    ++done;
    if (progress) progress(done);
  });
  return rows;
}

std::vector<std::size_t> points_of_rank(const Grid& grid, int rank, int size) {
  std::vector<std::size_t> mine;
  for (std::size_t p = static_cast<std::size_t>(rank); p < grid.points();
       p += static_cast<std::size_t>(size))
    mine.push_back(p);
  return mine;
}

}  // namespace collkit
