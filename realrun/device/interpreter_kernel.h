// The persistent interpreter kernel (interpreter_kernel.cu): one launch per
// GPU runs the programs of every rank on that GPU, `lanes` thread blocks per
// rank, each block a lane of realrun/interpreter.h. All the launch's blocks
// must be resident at once (they wait on each other): the caller keeps
// ranks x lanes within interpreter_resident_blocks(). Host code (g++)
// includes this header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtypes.h"
#include "realrun/interpreter.h"

namespace collkit::realrun {

inline constexpr int kInterpreterThreads = 512;

// Per GPU, in its memory, zeroed before the first launch: the iteration
// counter (read by every block at its start, advanced by the launch's last
// block to finish, so a CUDA graph of launches needs no argument that
// changes), the blocks finished in this launch, and the error word (after
// an error every later launch returns at once).
struct InterpreterState {
  unsigned long long epoch;
  unsigned long long error;
  unsigned int finished;
  unsigned int reserved;
};

struct InterpreterLaunch {
  const interp::ExecOp* ops = nullptr;      // device memory: every rank's, bound
  const std::uint32_t* first_op = nullptr;  // device memory: ranks + 1 entries
  const int* ranks_here = nullptr;          // device memory: the ranks this launch runs
  int count_here = 0;
  int lanes = 1;
  InterpreterState* state = nullptr;  // device memory of this GPU
  int avg_ranks = 1;
  std::uint64_t spin_limit_ns = 0;
  unsigned poll_sleep_ns = 0;  // __nanosleep between two polls of a flag (0: spin)
  bool full_fences = false;    // a __threadfence besides each release and acquire
  bool stage_ops = true;       // read the program through shared memory
  bool system_scope = false;   // ranks on several GPUs
  DataType type = DataType::float32;
  RedOp op = RedOp::sum;
  int combine = 0;  // interp::combine_of(op), set by launch_interpreter
};

// Enqueues one iteration on `stream` (of the current device, the ranks'
// GPU); launch errors are thrown as RuntimeFailure.
void launch_interpreter(const InterpreterLaunch& launch, cudaStream_t stream);

// How many interpreter blocks the current device holds at once for this
// type (occupancy x multiprocessors; the op and the flags' scope are run-time
// arguments of the one instantiation per type).
int interpreter_resident_blocks(DataType type);

}  // namespace collkit::realrun
