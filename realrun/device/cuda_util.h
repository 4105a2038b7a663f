// CUDA runtime helpers shared by the GPU backends: CUDA_CHECK, the
// no-device test, device memory, streams and events as RAII objects, and
// what the reports record about the devices. Host code (g++) includes this;
// only the kernels are compiled by nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace collkit::realrun {

// Throws RuntimeFailure naming the call, the source line and CUDA's message.
void cuda_check(cudaError_t code, const char* call, const char* file, int line);
#define CUDA_CHECK(call) ::collkit::realrun::cuda_check((call), #call, __FILE__, __LINE__)

// Empty when at least one CUDA device can be used; otherwise why not, with
// the CUDA error text ("no CUDA device: cudaGetDeviceCount: CUDA driver
// version is insufficient for CUDA runtime version"). Any error counts as no
// device.
std::string cuda_device_problem();
int cuda_device_count();  // 0 when cuda_device_problem() is not empty

struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string pci_bus_id;
  int sms = 0;
  std::size_t memory_bytes = 0;
};
DeviceInfo device_info(int device);
// Free memory on `device` now (cudaMemGetInfo; makes the device's primary
// context first, so what the context takes is already gone).
std::int64_t device_free_memory(int device);
int cuda_driver_version();             // e.g. 13000
int cuda_runtime_version();            // e.g. 13000
std::string cuda_version_text(int v);  // 13000 -> "13.0"

// Enables peer access between every two GPUs of `rank_device` (the GPU of
// each rank) where the hardware allows it; returns [a][b] = whether GPU a's
// kernels can read GPU b's memory (true on the diagonal), sized by the
// largest device index + 1.
std::vector<std::vector<bool>> enable_peer_access(const std::vector<int>& rank_device);

// A tuning variable of the cuda engines (COLLKIT_INTERPRETER_*): `fallback`
// when unset, else its decimal value in [lo, hi]; anything else is a
// UsageError "NAME=VALUE: expected WHAT in LO..HI".
long env_tuning(const char* name, long lo, long hi, long fallback, const std::string& what);

// Makes `device` current for its lifetime, restoring the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// cudaMalloc'd bytes on one device (256-byte aligned); empty for 0 bytes.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, int device);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  int device() const { return device_; }

 private:
  void release() noexcept;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  int device_ = 0;
};

class CudaStream {
 public:
  explicit CudaStream(int device);
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }

 private:
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

// Ends a timed loop of `runs` runs on `stream`: records `stop` there, waits
// for it, and returns microseconds per run, from the events (`start` was
// recorded before the first run) or, with `cputime` (-C 1), on the host
// clock from `cpu_start` to the completion of the last run.
double stop_timed_loop(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, bool cputime,
                       std::chrono::steady_clock::time_point cpu_start, double runs);

class CudaEvent {
 public:
  // timing = false: cudaEventDisableTiming (cheaper, for ordering only).
  CudaEvent(int device, bool timing);
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace collkit::realrun
