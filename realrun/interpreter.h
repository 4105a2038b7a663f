// The schedule interpreter's per-operation logic, in one header for the device
// (nvcc: realrun/device/interpreter_kernel.cu, one thread block per rank and
// lane) and the host (g++: realrun/host_interpreter.cc, one std::thread per
// rank and lane), as realrun/check_value.h is. A rank's program is an array
// of ExecOp (realrun/device_program.h compiles it from the plans and binds
// it to addresses); every lane of the rank runs the whole array and does its
// own slice of each data operation.
//
// Synchronisation: a flag is a 64-bit counter that only grows. `signal` adds
// one with release ordering once the lane's earlier operations are complete;
// `wait` spins, with acquire ordering, until the flag holds `arrivals` x
// (epoch + 1), i.e. until every lane of the recording rank has signalled in
// this iteration (iteration `epoch` of the program, counted from 0). Flags
// are never reset between iterations. `barrier` is a signal and a wait on a
// flag of the rank's own lanes. The spin is bounded: past the limit the
// first waiter to give up stores an error word (code, rank, operation) and
// every other waiter of the program sees it and stops, so a deadlock is an
// error, not a hang.
//
// Data operations use 16-byte vectors where the pointers share their
// alignment (scalars before the first and after the last vector), four
// vectors in flight per thread; reduces are fused into the pull (dst = dst op
// src read straight from the peer's memory, with the optional `also` copy of
// the result written in the same pass), with the element operations of
// realrun/element_ops.h, bit for bit the host's.
//
// LL messages (NCCL's "low latency" protocol: src/device/prims_ll.h of
// github.com/NVIDIA/nccl): the sender pushes the message into a slot of the
// receiver's LL area as 16-byte lines, each two 8-byte words of 4 data bytes
// and a 4-byte flag, stored with one 16-byte store; the receiver polls each
// line until both words carry the iteration's flag, then copies or reduces
// its 8 data bytes. A word is written whole, so a flag that is seen brings
// its data with it: no fence, no release or acquire, and no "data ready" or
// "data pulled" handshake (a slot is written once per iteration). Half the
// bytes on the wire are flags. Lanes split an LL operation by lines of its
// user-side region (8 bytes each), so two LL operations on one region give
// each byte to the same lane (realrun/device_program.cc needs no barrier
// between them).
//
// LL128 messages (NCCL's LL128: src/device/prims_ll128.h): 128-byte lines
// of 15 data words and one flag word. On the GPU eight consecutive threads
// of a warp store a line's eight 16-byte parts with one warp-wide
// instruction, and NCCL relies on that store arriving whole: a receiver
// whose eighth thread sees the flag takes the other seven parts as they
// were loaded (the warp reloads all of them while any line's flag is
// missing). 120 of every 128 bytes are data. The host, which has no such
// store, writes the data words and then the flag word with release, and
// reads the flag with acquire before the data: the host tests check the
// layout, slots and forwarding; whether a GPU delivers the line whole is
// checked on the GPU (docs/BENCH.md). Lanes split an LL128 operation by
// 120-byte lines of its user-side region.
// C++17, nvcc and g++ alike; the host branch uses std::atomic_ref (C++20).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/dtypes.h"
#include "realrun/element_ops.h"

#ifdef __CUDACC__
#include <cuda/atomic>
#define COLLKIT_INTERP __device__ __forceinline__
#define COLLKIT_UNROLL _Pragma("unroll")
#else
#include <atomic>
#define COLLKIT_INTERP inline
#define COLLKIT_UNROLL
#endif

namespace collkit::realrun::interp {

using Flag = unsigned long long;

enum OpCode : std::uint8_t {
  kWait = 0,       // until *flag >= arrivals x (epoch + 1)
  kSignal = 1,     // *flag += 1 (release), after this lane's earlier operations
  kBarrier = 2,    // signal, then wait: every lane of this rank got here
  kCopy = 3,       // dst = src
  kReduce = 4,     // dst = dst op src (and also = the result)
  kFinishAvg = 5,  // dst = dst / ranks
  kLlSend = 6,     // dst (an LL slot, maybe another rank's) = src as lines with the flag
  kLlCopy = 7,     // dst = the data of src's lines, once every line carries the flag
  kLlReduce = 8,   // dst = dst op the data of src's lines (and also = the result)
  kLl128Send = 9,  // the same three in 128-byte LL128 lines
  kLl128Copy = 10,
  kLl128Reduce = 11,
};

// One operation, bound to addresses. Laid out alike by g++ and nvcc (fixed
// width fields and pointers only): the host builds the array and uploads it.
struct ExecOp {
  std::uint8_t code = kWait;
  std::uint8_t reserved[3] = {0, 0, 0};
  std::uint32_t arrivals = 0;  // wait, barrier: signals per iteration on `flag`
  Flag* flag = nullptr;        // wait, signal, barrier
  unsigned char* dst = nullptr;
  const unsigned char* src = nullptr;  // copy, reduce: maybe another rank's memory
  unsigned char* also = nullptr;       // reduce: null, or where the result also goes
  std::int64_t bytes = 0;              // copy, reduce, finish_avg, the LL operations
  // ll_copy, ll_reduce: null, or an LL slot the result is also sent to as
  // lines (the message that sends on what was just received: NCCL's
  // recvCopySend / recvReduceSend, one pass instead of a receive and a send).
  unsigned char* fwd = nullptr;
};

// The error word: 0 while all is well, else code << 56 | rank << 32 | op.
enum ErrorCode : std::uint32_t { kOk = 0, kTimeout = 1, kAborted = 2 };
COLLKIT_INTERP Flag error_word(ErrorCode code, int rank, std::uint32_t op) {
  return (static_cast<Flag>(code) << 56) |
         (static_cast<Flag>(static_cast<std::uint32_t>(rank) & 0xFFFFFFu) << 32) | op;
}
COLLKIT_INTERP std::uint32_t error_code(Flag word) {
  return static_cast<std::uint32_t>(word >> 56);
}
COLLKIT_INTERP int error_rank(Flag word) { return static_cast<int>((word >> 32) & 0xFFFFFFu); }
COLLKIT_INTERP std::uint32_t error_op(Flag word) { return static_cast<std::uint32_t>(word); }

// The combining function of a reduction op (avg reduces as sum; its
// division is the program's finish_avg operation). Host code.
inline constexpr int combine_of(RedOp op) {
  switch (op) {
    case RedOp::prod:
      return elem::kProd;
    case RedOp::min:
      return elem::kMin;
    case RedOp::max:
      return elem::kMax;
    case RedOp::sum:
    case RedOp::avg:
      break;
  }
  return elem::kSum;
}

// What one lane of one rank runs with.
struct LaneRun {
  const ExecOp* ops = nullptr;  // the rank's program
  std::uint32_t count = 0;
  int rank = 0;
  int lane = 0;   // which slice of every data operation
  int lanes = 1;  // lanes of every rank
  std::uint64_t epoch = 0;
  int avg_ranks = 1;                // finish_avg's divisor
  std::uint64_t spin_limit_ns = 0;  // a wait longer than this is an error
  Flag* error = nullptr;            // the program's error word
  bool system_scope = false;        // flags at system scope (ranks on several GPUs)
  int combine = elem::kSum;         // reduce's function (elem::Op; avg reduces as sum)
};

// ---- LL lines ---------------------------------------------------------------
// The flag of an iteration's lines: never 0 (the value of a zeroed area).
COLLKIT_INTERP std::uint32_t ll_flag(std::uint64_t epoch) {
  return static_cast<std::uint32_t>(epoch % 0xFFFFFFFFull) + 1u;
}
// A line: word k = data bytes 4k..4k+3 | flag << 32.
struct alignas(16) LlLine {
  std::uint64_t w[2];
};
inline constexpr int kLlDataBytes = 8;  // per 16-byte line

COLLKIT_INTERP void ll_store(LlLine* line, std::uint64_t data, std::uint32_t flag) {
  const std::uint64_t f = static_cast<std::uint64_t>(flag) << 32;
  const std::uint64_t w0 = (data & 0xFFFFFFFFull) | f, w1 = (data >> 32) | f;
#ifdef __CUDACC__
  // One 16-byte store of two 8-byte words (each single-copy atomic); volatile
  // as NCCL's storeLL: it goes to L2 and is not merged or delayed.
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(line), "l"(w0), "l"(w1)
               : "memory");
#else
  std::atomic_ref<std::uint64_t>(line->w[0]).store(w0, std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(line->w[1]).store(w1, std::memory_order_relaxed);
#endif
}
// Whether both words of the line carry `flag`; if so `data` is its 8 bytes.
COLLKIT_INTERP bool ll_load(const LlLine* line, std::uint32_t flag, std::uint64_t& data) {
  std::uint64_t w0, w1;
#ifdef __CUDACC__
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(w0), "=l"(w1)
               : "l"(line)
               : "memory");
#else
  w0 = std::atomic_ref<std::uint64_t>(const_cast<LlLine*>(line)->w[0])
           .load(std::memory_order_relaxed);
  w1 = std::atomic_ref<std::uint64_t>(const_cast<LlLine*>(line)->w[1])
           .load(std::memory_order_relaxed);
#endif
  if (static_cast<std::uint32_t>(w0 >> 32) != flag || static_cast<std::uint32_t>(w1 >> 32) != flag)
    return false;
  data = (w0 & 0xFFFFFFFFull) | (w1 << 32);
  return true;
}

// ---- flags ------------------------------------------------------------------
// `system`: ranks on several GPUs (flags read across the peer mapping), so
// system scope; otherwise device scope. A run-time choice, uniform over a
// launch (one object is never accessed at two scopes at once): a template
// parameter would double the kernel's instantiations for code off the hot
// loops.
#ifdef __CUDACC__
template <cuda::thread_scope kScope>
using FlagRef = cuda::atomic_ref<Flag, kScope>;

COLLKIT_INTERP Flag flag_load(Flag* f, bool system) {
  constexpr auto kAcquire = cuda::std::memory_order_acquire;
  return system ? FlagRef<cuda::thread_scope_system>(*f).load(kAcquire)
                : FlagRef<cuda::thread_scope_device>(*f).load(kAcquire);
}
COLLKIT_INTERP void flag_add(Flag* f, bool system) {
  constexpr auto kRelease = cuda::std::memory_order_release;
  if (system) {
    FlagRef<cuda::thread_scope_system>(*f).fetch_add(1, kRelease);
  } else {
    FlagRef<cuda::thread_scope_device>(*f).fetch_add(1, kRelease);
  }
}
COLLKIT_INTERP Flag error_load(Flag* e, bool system) {
  constexpr auto kRelaxed = cuda::std::memory_order_relaxed;
  return system ? FlagRef<cuda::thread_scope_system>(*e).load(kRelaxed)
                : FlagRef<cuda::thread_scope_device>(*e).load(kRelaxed);
}
COLLKIT_INTERP void error_store(Flag* e, Flag word, bool system) {
  constexpr auto kRelaxed = cuda::std::memory_order_relaxed;
  Flag expected = 0;
  if (system) {
    FlagRef<cuda::thread_scope_system>(*e).compare_exchange_strong(expected, word, kRelaxed);
  } else {
    FlagRef<cuda::thread_scope_device>(*e).compare_exchange_strong(expected, word, kRelaxed);
  }
}
#else
COLLKIT_INTERP Flag flag_load(Flag* f, bool /*system*/) {
  return std::atomic_ref<Flag>(*f).load(std::memory_order_acquire);
}
COLLKIT_INTERP void flag_add(Flag* f, bool /*system*/) {
  std::atomic_ref<Flag>(*f).fetch_add(1, std::memory_order_release);
}
COLLKIT_INTERP Flag error_load(Flag* e, bool /*system*/) {
  return std::atomic_ref<Flag>(*e).load(std::memory_order_relaxed);
}
COLLKIT_INTERP void error_store(Flag* e, Flag word, bool /*system*/) {
  Flag expected = 0;
  std::atomic_ref<Flag>(*e).compare_exchange_strong(expected, word, std::memory_order_relaxed);
}
#endif

// ---- data -------------------------------------------------------------------
struct alignas(16) Vec16 {
  unsigned char b[16];
};

template <typename T, int OP>
COLLKIT_INTERP Vec16 apply_vec(Vec16 a, const Vec16& b) {
  constexpr int kPer = 16 / sizeof(T);
  T x[kPer], y[kPer];
  memcpy(x, a.b, 16);
  memcpy(y, b.b, 16);
  COLLKIT_UNROLL
  for (int k = 0; k < kPer; ++k) x[k] = elem::apply<T, OP>(x[k], y[k]);
  memcpy(a.b, x, 16);
  return a;
}

// [first, end) of `n` items for lane `lane` of `lanes`: contiguous slices.
COLLKIT_INTERP std::int64_t slice_begin(std::int64_t n, int lane, int lanes) {
  return n * lane / lanes;
}

constexpr int kUnroll = 4;

// One lane's slice of dst = src (kCopy) or dst = dst op src (+ also), run by
// `threads` threads of which this is `thread`. Elements are T: every offset of
// a plan is a multiple of the element size.
template <typename T, int OP, bool kIsReduce>
COLLKIT_INTERP void data_slice(const ExecOp& op, int lane, int lanes, int thread, int threads) {
  constexpr int kPer = 16 / sizeof(T);
  T* dst = reinterpret_cast<T*>(op.dst);
  const T* src = reinterpret_cast<const T*>(op.src);
  [[maybe_unused]] T* also = kIsReduce ? reinterpret_cast<T*>(op.also) : nullptr;
  const std::int64_t count = op.bytes / static_cast<std::int64_t>(sizeof(T));
  const auto mis = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16; };
  std::int64_t head = count, nvec = 0;
  const std::uintptr_t m = mis(dst);
  if (m == mis(src) && (!also || m == mis(also)) && m % sizeof(T) == 0) {
    const std::int64_t h = static_cast<std::int64_t>((16 - m) % 16 / sizeof(T));
    head = h < count ? h : count;
    nvec = (count - head) / kPer;
  }
  // Vectors: this lane's contiguous share, threads strided within it.
  const std::int64_t v0 = slice_begin(nvec, lane, lanes), v1 = slice_begin(nvec, lane + 1, lanes);
  Vec16* vd = reinterpret_cast<Vec16*>(dst + head);
  const Vec16* vs = reinterpret_cast<const Vec16*>(src + head);
  [[maybe_unused]] Vec16* va = also ? reinterpret_cast<Vec16*>(also + head) : nullptr;
  std::int64_t i = v0 + thread;
  for (; i + (kUnroll - 1) * threads < v1; i += kUnroll * threads) {
    Vec16 b[kUnroll];
    COLLKIT_UNROLL
    for (int u = 0; u < kUnroll; ++u) b[u] = vs[i + u * threads];
    if constexpr (kIsReduce) {
      Vec16 a[kUnroll];
      COLLKIT_UNROLL
      for (int u = 0; u < kUnroll; ++u) a[u] = vd[i + u * threads];
      COLLKIT_UNROLL
      for (int u = 0; u < kUnroll; ++u) {
        a[u] = apply_vec<T, OP>(a[u], b[u]);
        vd[i + u * threads] = a[u];
        if (va) va[i + u * threads] = a[u];
      }
    } else {
      COLLKIT_UNROLL
      for (int u = 0; u < kUnroll; ++u) vd[i + u * threads] = b[u];
    }
  }
  for (; i < v1; i += threads) {
    if constexpr (kIsReduce) {
      const Vec16 r = apply_vec<T, OP>(vd[i], vs[i]);
      vd[i] = r;
      if (va) va[i] = r;
    } else {
      vd[i] = vs[i];
    }
  }
  // Scalars: the head and the tail, also split over the lanes.
  const std::int64_t tail = head + nvec * kPer;
  const std::int64_t scalars = head + (count - tail);
  const std::int64_t s1 = slice_begin(scalars, lane + 1, lanes);
  for (std::int64_t j = slice_begin(scalars, lane, lanes) + thread; j < s1; j += threads) {
    const std::int64_t k = j < head ? j : tail + (j - head);
    if constexpr (kIsReduce) {
      const T r = elem::apply<T, OP>(dst[k], src[k]);
      dst[k] = r;
      if (also) also[k] = r;
    } else {
      dst[k] = src[k];
    }
  }
}

template <typename T>
COLLKIT_INTERP void avg_slice(const ExecOp& op, int avg_ranks, int lane, int lanes, int thread,
                              int threads) {
  T* data = reinterpret_cast<T*>(op.dst);
  const std::int64_t count = op.bytes / static_cast<std::int64_t>(sizeof(T));
  const std::int64_t end = slice_begin(count, lane + 1, lanes);
  for (std::int64_t j = slice_begin(count, lane, lanes) + thread; j < end; j += threads)
    data[j] = elem::avg_divide(data[j], avg_ranks);
}

// The `valid` (1..8) bytes of a user region at p, as the low bytes of a word
// (little-endian, as both the host and the GPU are).
COLLKIT_INTERP std::uint64_t load8(const unsigned char* p, std::int64_t valid) {
  if (valid == kLlDataBytes && reinterpret_cast<std::uintptr_t>(p) % 8 == 0)
    return *reinterpret_cast<const std::uint64_t*>(p);
  std::uint64_t v = 0;
  memcpy(&v, p, static_cast<std::size_t>(valid));
  return v;
}
COLLKIT_INTERP void store8(unsigned char* p, std::uint64_t v, std::int64_t valid) {
  if (valid == kLlDataBytes && reinterpret_cast<std::uintptr_t>(p) % 8 == 0) {
    *reinterpret_cast<std::uint64_t*>(p) = v;
    return;
  }
  memcpy(p, &v, static_cast<std::size_t>(valid));
}
// a op b element-wise over the 8 bytes (8 / sizeof(T) elements; the bytes
// past a message's end are computed and never stored).
template <typename T, int OP>
COLLKIT_INTERP std::uint64_t apply8(std::uint64_t a, std::uint64_t b) {
  constexpr int kPer = kLlDataBytes / static_cast<int>(sizeof(T));
  static_assert(kPer >= 1 && kLlDataBytes % sizeof(T) == 0, "elements of 1, 2, 4 or 8 bytes");
  T x[kPer], y[kPer];
  memcpy(x, &a, 8);
  memcpy(y, &b, 8);
  COLLKIT_UNROLL
  for (int k = 0; k < kPer; ++k) x[k] = elem::apply<T, OP>(x[k], y[k]);
  memcpy(&a, x, 8);
  return a;
}

// One lane's lines of an LL send: [first, end) of the message's lines, the
// lane's threads strided within them, kUnroll loads in flight per thread.
COLLKIT_INTERP void ll_send_slice(const ExecOp& op, std::uint32_t flag, int lane, int lanes,
                                  int thread, int threads) {
  const std::int64_t lines = (op.bytes + kLlDataBytes - 1) / kLlDataBytes;
  auto* slot = reinterpret_cast<LlLine*>(op.dst);
  const std::int64_t end = slice_begin(lines, lane + 1, lanes);
  for (std::int64_t k = slice_begin(lines, lane, lanes) + thread; k < end; k += kUnroll * threads) {
    std::uint64_t v[kUnroll];
    COLLKIT_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t i = k + u * threads;
      if (i < end) {
        const std::int64_t rest = op.bytes - i * kLlDataBytes;
        v[u] = load8(op.src + i * kLlDataBytes, rest < kLlDataBytes ? rest : kLlDataBytes);
      }
    }
    COLLKIT_UNROLL
    for (int u = 0; u < kUnroll; ++u)
      if (k + u * threads < end) ll_store(slot + k + u * threads, v[u], flag);
  }
}

// The bounded spin's check, every 16th poll of a wait that started at
// `start`: kAborted once another waiter stored an error word, kTimeout (and
// the error word, if none is there yet) past the spin limit, else kOk.
template <class Env>
COLLKIT_INTERP ErrorCode spin_check(Env& env, const LaneRun& run, std::uint64_t start,
                                    std::uint32_t op_index) {
  if (error_load(run.error, run.system_scope) != 0) return kAborted;
  if (env.now_ns() - start > run.spin_limit_ns) {
    error_store(run.error, error_word(kTimeout, run.rank, op_index), run.system_scope);
    return kTimeout;
  }
  return kOk;
}

// Polls until ready() (after a pause each time; the caller has tried once),
// bounded by spin_check.
template <class Env, class Ready>
COLLKIT_INTERP ErrorCode poll_until(Env& env, const LaneRun& run, Ready ready,
                                    std::uint32_t op_index) {
  const std::uint64_t start = env.now_ns();
  for (unsigned polls = 1;; ++polls) {
    env.pause();
    if (ready()) return kOk;
    if (polls % 16 != 0) continue;
    const ErrorCode e = spin_check(env, run, start, op_index);
    if (e != kOk) return e;
  }
}

// One lane's lines of an LL receive: dst = data (kIsReduce: dst op data, and
// also = the result), line by line as each arrives; with fwd, each line of
// the result is also sent on (lines split as an ll_send of dst would).
template <typename T, int OP, bool kIsReduce, class Env>
COLLKIT_INTERP ErrorCode ll_recv_slice(Env& env, const LaneRun& run, const ExecOp& op,
                                       std::uint32_t flag, std::uint32_t op_index) {
  const std::int64_t lines = (op.bytes + kLlDataBytes - 1) / kLlDataBytes;
  const auto* slot = reinterpret_cast<const LlLine*>(op.src);
  const int threads = env.threads();
  const std::int64_t end = slice_begin(lines, run.lane + 1, run.lanes);
  for (std::int64_t k = slice_begin(lines, run.lane, run.lanes) + env.thread(); k < end;
       k += kUnroll * threads) {
    std::uint64_t v[kUnroll];
    bool ready[kUnroll];
    COLLKIT_UNROLL
    for (int u = 0; u < kUnroll; ++u)
      ready[u] = k + u * threads >= end || ll_load(slot + k + u * threads, flag, v[u]);
    COLLKIT_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      if (ready[u]) continue;
      const LlLine* line = slot + k + u * threads;
      const ErrorCode e = poll_until(
          env, run, [&]() { return ll_load(line, flag, v[u]); }, op_index);
      if (e != kOk) return e;
    }
    COLLKIT_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t i = k + u * threads;
      if (i >= end) continue;
      const std::int64_t rest = op.bytes - i * kLlDataBytes;
      const std::int64_t valid = rest < kLlDataBytes ? rest : kLlDataBytes;
      unsigned char* d = op.dst + i * kLlDataBytes;
      std::uint64_t r = v[u];
      if constexpr (kIsReduce) {
        r = apply8<T, OP>(load8(d, valid), r);
        store8(d, r, valid);
        if (op.also) store8(op.also + i * kLlDataBytes, r, valid);
      } else {
        store8(d, r, valid);
      }
      // The bytes past the message's end are never read by the receiver.
      if (op.fwd) ll_store(reinterpret_cast<LlLine*>(op.fwd) + i, r, flag);
    }
  }
  return kOk;
}

// ---- LL128 lines -------------------------------------------------------------
// Line L of a message holds its bytes [120 L, 120 L + 120) in words 0..14 and
// the iteration's flag in word 15. Part j (0..7) is words 2j and 2j + 1:
// bytes [120 L + 16 j, + 16) of the message for j < 7, [120 L + 112, + 8)
// and the flag for j = 7.
struct alignas(128) Ll128Line {
  std::uint64_t w[16];
};
inline constexpr int kLl128DataBytes = 120;  // per 128-byte line
inline constexpr int kLl128Parts = 8;        // 16-byte parts, one per thread on the GPU

// Part j's data words from a user region of `bytes` (bytes past its end read
// as 0; part 7's second word is the flag's, left 0 here).
COLLKIT_INTERP void ll128_read_part(const unsigned char* user, std::int64_t bytes,
                                    std::int64_t line, int j, std::uint64_t& a, std::uint64_t& b) {
  const std::int64_t off = line * kLl128DataBytes + 16 * j;
  const std::int64_t cap = j < kLl128Parts - 1 ? 16 : 8;
  const std::int64_t valid = bytes - off < cap ? bytes - off : cap;
  a = valid > 0 ? load8(user + off, valid < 8 ? valid : 8) : 0;
  b = valid > 8 ? load8(user + off + 8, valid - 8) : 0;
}

// dst = part j's data (kIsReduce: dst op the data, and also = the result),
// for the bytes of the part inside the message; a and b become the result
// words (what a forwarded line carries).
template <typename T, int OP, bool kIsReduce>
COLLKIT_INTERP void ll128_write_part(const ExecOp& op, std::int64_t line, int j, std::uint64_t& a,
                                     std::uint64_t& b) {
  const std::int64_t off = line * kLl128DataBytes + 16 * j;
  const std::int64_t cap = j < kLl128Parts - 1 ? 16 : 8;
  const std::int64_t valid = op.bytes - off < cap ? op.bytes - off : cap;
  std::uint64_t* word[2] = {&a, &b};
  for (int h = 0; h < 2; ++h) {
    const std::int64_t v = valid - 8 * h < 8 ? valid - 8 * h : 8;
    if (v <= 0) break;
    unsigned char* d = op.dst + off + 8 * h;
    if constexpr (kIsReduce) {
      *word[h] = apply8<T, OP>(load8(d, v), *word[h]);
      store8(d, *word[h], v);
      if (op.also) store8(op.also + off + 8 * h, *word[h], v);
    } else {
      store8(d, *word[h], v);
    }
  }
}

#ifdef __CUDACC__
inline constexpr unsigned kFullWarp = 0xFFFFFFFFu;
// One thread's part of a line: a 16-byte volatile store or load (with the
// other seven threads of its group, one 128-byte access of the warp).
__device__ __forceinline__ void ll128_store_part(Ll128Line* line, int j, std::uint64_t a,
                                                 std::uint64_t b) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(line->w + 2 * j), "l"(a), "l"(b)
               : "memory");
}
__device__ __forceinline__ void ll128_load_part(const Ll128Line* line, int j, std::uint64_t& a,
                                                std::uint64_t& b) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(a), "=l"(b)
               : "l"(line->w + 2 * j)
               : "memory");
}
// Stores the group's parts (part j of lines k + g + u * groups below end)
// once the warp has converged, so that each line's eight parts go out in one
// warp-wide store.
__device__ __forceinline__ void ll128_store_group(Ll128Line* to, std::int64_t k, int g, int groups,
                                                  int j, std::int64_t end,
                                                  const std::uint64_t (&a)[kUnroll],
                                                  const std::uint64_t (&b)[kUnroll]) {
  __syncwarp();
  COLLKIT_UNROLL
  for (int u = 0; u < kUnroll; ++u) {
    const std::int64_t line = k + g + u * groups;
    if (line < end) ll128_store_part(to + line, j, a[u], b[u]);
  }
}
#else
// The host: data words, then the flag with release; the flag with acquire,
// then the data words.
inline void ll128_store_line(Ll128Line* line, const std::uint64_t (&w)[15], std::uint32_t flag) {
  for (int i = 0; i < 15; ++i)
    std::atomic_ref<std::uint64_t>(line->w[i]).store(w[i], std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(line->w[15]).store(flag, std::memory_order_release);
}
inline bool ll128_load_line(const Ll128Line* line, std::uint32_t flag, std::uint64_t (&w)[15]) {
  auto* l = const_cast<Ll128Line*>(line);
  if (std::atomic_ref<std::uint64_t>(l->w[15]).load(std::memory_order_acquire) != flag)
    return false;
  for (int i = 0; i < 15; ++i)
    w[i] = std::atomic_ref<std::uint64_t>(l->w[i]).load(std::memory_order_relaxed);
  return true;
}
#endif

// One lane's lines of an LL128 send. The GPU: groups of eight threads, one
// line each, kUnroll lines in flight per group; the loop's trip count is the
// same for every thread of the block, so each warp stores converged.
COLLKIT_INTERP void ll128_send_slice(const ExecOp& op, std::uint32_t flag, int lane, int lanes,
                                     int thread, int threads) {
  const std::int64_t lines = (op.bytes + kLl128DataBytes - 1) / kLl128DataBytes;
  auto* slot = reinterpret_cast<Ll128Line*>(op.dst);
  const std::int64_t first = slice_begin(lines, lane, lanes);
  const std::int64_t end = slice_begin(lines, lane + 1, lanes);
#ifdef __CUDACC__
  const int groups = threads / kLl128Parts, g = thread / kLl128Parts, j = thread % kLl128Parts;
  for (std::int64_t k = first; k < end; k += kUnroll * groups) {
    std::uint64_t a[kUnroll], b[kUnroll];
    COLLKIT_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t line = k + g + u * groups;
      if (line < end) ll128_read_part(op.src, op.bytes, line, j, a[u], b[u]);
      if (j == kLl128Parts - 1) b[u] = flag;
    }
    ll128_store_group(slot, k, g, groups, j, end, a, b);
  }
#else
  for (std::int64_t line = first + thread; line < end; line += threads) {
    std::uint64_t w[15];
    for (int j = 0; j < kLl128Parts; ++j) {
      std::uint64_t b = 0;
      ll128_read_part(op.src, op.bytes, line, j, w[2 * j], b);
      if (j < kLl128Parts - 1) w[2 * j + 1] = b;
    }
    ll128_store_line(slot + line, w, flag);
  }
#endif
}

// One lane's lines of an LL128 receive (as ll_recv_slice: dst = data, or dst
// op data with also, and with fwd each result line sent on).
template <typename T, int OP, bool kIsReduce, class Env>
COLLKIT_INTERP ErrorCode ll128_recv_slice(Env& env, const LaneRun& run, const ExecOp& op,
                                          std::uint32_t flag, std::uint32_t op_index) {
  const std::int64_t lines = (op.bytes + kLl128DataBytes - 1) / kLl128DataBytes;
  const auto* slot = reinterpret_cast<const Ll128Line*>(op.src);
  auto* fwd = reinterpret_cast<Ll128Line*>(op.fwd);
  const std::int64_t first = slice_begin(lines, run.lane, run.lanes);
  const std::int64_t end = slice_begin(lines, run.lane + 1, run.lanes);
#ifdef __CUDACC__
  const int thread = env.thread();
  const int groups = env.threads() / kLl128Parts, g = thread / kLl128Parts,
            j = thread % kLl128Parts;
  for (std::int64_t k = first; k < end; k += kUnroll * groups) {
    std::uint64_t a[kUnroll], b[kUnroll];
    // Loads every part of the warp's lines; whether a flag is missing.
    const auto load = [&]() {
      bool miss = false;
      COLLKIT_UNROLL
      for (int u = 0; u < kUnroll; ++u) {
        const std::int64_t line = k + g + u * groups;
        if (line >= end) continue;
        ll128_load_part(slot + line, j, a[u], b[u]);
        if (j == kLl128Parts - 1 && b[u] != flag) miss = true;
      }
      return __any_sync(kFullWarp, miss);
    };
    if (load()) {
      const std::uint64_t start = env.now_ns();
      for (unsigned polls = 1;; ++polls) {
        env.pause();
        if (!load()) break;
        if (polls % 16 != 0) continue;
        const ErrorCode e = spin_check(env, run, start, op_index);
        // The whole warp stops together (its threads share the loads).
        if (__any_sync(kFullWarp, e != kOk)) return e != kOk ? e : kAborted;
      }
    }
    COLLKIT_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t line = k + g + u * groups;
      if (line < end) ll128_write_part<T, OP, kIsReduce>(op, line, j, a[u], b[u]);
      if (j == kLl128Parts - 1) b[u] = flag;
    }
    if (fwd) ll128_store_group(fwd, k, g, groups, j, end, a, b);
  }
#else
  for (std::int64_t line = first + env.thread(); line < end; line += env.threads()) {
    std::uint64_t w[15];
    if (!ll128_load_line(slot + line, flag, w)) {
      const ErrorCode e = poll_until(
          env, run, [&]() { return ll128_load_line(slot + line, flag, w); }, op_index);
      if (e != kOk) return e;
    }
    for (int j = 0; j < kLl128Parts; ++j) {
      std::uint64_t b = j < kLl128Parts - 1 ? w[2 * j + 1] : 0;
      ll128_write_part<T, OP, kIsReduce>(op, line, j, w[2 * j], b);
      if (j < kLl128Parts - 1) w[2 * j + 1] = b;
    }
    if (fwd) ll128_store_line(fwd + line, w, flag);
  }
#endif
  return kOk;
}

template <typename T, int OP, bool kIsReduce, bool k128, class Env>
COLLKIT_INTERP ErrorCode recv_slice(Env& env, const LaneRun& run, const ExecOp& op,
                                    std::uint32_t flag, std::uint32_t op_index) {
  if constexpr (k128) {
    return ll128_recv_slice<T, OP, kIsReduce>(env, run, op, flag, op_index);
  } else {
    return ll_recv_slice<T, OP, kIsReduce>(env, run, op, flag, op_index);
  }
}

// An LL (k128: LL128) receive, its combining function chosen once.
template <typename T, bool kIsReduce, bool k128, class Env>
COLLKIT_INTERP ErrorCode ll_recv_op(Env& env, const LaneRun& run, const ExecOp& op,
                                    std::uint32_t flag, std::uint32_t op_index) {
  if constexpr (!kIsReduce) {
    return recv_slice<T, elem::kSum, false, k128>(env, run, op, flag, op_index);
  } else {
    switch (run.combine) {
      case elem::kProd:
        return recv_slice<T, elem::kProd, true, k128>(env, run, op, flag, op_index);
      case elem::kMin:
        return recv_slice<T, elem::kMin, true, k128>(env, run, op, flag, op_index);
      case elem::kMax:
        return recv_slice<T, elem::kMax, true, k128>(env, run, op, flag, op_index);
      default:
        return recv_slice<T, elem::kSum, true, k128>(env, run, op, flag, op_index);
    }
  }
}

// ---- the program --------------------------------------------------------------
// Env is what runs the lane (the device's thread block, or one host thread):
//   int thread(), threads()      this thread among the lane's
//   bool leader()                thread 0: spins and signals for the lane
//   void sync()                  every thread of the lane (the block) gets here
//   int share(int v)             sync() and the leader's v to every thread
//   bool any(bool v)             sync() and whether v was true on any thread
//   std::uint64_t now_ns()       a clock for the spin limit
//   void pause()                 between two polls of a flag
//   void between_ops()           before every operation (host: random delays)
//   ExecOp op(run, i)            operation i of the lane's program (the same i
//                                on every thread of the lane)
template <class Env>
COLLKIT_INTERP ErrorCode wait_flag(Env& env, const LaneRun& run, Flag* flag, Flag target,
                                   std::uint32_t op_index) {
  const auto ready = [&]() { return flag_load(flag, run.system_scope) >= target; };
  if (ready()) return kOk;
  return poll_until(env, run, ready, op_index);
}

// Runs one lane of one rank's program; kOk, or why it stopped (the error word
// then says where the first failure was).
template <typename T, class Env>
COLLKIT_INTERP ErrorCode run_lane(Env& env, const LaneRun& run) {
  const int lane = run.lane, lanes = run.lanes;
  const std::uint32_t ll = ll_flag(run.epoch);
  for (std::uint32_t i = 0; i < run.count; ++i) {
    const ExecOp op = env.op(run, i);
    env.between_ops();
    switch (op.code) {
      case kSignal:
      case kBarrier:
        // The previous operation ended with sync(): the lane's writes are
        // done; the release makes them visible with the flag.
        if (env.leader()) flag_add(op.flag, run.system_scope);
        if (op.code == kSignal) break;
        [[fallthrough]];
      case kWait: {
        int status = kOk;
        if (env.leader())
          status =
              wait_flag(env, run, op.flag, static_cast<Flag>(op.arrivals) * (run.epoch + 1), i);
        status = env.share(status);
        if (status != kOk) return static_cast<ErrorCode>(status);
        break;
      }
      case kCopy:
        data_slice<T, elem::kSum, false>(op, lane, lanes, env.thread(), env.threads());
        env.sync();
        break;
      case kReduce:
        // The combining function is chosen once per operation, not per
        // element: one instantiation per type holds all four.
        switch (run.combine) {
          case elem::kProd:
            data_slice<T, elem::kProd, true>(op, lane, lanes, env.thread(), env.threads());
            break;
          case elem::kMin:
            data_slice<T, elem::kMin, true>(op, lane, lanes, env.thread(), env.threads());
            break;
          case elem::kMax:
            data_slice<T, elem::kMax, true>(op, lane, lanes, env.thread(), env.threads());
            break;
          default:
            data_slice<T, elem::kSum, true>(op, lane, lanes, env.thread(), env.threads());
            break;
        }
        env.sync();
        break;
      case kFinishAvg:
        avg_slice<T>(op, run.avg_ranks, lane, lanes, env.thread(), env.threads());
        env.sync();
        break;
      case kLlSend:
        ll_send_slice(op, ll, lane, lanes, env.thread(), env.threads());
        env.sync();
        break;
      case kLl128Send:
        ll128_send_slice(op, ll, lane, lanes, env.thread(), env.threads());
        env.sync();
        break;
      case kLlCopy:
      case kLlReduce:
      case kLl128Copy:
      case kLl128Reduce: {
        ErrorCode e = kOk;
        if (op.code == kLlCopy) e = ll_recv_op<T, false, false>(env, run, op, ll, i);
        if (op.code == kLlReduce) e = ll_recv_op<T, true, false>(env, run, op, ll, i);
        if (op.code == kLl128Copy) e = ll_recv_op<T, false, true>(env, run, op, ll, i);
        if (op.code == kLl128Reduce) e = ll_recv_op<T, true, true>(env, run, op, ll, i);
        // Every thread of the lane stops if one did (the error word says why).
        if (env.any(e != kOk)) return e != kOk ? e : kAborted;
        break;
      }
      default:
        break;
    }
  }
  return kOk;
}

#ifdef __CUDACC__
// A thread block as the Env of run_lane.
//
// Ordering: the block's threads meet at __syncthreads() before the leader
// signals and after it has waited. In the PTX memory model a CTA barrier
// orders the threads' accesses with the leader's, and release and acquire are
// cumulative, so the flag's release publishes every thread's writes and its
// acquire makes the peer's visible to every thread after the barrier
// (the pattern of the CUDA C++ Programming Guide's "memory fence" example,
// with the fence folded into the release). `full_fences` adds a
// __threadfence (fence.sc) before each signal and after each wait besides:
// the first engine's ordering, kept for comparison on a GPU
// (COLLKIT_INTERPRETER_FENCES=1, docs/BENCH.md).
//
// The program is read through shared memory, kStagedOps operations at a
// time, every thread of the block copying part of the batch: read straight
// from global memory, each operation's load would follow the acquire of the
// wait before it (no load can move above an acquire), one memory latency per
// operation on the critical path (COLLKIT_INTERPRETER_STAGE=0 reads them in
// place, for comparison on a GPU).
inline constexpr std::uint32_t kStagedOps = 64;
static_assert(sizeof(ExecOp) % 8 == 0, "operations are staged as 8-byte words");
struct BlockEnv {
  int* shared;               // one int of shared memory
  bool system;               // flags at system scope
  unsigned sleep_ns = 0;     // between two polls: 0 spins
  bool full_fences = false;  // a fence.sc besides each release and acquire
  ExecOp* staged = nullptr;  // shared memory: kStagedOps operations; null: read in place
  std::uint32_t staged_first = 0, staged_end = 0;  // the program's [first, end) held there
  __device__ int thread() const { return static_cast<int>(threadIdx.x); }
  __device__ int threads() const { return static_cast<int>(blockDim.x); }
  __device__ bool leader() const { return threadIdx.x == 0; }
  __device__ void fence() const {
    if (system) {
      __threadfence_system();
    } else {
      __threadfence();
    }
  }
  __device__ void sync() {
    __syncthreads();
    // The leader's flag_add (a release) may follow.
    if (full_fences && threadIdx.x == 0) fence();
  }
  __device__ int share(int v) {
    if (threadIdx.x == 0) {
      if (full_fences) fence();  // the acquire already orders what follows
      *shared = v;
    }
    __syncthreads();
    const int r = *shared;
    __syncthreads();  // nobody overwrites *shared before all have read it
    return r;
  }
  __device__ bool any(bool v) { return __syncthreads_or(v ? 1 : 0) != 0; }
  __device__ std::uint64_t now_ns() const {
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  // A sleep between polls adds up to its length (and its granularity) to
  // every wait that is not already satisfied: the default spins.
  __device__ void pause() const {
    if (sleep_ns != 0) __nanosleep(sleep_ns);
  }
  __device__ void between_ops() const {}
  __device__ ExecOp op(const LaneRun& run, std::uint32_t i) {
    if (staged == nullptr) return run.ops[i];
    if (i >= staged_end) {
      __syncthreads();  // every thread has read the batch before
      const std::uint32_t n = run.count - i < kStagedOps ? run.count - i : kStagedOps;
      const auto* from = reinterpret_cast<const unsigned long long*>(run.ops + i);
      auto* to = reinterpret_cast<unsigned long long*>(staged);
      const std::uint32_t words = n * static_cast<std::uint32_t>(sizeof(ExecOp) / 8);
      for (std::uint32_t w = threadIdx.x; w < words; w += blockDim.x) to[w] = from[w];
      staged_first = i;
      staged_end = i + n;
      __syncthreads();
    }
    return staged[i - staged_first];
  }
};
#endif

}  // namespace collkit::realrun::interp
