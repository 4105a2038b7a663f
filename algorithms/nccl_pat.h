// nccl:pat: NCCL's PAT (Parallel Aggregated Trees, NCCL 2.23+) for
// all_gather and reduce_scatter, the algorithm NCCL runs at one GPU per node
// (docs/NCCL.md, "PAT"). Used by algorithms/nccl.cc's family; declared here
// so the offsets can be tested on their own.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/generator.h"
#include "algorithms/registry.h"
#include "algorithms/schedule.h"

namespace collkit {

// Distances of PAT's rounds for p ranks: all_gather runs the binomial
// dimensions from the farthest (2^(K-1), K = ceil(log2 p)) down to 1, so
// the round that moves the most data moves it to the nearest rank;
// reduce_scatter runs them in the opposite order (1 first, when there is
// the most data). Empty for p = 1.
std::vector<int> pat_distances(int p, bool all_gather);

// Offsets (relative to the rank, ascending) of the blocks a rank sends in
// each round: all_gather sends the blocks it holds to rank - d; the holder
// of offset o needs them as o + d < p. reduce_scatter sends its partial sums
// of the blocks whose offset has bit log2(d) set to rank + d.
std::vector<std::vector<int>> pat_send_offsets(int p, bool all_gather);

Generator<Step> pat_all_gather(ScheduleSpec spec, int rank);
Generator<Step> pat_reduce_scatter(ScheduleSpec spec, int rank);
CostEstimate pat_cost(const ScheduleSpec& spec, const CostParams& c);

}  // namespace collkit
