// The ping-pong kernels of step_latency_bench (bench/step_latency.h says what
// is measured). One instantiation per protocol and group kind (16): the hot
// loop has no run-time choice in it but the flag's place.
//
// Grid: 2 x lanes blocks; block b is lane b % lanes of side b / lanes.
// Direction 0 (side 0 -> side 1) uses the first area, direction 1 the
// second. Side 0 sends message 0; then each side, for k = 0, 1, ...,
// receives its k-th message (checks every word against word_value) and
// forwards it with kStepDelta added to every word: side 1 as its k-th reply,
// side 0 as message k + 1. Side 0's lane 0 stamps clock64 when it has
// received reply k: two stamps apart is one round trip (two dependent
// steps). A lane of a side reads and writes the same slice of every message,
// so with LL and LL128 a line is only rewritten by the thread that read it
// last on the other side, and the areas need no double buffering.
#include <cuda_runtime.h>

#include <cstdint>
#include <cuda/atomic>

#include "bench/step_latency.h"

namespace collkit::step_latency {
namespace {

using u64 = unsigned long long;
constexpr unsigned kFullWarp = 0xFFFFFFFFu;
constexpr int kUnroll = 4;  // LL lines in flight per thread, as the interpreter

__device__ __forceinline__ u64 global_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ bool abort_seen(const PingPong& p) {
  return *reinterpret_cast<volatile unsigned*>(p.timeout) != 0;
}

// ---- flags of the fence / store / add protocols -------------------------------
__host__ __device__ constexpr bool is_add(Proto P) {
  return P == Proto::add_release_gpu || P == Proto::add_release_sys;
}

template <Proto P>
__device__ __forceinline__ void publish(u64* f, u64 value) {
  constexpr auto kRelease = cuda::std::memory_order_release;
  if constexpr (P == Proto::fence_gpu) {
    __threadfence();
    *reinterpret_cast<volatile u64*>(f) = value;
  } else if constexpr (P == Proto::fence_sys) {
    __threadfence_system();
    *reinterpret_cast<volatile u64*>(f) = value;
  } else if constexpr (P == Proto::store_release_gpu) {
    cuda::atomic_ref<u64, cuda::thread_scope_device>(*f).store(value, kRelease);
  } else if constexpr (P == Proto::store_release_sys) {
    cuda::atomic_ref<u64, cuda::thread_scope_system>(*f).store(value, kRelease);
  } else if constexpr (P == Proto::add_release_gpu) {
    cuda::atomic_ref<u64, cuda::thread_scope_device>(*f).fetch_add(1, kRelease);
  } else if constexpr (P == Proto::add_release_sys) {
    cuda::atomic_ref<u64, cuda::thread_scope_system>(*f).fetch_add(1, kRelease);
  }
}

template <Proto P>
__device__ __forceinline__ u64 observe(u64* f) {
  constexpr auto kAcquire = cuda::std::memory_order_acquire;
  if constexpr (P == Proto::fence_gpu || P == Proto::fence_sys) {
    return *reinterpret_cast<volatile u64*>(f);
  } else if constexpr (P == Proto::store_release_gpu || P == Proto::add_release_gpu) {
    return cuda::atomic_ref<u64, cuda::thread_scope_device>(*f).load(kAcquire);
  } else {
    return cuda::atomic_ref<u64, cuda::thread_scope_system>(*f).load(kAcquire);
  }
}

template <Proto P>
__device__ __forceinline__ void after_observe() {
  if constexpr (P == Proto::fence_gpu) __threadfence();
  if constexpr (P == Proto::fence_sys) __threadfence_system();
}

// Polls until ready(); false when the spin limit passed (the launch's
// timeout word is then set) or another wait gave up.
template <class Ready>
__device__ bool spin(const PingPong& p, Ready ready) {
  if (ready()) return true;
  const u64 start = global_ns();
  for (unsigned polls = 1;; ++polls) {
    if (ready()) return true;
    if (polls % 64 != 0) continue;
    if (abort_seen(p)) return false;
    if (global_ns() - start > p.spin_limit_ns) {
      atomicExch(p.timeout, 1u);
      return false;
    }
  }
}

template <bool kWarp>
struct Group {
  __device__ static void sync() {
    if constexpr (kWarp) {
      __syncwarp();
    } else {
      __syncthreads();
    }
  }
  __device__ static bool any(bool v) {
    if constexpr (kWarp) {
      return __any_sync(kFullWarp, v);
    } else {
      return __syncthreads_or(v ? 1 : 0) != 0;
    }
  }
};

__device__ __forceinline__ std::int64_t slice(std::int64_t n, int lane, int lanes) {
  return n * lane / lanes;
}

__device__ __forceinline__ unsigned wrong(std::uint32_t got, std::uint32_t step, std::uint32_t w) {
  return got != word_value(step, w) ? 1u : 0u;
}

// Flag protocols: the leader waits, the group meets, every thread checks
// (and forwards) its 16-byte vectors of the lane's slice, the group meets.
// The caller publishes the forwarded message's flag.
template <Proto P, bool kWarp>
__device__ bool flag_recv(const PingPong& p, const Layout& L, unsigned char* in, unsigned char* out,
                          int lane, std::uint32_t k, std::uint32_t step, bool forward,
                          unsigned& errors) {
  bool ok = true;
  if (threadIdx.x == 0) {
    u64* f = reinterpret_cast<u64*>(in + L.flag);
    const u64 target = is_add(P) ? static_cast<u64>(p.lanes) * (k + 1) : u64{k} + 1;
    ok = spin(p, [&] { return observe<P>(f) >= target; });
    after_observe<P>();
  }
  if (Group<kWarp>::any(!ok)) return false;
  const std::int64_t nvec = p.bytes / 16;
  const std::int64_t v1 = slice(nvec, lane + 1, p.lanes);
  const uint4* src = reinterpret_cast<const uint4*>(in + L.data);
  uint4* dst = reinterpret_cast<uint4*>(out + L.data);
  for (std::int64_t v = slice(nvec, lane, p.lanes) + threadIdx.x; v < v1; v += blockDim.x) {
    uint4 x = src[v];
    const auto w = static_cast<std::uint32_t>(4 * v);
    errors += wrong(x.x, step, w) + wrong(x.y, step, w + 1) + wrong(x.z, step, w + 2) +
              wrong(x.w, step, w + 3);
    if (forward) {
      x.x += kStepDelta;
      x.y += kStepDelta;
      x.z += kStepDelta;
      x.w += kStepDelta;
      dst[v] = x;
    }
  }
  Group<kWarp>::sync();
  return true;
}

template <Proto P, bool kWarp>
__device__ void flag_send_first(const PingPong& p, const Layout& L, unsigned char* out, int lane) {
  const std::int64_t nvec = p.bytes / 16;
  const std::int64_t v1 = slice(nvec, lane + 1, p.lanes);
  uint4* dst = reinterpret_cast<uint4*>(out + L.data);
  for (std::int64_t v = slice(nvec, lane, p.lanes) + threadIdx.x; v < v1; v += blockDim.x) {
    const auto w = static_cast<std::uint32_t>(4 * v);
    dst[v] = make_uint4(word_value(0, w), word_value(0, w + 1), word_value(0, w + 2),
                        word_value(0, w + 3));
  }
  Group<kWarp>::sync();
}

// ---- LL --------------------------------------------------------------------------
__device__ __forceinline__ void ll_store(unsigned char* line, std::uint32_t lo, std::uint32_t hi,
                                         std::uint32_t flag) {
  const u64 w0 = lo | (u64{flag} << 32), w1 = hi | (u64{flag} << 32);
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(line), "l"(w0), "l"(w1)
               : "memory");
}
__device__ __forceinline__ void ll_load(const unsigned char* line, u64& w0, u64& w1) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(w0), "=l"(w1)
               : "l"(line)
               : "memory");
}
__device__ __forceinline__ bool ll_has(u64 w0, u64 w1, std::uint32_t flag) {
  return static_cast<std::uint32_t>(w0 >> 32) == flag &&
         static_cast<std::uint32_t>(w1 >> 32) == flag;
}

// Line i carries words 2i and 2i + 1 of the message; its flag is step + 1.
template <bool kWarp>
__device__ bool ll_recv(const PingPong& p, unsigned char* in, unsigned char* out, int lane,
                        std::uint32_t step, bool forward, unsigned& errors) {
  const std::int64_t lines = p.bytes / kLlDataBytes;
  const std::int64_t end = slice(lines, lane + 1, p.lanes);
  const int threads = static_cast<int>(blockDim.x);
  const std::uint32_t flag = step + 1;
  bool bad = false;
  for (std::int64_t base = slice(lines, lane, p.lanes) + threadIdx.x; base < end && !bad;
       base += kUnroll * threads) {
    u64 w0[kUnroll], w1[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t i = base + u * threads;
      if (i < end) ll_load(in + 16 * i, w0[u], w1[u]);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t i = base + u * threads;
      if (i >= end || ll_has(w0[u], w1[u], flag)) continue;
      if (!spin(p, [&] {
            ll_load(in + 16 * i, w0[u], w1[u]);
            return ll_has(w0[u], w1[u], flag);
          })) {
        bad = true;
        break;
      }
    }
    if (bad) break;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t i = base + u * threads;
      if (i >= end) continue;
      const auto lo = static_cast<std::uint32_t>(w0[u]), hi = static_cast<std::uint32_t>(w1[u]);
      const auto w = static_cast<std::uint32_t>(2 * i);
      errors += wrong(lo, step, w) + wrong(hi, step, w + 1);
      if (forward) ll_store(out + 16 * i, lo + kStepDelta, hi + kStepDelta, flag + 1);
    }
  }
  // Every thread of the group stops if one did, as the interpreter's
  // __syncthreads_or after an LL receive.
  return !Group<kWarp>::any(bad);
}

__device__ void ll_send_first(const PingPong& p, unsigned char* out, int lane) {
  const std::int64_t lines = p.bytes / kLlDataBytes;
  const std::int64_t end = slice(lines, lane + 1, p.lanes);
  for (std::int64_t i = slice(lines, lane, p.lanes) + threadIdx.x; i < end; i += blockDim.x) {
    const auto w = static_cast<std::uint32_t>(2 * i);
    ll_store(out + 16 * i, word_value(0, w), word_value(0, w + 1), 1);
  }
}

// ---- LL128 ---------------------------------------------------------------------
// Line L, part j (thread j of a group of eight): 8-byte data words 15 L + 2j
// and 15 L + 2j + 1; part 7 holds word 15 L + 14 and the flag. Data word q
// is message words 2q and 2q + 1. Words past the message's end are not
// checked.
__device__ __forceinline__ void part_store(unsigned char* p, u64 a, u64 b) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
__device__ __forceinline__ void part_load(const unsigned char* p, u64& a, u64& b) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
}
__device__ __forceinline__ u64 data_word(std::uint32_t step, std::int64_t q) {
  const auto w = static_cast<std::uint32_t>(2 * q);
  return word_value(step, w) | (u64{word_value(step, w + 1)} << 32);
}
__device__ __forceinline__ unsigned wrong_word(u64 got, std::uint32_t step, std::int64_t q,
                                               std::int64_t words) {
  return q < words && got != data_word(step, q) ? 1u : 0u;
}
__device__ __forceinline__ u64 plus_delta(u64 x) {
  const std::uint32_t lo = static_cast<std::uint32_t>(x) + kStepDelta;
  const std::uint32_t hi = static_cast<std::uint32_t>(x >> 32) + kStepDelta;
  return lo | (u64{hi} << 32);
}

template <bool kWarp>
__device__ bool ll128_recv(const PingPong& p, unsigned char* in, unsigned char* out, int lane,
                           std::uint32_t step, bool forward, unsigned& errors) {
  const std::int64_t lines = (p.bytes + kLl128DataBytes - 1) / kLl128DataBytes;
  const std::int64_t words = p.bytes / 8;
  const std::int64_t first = slice(lines, lane, p.lanes), end = slice(lines, lane + 1, p.lanes);
  const int groups = static_cast<int>(blockDim.x) / 8, g = static_cast<int>(threadIdx.x) / 8,
            j = static_cast<int>(threadIdx.x) % 8;
  const u64 flag = step + 1;
  bool bad = false;
  // The trip count is the same for every thread: each warp polls converged.
  for (std::int64_t base = first; base < end; base += groups) {
    const std::int64_t line = base + g;
    const bool have = line < end;
    u64 a = 0, b = 0;
    const auto load = [&]() {
      bool miss = false;
      if (have) {
        part_load(in + 128 * line + 16 * j, a, b);
        miss = j == 7 && b != flag;
      }
      return __any_sync(kFullWarp, miss);
    };
    if (load()) {
      const u64 start = global_ns();
      for (unsigned polls = 1;; ++polls) {
        if (!load()) break;
        if (polls % 64 != 0) continue;
        const bool stop = abort_seen(p) || global_ns() - start > p.spin_limit_ns;
        if (__any_sync(kFullWarp, stop)) {
          if (threadIdx.x % 32 == 0) atomicExch(p.timeout, 1u);
          bad = true;
          break;
        }
      }
      if (bad) break;
    }
    if (have) {
      const std::int64_t q = 15 * line + 2 * j;
      errors += wrong_word(a, step, q, words);
      if (j < 7) errors += wrong_word(b, step, q + 1, words);
    }
    const u64 fa = plus_delta(a), fb = j < 7 ? plus_delta(b) : flag + 1;
    if (forward) {
      __syncwarp();  // the eight parts of a line leave in one warp-wide store
      if (have) part_store(out + 128 * line + 16 * j, fa, fb);
    }
  }
  return !Group<kWarp>::any(bad);
}

template <bool kWarp>
__device__ void ll128_send_first(const PingPong& p, unsigned char* out, int lane) {
  const std::int64_t lines = (p.bytes + kLl128DataBytes - 1) / kLl128DataBytes;
  const std::int64_t first = slice(lines, lane, p.lanes), end = slice(lines, lane + 1, p.lanes);
  const int groups = static_cast<int>(blockDim.x) / 8, g = static_cast<int>(threadIdx.x) / 8,
            j = static_cast<int>(threadIdx.x) % 8;
  for (std::int64_t base = first; base < end; base += groups) {
    const std::int64_t line = base + g;
    const std::int64_t q = 15 * line + 2 * j;
    const u64 a = data_word(0, q), b = j < 7 ? data_word(0, q + 1) : 1;
    __syncwarp();
    if (line < end) part_store(out + 128 * line + 16 * j, a, b);
  }
}

// ---- the kernel --------------------------------------------------------------------
template <Proto P, bool kWarp>
__global__ void __launch_bounds__(kBlockThreads) ping_pong_kernel(PingPong p) {
  __shared__ std::uint32_t recorded[kMaxRecorded];
  const int side = static_cast<int>(blockIdx.x) / p.lanes;
  const int lane = static_cast<int>(blockIdx.x) % p.lanes;
  if (threadIdx.x == 0) {
    int sm = 0;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    p.smid[blockIdx.x] = sm;
  }
  const Layout L = layout_of(P, p.place, p.bytes);
  unsigned char* dir0 = p.area;             // side 0 -> side 1
  unsigned char* dir1 = p.area + L.stride;  // side 1 -> side 0
  unsigned char* in = side == 0 ? dir1 : dir0;
  unsigned char* out = side == 0 ? dir0 : dir1;
  const int n = p.warmup + p.recorded;
  const bool timer = side == 0 && lane == 0 && threadIdx.x == 0;
  unsigned errors = 0;
  long long last = 0;
  if (side == 0) {
    if (timer) {
      last = clock64();
      if (p.warmup == 0) {
        p.clocks[0] = global_ns();
        p.clocks[1] = static_cast<u64>(last);
      }
    }
    if constexpr (P == Proto::ll) {
      ll_send_first(p, out, lane);
    } else if constexpr (P == Proto::ll128) {
      ll128_send_first<kWarp>(p, out, lane);
    } else {
      flag_send_first<P, kWarp>(p, L, out, lane);
      if (threadIdx.x == 0) publish<P>(reinterpret_cast<u64*>(out + L.flag), 1);
    }
  }
  for (int k = 0; k < n; ++k) {
    const bool forward = side == 1 || k + 1 < n;
    const auto step = static_cast<std::uint32_t>(side == 0 ? 2 * k + 1 : 2 * k);
    const auto k_out = static_cast<std::uint32_t>(side == 0 ? k + 1 : k);
    bool ok;
    if constexpr (P == Proto::ll) {
      ok = ll_recv<kWarp>(p, in, out, lane, step, forward, errors);
    } else if constexpr (P == Proto::ll128) {
      ok = ll128_recv<kWarp>(p, in, out, lane, step, forward, errors);
    } else {
      ok = flag_recv<P, kWarp>(p, L, in, out, lane, static_cast<std::uint32_t>(k), step, forward,
                               errors);
    }
    if (!ok) break;
    if (timer) {
      const long long now = clock64();
      if (k >= p.warmup) recorded[k - p.warmup] = static_cast<std::uint32_t>(now - last);
      if (k + 1 == p.warmup) {
        p.clocks[0] = global_ns();
        p.clocks[1] = static_cast<u64>(now);
      }
      if (k + 1 == n) {
        p.clocks[2] = global_ns();
        p.clocks[3] = static_cast<u64>(now);
      }
      last = now;
    }
    if constexpr (P != Proto::ll && P != Proto::ll128) {
      if (forward && threadIdx.x == 0) publish<P>(reinterpret_cast<u64*>(out + L.flag), k_out + 1);
    }
  }
  if (errors != 0) atomicAdd(p.errors, errors);
  if (side == 0 && lane == 0) {
    Group<kWarp>::sync();
    for (int i = static_cast<int>(threadIdx.x); i < p.recorded; i += static_cast<int>(blockDim.x))
      p.samples[i] = recorded[i];
  }
}

__global__ void empty_kernel() {}

using KernelFn = void (*)(PingPong);
template <Proto P>
KernelFn pick(bool warp) {
  return warp ? ping_pong_kernel<P, true> : ping_pong_kernel<P, false>;
}
KernelFn kernel_of(const PingPong& p) {
  switch (p.proto) {
    case Proto::fence_gpu:
      return pick<Proto::fence_gpu>(p.warp);
    case Proto::fence_sys:
      return pick<Proto::fence_sys>(p.warp);
    case Proto::store_release_gpu:
      return pick<Proto::store_release_gpu>(p.warp);
    case Proto::store_release_sys:
      return pick<Proto::store_release_sys>(p.warp);
    case Proto::add_release_gpu:
      return pick<Proto::add_release_gpu>(p.warp);
    case Proto::add_release_sys:
      return pick<Proto::add_release_sys>(p.warp);
    case Proto::ll:
      return pick<Proto::ll>(p.warp);
    case Proto::ll128:
      return pick<Proto::ll128>(p.warp);
  }
  return nullptr;
}

}  // namespace

cudaError_t launch_ping_pong(const PingPong& p, cudaStream_t stream) {
  const KernelFn k = kernel_of(p);
  if (k == nullptr) return cudaErrorInvalidValue;
  k<<<2 * p.lanes, threads_of(p), 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t ping_pong_resident_blocks(const PingPong& p, int* blocks) {
  const KernelFn k = kernel_of(p);
  if (k == nullptr) return cudaErrorInvalidValue;
  int device = 0, per_sm = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess)
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, threads_of(p), 0);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  *blocks = per_sm * sms;
  return e;
}

cudaError_t launch_empty(int blocks, int threads, cudaStream_t stream) {
  empty_kernel<<<blocks, threads, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace collkit::step_latency
