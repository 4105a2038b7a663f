// NCCL's own collectives ("native" in bench tables of the nccl and cuda
// backends) on the executor's buffer layout (realrun/plan.h io_plan), and
// NCCL_CHECK. Built only where NCCL was found (COLLKIT_HAVE_NCCL).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "core/dtypes.h"
#include "realrun/device/device_rank.h"
#include "realrun/plan.h"

namespace collkit::realrun {

void nccl_check(ncclResult_t code, const char* call, const char* file, int line);
#define NCCL_CHECK(call) ::collkit::realrun::nccl_check((call), #call, __FILE__, __LINE__)

ncclDataType_t nccl_type(DataType t);
std::string nccl_version_text();  // of the library loaded, "2.28.9"

// Empty if NCCL can run `c` natively (in place: with NCCL's layout);
// otherwise why not.
std::string nccl_native_unsupported(Collective c, bool in_place);

// Enqueues rank `rank`'s part of the collective on `stream`:
// ncclBroadcast, ncclReduce, ncclAllGather, ncclReduceScatter,
// ncclAllReduce, and all_to_all / scatter / gather as grouped
// ncclSend/ncclRecv (NCCL's documented recipes). avg is ncclSum followed by
// the division kernel, as the executor does, so the check data agree bit
// for bit. `count` is ScheduleSpec::count; block collectives need it
// divisible by the rank count (UsageError otherwise). Callers that drive
// several ranks from one thread wrap the calls in ncclGroupStart/End.
void nccl_native_enqueue(Collective c, ncclComm_t comm, int rank, int ranks, int root,
                         std::int64_t count, DataType type, RedOp op, const void* input,
                         void* output, cudaStream_t stream);
// nccl-tests' -R 1: `bytes` at `buffer` registered with the communicator
// (ncclCommRegister: NCCL then moves data from and to it without its own
// staging copies where the transport allows) while the object lives;
// nothing for bytes == 0.
class NcclRegistration {
 public:
  NcclRegistration(ncclComm_t comm, void* buffer, std::int64_t bytes);
  ~NcclRegistration();
  NcclRegistration(const NcclRegistration&) = delete;
  NcclRegistration& operator=(const NcclRegistration&) = delete;

 private:
  ncclComm_t comm_;
  void* handle_ = nullptr;
};

// -R 1 for one rank: its input storage and, out of place, its output
// storage (the executor's layout), registered with `comm`.
std::vector<std::unique_ptr<NcclRegistration>> register_storage(ncclComm_t comm,
                                                                const DeviceRank& rank,
                                                                const CompiledPlan& plan);

// The avg division of a native reduction (after the group has ended).
void nccl_native_finish(Collective c, int rank, int ranks, int root, std::int64_t count,
                        DataType type, RedOp op, void* output, cudaStream_t stream);

}  // namespace collkit::realrun
