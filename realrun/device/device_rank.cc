#include "realrun/device/device_rank.h"

#include <span>

#include "realrun/check_data.h"
#include "realrun/device/reduce.h"

namespace collkit::realrun {

DeviceRank::DeviceRank(const CompiledPlan& plan, int device) : plan_(&plan), device_(device) {
  const auto size = [](std::int64_t b) { return static_cast<std::size_t>(b); };
  storage_in_ = DeviceBuffer(size(plan.storage_in_bytes), device);
  storage_out_ = DeviceBuffer(size(plan.storage_out_bytes), device);
  scratch_ = DeviceBuffer(size(plan.scratch_bytes), device);
  temp_ = DeviceBuffer(size(plan.temp_bytes), device);
  bases_.base[static_cast<int>(Area::input)] =
      storage_in_.data() + (plan.in_place ? plan.input_offset : 0);
  bases_.base[static_cast<int>(Area::output)] =
      plan.in_place ? storage_in_.data() + plan.output_offset : storage_out_.data();
  bases_.base[static_cast<int>(Area::scratch)] = scratch_.data();
  bases_.base[static_cast<int>(Area::temp)] = temp_.data();
}

void DeviceRank::fill_check(std::int64_t iter, bool poison_output, cudaStream_t stream) {
  DeviceGuard g(device_);
  const CompiledPlan& p = *plan_;
  if (poison_output && p.output_bytes > 0)
    CUDA_CHECK(cudaMemsetAsync(output(), 0x7F, static_cast<std::size_t>(p.output_bytes), stream));
  // Generated on the device: a host fill and upload of the input took seconds
  // per measurement at 1 GiB per rank.
  device_fill_check(p.type, check_pattern(p.collective, p.op), p.ranks, p.rank, iter, input(),
                    p.input_bytes / p.elem_size, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

void DeviceRank::reset_wrong(cudaStream_t stream) {
  DeviceGuard g(device_);
  if (counter_.size() == 0) counter_ = DeviceBuffer(sizeof(unsigned long long), device_);
  CUDA_CHECK(cudaMemsetAsync(counter_.data(), 0, sizeof(unsigned long long), stream));
}

void DeviceRank::enqueue_check(std::int64_t iter, int root, std::int64_t count,
                               cudaStream_t stream) {
  DeviceGuard g(device_);
  const CompiledPlan& p = *plan_;
  if (counter_.size() == 0) reset_wrong(stream);
  if (p.output_bytes == 0) return;
  const auto bytes = static_cast<std::size_t>(p.output_bytes);
  if (expected_.size() < bytes) expected_ = DeviceBuffer(bytes, device_);
  host_.resize(bytes);
  expected_output(p.collective, p.type, p.op, p.ranks, p.rank, root, count, iter, host_);
  // The upload is ordered after the collective on the same stream; the host
  // buffer is reused only after wrong() synchronises.
  CUDA_CHECK(
      cudaMemcpyAsync(expected_.data(), host_.data(), bytes, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  device_count_wrong(p.type, output(), expected_.data(), p.output_bytes / p.elem_size,
                     reinterpret_cast<unsigned long long*>(counter_.data()), stream);
}

std::int64_t DeviceRank::wrong(cudaStream_t stream) {
  DeviceGuard g(device_);
  unsigned long long w = 0;
  if (counter_.size() == 0) return 0;
  CUDA_CHECK(cudaMemcpyAsync(&w, counter_.data(), sizeof w, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return static_cast<std::int64_t>(w);
}

}  // namespace collkit::realrun
