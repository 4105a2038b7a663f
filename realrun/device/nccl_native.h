// NCCL's own collectives ("native" in bench tables of the nccl and cuda
// backends) on the executor's buffer layout (realrun/plan.h io_plan), and
// NCCL_CHECK. Built only where NCCL was found (COLLKIT_HAVE_NCCL).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <string>

#include "algorithms/schedule.h"
#include "core/dtypes.h"

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
// The avg division of a native reduction (after the group has ended).
void nccl_native_finish(Collective c, int rank, int ranks, int root, std::int64_t count,
                        DataType type, RedOp op, void* output, cudaStream_t stream);

}  // namespace collkit::realrun
