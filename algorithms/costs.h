// Shared arithmetic for generators and their closed-form costs.
#pragma once

#include <cstdint>

#include "algorithms/schedule.h"

namespace collkit {

// ceil(log2 p) and floor(log2 p) for p >= 1.
int ceil_log2(std::int64_t p);
int floor_log2(std::int64_t p);
bool is_power_of_two(std::int64_t p);

// The closed-form optimal number of segments for a pipeline of depth `depth`
// (COSTS.md: k* = sqrt((D-1) n beta' / alpha)), at least 1 and at most n
// elements. beta_eff is beta for copies, beta + gamma for reductions.
std::int64_t optimal_segments(int depth, double n_bytes, double alpha, double beta_eff,
                              std::int64_t n_elems);

// The segment size (elements) a pipelined generator uses: spec.segment if set,
// otherwise ceil(n / optimal_segments(...)). Never 0 for n > 0.
std::int64_t segment_elems(const ScheduleSpec& spec, int depth, bool reduction);

}  // namespace collkit
