// The point-to-point layer the executor runs a schedule over. One Transport
// object serves one rank.
#pragma once

#include <cstddef>
#include <span>

namespace collkit::realrun {

// One message of a step: `bytes` at `data`, to or from `peer`.
struct Message {
  int peer = -1;
  std::byte* data = nullptr;
  std::size_t bytes = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Starts every send and receive of one step, then returns when all have
  // completed (the schedule's step semantics). Messages between one pair of
  // ranks match in the order they were posted, across calls too. A send
  // buffer may not be reused, nor a receive buffer read, before the call
  // returns; a mismatched size is an error, never a truncation.
  virtual void exchange(std::span<const Message> sends, std::span<const Message> recvs) = 0;
};

}  // namespace collkit::realrun
