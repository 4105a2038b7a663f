#include "realrun/reduce_host.h"

#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "realrun/half.h"

namespace collkit::realrun {
namespace {

// The element types as stored, and how one element is computed. 16-bit floats
// are stored as their bit patterns and computed in float.
struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

template <typename T>
struct ComputeType {
  using type = T;
};
template <typename T>
requires std::is_integral_v<T>
struct ComputeType<T> {
  // Signed overflow is undefined in C++; NCCL's integer reductions wrap, so
  // compute signed sums and products in the unsigned type of the same width.
  using type = std::make_unsigned_t<T>;
};

template <typename T>
struct Arith {
  using Compute = typename ComputeType<T>::type;
  static Compute load(T v) { return static_cast<Compute>(v); }
  static T store(Compute v) { return static_cast<T>(v); }
};
template <>
struct Arith<Half> {
  using Compute = float;
  static float load(Half v) { return half_to_float(v.bits); }
  static Half store(float v) { return Half{float_to_half(v)}; }
};
template <>
struct Arith<BFloat16> {
  using Compute = float;
  static float load(BFloat16 v) { return bf16_to_float(v.bits); }
  static BFloat16 store(float v) { return BFloat16{float_to_bf16(v)}; }
};

template <typename T, typename F>
void apply(void* dst_v, const void* src_v, std::int64_t count, F f) {
  T* __restrict dst = static_cast<T*>(dst_v);
  const T* __restrict src = static_cast<const T*>(src_v);
  for (std::int64_t i = 0; i < count; ++i)
    dst[i] = Arith<T>::store(f(Arith<T>::load(dst[i]), Arith<T>::load(src[i])));
}

// min and max compare in the element's own type: the unsigned view used for
// wrapping sums would order negative signed values wrongly.
template <typename T>
void min_max(void* dst_v, const void* src_v, std::int64_t count, bool is_min) {
  T* __restrict dst = static_cast<T*>(dst_v);
  const T* __restrict src = static_cast<const T*>(src_v);
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    // Comparing in float and keeping the chosen operand's bits needs no
    // rounding: the result is one of the inputs.
    for (std::int64_t i = 0; i < count; ++i) {
      const float a = Arith<T>::load(dst[i]);
      const float b = Arith<T>::load(src[i]);
      const bool take_src = is_min ? b < a : b > a;
      dst[i].bits = take_src ? src[i].bits : dst[i].bits;
    }
  } else if (is_min) {
    for (std::int64_t i = 0; i < count; ++i) dst[i] = src[i] < dst[i] ? src[i] : dst[i];
  } else {
    for (std::int64_t i = 0; i < count; ++i) dst[i] = src[i] > dst[i] ? src[i] : dst[i];
  }
}

template <typename T>
void reduce_typed(RedOp op, void* dst, const void* src, std::int64_t count) {
  // With src == dst the __restrict loops would be wrong; x op x is computed
  // through a copy instead (rare: only schedules that reduce a region into
  // itself).
  if (dst == src) {
    T* d = static_cast<T*>(dst);
    for (std::int64_t i = 0; i < count; ++i) {
      T copy = d[i];
      reduce_typed<T>(op, &d[i], &copy, 1);
    }
    return;
  }
  using C = typename Arith<T>::Compute;
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:
      apply<T>(dst, src, count, [](C a, C b) { return static_cast<C>(a + b); });
      return;
    case RedOp::prod:
      apply<T>(dst, src, count, [](C a, C b) { return static_cast<C>(a * b); });
      return;
    case RedOp::min:
      min_max<T>(dst, src, count, true);
      return;
    case RedOp::max:
      min_max<T>(dst, src, count, false);
      return;
  }
}

template <typename T>
void avg_typed(void* data_v, std::int64_t count, int ranks) {
  T* data = static_cast<T*>(data_v);
  if constexpr (std::is_integral_v<T>) {
    const T divisor = static_cast<T>(ranks);
    for (std::int64_t i = 0; i < count; ++i) data[i] = static_cast<T>(data[i] / divisor);
  } else if constexpr (std::is_floating_point_v<T>) {
    const T divisor = static_cast<T>(ranks);
    for (std::int64_t i = 0; i < count; ++i) data[i] = data[i] / divisor;
  } else {
    const float divisor = static_cast<float>(ranks);
    for (std::int64_t i = 0; i < count; ++i)
      data[i] = Arith<T>::store(Arith<T>::load(data[i]) / divisor);
  }
}

template <template <typename> class F, typename... Args>
void dispatch(DataType type, Args&&... args) {
  switch (type) {
    case DataType::int8:
      return F<std::int8_t>::run(args...);
    case DataType::uint8:
      return F<std::uint8_t>::run(args...);
    case DataType::int32:
      return F<std::int32_t>::run(args...);
    case DataType::uint32:
      return F<std::uint32_t>::run(args...);
    case DataType::int64:
      return F<std::int64_t>::run(args...);
    case DataType::uint64:
      return F<std::uint64_t>::run(args...);
    case DataType::half:
      return F<Half>::run(args...);
    case DataType::bfloat16:
      return F<BFloat16>::run(args...);
    case DataType::float32:
      return F<float>::run(args...);
    case DataType::float64:
      return F<double>::run(args...);
  }
  throw UsageError("unknown data type code " + std::to_string(static_cast<int>(type)));
}

template <typename T>
struct ReduceFn {
  static void run(RedOp op, void* dst, const void* src, std::int64_t count) {
    reduce_typed<T>(op, dst, src, count);
  }
};
template <typename T>
struct AvgFn {
  static void run(void* data, std::int64_t count, int ranks) { avg_typed<T>(data, count, ranks); }
};

}  // namespace

void reduce_into(DataType type, RedOp op, void* dst, const void* src, std::int64_t count) {
  if (count <= 0) return;
  dispatch<ReduceFn>(type, op, dst, src, count);
}

void finish_avg(DataType type, void* data, std::int64_t count, int ranks) {
  if (count <= 0) return;
  if (ranks < 1) throw UsageError("avg needs ranks >= 1 (got " + std::to_string(ranks) + ")");
  dispatch<AvgFn>(type, data, count, ranks);
}

}  // namespace collkit::realrun
