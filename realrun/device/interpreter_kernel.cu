// The persistent interpreter kernel: block b runs lane b % lanes of rank
// ranks_here[b / lanes] through realrun/interpreter.h. One instantiation per
// stored type x combining function x flag scope.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "realrun/device/interpreter_kernel.h"
#include "realrun/element_ops.h"
#include "realrun/interpreter.h"

namespace collkit::realrun {
namespace {

template <typename T, int OP, bool kSystem>
__global__ void __launch_bounds__(kInterpreterThreads) interpreter_kernel(InterpreterLaunch a) {
  __shared__ int shared;
  InterpreterState* st = a.state;
  const int local = static_cast<int>(blockIdx.x) / a.lanes;
  const int lane = static_cast<int>(blockIdx.x) % a.lanes;
  const int rank = a.ranks_here[local];
  // The previous launch on this stream has ended: its last block advanced
  // the epoch before it.
  const unsigned long long epoch = *reinterpret_cast<volatile unsigned long long*>(&st->epoch);
  if (interp::error_load<kSystem>(&st->error) == 0) {
    interp::LaneRun run;
    run.ops = a.ops + a.first_op[rank];
    run.count = a.first_op[rank + 1] - a.first_op[rank];
    run.rank = rank;
    run.lane = lane;
    run.lanes = a.lanes;
    run.epoch = epoch;
    run.avg_ranks = a.avg_ranks;
    run.spin_limit_ns = a.spin_limit_ns;
    run.error = &st->error;
    interp::BlockEnv<kSystem> env{&shared};
    interp::run_lane<T, OP, kSystem>(env, run);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned done = atomicAdd(&st->finished, 1u);
    if (done == gridDim.x - 1) {
      // Every block has read the epoch: the next launch's is one more.
      st->finished = 0;
      st->epoch = epoch + 1;
      __threadfence();
    }
  }
}

template <typename T, int OP, bool kSystem>
void launch_typed(const InterpreterLaunch& a, cudaStream_t stream) {
  interpreter_kernel<T, OP, kSystem><<<a.count_here * a.lanes, kInterpreterThreads, 0, stream>>>(a);
}

template <typename T, int OP, bool kSystem>
int resident_typed() {
  int device = 0, per_sm = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, interpreter_kernel<T, OP, kSystem>,
                                                    kInterpreterThreads, 0) != cudaSuccess)
    return 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
  return per_sm * sms;
}

template <typename T, int OP>
void by_scope(const InterpreterLaunch& a, cudaStream_t s) {
  if (a.system_scope) {
    launch_typed<T, OP, true>(a, s);
  } else {
    launch_typed<T, OP, false>(a, s);
  }
}

template <typename T, int OP>
int resident_by_scope(bool system) {
  return system ? resident_typed<T, OP, true>() : resident_typed<T, OP, false>();
}

// f.operator()<T, OP>() for the runtime type and op.
template <typename T, typename F>
auto by_op(RedOp op, F&& f) {
  switch (op) {
    case RedOp::prod:
      return f.template operator()<T, elem::kProd>();
    case RedOp::min:
      return f.template operator()<T, elem::kMin>();
    case RedOp::max:
      return f.template operator()<T, elem::kMax>();
    case RedOp::sum:
    case RedOp::avg:
      break;
  }
  return f.template operator()<T, elem::kSum>();
}

template <typename F>
auto by_type(DataType type, RedOp op, F&& f) {
  switch (type) {
    case DataType::int8:
      return by_op<std::int8_t>(op, f);
    case DataType::uint8:
      return by_op<std::uint8_t>(op, f);
    case DataType::int32:
      return by_op<std::int32_t>(op, f);
    case DataType::uint32:
      return by_op<std::uint32_t>(op, f);
    case DataType::int64:
      return by_op<std::int64_t>(op, f);
    case DataType::uint64:
      return by_op<std::uint64_t>(op, f);
    case DataType::half:
      return by_op<elem::Half16>(op, f);
    case DataType::bfloat16:
      return by_op<elem::BFloat16>(op, f);
    case DataType::float32:
      return by_op<float>(op, f);
    case DataType::float64:
      return by_op<double>(op, f);
  }
  throw UsageError("unknown data type code " + std::to_string(static_cast<int>(type)));
}

struct LaunchFn {
  const InterpreterLaunch* a;
  cudaStream_t s;
  template <typename T, int OP>
  int operator()() const {
    by_scope<T, OP>(*a, s);
    return 0;
  }
};

struct ResidentFn {
  bool system;
  template <typename T, int OP>
  int operator()() const {
    return resident_by_scope<T, OP>(system);
  }
};

}  // namespace

void launch_interpreter(const InterpreterLaunch& launch, cudaStream_t stream) {
  if (launch.count_here <= 0 || launch.lanes <= 0) return;
  by_type(launch.type, launch.op, LaunchFn{&launch, stream});
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw RuntimeFailure(std::string("interpreter kernel launch failed: ") + cudaGetErrorName(e) +
                         ": " + cudaGetErrorString(e));
}

int interpreter_resident_blocks(DataType type, RedOp op, bool system_scope) {
  return by_type(type, op, ResidentFn{system_scope});
}

}  // namespace collkit::realrun
