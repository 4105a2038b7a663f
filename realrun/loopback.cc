#include "realrun/loopback.h"

#include <cstring>
#include <exception>
#include <thread>

#include "core/error.h"

namespace collkit::realrun {

class LoopbackWorld::RankTransport final : public Transport {
 public:
  RankTransport(LoopbackWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.ranks_; }
  void exchange(std::span<const Message> sends, std::span<const Message> recvs) override {
    world_.exchange(rank_, sends, recvs);
  }

 private:
  LoopbackWorld& world_;
  int rank_;
};

LoopbackWorld::LoopbackWorld(int ranks, std::chrono::milliseconds timeout)
    : ranks_(ranks), timeout_(timeout) {
  if (ranks < 1) throw UsageError("loopback needs >= 1 rank (got " + std::to_string(ranks) + ")");
  queues_.resize(static_cast<std::size_t>(ranks) * ranks);
  for (int r = 0; r < ranks; ++r) transports_.push_back(std::make_unique<RankTransport>(*this, r));
}

LoopbackWorld::~LoopbackWorld() = default;

Transport& LoopbackWorld::transport(int rank) {
  if (rank < 0 || rank >= ranks_)
    throw UsageError("rank " + std::to_string(rank) + " is out of range for " +
                     std::to_string(ranks_) + " ranks");
  return *transports_[rank];
}

void LoopbackWorld::fail(std::unique_lock<std::mutex>& lock, const std::string& why) {
  failed_ = true;
  lock.unlock();
  changed_.notify_all();
  throw RuntimeFailure("loopback: " + why);
}

void LoopbackWorld::wait(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready,
                         const std::string& what) {
  if (!changed_.wait_for(lock, timeout_, [&] { return failed_ || ready(); }))
    fail(lock, what + " timed out (deadlock?)");
  // Even if the message arrived, a failed sender may already have unwound the
  // stack the message points into.
  if (failed_) {
    lock.unlock();
    throw RuntimeFailure("loopback: " + what + " aborted because another rank failed");
  }
}

void LoopbackWorld::exchange(int rank, std::span<const Message> sends,
                             std::span<const Message> recvs) {
  // The Pending records live on this stack frame: this function returns only
  // once every receiver has consumed them (or the world has failed, after
  // which no rank touches a queue again).
  std::vector<Pending> pending(sends.size());
  std::unique_lock lock(mutex_);
  if (failed_) throw RuntimeFailure("loopback: another rank failed");
  for (std::size_t i = 0; i < sends.size(); ++i) {
    if (sends[i].peer < 0 || sends[i].peer >= ranks_)
      fail(lock, "rank " + std::to_string(rank) + " sends to invalid peer " +
                     std::to_string(sends[i].peer));
    pending[i] = {sends[i].data, sends[i].bytes, false};
    queue(rank, sends[i].peer).push_back(&pending[i]);
  }
  changed_.notify_all();
  for (const Message& m : recvs) {
    if (m.peer < 0 || m.peer >= ranks_)
      fail(lock, "rank " + std::to_string(rank) + " receives from invalid peer " +
                     std::to_string(m.peer));
    auto& q = queue(m.peer, rank);
    wait(
        lock, [&] { return !q.empty(); },
        "rank " + std::to_string(rank) + " receiving " + std::to_string(m.bytes) +
            " bytes from rank " + std::to_string(m.peer));
    Pending* p = q.front();
    if (p->bytes != m.bytes)
      fail(lock, "rank " + std::to_string(rank) + " expects " + std::to_string(m.bytes) +
                     " bytes from rank " + std::to_string(m.peer) + " but it sent " +
                     std::to_string(p->bytes));
    q.pop_front();
    if (m.bytes > 0) std::memcpy(m.data, p->data, m.bytes);
    p->done = true;
  }
  changed_.notify_all();
  for (std::size_t i = 0; i < sends.size(); ++i)
    wait(
        lock, [&] { return pending[i].done; },
        "rank " + std::to_string(rank) + " sending " + std::to_string(sends[i].bytes) +
            " bytes to rank " + std::to_string(sends[i].peer));
}

void LoopbackWorld::run(const std::function<void(int rank, Transport& transport)>& body) {
  std::vector<std::exception_ptr> errors(ranks_);
  {
    std::vector<std::jthread> threads;
    threads.reserve(ranks_);
    for (int r = 0; r < ranks_; ++r)
      threads.emplace_back([this, r, &body, &errors] {
        try {
          body(r, *transports_[r]);
        } catch (...) {
          errors[r] = std::current_exception();
          std::lock_guard lock(mutex_);
          failed_ = true;
          changed_.notify_all();
        }
      });
  }
  // A rank that failed first carries the cause; the others only say that
  // they were aborted, so prefer an error that is not an abort.
  std::exception_ptr first;
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      if (std::string(ex.what()).find("another rank failed") == std::string::npos) {
        first = e;
        break;
      }
    } catch (...) {
      first = e;
      break;
    }
    if (!first) first = e;
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace collkit::realrun
