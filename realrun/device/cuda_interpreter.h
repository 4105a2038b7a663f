// The interpreter engine of a single-process multi-rank program on CUDA: the
// device program (realrun/device_program.h) bound to the ranks' device
// buffers and run by one persistent kernel launch per GPU per iteration
// (realrun/device/interpreter_kernel.h), instead of the streams engine's
// copies, kernels and events per step. Ranks on distinct GPUs read each
// other through peer access, with flags at system scope.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "realrun/device/cuda_util.h"
#include "realrun/device/interpreter_kernel.h"
#include "realrun/device_program.h"

namespace collkit::realrun {

class CudaInterpreter {
 public:
  // A wait longer than this is an error (the kernel stops, run() throws);
  // far longer than any wait of a correct program.
  static constexpr double kDefaultSpinLimitMs = 10000;

  // rank_device[r]: the GPU of rank r. Enables peer access between them
  // where the hardware allows.
  explicit CudaInterpreter(std::vector<int> rank_device);
  CudaInterpreter(const CudaInterpreter&) = delete;
  CudaInterpreter& operator=(const CudaInterpreter&) = delete;

  // compile_multirank's CanRead (context: this engine): same GPU, or peer access.
  static bool can_read(void* self, int dst, int src);
  // Empty when the ranks can run here with one block each at least: every
  // pair of GPUs has peer access and each GPU holds its ranks' blocks at
  // once; otherwise why not.
  std::string problem(DataType type) const;
  // Blocks per rank every GPU can hold at once for its ranks (0: not one).
  int max_lanes(DataType type) const;

  // Binds `program` to the ranks' areas and uploads it; zeroes the flags.
  // The program is kept (for error messages).
  void load(DeviceProgram program, std::span<const AreaBases> bases,
            double spin_limit_ms = kDefaultSpinLimitMs);
  const DeviceProgram& program() const { return program_; }
  // Enqueues one iteration: one launch per GPU, on that GPU's stream.
  void enqueue();
  // Waits for every GPU's stream; throws RuntimeFailure naming the first
  // error word set (the flags and iteration counters then start over).
  void check_errors();

  const std::vector<int>& devices() const { return devices_; }
  cudaStream_t stream_of_device(int device) const;
  int device(int rank) const { return rank_device_[rank]; }

 private:
  struct PerDevice {
    int device = 0;
    std::unique_ptr<CudaStream> stream;
    std::vector<int> ranks;  // on this GPU
    DeviceBuffer ops, first_op, ranks_here, flags, state;
    DeviceBuffer ll;  // the LL areas of the ranks on this GPU, one after another
  };
  std::vector<int> rank_device_;
  std::vector<int> devices_;  // distinct, in order of first rank
  std::vector<std::vector<bool>> peer_;
  std::vector<PerDevice> per_device_;
  DeviceProgram program_;
  double spin_limit_ms_ = kDefaultSpinLimitMs;
  unsigned poll_sleep_ns_ = 0;  // COLLKIT_INTERPRETER_POLL_NS: sleep between polls (0: spin)
  bool full_fences_ = false;    // COLLKIT_INTERPRETER_FENCES=1: the first engine's fences
  bool stage_ops_ = true;       // COLLKIT_INTERPRETER_STAGE=0: the program read in place
  bool system_scope_ = false;
};

}  // namespace collkit::realrun
