// The step-latency micro-benchmark (issue 43, docs/BENCH.md "Step latency"):
// what one dependent step costs on a GPU, the unit every interpreter
// operation pays at small sizes. Two "sides" of `lanes` thread blocks each,
// on one GPU, stand in for two virtual ranks and play ping-pong: side 0
// sends message 0, side 1 waits for it, checks it and sends a reply computed
// from it, side 0 waits for the reply, checks it and sends the next message
// computed from it, and so on. One round trip is two dependent steps.
//
// How a message is published and observed (Proto), where its flag sits
// (FlagPlace), and who polls (a warp, or a whole 512-thread block meeting at
// a block barrier as the interpreter's lanes do) are the variables. Shared
// by nvcc (step_latency_kernels.cu) and g++ (step_latency_bench.cc): plain
// types only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#ifdef __CUDACC__
#define COLLKIT_LAT_HD __host__ __device__ inline
#else
#define COLLKIT_LAT_HD inline
#endif

namespace collkit::step_latency {

enum class Proto : int {
  // Data stores, a fence, then a volatile store of the flag; the reader
  // polls the flag with volatile loads, then fences before reading the data
  // (the CUDA Programming Guide's memory-fence pattern; the interpreter's
  // first version, COLLKIT_INTERPRETER_FENCES=1).
  fence_gpu = 0,  // __threadfence() (fence.sc.gpu)
  fence_sys = 1,  // __threadfence_system() (fence.sc.sys)
  // cuda::atomic_ref store(release) / load(acquire): st.release / ld.acquire.
  store_release_gpu = 2,
  store_release_sys = 3,
  // cuda::atomic_ref fetch_add(1, release) / load(acquire) on a counter that
  // every lane of the sender adds to, the reader waiting for lanes x (k + 1):
  // the interpreter's signal and wait today (realrun/interpreter.h).
  add_release_gpu = 4,
  add_release_sys = 5,
  // NCCL's LL: 16-byte lines of two words, 4 data bytes and a 4-byte flag
  // each, one 16-byte volatile store; no fence (src/device/prims_ll.h).
  ll = 6,
  // NCCL's LL128: 128-byte lines of 15 data words and a flag word, stored
  // by eight threads with one warp-wide store (src/device/prims_ll128.h).
  ll128 = 7,
};
inline constexpr int kProtos = 8;

enum class FlagPlace : int {
  separate_line = 0,  // the flag alone on its own 128-byte line after the data
  same_line = 1,      // the flag in the last 16 bytes of the data's last 128-byte line
};

// The bytes of one direction's message area, and where its data and flag
// are (offsets into it). LL and LL128 carry their flags in their lines.
struct Layout {
  std::int64_t data = 0;    // first data byte (fence/store/add protocols)
  std::int64_t flag = 0;    // the 8-byte flag (fence/store/add protocols)
  std::int64_t region = 0;  // bytes of the area one direction uses
  std::int64_t stride = 0;  // distance between the two directions' areas
};

COLLKIT_LAT_HD std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

inline constexpr int kLlDataBytes = 8;       // per 16-byte LL line
inline constexpr int kLl128DataBytes = 120;  // per 128-byte LL128 line
inline constexpr int kBlockThreads = 512;    // the interpreter's kInterpreterThreads
inline constexpr int kWarpThreads = 32;
inline constexpr int kMaxRecorded = 4096;  // round trips recorded per launch (shared memory)

COLLKIT_LAT_HD Layout layout_of(Proto p, FlagPlace place, std::int64_t bytes) {
  Layout l;
  if (p == Proto::ll) {
    l.region = bytes / kLlDataBytes * 16;
  } else if (p == Proto::ll128) {
    l.region = (bytes + kLl128DataBytes - 1) / kLl128DataBytes * 128;
  } else if (place == FlagPlace::separate_line) {
    l.data = 0;
    l.flag = round_up(bytes, 128);
    l.region = l.flag + 128;
  } else {
    l.flag = round_up(bytes + 16, 128) - 16;
    l.data = l.flag - bytes;
    l.region = l.flag + 16;
  }
  l.stride = round_up(l.region, 4096);
  return l;
}

// Word w (4 bytes) of the message of step s (step 2k: side 0's k-th
// message; 2k + 1: side 1's reply to it). A reply adds kStepDelta to every
// word it received, so each step's data depends on the previous step's.
inline constexpr std::uint32_t kStepDelta = 0x01000193u;
COLLKIT_LAT_HD std::uint32_t word_value(std::uint32_t step, std::uint32_t w) {
  return step * kStepDelta + w;
}

// One ping-pong launch. Device pointers are filled in by the host.
struct PingPong {
  Proto proto = Proto::add_release_gpu;
  FlagPlace place = FlagPlace::separate_line;
  bool warp = false;       // a 32-thread warp per lane (else a 512-thread block)
  int lanes = 1;           // blocks per side; the message is split among them
  std::int64_t bytes = 0;  // per message, a multiple of 16
  int warmup = 0;          // round trips before the recorded ones
  int recorded = 0;        // round trips recorded, <= kMaxRecorded
  std::uint64_t spin_limit_ns = 2000000000ull;  // a wait longer than this aborts the launch
  unsigned char* area = nullptr;                // 2 x layout.stride bytes, zeroed
  std::uint32_t* samples = nullptr;             // [recorded]: clock64 cycles per round trip
  unsigned long long* clocks = nullptr;         // [4]: globaltimer ns and clock64 at the first
                                         // recorded round trip's start, then at the last's end
  unsigned int* errors = nullptr;   // words that arrived wrong
  unsigned int* timeout = nullptr;  // non-zero: a wait gave up
  int* smid = nullptr;              // [2 x lanes]: the multiprocessor of each block
};

COLLKIT_LAT_HD int threads_of(const PingPong& p) { return p.warp ? kWarpThreads : kBlockThreads; }

// Host side (step_latency_kernels.cu), CUDA's error codes returned for the
// caller to report (no std::string in the kernels' object file: its inline
// string code would pull collkit_device's members with it): launch on the
// current device and stream; how many blocks of this configuration the
// device holds at once; an empty kernel (the floor of a launch).
cudaError_t launch_ping_pong(const PingPong& p, cudaStream_t stream);
cudaError_t ping_pong_resident_blocks(const PingPong& p, int* blocks);
cudaError_t launch_empty(int blocks, int threads, cudaStream_t stream);

}  // namespace collkit::step_latency
