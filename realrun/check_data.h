// Correctness data for `bench -c`: inputs whose exact result is predictable
// for every data type and op, the expected outputs, and the comparison.
//
// Values are small integers, so every type holds them and every partial
// result exactly, whatever order an algorithm combines them in: sum/avg use
// {-1, 0, 1, 2} ({0..3} for unsigned types; |partial sums| <= 3p, exact even
// in bfloat16 up to p = 85), prod uses +-1 (+1 unsigned) with a single 2 per
// element, min and max use [-30, 30] ([0, 60]). Sums never overflow 8-bit
// types up to p = 63: Open MPI 4.1's AVX reductions saturate 8- and 16-bit
// integer sums instead of wrapping (open-mpi/ompi#8045, "wontfix"), so an
// overflowing check would blame the native baseline for a convention.
// Data-movement collectives use a value per (rank, element) in [-125, 125]
// ([0, 250]), so a misplaced block shows up. Every value also depends on the
// check iteration, so a stale output from an earlier run is caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "algorithms/schedule.h"
#include "core/dtypes.h"
#include "realrun/check_value.h"

namespace collkit::realrun {

// The family of check values of (c, op), and whether `type` is unsigned: the
// arguments of check_pattern_value (realrun/check_value.h).
CheckPattern check_pattern(Collective c, RedOp op);
bool is_unsigned_type(DataType type);

// The value of element `index` of `rank`'s input in check iteration `iter`.
std::int64_t check_value(Collective c, DataType type, RedOp op, int ranks, int rank,
                         std::int64_t index, std::int64_t iter);

// Writes `rank`'s input (io_sizes(c, ranks, rank, root, count).input elements).
void fill_check_input(Collective c, DataType type, RedOp op, int ranks, int rank, std::int64_t iter,
                      std::span<std::byte> input);

// Writes what `rank`'s output must hold after the collective on the inputs of
// fill_check_input (for reductions computed with reduce_into/finish_avg, so
// the 16-bit float rounding of avg matches).
void expected_output(Collective c, DataType type, RedOp op, int ranks, int rank, int root,
                     std::int64_t count, std::int64_t iter, std::span<std::byte> expected);

// Elements of `actual` that differ from `expected`; floats compare by value
// (so -0 equals +0), NaN never equals.
std::int64_t count_wrong(DataType type, std::span<const std::byte> actual,
                         std::span<const std::byte> expected);

// Fills a buffer with a pattern no check value produces, so output the
// collective failed to write is counted as wrong.
void poison(std::span<std::byte> buffer);

}  // namespace collkit::realrun
