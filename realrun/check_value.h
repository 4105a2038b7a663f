// The formula of the correctness-check inputs (realrun/check_data.h), in one
// place for the host (check_data.cc, g++) and the device (the fill kernel of
// realrun/device/reduce_kernels.cu, nvcc), so that a GPU fills its input
// buffers itself and both sides agree on every element by construction.
// C++17, no library beyond <cstdint>: nvcc compiles the kernels as C++17.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define COLLKIT_HOST_DEVICE __host__ __device__
#else
#define COLLKIT_HOST_DEVICE
#endif

namespace collkit::realrun {

// Which family of values a (collective, op) pair uses.
enum class CheckPattern : int {
  data,    // data movement: a value per (rank, element) in [-125, 125]
  sum,     // sum and avg: {-1, 0, 1, 2}
  prod,    // +-1 with one 2 per element across the ranks
  minmax,  // [-30, 30]
};

// Element j of rank r's input in check iteration k (unsigned types shifted
// to be non-negative).
COLLKIT_HOST_DEVICE inline std::int64_t check_pattern_value(CheckPattern pattern, bool is_unsigned,
                                                            int ranks, std::int64_t r,
                                                            std::int64_t j, std::int64_t k) {
  switch (pattern) {
    case CheckPattern::data:
      return (r * 131 + j * 7 + k * 13) % 251 - (is_unsigned ? 0 : 125);
    case CheckPattern::sum:
      return (r * 3 + j * 7 + k * 5) % 4 - (is_unsigned ? 0 : 1);
    case CheckPattern::prod: {
      const std::int64_t magnitude = (r + j + k) % ranks == 0 ? 2 : 1;
      return !is_unsigned && (r * 5 + j * 3 + k) % 3 == 0 ? -magnitude : magnitude;
    }
    case CheckPattern::minmax:
      return (r * 37 + j * 11 + k * 3) % 61 - (is_unsigned ? 0 : 30);
  }
  return 0;
}

}  // namespace collkit::realrun
