// One rank's buffers on a device, laid out by its CompiledPlan (the same
// plan the host executor runs), and the correctness check on the device:
// inputs come from realrun/check_data (uploaded), outputs are poisoned with
// cudaMemset, and expected outputs, computed on the host independently of
// any kernel, are compared by a kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "realrun/device/cuda_util.h"
#include "realrun/plan.h"

namespace collkit::realrun {

class DeviceRank {
 public:
  // Allocates the plan's areas on `device`.
  DeviceRank(const CompiledPlan& plan, int device);
  DeviceRank(const DeviceRank&) = delete;
  DeviceRank& operator=(const DeviceRank&) = delete;
  const CompiledPlan& plan() const { return *plan_; }
  int device() const { return device_; }
  const AreaBases& bases() const { return bases_; }
  std::byte* input() const { return bases_.base[static_cast<int>(Area::input)]; }
  std::byte* output() const { return bases_.base[static_cast<int>(Area::output)]; }

  // Poisons the output (0x7F bytes, as realrun::poison) and uploads check
  // iteration `iter`'s input, on `stream`; then synchronises the stream.
  void fill_check(std::int64_t iter, bool poison_output, cudaStream_t stream);
  // Enqueues the comparison of the output with check iteration `iter`'s
  // expected values; the count accumulates into wrong_counter(). Call
  // wrong() after the stream has been synchronised.
  void enqueue_check(std::int64_t iter, int root, std::int64_t count, cudaStream_t stream);
  void reset_wrong(cudaStream_t stream);
  std::int64_t wrong(cudaStream_t stream);

 private:
  const CompiledPlan* plan_;
  int device_;
  DeviceBuffer storage_in_, storage_out_, scratch_, temp_, expected_, counter_;
  AreaBases bases_;
  std::vector<std::byte> host_;  // staging for expected outputs
};

}  // namespace collkit::realrun
