// nccl-tests conventions for sizes and bandwidth (docs/REPORTS.md,
// reference NCCL_TESTS.md): what a user's "-b 1M" means for each collective,
// and how algbw/busbw are derived from a time, so collkit's figures can be put
// next to nccl-tests' own.
#pragma once

#include <cstdint>

#include "core/collective.h"

namespace collkit {

// busbw = algbw x factor: all_reduce 2(p-1)/p; all_gather, reduce_scatter,
// all_to_all, scatter, gather (p-1)/p; broadcast, reduce 1; barrier 0 (it
// moves no data, so it has no bandwidth). p >= 1.
double busbw_factor(Collective c, int p);

// Algorithm bandwidth in GB/s (1e9 B/s) of `bytes` (the printed size) moved in
// `time_us` microseconds; 0 when the time is not positive, so that a
// zero-latency simulation of an empty message prints 0 rather than inf.
double algbw_gbps(std::int64_t bytes, double time_us);

// One size of a sweep, as nccl-tests derives it from the size flag.
struct SizeMapping {
  // The "size" column: max(send, recv) bytes per rank, i.e. the total buffer;
  // also the S of algbw = S / t.
  std::int64_t bytes = 0;
  // The "count" column: the element count nccl-tests passes to NCCL, i.e. the
  // per-rank count for all_gather, reduce_scatter, all_to_all, scatter and
  // gather, and the vector length for broadcast, reduce and all_reduce.
  std::int64_t count = 0;
  // collkit's ScheduleSpec::count for the same operation (its meaning per
  // collective is in schedule.h), e.g. p x per-rank count for all_gather.
  std::int64_t spec_count = 0;
};

// Whether nccl-tests' "count" column (and a report row's count) is per rank:
// all_gather, reduce_scatter, all_to_all, scatter and gather; the schedule's
// count is then p times it.
bool per_rank_count(Collective c);

// count = user_bytes / elem_size; for all_gather, reduce_scatter, all_to_all,
// scatter and gather the per-rank count is count / p rounded down to a
// multiple of 16 bytes. Barrier maps every size to 0. Throws UsageError for
// negative bytes, elem_size < 1 or p < 1.
SizeMapping map_size(Collective c, std::int64_t user_bytes, int elem_size, int p);

}  // namespace collkit
