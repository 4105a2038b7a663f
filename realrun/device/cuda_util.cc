#include "realrun/device/cuda_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace collkit::realrun {

void cuda_check(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return;
  throw RuntimeFailure(std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                       ": " + cudaGetErrorName(code) + ": " + cudaGetErrorString(code));
}

std::string cuda_device_problem() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state
    return std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " +
           cudaGetErrorString(e);
  }
  if (n <= 0) return "no CUDA device: cudaGetDeviceCount reports 0 devices";
  return "";
}

int cuda_device_count() {
  if (!cuda_device_problem().empty()) return 0;
  int n = 0;
  cudaGetDeviceCount(&n);
  return n;
}

DeviceInfo device_info(int device) {
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  DeviceInfo d;
  d.index = device;
  d.name = p.name;
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess) d.pci_bus_id = bus;
  d.sms = p.multiProcessorCount;
  d.memory_bytes = p.totalGlobalMem;
  return d;
}

double stop_timed_loop(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, bool cputime,
                       std::chrono::steady_clock::time_point cpu_start, double runs) {
  CUDA_CHECK(cudaEventRecord(stop, stream));
  CUDA_CHECK(cudaEventSynchronize(stop));
  if (cputime) {
    const std::chrono::duration<double, std::micro> us =
        std::chrono::steady_clock::now() - cpu_start;
    return us.count() / runs;
  }
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  return static_cast<double>(ms) * 1e3 / runs;
}

std::int64_t device_free_memory(int device) {
  DeviceGuard g(device);
  std::size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return static_cast<std::int64_t>(free);
}

int cuda_driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess) return 0;
  return v;
}

int cuda_runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return 0;
  return v;
}

std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::vector<std::vector<bool>> enable_peer_access(const std::vector<int>& rank_device) {
  int devices = 0;
  for (int d : rank_device) devices = std::max(devices, d + 1);
  std::vector<std::vector<bool>> peer(devices, std::vector<bool>(devices, false));
  for (int d = 0; d < devices; ++d) peer[d][d] = true;
  for (int a : rank_device)
    for (int b : rank_device) {
      if (a == b || peer[a][b]) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess && can) {
        DeviceGuard g(a);
        const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
        if (e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled) peer[a][b] = true;
        cudaGetLastError();
      }
    }
  return peer;
}

DeviceGuard::DeviceGuard(int device) {
  CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() { cudaSetDevice(previous_); }

DeviceBuffer::DeviceBuffer(std::size_t bytes, int device) : size_(bytes), device_(device) {
  if (bytes == 0) return;
  DeviceGuard g(device);
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, bytes));
  data_ = static_cast<std::byte*>(p);
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    device_ = o.device_;
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (!data_) return;
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device_);
  cudaFree(data_);
  cudaSetDevice(previous);
  data_ = nullptr;
}

CudaStream::CudaStream(int device) : device_(device) {
  DeviceGuard g(device);
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  if (stream_) cudaStreamDestroy(stream_);
}

CudaEvent::CudaEvent(int device, bool timing) {
  DeviceGuard g(device);
  CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

CudaEvent::~CudaEvent() {
  if (event_) cudaEventDestroy(event_);
}

long env_tuning(const char* name, long lo, long hi, long fallback, const std::string& what) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < lo || n > hi)
    throw UsageError(std::string(name) + "=" + v + ": expected " + what + " in " +
                     std::to_string(lo) + ".." + std::to_string(hi));
  return n;
}

}  // namespace collkit::realrun
