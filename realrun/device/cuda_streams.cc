#include "realrun/device/cuda_streams.h"

#include "core/error.h"
#include "realrun/device/reduce.h"

namespace collkit::realrun {

CudaStreams::CudaStreams(std::vector<int> rank_device) : rank_device_(std::move(rank_device)) {
  for (int d : rank_device_) {
    streams_.push_back(std::make_unique<CudaStream>(d));
    join_events_.push_back(std::make_unique<CudaEvent>(d, false));
  }
  // Peer access where the hardware has it; cudaMemcpyPeerAsync works (staged
  // through the host) where it does not, and kernels then read only their
  // own GPU's memory.
  peer_ = enable_peer_access(rank_device_);
}

void CudaStreams::set_events(const std::vector<int>& event_stream) {
  events_.clear();
  events_.reserve(event_stream.size());
  for (int s : event_stream) events_.push_back(std::make_unique<CudaEvent>(rank_device_[s], false));
}

bool CudaStreams::can_read(void* self, int dst, int src) {
  const auto* e = static_cast<const CudaStreams*>(self);
  return e->peer_[e->rank_device_[dst]][e->rank_device_[src]];
}

void CudaStreams::use(int device) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) return;
  CUDA_CHECK(cudaSetDevice(device));
}

void CudaStreams::record(int stream, int event) {
  use(rank_device_[stream]);
  CUDA_CHECK(cudaEventRecord(events_[event]->get(), streams_[stream]->get()));
}

void CudaStreams::wait(int stream, int event) {
  use(rank_device_[stream]);
  CUDA_CHECK(cudaStreamWaitEvent(streams_[stream]->get(), events_[event]->get(), 0));
}

void CudaStreams::copy(int dst_rank, std::byte* dst, int src_rank, const std::byte* src,
                       std::size_t bytes) {
  const int dd = rank_device_[dst_rank], sd = rank_device_[src_rank];
  use(dd);
  if (dd == sd) {
    CUDA_CHECK(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, streams_[dst_rank]->get()));
  } else {
    CUDA_CHECK(cudaMemcpyPeerAsync(dst, dd, src, sd, bytes, streams_[dst_rank]->get()));
  }
}

void CudaStreams::local(int rank, const CompiledPlan& plan, bool reduce, std::byte* dst,
                        const std::byte* src, std::byte* also, std::size_t bytes) {
  use(rank_device_[rank]);
  cudaStream_t s = streams_[rank]->get();
  if (reduce) {
    device_reduce(plan.type, plan.op, dst, src, static_cast<std::int64_t>(bytes) / plan.elem_size,
                  s, also);
  } else if (dst != src) {
    if (dst < src + bytes && src < dst + bytes)
      throw RuntimeFailure("rank " + std::to_string(rank) +
                           ": a local copy between overlapping regions is not supported on "
                           "the device");
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  }
}

void CudaStreams::finish_avg(int rank, const CompiledPlan& plan, std::byte* output) {
  use(rank_device_[rank]);
  device_finish_avg(plan.type, output, plan.output_bytes / plan.elem_size, plan.ranks,
                    streams_[rank]->get());
}

void CudaStreams::all_wait(cudaEvent_t event) {
  for (std::size_t r = 0; r < streams_.size(); ++r) {
    use(rank_device_[r]);
    CUDA_CHECK(cudaStreamWaitEvent(streams_[r]->get(), event, 0));
  }
}

void CudaStreams::join_into(cudaStream_t main) {
  for (std::size_t r = 0; r < streams_.size(); ++r) {
    use(rank_device_[r]);
    CUDA_CHECK(cudaEventRecord(join_events_[r]->get(), streams_[r]->get()));
    CUDA_CHECK(cudaStreamWaitEvent(main, join_events_[r]->get(), 0));
  }
}

}  // namespace collkit::realrun
