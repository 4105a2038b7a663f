// The reduction kernels. One template over the stored element type and the
// op; a grid-stride loop over 16-byte vectors (4 in flight per thread) with
// the few elements before the first aligned vector and after the last one
// done as scalars, or all scalar when the pointers' alignments differ.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "realrun/device/reduce.h"
#include "realrun/element_ops.h"

namespace collkit::realrun {
namespace {

constexpr int kThreads = 512;
constexpr int kUnroll = 4;

// The element types and operations, shared with the interpreter and written
// once for host and device (realrun/element_ops.h).
using elem::apply;
using elem::Arith;
using elem::BFloat16;
using elem::Half16;
using elem::kMax;
using elem::kMin;
using elem::kProd;
using elem::kSum;
using elem::to_bf16;
using elem::to_float;
using elem::to_half;

struct alignas(16) Vec16 {
  unsigned char b[16];
};

template <typename T, int OP>
__device__ __forceinline__ Vec16 apply_vec(Vec16 a, const Vec16& b) {
  constexpr int kPer = 16 / sizeof(T);
  T x[kPer], y[kPer];
  memcpy(x, a.b, 16);
  memcpy(y, b.b, 16);
#pragma unroll
  for (int k = 0; k < kPer; ++k) x[k] = apply<T, OP>(x[k], y[k]);
  memcpy(a.b, x, 16);
  return a;
}

// Elements [0, head) and [head + nvec * kPer, count) are scalars; the
// vectors in between are 16-byte aligned in dst, src and also.
template <typename T, int OP, bool kAlso>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(T* dst, const T* src, T* also, std::int64_t count, std::int64_t head,
                  std::int64_t nvec) {
  constexpr int kPer = 16 / sizeof(T);
  const std::int64_t tid = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  Vec16* vd = reinterpret_cast<Vec16*>(dst + head);
  const Vec16* vs = reinterpret_cast<const Vec16*>(src + head);
  Vec16* va = kAlso ? reinterpret_cast<Vec16*>(also + head) : nullptr;
  std::int64_t i = tid;
  for (; i + (kUnroll - 1) * stride < nvec; i += kUnroll * stride) {
    Vec16 a[kUnroll], b[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      a[u] = vd[i + u * stride];
      b[u] = vs[i + u * stride];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      a[u] = apply_vec<T, OP>(a[u], b[u]);
      vd[i + u * stride] = a[u];
      if constexpr (kAlso) va[i + u * stride] = a[u];
    }
  }
  for (; i < nvec; i += stride) {
    const Vec16 r = apply_vec<T, OP>(vd[i], vs[i]);
    vd[i] = r;
    if constexpr (kAlso) va[i] = r;
  }
  const std::int64_t tail = head + nvec * kPer;
  const std::int64_t scalars = head + (count - tail);
  for (std::int64_t j = tid; j < scalars; j += stride) {
    const std::int64_t k = j < head ? j : tail + (j - head);
    const T r = apply<T, OP>(dst[k], src[k]);
    dst[k] = r;
    if constexpr (kAlso) also[k] = r;
  }
}

template <typename T>
__global__ void avg_kernel(T* data, std::int64_t count, int ranks) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] = elem::avg_divide(data[i], ranks);
  }
}

template <typename T>
__device__ __forceinline__ bool same_value(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return a == b;
  } else if constexpr (std::is_floating_point_v<T>) {
    return a == b;
  } else {
    return to_float(a) == to_float(b);
  }
}

template <typename T>
__global__ void count_wrong_kernel(const T* actual, const T* expected, std::int64_t count,
                                   unsigned long long* wrong) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  unsigned long long mine = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    mine += same_value(actual[i], expected[i]) ? 0 : 1;
  // Warp sum first: one atomic per warp with a mismatch.
  for (int off = 16; off > 0; off /= 2) mine += __shfl_down_sync(0xFFFFFFFFu, mine, off);
  if ((threadIdx.x & 31) == 0 && mine) atomicAdd(wrong, mine);
}

// A stored element from a check value (a small integer, exact in every type),
// converted as realrun/check_data.cc stores it.
template <typename T>
__device__ __forceinline__ T from_check_value(std::int64_t v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ Half16 from_check_value<Half16>(std::int64_t v) {
  return to_half(static_cast<float>(v));
}
template <>
__device__ __forceinline__ BFloat16 from_check_value<BFloat16>(std::int64_t v) {
  return to_bf16(static_cast<float>(v));
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    fill_check_kernel(T* out, std::int64_t count, CheckPattern pattern, int ranks, int rank,
                      std::int64_t iter) {
  constexpr bool kUnsigned = std::is_integral_v<T> && std::is_unsigned_v<T>;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    out[i] = from_check_value<T>(check_pattern_value(pattern, kUnsigned, ranks, rank, i, iter));
}

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw RuntimeFailure(std::string(what) + " launch failed: " + cudaGetErrorName(e) + ": " +
                         cudaGetErrorString(e));
}

template <typename T, int OP>
void launch_reduce(void* dst_v, const void* src_v, void* also_v, std::int64_t count,
                   cudaStream_t stream) {
  constexpr int kPer = 16 / sizeof(T);
  T* dst = static_cast<T*>(dst_v);
  const T* src = static_cast<const T*>(src_v);
  T* also = static_cast<T*>(also_v);
  const auto mis = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16; };
  std::int64_t head = count, nvec = 0;
  const std::uintptr_t m = mis(dst);
  if (m == mis(src) && (!also || m == mis(also)) && m % sizeof(T) == 0) {
    head = std::min<std::int64_t>(count, static_cast<std::int64_t>((16 - m) % 16 / sizeof(T)));
    nvec = (count - head) / kPer;
  }
  const std::int64_t items = std::max<std::int64_t>(nvec / kUnroll, head + count - nvec * kPer);
  const LaunchConfig lc = launch_config(std::max<std::int64_t>(items, 1));
  if (also) {
    reduce_kernel<T, OP, true>
        <<<lc.blocks, lc.threads, 0, stream>>>(dst, src, also, count, head, nvec);
  } else {
    reduce_kernel<T, OP, false>
        <<<lc.blocks, lc.threads, 0, stream>>>(dst, src, nullptr, count, head, nvec);
  }
  check_launch("reduce kernel");
}

template <typename T>
struct Typed {
  static void reduce(RedOp op, void* dst, const void* src, void* also, std::int64_t n,
                     cudaStream_t s) {
    switch (op) {
      case RedOp::sum:
      case RedOp::avg:
        return launch_reduce<T, kSum>(dst, src, also, n, s);
      case RedOp::prod:
        return launch_reduce<T, kProd>(dst, src, also, n, s);
      case RedOp::min:
        return launch_reduce<T, kMin>(dst, src, also, n, s);
      case RedOp::max:
        return launch_reduce<T, kMax>(dst, src, also, n, s);
    }
  }
  static void avg(void* data, std::int64_t n, int ranks, cudaStream_t s) {
    const LaunchConfig lc = launch_config(n);
    avg_kernel<T><<<lc.blocks, lc.threads, 0, s>>>(static_cast<T*>(data), n, ranks);
    check_launch("avg kernel");
  }
  static void wrong(const void* a, const void* e, std::int64_t n, unsigned long long* w,
                    cudaStream_t s) {
    const LaunchConfig lc = launch_config(n);
    count_wrong_kernel<T>
        <<<lc.blocks, lc.threads, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(e), n, w);
    check_launch("check kernel");
  }
  static void fill(CheckPattern pattern, int ranks, int rank, std::int64_t iter, void* out,
                   std::int64_t n, cudaStream_t s) {
    const LaunchConfig lc = launch_config(n);
    fill_check_kernel<T>
        <<<lc.blocks, lc.threads, 0, s>>>(static_cast<T*>(out), n, pattern, ranks, rank, iter);
    check_launch("fill kernel");
  }
};

template <typename F>
void dispatch(DataType type, F&& f) {
  switch (type) {
    case DataType::int8:
      return f(Typed<std::int8_t>{});
    case DataType::uint8:
      return f(Typed<std::uint8_t>{});
    case DataType::int32:
      return f(Typed<std::int32_t>{});
    case DataType::uint32:
      return f(Typed<std::uint32_t>{});
    case DataType::int64:
      return f(Typed<std::int64_t>{});
    case DataType::uint64:
      return f(Typed<std::uint64_t>{});
    case DataType::half:
      return f(Typed<Half16>{});
    case DataType::bfloat16:
      return f(Typed<BFloat16>{});
    case DataType::float32:
      return f(Typed<float>{});
    case DataType::float64:
      return f(Typed<double>{});
  }
  throw UsageError("unknown data type code " + std::to_string(static_cast<int>(type)));
}

struct DeviceShape {
  int blocks_per_sm = 0;
  int sms = 0;
};

}  // namespace

LaunchConfig launch_config(std::int64_t work_items) {
  static std::mutex mutex;
  static DeviceShape shapes[64];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) device = 0;
  DeviceShape shape;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (shapes[device].sms == 0) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, device) == cudaSuccess) {
        shapes[device].sms = p.multiProcessorCount;
        shapes[device].blocks_per_sm = std::max(1, p.maxThreadsPerMultiProcessor / kThreads);
      } else {
        shapes[device] = {1, 1};
      }
    }
    shape = shapes[device];
  }
  LaunchConfig lc;
  lc.threads = kThreads;
  const std::int64_t needed = (std::max<std::int64_t>(work_items, 1) + kThreads - 1) / kThreads;
  lc.blocks = static_cast<int>(
      std::min<std::int64_t>(needed, static_cast<std::int64_t>(shape.sms) * shape.blocks_per_sm));
  return lc;
}

void device_reduce(DataType type, RedOp op, void* dst, const void* src, std::int64_t count,
                   cudaStream_t stream, void* also) {
  if (count <= 0) return;
  dispatch(type, [&](auto t) { decltype(t)::reduce(op, dst, src, also, count, stream); });
}

void device_finish_avg(DataType type, void* data, std::int64_t count, int ranks,
                       cudaStream_t stream) {
  if (count <= 0) return;
  if (ranks < 1) throw UsageError("avg needs ranks >= 1 (got " + std::to_string(ranks) + ")");
  dispatch(type, [&](auto t) { decltype(t)::avg(data, count, ranks, stream); });
}

void device_count_wrong(DataType type, const void* actual, const void* expected, std::int64_t count,
                        unsigned long long* wrong, cudaStream_t stream) {
  if (count <= 0) return;
  dispatch(type, [&](auto t) { decltype(t)::wrong(actual, expected, count, wrong, stream); });
}

void device_fill_check(DataType type, CheckPattern pattern, int ranks, int rank, std::int64_t iter,
                       void* out, std::int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  if (ranks < 1)
    throw UsageError("check data needs ranks >= 1 (got " + std::to_string(ranks) + ")");
  dispatch(type,
           [&](auto t) { decltype(t)::fill(pattern, ranks, rank, iter, out, count, stream); });
}

}  // namespace collkit::realrun
