// The device reduction kernel against cudaMemcpy device-to-device on the
// same bytes (issue 5, item 6; docs/results/gpu.md has the targets):
//   reduce: dst = dst + src  reads 2 x bytes, writes 1 x bytes
//   copy:   dst = src        reads 1 x bytes, writes 1 x bytes
// `bytes_per_second` counts bytes read plus bytes written, so the two are
// compared on the memory traffic each must do; the target is the kernel at
// >= 90% of the copy's rate from 64 MiB up. Sizes 1 MiB..1 GiB, float and
// bfloat16. Times come from CUDA events around 8 launches (manual time);
// below 256 MiB the buffers rotate among several sets so that L2 (50 MB on
// an H100) does not serve them. Without a device every case is skipped with
// CUDA's message.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "realrun/device/cuda_util.h"
#include "realrun/device/reduce.h"
#include "realrun/half.h"

namespace collkit::realrun {
namespace {

constexpr int kLaunches = 8;
constexpr std::int64_t kRotateBytes = std::int64_t{256} << 20;

struct Buffers {
  std::vector<DeviceBuffer> dst, src;
};

// Non-zero values in [-2, 2] (no denormals, no zeros), in the element type.
std::vector<std::byte> host_values(DataType t, std::int64_t bytes) {
  std::vector<std::byte> v(static_cast<std::size_t>(bytes));
  std::uint64_t x = 88172645463325252ull;
  const std::int64_t n = bytes / size_of(t);
  for (std::int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const float f = static_cast<float>((x >> 40) % 4000 + 1) / 1000.0f - 2.0005f;
    if (t == DataType::bfloat16) {
      const std::uint16_t b = float_to_bf16(f);
      std::memcpy(v.data() + 2 * i, &b, 2);
    } else {
      std::memcpy(v.data() + 4 * i, &f, 4);
    }
  }
  return v;
}

Buffers make_buffers(DataType t, std::int64_t bytes) {
  Buffers b;
  const int sets = static_cast<int>(std::clamp<std::int64_t>(kRotateBytes / bytes, 1, 64));
  const auto host = host_values(t, bytes);
  for (int s = 0; s < sets; ++s) {
    b.dst.emplace_back(static_cast<std::size_t>(bytes), 0);
    b.src.emplace_back(static_cast<std::size_t>(bytes), 0);
    CUDA_CHECK(cudaMemcpy(b.dst.back().data(), host.data(), host.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b.src.back().data(), host.data(), host.size(), cudaMemcpyHostToDevice));
  }
  return b;
}

enum class Kind { reduce, copy };

void run(benchmark::State& state, DataType t, Kind kind) {
  const std::string problem = cuda_device_problem();
  if (!problem.empty()) {
    state.SkipWithError(problem.c_str());
    return;
  }
  const std::int64_t bytes = state.range(0);
  const std::int64_t count = bytes / size_of(t);
  try {
    CUDA_CHECK(cudaSetDevice(0));
    Buffers b = make_buffers(t, bytes);
    CudaStream stream(0);
    CudaEvent start(0, true), stop(0, true);
    std::size_t set = 0;
    const auto launch = [&] {
      set = (set + 1) % b.dst.size();
      if (kind == Kind::reduce) {
        device_reduce(t, RedOp::sum, b.dst[set].data(), b.src[set].data(), count, stream.get());
      } else {
        CUDA_CHECK(cudaMemcpyAsync(b.dst[set].data(), b.src[set].data(),
                                   static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice,
                                   stream.get()));
      }
    };
    for (int i = 0; i < 3; ++i) launch();  // warm-up: module load, clocks
    CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    for (auto _ : state) {
      CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
      for (int i = 0; i < kLaunches; ++i) launch();
      CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
      CUDA_CHECK(cudaEventSynchronize(stop.get()));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      state.SetIterationTime(static_cast<double>(ms) / 1e3 / kLaunches);
    }
    const std::int64_t traffic = (kind == Kind::reduce ? 3 : 2) * bytes;
    state.SetBytesProcessed(state.iterations() * traffic);
    state.counters["buffer_sets"] = static_cast<double>(b.dst.size());
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t s = std::int64_t{1} << 20; s <= std::int64_t{1} << 30; s *= 4) b->Arg(s);
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
}

void BM_ReduceSum_float(benchmark::State& s) { run(s, DataType::float32, Kind::reduce); }
void BM_CopyD2D_float(benchmark::State& s) { run(s, DataType::float32, Kind::copy); }
void BM_ReduceSum_bfloat16(benchmark::State& s) { run(s, DataType::bfloat16, Kind::reduce); }
void BM_CopyD2D_bfloat16(benchmark::State& s) { run(s, DataType::bfloat16, Kind::copy); }
BENCHMARK(BM_ReduceSum_float)->Apply(sizes);
BENCHMARK(BM_CopyD2D_float)->Apply(sizes);
BENCHMARK(BM_ReduceSum_bfloat16)->Apply(sizes);
BENCHMARK(BM_CopyD2D_bfloat16)->Apply(sizes);

}  // namespace
}  // namespace collkit::realrun

BENCHMARK_MAIN();
