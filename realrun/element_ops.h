// One element of a reduction, for the host (g++) and the device (nvcc): the
// stored 16-bit float types, how an element is loaded into the type it is
// computed in and stored back, and the four combining functions. The device
// reduction kernels (realrun/device/reduce_kernels.cu) and the schedule
// interpreter (realrun/interpreter.h, on the device and on the host) use these
// definitions; realrun/reduce_host.cc is the host's independent, vectorised
// reference with the same semantics: integer sums and products wrap (computed
// in the unsigned type of the same width), min and max compare in the
// element's own type and keep the first operand when either is NaN, half and
// bfloat16 compute in float and round to nearest even, and avg is a sum with
// one division at the end (avg_divide).
// C++17 (nvcc compiles the kernels as C++17); the host branch includes
// realrun/half.h (C++20) only when g++ compiles it.
#pragma once

#include <cstdint>
#include <type_traits>

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define COLLKIT_ELEM __device__ __forceinline__
#else
#include "realrun/half.h"
#define COLLKIT_ELEM inline
#endif

namespace collkit::realrun::elem {

// Stored 16-bit floats: bit patterns, computed in float.
struct Half16 {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

#ifdef __CUDACC__
COLLKIT_ELEM float to_float(Half16 h) {
  // Exact conversion (every binary16 is a float).
  __half_raw raw;
  raw.x = h.bits;
  return __half2float(__half(raw));
}
// Round to nearest even; NaN becomes the quiet NaN with the sign kept, as
// realrun/half.h float_to_half.
COLLKIT_ELEM Half16 to_half(float f) {
  const unsigned u = __float_as_uint(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)
    return Half16{static_cast<std::uint16_t>(((u >> 16) & 0x8000u) | 0x7E00u)};
  const __half_raw raw = __half_raw(__float2half_rn(f));
  return Half16{raw.x};
}
COLLKIT_ELEM float to_float(BFloat16 b) {
  return __uint_as_float(static_cast<unsigned>(b.bits) << 16);
}
// The same integer formula as realrun/half.h float_to_bf16.
COLLKIT_ELEM BFloat16 to_bf16(float f) {
  const unsigned u = __float_as_uint(f);
  const unsigned rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const bool is_nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
  return BFloat16{static_cast<std::uint16_t>(is_nan ? ((u >> 16) | 0x40u) : rounded)};
}
#else
COLLKIT_ELEM float to_float(Half16 h) { return half_to_float(h.bits); }
COLLKIT_ELEM Half16 to_half(float f) { return Half16{float_to_half(f)}; }
COLLKIT_ELEM float to_float(BFloat16 b) { return bf16_to_float(b.bits); }
COLLKIT_ELEM BFloat16 to_bf16(float f) { return BFloat16{float_to_bf16(f)}; }
#endif

template <typename T, bool = std::is_integral_v<T>>
struct ComputeType {
  using type = T;
};
// Integers wrap: signed sums and products are computed unsigned.
template <typename T>
struct ComputeType<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
struct Arith {
  using C = typename ComputeType<T>::type;
  COLLKIT_ELEM static C load(T v) { return static_cast<C>(v); }
  COLLKIT_ELEM static T store(C v) { return static_cast<T>(v); }
  COLLKIT_ELEM static T key(T v) { return v; }
};
template <>
struct Arith<Half16> {
  using C = float;
  COLLKIT_ELEM static float load(Half16 v) { return to_float(v); }
  COLLKIT_ELEM static Half16 store(float v) { return to_half(v); }
  COLLKIT_ELEM static float key(Half16 v) { return to_float(v); }
};
template <>
struct Arith<BFloat16> {
  using C = float;
  COLLKIT_ELEM static float load(BFloat16 v) { return to_float(v); }
  COLLKIT_ELEM static BFloat16 store(float v) { return to_bf16(v); }
  COLLKIT_ELEM static float key(BFloat16 v) { return to_float(v); }
};

// The combining functions (avg combines as sum).
enum Op : int { kSum, kProd, kMin, kMax };

template <typename T, int OP>
COLLKIT_ELEM T apply(T a, T b) {
  if constexpr (OP == kMin || OP == kMax) {
    // `b < a` keeps a when either is NaN, like the host loop.
    const auto x = Arith<T>::key(a);
    const auto y = Arith<T>::key(b);
    const bool take_b = OP == kMin ? y < x : y > x;
    return take_b ? b : a;
  } else {
    using C = typename Arith<T>::C;
    const C x = Arith<T>::load(a), y = Arith<T>::load(b);
    return Arith<T>::store(OP == kProd ? static_cast<C>(x * y) : static_cast<C>(x + y));
  }
}

// The last step of avg: v / ranks (integers truncate toward zero; 16-bit
// floats divide in float and round to nearest even).
template <typename T>
COLLKIT_ELEM T avg_divide(T v, int ranks) {
  if constexpr (std::is_integral_v<T> || std::is_floating_point_v<T>) {
    return static_cast<T>(v / static_cast<T>(ranks));
  } else {
    return Arith<T>::store(Arith<T>::load(v) / static_cast<float>(ranks));
  }
}

}  // namespace collkit::realrun::elem
