#include "realrun/mpi_transport.h"

#include <climits>
#include <string>

#include "core/error.h"

namespace collkit::realrun {
namespace {

constexpr int kTag = 7;

int message_count(const Message& m, const char* what) {
  if (m.bytes > static_cast<std::size_t>(INT_MAX))
    throw RuntimeFailure(std::string(what) + " of " + std::to_string(m.bytes) +
                         " bytes with rank " + std::to_string(m.peer) +
                         " exceeds MPI's int count (2^31-1 bytes)");
  return static_cast<int>(m.bytes);
}

}  // namespace

void mpi_check(int code, const char* call, const char* file, int line) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  throw RuntimeFailure(std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                       ": " +
                       (len > 0 ? std::string(text, len) : "MPI error " + std::to_string(code)));
}

MpiTransport::MpiTransport(MPI_Comm comm) {
  MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiTransport::~MpiTransport() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiTransport::exchange(std::span<const Message> sends, std::span<const Message> recvs) {
  const std::size_t n = sends.size() + recvs.size();
  requests_.resize(n);
  statuses_.resize(n);
  std::size_t i = 0;
  for (const Message& m : recvs)
    MPI_CHECK(MPI_Irecv(m.data, message_count(m, "receive"), MPI_BYTE, m.peer, kTag, comm_,
                        &requests_[i++]));
  for (const Message& m : sends)
    MPI_CHECK(MPI_Isend(m.data, message_count(m, "send"), MPI_BYTE, m.peer, kTag, comm_,
                        &requests_[i++]));
  const int rc = MPI_Waitall(static_cast<int>(n), requests_.data(), statuses_.data());
  if (rc == MPI_ERR_IN_STATUS) {
    for (std::size_t k = 0; k < n; ++k)
      if (statuses_[k].MPI_ERROR != MPI_SUCCESS && statuses_[k].MPI_ERROR != MPI_ERR_PENDING)
        mpi_check(statuses_[k].MPI_ERROR, k < recvs.size() ? "MPI_Irecv" : "MPI_Isend", __FILE__,
                  __LINE__);
  }
  MPI_CHECK(rc);
  // A longer receive buffer would accept a shorter message silently; the
  // schedule says both sides agree on the size, so a difference is a bug.
  for (std::size_t k = 0; k < recvs.size(); ++k) {
    int got = 0;
    MPI_CHECK(MPI_Get_count(&statuses_[k], MPI_BYTE, &got));
    if (static_cast<std::size_t>(got) != recvs[k].bytes)
      throw RuntimeFailure("rank " + std::to_string(rank_) + " expected " +
                           std::to_string(recvs[k].bytes) + " bytes from rank " +
                           std::to_string(recvs[k].peer) + " but received " + std::to_string(got));
  }
}

}  // namespace collkit::realrun
