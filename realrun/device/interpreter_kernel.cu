// The persistent interpreter kernel: block b runs lane b % lanes of rank
// ranks_here[b / lanes] through realrun/interpreter.h. One instantiation per
// stored type (10): the combining function is chosen once per operation and
// the flags' scope once per wait or signal, both off the element loops. Every
// instantiation costs each program that links the device library, and
// gpu-build.sh carries those to the GPU machine within 64 MiB.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "realrun/device/interpreter_kernel.h"
#include "realrun/element_ops.h"
#include "realrun/interpreter.h"

namespace collkit::realrun {
namespace {

template <typename T>
__global__ void __launch_bounds__(kInterpreterThreads) interpreter_kernel(InterpreterLaunch a) {
  __shared__ int shared;
  // Raw storage: a __shared__ variable cannot have ExecOp's initialisers.
  __shared__ alignas(16) unsigned char staged[interp::kStagedOps * sizeof(interp::ExecOp)];
  InterpreterState* st = a.state;
  const int local = static_cast<int>(blockIdx.x) / a.lanes;
  const int lane = static_cast<int>(blockIdx.x) % a.lanes;
  const int rank = a.ranks_here[local];
  // The previous launch on this stream has ended: its last block advanced
  // the epoch before it.
  const unsigned long long epoch = *reinterpret_cast<volatile unsigned long long*>(&st->epoch);
  if (interp::error_load(&st->error, a.system_scope) == 0) {
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
    run.system_scope = a.system_scope;
    run.combine = a.combine;
    interp::BlockEnv env{&shared, a.system_scope, a.poll_sleep_ns, a.full_fences,
                         a.stage_ops ? reinterpret_cast<interp::ExecOp*>(staged) : nullptr};
    interp::run_lane<T>(env, run);
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

template <typename T>
void launch_typed(const InterpreterLaunch& a, cudaStream_t stream) {
  interpreter_kernel<T><<<a.count_here * a.lanes, kInterpreterThreads, 0, stream>>>(a);
}

template <typename T>
int resident_typed() {
  int device = 0, per_sm = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, interpreter_kernel<T>,
                                                    kInterpreterThreads, 0) != cudaSuccess)
    return 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
  return per_sm * sms;
}

// f.template operator()<T>() for the run-time type.
template <typename F>
auto by_type(DataType type, F&& f) {
  switch (type) {
    case DataType::int8:
      return f.template operator()<std::int8_t>();
    case DataType::uint8:
      return f.template operator()<std::uint8_t>();
    case DataType::int32:
      return f.template operator()<std::int32_t>();
    case DataType::uint32:
      return f.template operator()<std::uint32_t>();
    case DataType::int64:
      return f.template operator()<std::int64_t>();
    case DataType::uint64:
      return f.template operator()<std::uint64_t>();
    case DataType::half:
      return f.template operator()<elem::Half16>();
    case DataType::bfloat16:
      return f.template operator()<elem::BFloat16>();
    case DataType::float32:
      return f.template operator()<float>();
    case DataType::float64:
      return f.template operator()<double>();
  }
  throw UsageError("unknown data type code " + std::to_string(static_cast<int>(type)));
}

struct LaunchFn {
  const InterpreterLaunch* a;
  cudaStream_t s;
  template <typename T>
  int operator()() const {
    launch_typed<T>(*a, s);
    return 0;
  }
};

struct ResidentFn {
  template <typename T>
  int operator()() const {
    return resident_typed<T>();
  }
};

}  // namespace

void launch_interpreter(const InterpreterLaunch& launch, cudaStream_t stream) {
  if (launch.count_here <= 0 || launch.lanes <= 0) return;
  InterpreterLaunch a = launch;
  a.combine = interp::combine_of(launch.op);
  by_type(a.type, LaunchFn{&a, stream});
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw RuntimeFailure(std::string("interpreter kernel launch failed: ") + cudaGetErrorName(e) +
                         ": " + cudaGetErrorString(e));
}

int interpreter_resident_blocks(DataType type) { return by_type(type, ResidentFn{}); }

}  // namespace collkit::realrun
