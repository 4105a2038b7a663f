// Element-wise reductions on device memory: the GPU counterpart of
// realrun/reduce_host.h, with the same semantics bit for bit (integer sums
// and products wrap, min/max compare in the element's own type and keep the
// first operand on NaN, half/bfloat16 compute in float and round to nearest
// even, avg is a sum and one division at the end). Every function enqueues
// on `stream` (on the current device) and returns at once; launch errors are
// thrown as RuntimeFailure. Host code (g++) includes this header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtypes.h"
#include "realrun/check_value.h"

namespace collkit::realrun {

// dst[i] = dst[i] op src[i] for i < count; if `also` is not null, also[i] =
// the result too (the executor's fused receive-reduce-copy). dst and src may
// be equal; `also` must overlap neither. 16-byte vector loads where dst, src
// (and also) share their alignment modulo 16, scalar otherwise.
void device_reduce(DataType type, RedOp op, void* dst, const void* src, std::int64_t count,
                   cudaStream_t stream, void* also = nullptr);

// data[i] = data[i] / ranks, as realrun::finish_avg.
void device_finish_avg(DataType type, void* data, std::int64_t count, int ranks,
                       cudaStream_t stream);

// *wrong += elements where actual and expected differ (floats by value: -0
// equals +0, NaN never equals), as realrun::count_wrong. `wrong` is device
// memory.
void device_count_wrong(DataType type, const void* actual, const void* expected, std::int64_t count,
                        unsigned long long* wrong, cudaStream_t stream);

// out[i] = check_pattern_value(pattern, <type is unsigned>, ranks, rank, i,
// iter) stored as `type`, for i < count: realrun::fill_check_input computed
// on the device, so a bench never uploads its inputs from the host.
void device_fill_check(DataType type, CheckPattern pattern, int ranks, int rank, std::int64_t iter,
                       void* out, std::int64_t count, cudaStream_t stream);

// The grid used for `work_items` independent items of work on the current
// device: threads per block and blocks, from the device's multiprocessor
// count and threads per multiprocessor (cached per device).
struct LaunchConfig {
  int threads = 0;
  int blocks = 0;
};
LaunchConfig launch_config(std::int64_t work_items);

}  // namespace collkit::realrun
