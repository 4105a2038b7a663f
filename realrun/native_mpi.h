// The MPI library's own collectives ("native" in bench tables), on the same
// buffer layout as the executor, so one fill/check path serves both.
#pragma once

#include <mpi.h>

#include <span>
#include <string>

#include "algorithms/schedule.h"
#include "core/dtypes.h"
#include "realrun/executor.h"

namespace collkit::realrun {

// Empty if `native` can run `c` in place with NCCL's layout; otherwise why not.
std::string native_in_place_unsupported(Collective c);

class NativeCollective {
 public:
  // `count` is ScheduleSpec::count. MPI's block collectives (MPI_Allgather,
  // MPI_Scatter, ...) need count divisible by the rank count, which
  // nccl-tests' size mapping guarantees; otherwise throws UsageError.
  NativeCollective(Collective c, MPI_Comm comm, int root, std::int64_t count, DataType type,
                   RedOp op, bool in_place);
  ~NativeCollective();
  NativeCollective(const NativeCollective&) = delete;
  NativeCollective& operator=(const NativeCollective&) = delete;

  std::span<std::byte> input() const { return {input_, input_bytes_}; }
  std::span<std::byte> output() const { return {output_, output_bytes_}; }
  // One MPI_Bcast / MPI_Reduce / MPI_Allgather / MPI_Scatter / MPI_Gather /
  // MPI_Reduce_scatter_block / MPI_Allreduce / MPI_Alltoall / MPI_Barrier
  // (avg: MPI_SUM, then the division, as NCCL).
  void run();

 private:
  Collective collective_;
  MPI_Comm comm_;
  int root_, rank_ = 0, ranks_ = 1;
  std::int64_t count_;
  int block_ = 0;  // per-rank element count of the block collectives
  DataType type_;
  RedOp op_;
  bool in_place_;
  MPI_Datatype mpi_type_ = MPI_DATATYPE_NULL;
  MPI_Op mpi_op_ = MPI_OP_NULL;
  bool own_op_ = false;
  AlignedBuffer storage_in_, storage_out_;
  std::byte* input_ = nullptr;
  std::byte* output_ = nullptr;
  std::size_t input_bytes_ = 0, output_bytes_ = 0;
};

}  // namespace collkit::realrun
