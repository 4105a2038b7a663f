// The CUDA engine of a single-process multi-rank program (realrun/
// multirank.h): one stream per rank on the rank's device, one event per
// slot on the device of the stream that records it; copies are
// cudaMemcpyAsync device-to-device when both ranks share a GPU and
// cudaMemcpyPeerAsync otherwise, always on the receiver's stream; local
// operations are the kernels of realrun/device/reduce.h.
#pragma once

#include <memory>
#include <vector>

#include "realrun/device/cuda_util.h"
#include "realrun/multirank.h"

namespace collkit::realrun {

class CudaStreams final : public StreamEngine {
 public:
  // rank_device[r]: the device of rank r. Enables peer access between the
  // devices where the hardware allows it.
  explicit CudaStreams(std::vector<int> rank_device);
  // One event per slot of the program (program.event_stream).
  void set_events(const std::vector<int>& event_stream);
  // compile_multirank's CanRead (context: this engine): rank dst's kernels
  // can read rank src's memory (same GPU, or peer access enabled).
  static bool can_read(void* self, int dst, int src);
  cudaStream_t stream(int rank) const { return streams_[rank]->get(); }
  int device(int rank) const { return rank_device_[rank]; }

  void record(int stream, int event) override;
  void wait(int stream, int event) override;
  void copy(int dst_rank, std::byte* dst, int src_rank, const std::byte* src,
            std::size_t bytes) override;
  void local(int rank, const CompiledPlan& plan, bool reduce, std::byte* dst, const std::byte* src,
             std::byte* also, std::size_t bytes) override;
  void finish_avg(int rank, const CompiledPlan& plan, std::byte* output) override;

  // Every rank stream waits for `event`'s last record (the start of a timed
  // region, recorded on another stream).
  void all_wait(cudaEvent_t event);
  // `main` waits for all work enqueued so far on every rank stream.
  void join_into(cudaStream_t main);

 private:
  void use(int device);
  std::vector<int> rank_device_;
  std::vector<std::unique_ptr<CudaStream>> streams_;
  std::vector<std::unique_ptr<CudaEvent>> events_;
  std::vector<std::unique_ptr<CudaEvent>> join_events_;  // one per rank
  std::vector<std::vector<bool>> peer_;                  // [device][device]
};

}  // namespace collkit::realrun
