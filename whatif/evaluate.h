// Evaluating the points of a what-if grid (whatif/grid.h). A point is one
// machine of the grid with one (collective, size), timed for every
// algorithm of the grid, or one (model, batch) planned. Points are
// independent: a process evaluates any subset of them on its threads
// (core/parallel.h), and `collkit sweep` under mpirun hands each MPI rank
// every size-th point. A row depends on the point alone, so the rows of a
// grid are the same however the points were shared out.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/json.h"
#include "whatif/grid.h"

namespace collkit {

// One point's row: its index ("point"), the axes' values, then what was
// evaluated (docs/SWEEP.md, "Output").
Json evaluate_point(const Grid& grid, std::size_t point);

// The rows of `points` (indices into the grid), in that order, on `jobs`
// threads (<= 0: every core). `progress` is called after each point, from
// one thread at a time, with the number done.
std::vector<Json> evaluate_points(const Grid& grid, const std::vector<std::size_t>& points,
                                  int jobs,
                                  const std::function<void(std::size_t done)>& progress = {});

// The points of `grid` that process `rank` of `size` evaluates: every
// size-th, from rank (so large and small sizes spread over the processes).
std::vector<std::size_t> points_of_rank(const Grid& grid, int rank, int size);

}  // namespace collkit
