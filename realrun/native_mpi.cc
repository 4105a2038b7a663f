#include "realrun/native_mpi.h"

#include <climits>
#include <cstring>
#include <string>

#include "core/error.h"
#include "realrun/mpi_transport.h"
#include "realrun/reduce_host.h"

namespace collkit::realrun {
namespace {

// MPI has no 16-bit float types or ops: half and bfloat16 travel as
// MPI_UINT16_T and reduce with user ops that call the executor's own loops.
template <DataType T, RedOp O>
void user_op(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(T, O, inout, in, *len);
}

template <DataType T>
MPI_User_function* user_function(RedOp op) {
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:
      return &user_op<T, RedOp::sum>;
    case RedOp::prod:
      return &user_op<T, RedOp::prod>;
    case RedOp::min:
      return &user_op<T, RedOp::min>;
    case RedOp::max:
      return &user_op<T, RedOp::max>;
  }
  return nullptr;
}

MPI_Datatype mpi_type_of(DataType t) {
  switch (t) {
    case DataType::int8:
      return MPI_INT8_T;
    case DataType::uint8:
      return MPI_UINT8_T;
    case DataType::int32:
      return MPI_INT32_T;
    case DataType::uint32:
      return MPI_UINT32_T;
    case DataType::int64:
      return MPI_INT64_T;
    case DataType::uint64:
      return MPI_UINT64_T;
    case DataType::half:
    case DataType::bfloat16:
      return MPI_UINT16_T;
    case DataType::float32:
      return MPI_FLOAT;
    case DataType::float64:
      return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op builtin_op(RedOp op) {
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:
      return MPI_SUM;
    case RedOp::prod:
      return MPI_PROD;
    case RedOp::min:
      return MPI_MIN;
    case RedOp::max:
      return MPI_MAX;
  }
  return MPI_OP_NULL;
}

int int_count(std::int64_t n) {
  if (n > INT_MAX)
    throw RuntimeFailure("native MPI collective of " + std::to_string(n) +
                         " elements exceeds MPI's int count");
  return static_cast<int>(n);
}

}  // namespace

std::string native_in_place_unsupported(Collective c) {
  if (c == Collective::reduce_scatter)
    return "MPI_IN_PLACE leaves MPI_Reduce_scatter_block's result at offset 0, not at the "
           "rank's block as NCCL's in-place reduce_scatter does";
  const InPlaceLayout l = in_place_layout(c, 1, 0, 0, 0);
  return l.defined ? "" : l.reason;
}

NativeCollective::NativeCollective(Collective c, MPI_Comm comm, int root, std::int64_t count,
                                   DataType type, RedOp op, bool in_place)
    : collective_(c),
      comm_(comm),
      root_(root),
      count_(count),
      type_(type),
      op_(op),
      in_place_(in_place) {
  MPI_CHECK(MPI_Comm_rank(comm, &rank_));
  MPI_CHECK(MPI_Comm_size(comm, &ranks_));
  if (in_place) {
    const std::string why = native_in_place_unsupported(c);
    if (!why.empty()) throw UsageError(why);
  }
  const bool blocks = c == Collective::all_gather || c == Collective::scatter ||
                      c == Collective::gather || c == Collective::reduce_scatter ||
                      c == Collective::all_to_all;
  if (blocks && count % ranks_ != 0)
    throw UsageError("native " + std::string(to_string(c)) + " needs a count divisible by " +
                     std::to_string(ranks_) + " ranks (got " + std::to_string(count) + ")");
  block_ = int_count(blocks ? count / ranks_ : count);
  int_count(count);

  mpi_type_ = mpi_type_of(type);
  if (type == DataType::half || type == DataType::bfloat16) {
    MPI_User_function* f = type == DataType::half ? user_function<DataType::half>(op)
                                                  : user_function<DataType::bfloat16>(op);
    MPI_CHECK(MPI_Op_create(f, /*commute=*/1, &mpi_op_));
    own_op_ = true;
  } else {
    mpi_op_ = builtin_op(op);
  }

  const int e = size_of(type);
  const BufferSizes io = io_sizes(c, ranks_, rank_, root, count);
  input_bytes_ = static_cast<std::size_t>(io.input * e);
  output_bytes_ = static_cast<std::size_t>(io.output * e);
  if (in_place) {
    const InPlaceLayout l = in_place_layout(c, ranks_, rank_, root, count);
    storage_in_ = AlignedBuffer(static_cast<std::size_t>(l.buffer * e));
    input_ = storage_in_.data() + l.input_offset * e;
    output_ = storage_in_.data() + l.output_offset * e;
  } else {
    storage_in_ = AlignedBuffer(input_bytes_);
    storage_out_ = AlignedBuffer(output_bytes_);
    input_ = storage_in_.data();
    output_ = storage_out_.data();
  }
}

NativeCollective::~NativeCollective() {
  if (own_op_) MPI_Op_free(&mpi_op_);
}

void NativeCollective::run() {
  const int n = static_cast<int>(count_);
  const bool at_root = rank_ == root_;
  void* in = input_;
  void* out = output_;
  switch (collective_) {
    case Collective::broadcast:
      // MPI_Bcast works in one buffer; out of place the root first copies its
      // input to its output, as NCCL does inside ncclBroadcast.
      if (at_root && in != out && n > 0) std::memcpy(out, in, output_bytes_);
      MPI_CHECK(MPI_Bcast(out, n, mpi_type_, root_, comm_));
      break;
    case Collective::reduce:
      MPI_CHECK(MPI_Reduce(in_place_ && at_root ? MPI_IN_PLACE : in, at_root ? out : nullptr, n,
                           mpi_type_, mpi_op_, root_, comm_));
      break;
    case Collective::all_gather:
      MPI_CHECK(MPI_Allgather(in_place_ ? MPI_IN_PLACE : in, block_, mpi_type_, out, block_,
                              mpi_type_, comm_));
      break;
    case Collective::scatter:
      MPI_CHECK(MPI_Scatter(in, block_, mpi_type_, out, block_, mpi_type_, root_, comm_));
      break;
    case Collective::gather:
      MPI_CHECK(MPI_Gather(in, block_, mpi_type_, out, block_, mpi_type_, root_, comm_));
      break;
    case Collective::reduce_scatter:
      MPI_CHECK(MPI_Reduce_scatter_block(in, out, block_, mpi_type_, mpi_op_, comm_));
      break;
    case Collective::all_reduce:
      MPI_CHECK(MPI_Allreduce(in_place_ ? MPI_IN_PLACE : in, out, n, mpi_type_, mpi_op_, comm_));
      break;
    case Collective::all_to_all:
      MPI_CHECK(MPI_Alltoall(in, block_, mpi_type_, out, block_, mpi_type_, comm_));
      break;
    case Collective::barrier:
      MPI_CHECK(MPI_Barrier(comm_));
      break;
  }
  if (op_ == RedOp::avg && is_reduction(collective_))
    finish_avg(type_, output_, static_cast<std::int64_t>(output_bytes_) / size_of(type_), ranks_);
}

}  // namespace collkit::realrun
