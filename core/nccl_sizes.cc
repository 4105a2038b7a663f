#include "core/nccl_sizes.h"

#include <numeric>
#include <string>

#include "core/error.h"

namespace collkit {

double busbw_factor(Collective c, int p) {
  const double n = p;
  switch (c) {
    case Collective::all_reduce:
      return 2.0 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
    case Collective::scatter:
    case Collective::gather:
      return (n - 1) / n;
    case Collective::broadcast:
    case Collective::reduce:
      return 1.0;
    case Collective::barrier:
      return 0.0;
  }
  return 0.0;
}

double algbw_gbps(std::int64_t bytes, double time_us) {
  if (!(time_us > 0)) return 0.0;
  return static_cast<double>(bytes) / (time_us * 1e3);
}

SizeMapping map_size(Collective c, std::int64_t user_bytes, int elem_size, int p) {
  if (user_bytes < 0)
    throw UsageError("size must be >= 0 bytes (got " + std::to_string(user_bytes) + ")");
  if (elem_size < 1)
    throw UsageError("element size must be >= 1 byte (got " + std::to_string(elem_size) + ")");
  if (p < 1) throw UsageError("ranks must be >= 1 (got " + std::to_string(p) + ")");
  const std::int64_t count = user_bytes / elem_size;
  switch (c) {
    case Collective::broadcast:
    case Collective::reduce:
    case Collective::all_reduce:
      return {count * elem_size, count, count};
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
    case Collective::scatter:
    case Collective::gather: {
      // Rounded down to whole 16-byte multiples so every rank's block stays
      // aligned for vector loads: the smallest element count whose bytes are
      // a multiple of 16.
      const std::int64_t align = 16 / std::gcd<std::int64_t>(16, elem_size);
      std::int64_t per_rank = count / p;
      per_rank -= per_rank % align;
      return {per_rank * p * elem_size, per_rank, per_rank * p};
    }
    case Collective::barrier:
      return {0, 0, 0};
  }
  return {};
}

bool per_rank_count(Collective c) {
  switch (c) {
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
    case Collective::scatter:
    case Collective::gather:
      return true;
    default:
      return false;
  }
}

}  // namespace collkit
