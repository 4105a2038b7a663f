// Element-wise reductions on host memory, for every nccl-tests data type and
// op. The executor combines received data with these; the native MPI path
// uses them for the types and ops MPI lacks (half, bfloat16, avg).
#pragma once

#include <cstdint>

#include "core/dtypes.h"

namespace collkit::realrun {

// dst[i] = dst[i] op src[i] for i < count. avg accumulates as sum (the
// division by the rank count happens once, at the end: finish_avg). Integer
// arithmetic wraps modulo 2^bits; 16-bit floats compute in float and round to
// nearest even. dst and src may be equal but must not partially overlap.
void reduce_into(DataType type, RedOp op, void* dst, const void* src, std::int64_t count);

// data[i] = data[i] / ranks: the last step of avg, as NCCL does it. Integer
// types use integer division (truncation toward zero).
void finish_avg(DataType type, void* data, std::int64_t count, int ranks);

}  // namespace collkit::realrun
