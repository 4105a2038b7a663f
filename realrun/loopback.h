// All ranks of a run in one process, one thread each: lets the executor be
// tested on every schedule without mpirun. Sends are rendezvous (a send
// completes only when the receiver has copied it), like large MPI messages,
// so a schedule that would deadlock over MPI deadlocks here too, and is
// reported after a timeout instead of hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "realrun/transport.h"

namespace collkit::realrun {

class LoopbackWorld {
 public:
  explicit LoopbackWorld(int ranks, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~LoopbackWorld();
  int size() const { return ranks_; }
  Transport& transport(int rank);

  // Runs body(rank, transport) on one thread per rank and joins them. If any
  // rank throws, the others are woken and fail too; the first exception is
  // rethrown here.
  void run(const std::function<void(int rank, Transport& transport)>& body);

 private:
  class RankTransport;
  struct Pending {
    const std::byte* data;
    std::size_t bytes;
    bool done;
  };
  void exchange(int rank, std::span<const Message> sends, std::span<const Message> recvs);
  [[noreturn]] void fail(std::unique_lock<std::mutex>& lock, const std::string& why);
  void wait(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready,
            const std::string& what);
  std::deque<Pending*>& queue(int src, int dst) { return queues_[src * ranks_ + dst]; }

  int ranks_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::deque<Pending*>> queues_;  // [src * ranks + dst], in posting order
  bool failed_ = false;
  std::vector<std::unique_ptr<RankTransport>> transports_;
};

}  // namespace collkit::realrun
