#include "realrun/device/nccl_native.h"

#include "core/error.h"
#include "realrun/device/reduce.h"

namespace collkit::realrun {

void nccl_check(ncclResult_t code, const char* call, const char* file, int line) {
  if (code == ncclSuccess || code == ncclInProgress) return;
  throw RuntimeFailure(std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                       ": " + ncclGetErrorString(code) + " (" + ncclGetLastError(nullptr) + ")");
}

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::int8:
      return ncclInt8;
    case DataType::uint8:
      return ncclUint8;
    case DataType::int32:
      return ncclInt32;
    case DataType::uint32:
      return ncclUint32;
    case DataType::int64:
      return ncclInt64;
    case DataType::uint64:
      return ncclUint64;
    case DataType::half:
      return ncclFloat16;
    case DataType::bfloat16:
      return ncclBfloat16;
    case DataType::float32:
      return ncclFloat32;
    case DataType::float64:
      return ncclFloat64;
  }
  return ncclInt8;
}

namespace {

ncclRedOp_t nccl_op(RedOp op) {
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:
      return ncclSum;
    case RedOp::prod:
      return ncclProd;
    case RedOp::min:
      return ncclMin;
    case RedOp::max:
      return ncclMax;
  }
  return ncclSum;
}

}  // namespace

std::string nccl_version_text() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X,Y,Z) = X*10000 + Y*100 + Z since 2.9.
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
         std::to_string(v % 100);
}

std::string nccl_native_unsupported(Collective c, bool in_place) {
  if (c == Collective::barrier) return "NCCL has no barrier";
  if (!in_place) return "";
  switch (c) {
    case Collective::scatter:
    case Collective::gather:
    case Collective::all_to_all:
      return "in-place " + std::string(to_string(c)) + " is not defined here (NCCL has no such " +
             "collective in place)";
    default:
      return "";
  }
}

void nccl_native_enqueue(Collective c, ncclComm_t comm, int rank, int ranks, int root,
                         std::int64_t count, DataType type, RedOp op, const void* input,
                         void* output, cudaStream_t stream) {
  const ncclDataType_t t = nccl_type(type);
  const ncclRedOp_t o = nccl_op(op);
  const auto n = static_cast<std::size_t>(count);
  const std::size_t e = static_cast<std::size_t>(size_of(type));
  const bool blocks = c == Collective::all_gather || c == Collective::reduce_scatter ||
                      c == Collective::scatter || c == Collective::gather ||
                      c == Collective::all_to_all;
  if (blocks && count % ranks != 0)
    throw UsageError("native " + std::string(to_string(c)) + " needs a count divisible by " +
                     std::to_string(ranks) + " ranks (got " + std::to_string(count) + ")");
  const std::size_t block = n / static_cast<std::size_t>(ranks);
  const auto* in = static_cast<const std::byte*>(input);
  auto* out = static_cast<std::byte*>(output);
  switch (c) {
    case Collective::broadcast:
      NCCL_CHECK(ncclBroadcast(input, output, n, t, root, comm, stream));
      return;
    case Collective::reduce:
      NCCL_CHECK(ncclReduce(input, output, n, t, o, root, comm, stream));
      return;
    case Collective::all_gather:
      NCCL_CHECK(ncclAllGather(input, output, block, t, comm, stream));
      return;
    case Collective::reduce_scatter:
      NCCL_CHECK(ncclReduceScatter(input, output, block, t, o, comm, stream));
      return;
    case Collective::all_reduce:
      NCCL_CHECK(ncclAllReduce(input, output, n, t, o, comm, stream));
      return;
    case Collective::all_to_all:
      NCCL_CHECK(ncclGroupStart());
      for (int q = 0; q < ranks; ++q) {
        NCCL_CHECK(ncclSend(in + q * block * e, block, t, q, comm, stream));
        NCCL_CHECK(ncclRecv(out + q * block * e, block, t, q, comm, stream));
      }
      NCCL_CHECK(ncclGroupEnd());
      return;
    case Collective::scatter:
      NCCL_CHECK(ncclGroupStart());
      if (rank == root)
        for (int q = 0; q < ranks; ++q)
          NCCL_CHECK(ncclSend(in + q * block * e, block, t, q, comm, stream));
      NCCL_CHECK(ncclRecv(output, block, t, root, comm, stream));
      NCCL_CHECK(ncclGroupEnd());
      return;
    case Collective::gather:
      NCCL_CHECK(ncclGroupStart());
      if (rank == root)
        for (int q = 0; q < ranks; ++q)
          NCCL_CHECK(ncclRecv(out + q * block * e, block, t, q, comm, stream));
      NCCL_CHECK(ncclSend(input, block, t, root, comm, stream));
      NCCL_CHECK(ncclGroupEnd());
      return;
    case Collective::barrier:
      throw UsageError(nccl_native_unsupported(c, false));
  }
}

NcclRegistration::NcclRegistration(ncclComm_t comm, void* buffer, std::int64_t bytes)
    : comm_(comm) {
  if (bytes > 0)
    NCCL_CHECK(ncclCommRegister(comm, buffer, static_cast<std::size_t>(bytes), &handle_));
}

NcclRegistration::~NcclRegistration() {
  // A destructor cannot throw; a failed deregistration leaves the buffer
  // registered until the communicator is destroyed, which frees it anyway.
  if (handle_) (void)ncclCommDeregister(comm_, handle_);
}

std::vector<std::unique_ptr<NcclRegistration>> register_storage(ncclComm_t comm,
                                                                const DeviceRank& rank,
                                                                const CompiledPlan& plan) {
  std::vector<std::unique_ptr<NcclRegistration>> out;
  DeviceGuard g(rank.device());
  out.push_back(std::make_unique<NcclRegistration>(comm, rank.input() - plan.input_offset,
                                                   plan.storage_in_bytes));
  if (plan.storage_out_bytes > 0)
    out.push_back(std::make_unique<NcclRegistration>(comm, rank.output() - plan.output_offset,
                                                     plan.storage_out_bytes));
  return out;
}

void nccl_native_finish(Collective c, int rank, int ranks, int root, std::int64_t count,
                        DataType type, RedOp op, void* output, cudaStream_t stream) {
  if (op != RedOp::avg || !is_reduction(c)) return;
  const BufferSizes io = io_sizes(c, ranks, rank, root, count);
  device_finish_avg(type, output, io.output, ranks, stream);
}

}  // namespace collkit::realrun
