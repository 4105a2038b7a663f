#include "sim/sweep.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>

#include "algorithms/registry.h"
#include "core/error.h"
#include "core/parallel.h"

namespace collkit {

ScheduleSpec schedule_spec(const SweepSpec& sweep, const std::string& algorithm,
                           const SizeMapping& size) {
  ScheduleSpec spec;
  spec.collective = sweep.collective;
  spec.algorithm = algorithm;
  spec.ranks = sweep.ranks;
  spec.root = sweep.root;
  spec.count = size.spec_count;
  spec.elem_size = size_of(sweep.dtype);
  if (sweep.segment_bytes > 0)
    spec.segment = std::max<std::int64_t>(1, sweep.segment_bytes / spec.elem_size);
  spec.group_size = sweep.group_size;
  spec.node_size = sweep.node_size;
  spec.nccl_buffsize = sweep.nccl_buffsize;
  spec.model = sweep.model;
  return spec;
}

std::vector<SweepPoint> run_sweep(const SweepSpec& sweep, const TimeFn& time_of,
                                  const ProgressFn& progress) {
  // Barrier moves no data: one point, whatever the sizes.
  const std::vector<std::int64_t> sizes =
      sweep.collective == Collective::barrier ? std::vector<std::int64_t>{0} : sweep.sizes;
  const std::size_t total = sweep.algorithms.size() * sizes.size();
  std::vector<SweepPoint> points(total);
  std::mutex mutex;
  std::size_t done = 0;
  parallel_for(total, sweep.jobs, [&](std::size_t i) {
    const std::string& algorithm = sweep.algorithms[i / sizes.size()];
    const SizeMapping size =
        map_size(sweep.collective, sizes[i % sizes.size()], size_of(sweep.dtype), sweep.ranks);
    points[i] = SweepPoint{algorithm, size, time_of(schedule_spec(sweep, algorithm, size)), {}, {}};
    const std::lock_guard<std::mutex> lock(mutex);
    ++done;
    if (progress) progress(done, total);
  });
  return points;
}

}  // namespace collkit
