// The executor's transport over MPI point-to-point, and MPI_CHECK.
#pragma once

#include <mpi.h>

#include <vector>

#include "realrun/transport.h"

namespace collkit::realrun {

// Throws RuntimeFailure naming the call, the source line and MPI's message
// when `code` is not MPI_SUCCESS. Communicators must use MPI_ERRORS_RETURN
// for codes to come back at all (MpiTransport and the bench set it).
void mpi_check(int code, const char* call, const char* file, int line);
#define MPI_CHECK(call) ::collkit::realrun::mpi_check((call), #call, __FILE__, __LINE__)

// One step = MPI_Irecv for every receive, then MPI_Isend for every send, then
// one MPI_Waitall. Receives are posted first so that arriving data finds its
// buffer instead of being staged as an unexpected message.
//
// Matching: every message uses one tag on a private duplicate of the
// communicator. MPI's non-overtaking rule (MPI 4.0, 3.5) says messages from
// one sender to one receiver on the same communicator and tag are matched in
// the order they were posted, and receives naming the same source match in
// the order they were posted: exactly the schedule's per-pair FIFO contract,
// across steps too, because each rank posts in program order. A sequence
// number per pair would add nothing but a tag range limit (MPI_TAG_UB may be
// as low as 32767). The duplicate keeps the bench's own collectives and any
// other traffic out of the matching.
class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(MPI_Comm comm);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void exchange(std::span<const Message> sends, std::span<const Message> recvs) override;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
};

}  // namespace collkit::realrun
