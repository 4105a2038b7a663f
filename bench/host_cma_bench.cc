// What a message between two cores costs by how its source was last written
// (issue 22; docs/SIMULATOR.md "Written data"). Open MPI's shared-memory
// transport (vader) moves a message of more than 4 KiB with one copy: the
// receiving process reads the sender's buffer with process_vm_readv (CMA).
// This program times exactly that read, receiver on CPU 0, sender on CPU 1,
// with the sender's buffer last written in one of four ways just before:
//
//   clean:  not written since the last read (the steady state of a
//           collective's input, read again every iteration)
//   stores: written by the sender's own stores (a reduction's output)
//   memcpy: written by the sender's memcpy from another of its buffers (a
//           copy into scratch)
//   cma:    written by the sender's own process_vm_readv from the receiver
//           (a message it received and now forwards)
//
// The preparation is not timed (manual time around the read alone). Rates
// are bytes read per second. Linux only; with fewer than two CPUs, or where
// the kernel refuses process_vm_readv, every case is skipped with the reason.
#include <benchmark/benchmark.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

enum Prep : int { kClean = 0, kStores = 1, kMemcpy = 2, kCma = 3 };
constexpr int kQuit = 100;
constexpr std::size_t kMaxBytes = std::size_t{16} << 20;

// In memory shared by the two processes (mapped before fork).
struct Control {
  std::atomic<int> command{-1};
  std::atomic<int> done{0};
  std::atomic<int> seq{0};
  std::atomic<int> failed{0};  // the sender's own process_vm_readv failed
  // Addresses in the other process: passed to process_vm_readv, never dereferenced.
  void* sender_buffer = nullptr;
  void* receiver_buffer = nullptr;
  std::size_t bytes = 0;
  pid_t receiver = 0;
};

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

bool read_remote(pid_t pid, void* local, void* remote, std::size_t bytes) {
  iovec l{local, bytes};
  iovec r{remote, bytes};
  return process_vm_readv(pid, &l, 1, &r, 1, 0) == static_cast<ssize_t>(bytes);
}

// The sender: prepares its buffer as told, then answers.
[[noreturn]] void sender(Control* c) {
  pin(1);
  std::vector<unsigned char> buffer(kMaxBytes, 1), other(kMaxBytes, 2);
  c->sender_buffer = buffer.data();
  c->done.store(1, std::memory_order_release);
  unsigned char value = 3;
  for (int seen = 0;;) {
    while (c->seq.load(std::memory_order_acquire) == seen) {
    }
    seen = c->seq.load(std::memory_order_acquire);
    const int command = c->command.load(std::memory_order_relaxed);
    if (command == kQuit) _exit(0);
    const std::size_t n = c->bytes;
    if (command == kStores) {
      ++value;
      for (std::size_t i = 0; i < n; i += 8) {
        std::uint64_t v = value * 0x0101010101010101ull + i;
        std::memcpy(buffer.data() + i, &v, 8);
      }
    } else if (command == kMemcpy) {
      std::memcpy(buffer.data(), other.data(), n);
    } else if (command == kCma) {
      if (!read_remote(c->receiver, buffer.data(), c->receiver_buffer, n))
        c->failed.store(1, std::memory_order_relaxed);
    }
    c->done.store(seen + 1, std::memory_order_release);
  }
}

struct Pair {
  Control* control = nullptr;
  pid_t child = -1;
  std::string error;
  std::vector<unsigned char> into, source;

  Pair() {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
      error = "needs two CPUs";
      return;
    }
    void* m =
        mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      error = std::string("mmap: ") + std::strerror(errno);
      return;
    }
    control = new (m) Control;
    source.assign(kMaxBytes, 4);
    into.assign(kMaxBytes, 0);
    control->receiver = getpid();
    control->receiver_buffer = source.data();
    child = fork();
    if (child == 0) sender(control);
    if (child < 0) {
      error = std::string("fork: ") + std::strerror(errno);
      return;
    }
    if (!pin(0)) error = "cannot pin to CPU 0";
    while (control->done.load(std::memory_order_acquire) != 1) {
    }
    if (!read_remote(child, into.data(), control->sender_buffer, 4096))
      error = std::string("process_vm_readv: ") + std::strerror(errno);
  }
  // Tells the sender to prepare `bytes` of its buffer with `command`.
  void prepare(int command, std::size_t bytes) {
    control->command.store(command, std::memory_order_relaxed);
    control->bytes = bytes;
    const int s = control->seq.load(std::memory_order_relaxed) + 1;
    control->seq.store(s, std::memory_order_release);
    if (command == kQuit) return;
    while (control->done.load(std::memory_order_acquire) != s + 1) {
    }
  }
  ~Pair() {
    if (child > 0) {
      prepare(kQuit, 0);
      waitpid(child, nullptr, 0);
    }
  }
};

Pair& pair() {
  static Pair p;
  return p;
}

void BM_CmaRead(benchmark::State& state) {
  Pair& p = pair();
  if (!p.error.empty()) {
    state.SkipWithError(p.error.c_str());
    return;
  }
  const int prep = static_cast<int>(state.range(0));
  const auto bytes = static_cast<std::size_t>(state.range(1));
  p.prepare(kClean, bytes);
  if (!read_remote(p.child, p.into.data(), p.control->sender_buffer, bytes)) {
    state.SkipWithError("process_vm_readv failed");
    return;
  }
  // The handshake between the two processes is one round trip of a cache
  // line between the two CPUs: its time says how far apart they are (two
  // threads of one core share their caches; two cores reach each other
  // through the shared L3). Timed over 16 round trips per iteration.
  constexpr int kTrips = 16;
  double trips = 0;
  for (auto _ : state) {
    const auto h0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kTrips; ++i) p.prepare(kClean, 0);
    trips += std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
    p.prepare(prep, bytes);
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = read_remote(p.child, p.into.data(), p.control->sender_buffer, bytes);
    const auto t1 = std::chrono::steady_clock::now();
    if (!ok || p.control->failed.load(std::memory_order_relaxed) != 0) {
      state.SkipWithError("process_vm_readv failed");
      return;
    }
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  state.counters["round_trip_ns"] =
      1e9 * trips / (static_cast<double>(state.iterations()) * kTrips);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
  static const char* const names[] = {"clean", "stores", "memcpy", "cma"};
  state.SetLabel(names[prep]);
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int prep = kClean; prep <= kCma; ++prep)
    for (std::int64_t bytes = 64 << 10; bytes <= static_cast<std::int64_t>(kMaxBytes); bytes *= 4)
      b->Args({prep, bytes});
}
BENCHMARK(BM_CmaRead)->Apply(sizes)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
