// Software IEEE binary16 and bfloat16 conversions. Host reductions on 16-bit
// floats compute in float and round back with round-to-nearest-even, as the
// GPU kernels do, so the MPI and CUDA backends agree bit for bit. The
// conversions are branch-free (selects only) so the reduction loops that call
// them still vectorise.
#pragma once

#include <bit>
#include <cstdint>

namespace collkit::realrun {

// Exact: every binary16 value is a float. Bit-level method of
// Maratyszcza/FP16 (MIT): rescales the exponent with one float multiply and
// handles subnormals with a magic-number subtraction.
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t w = static_cast<std::uint32_t>(h) << 16;
  const std::uint32_t sign = w & 0x80000000u;
  const std::uint32_t two_w = w + w;
  const float normalized = std::bit_cast<float>((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
  const std::uint32_t bits = two_w < (1u << 27) ? std::bit_cast<std::uint32_t>(denormalized)
                                                : std::bit_cast<std::uint32_t>(normalized);
  return std::bit_cast<float>(sign | bits);
}

// Round-to-nearest-even; overflow gives infinity, NaN stays NaN (quiet). The
// rounding is done by the FPU: adding a bias that aligns the binary16 ULP with
// float's last mantissa bit makes the float addition round exactly once.
inline std::uint16_t float_to_half(float f) {
  float base = (__builtin_fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
  const std::uint32_t w = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t shl1_w = w + w;
  const std::uint32_t sign = w & 0x80000000u;
  std::uint32_t bias = shl1_w & 0xFF000000u;
  bias = bias < 0x71000000u ? 0x71000000u : bias;
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(base);
  const std::uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const std::uint32_t mantissa_bits = bits & 0x00000FFFu;
  const std::uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<std::uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

inline float bf16_to_float(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// Round-to-nearest-even on the 16 dropped bits; NaN is kept quiet (adding the
// rounding bias to a NaN payload could carry it into infinity).
inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const bool is_nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<std::uint16_t>(is_nan ? ((u >> 16) | 0x40u) : rounded);
}

}  // namespace collkit::realrun
