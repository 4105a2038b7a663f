// Every rank of a collective in one process (the CUDA backend's mode, like
// nccl-tests -g): the ranks' compiled plans are turned, once, into one list
// of asynchronous stream commands, which an engine replays per iteration.
//
// One stream per rank. Messages between a pair of ranks match in FIFO order
// with rendezvous semantics, as in algorithms/reference.cc: the compiler
// walks the ranks' steps like the reference executor, and for each matched
// send/recv pair emits, on the receiver's stream, a wait for the event the
// sender recorded when the step's send data became ready, then the copy,
// then an event the sender waits for before it next writes a region that
// overlaps what was read (not at the end of its step: a sender whose later
// steps leave the sent bytes alone goes on at once; every read of a rank's
// memory is waited for by the end of the program). A step's local
// operations follow its communication on the rank's own stream. The CUDA engine maps commands to
// cudaEventRecord, cudaStreamWaitEvent, cudaMemcpy(Peer)Async and kernels; HostStreams below runs
// the same list on host memory in a random order that respects only the streams and events, so
// tests prove the ordering without a GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "realrun/plan.h"

namespace collkit::realrun {

enum class CmdKind : std::uint8_t { record, wait, copy, local, reduce_from, finish_avg, ll_send };

struct StreamCmd {
  CmdKind kind = CmdKind::record;
  int stream = 0;          // the rank whose stream runs the command
  int event = -1;          // record: the slot recorded; wait: the slot waited for
  int peer = -1;           // copy, reduce_from: the sending rank
  std::uint32_t send = 0;  // copy, reduce_from: index into the sender's plan.sends
  // copy: into the receiver's plan.recvs; local, reduce_from: into plan.locals
  // (reduce_from runs that reduce with the sender's buffer as its source).
  std::uint32_t index = 0;
  // copy, reduce_from: an LL message (below), read from the receiver's LL
  // slot of the message instead of the sender's buffer.
  bool ll = false;
};

struct MultiRankProgram {
  int ranks = 0;
  std::vector<StreamCmd> cmds;
  std::vector<int> event_stream;  // per event slot, the stream that records it
  std::int64_t copies = 0;
  std::int64_t bytes_copied = 0;
  std::int64_t direct_reduces = 0;  // receives reduced straight from the sender
  std::int64_t ll_messages = 0;
};

// Whether rank `dst`'s kernels can read rank `src`'s memory (same GPU, peer
// access, host memory). Where they can, a step whose receives all reduce
// and whose reduce targets do not overlap its own sends reduces straight
// from the senders' buffers (one kernel: read both, write one) instead of
// copying into the temp area first (2 more passes over the block); the
// senders wait for those kernels before they write the bytes read.
using CanRead = bool (*)(void* context, int dst, int src);

// plans[r] is rank r's plan; every plan must belong to one schedule. Throws
// RuntimeFailure for a message whose two sides disagree on its size and
// ScheduleError for a deadlock (no rank can progress), naming the ranks.
// can_read null: every receive is a copy. release_at_step_end: every sender
// waits for its step's receivers at the end of the step (the first
// compiler's rendezvous order, kept to measure the difference on a GPU:
// COLLKIT_RELEASE_AT_STEP_END=1, docs/BENCH.md).
//
// ll_max_bytes >= 0: every message of 1..ll_max_bytes bytes between two
// ranks is an LL message (the caller asks for it only where every rank can
// write every other's memory: one GPU, or host memory), for the interpreter
// only (realrun/interpreter.h): the sender pushes it into the
// receiver's slot as soon as the step is posted (an ll_send command where the
// "data ready" record would be), the receiver's copy or reduce_from reads the
// slot (ll = true) with no wait before it, and nothing is recorded after it
// (the sender's buffer is never read by the peer, so never guarded). Slots
// are written once per iteration, so the engine must not start an
// iteration's sends before the previous iteration's receives have ended (one
// kernel launch per iteration on one GPU does that). replay() refuses LL.
MultiRankProgram compile_multirank(std::span<const CompiledPlan* const> plans,
                                   CanRead can_read = nullptr, void* context = nullptr,
                                   bool release_at_step_end = false,
                                   std::int64_t ll_max_bytes = -1);

// What runs the commands. Pointers are resolved by replay(): copy gets both
// ends' addresses, local the operation's.
class StreamEngine {
 public:
  virtual ~StreamEngine() = default;
  virtual void record(int stream, int event) = 0;
  virtual void wait(int stream, int event) = 0;
  virtual void copy(int dst_rank, std::byte* dst, int src_rank, const std::byte* src,
                    std::size_t bytes) = 0;
  // dst = dst op src (and also = the result) or dst = src, `bytes` long.
  virtual void local(int rank, const CompiledPlan& plan, bool reduce, std::byte* dst,
                     const std::byte* src, std::byte* also, std::size_t bytes) = 0;
  virtual void finish_avg(int rank, const CompiledPlan& plan, std::byte* output) = 0;
};

// Enqueues one iteration of `program` on `engine`; bases[r] are rank r's areas.
void replay(const MultiRankProgram& program, std::span<const CompiledPlan* const> plans,
            std::span<const AreaBases> bases, StreamEngine& engine);

// Host memory, simulated streams: commands are queued per stream and run by
// run_all() in an order drawn from `seed` among every order the streams and
// events allow (a wait is runnable once the stream that recorded the event
// has run past the record). Copies are memcpy, locals reduce_into/memmove.
class HostStreams final : public StreamEngine {
 public:
  HostStreams(int streams, int events);
  void record(int stream, int event) override;
  void wait(int stream, int event) override;
  void copy(int dst_rank, std::byte* dst, int src_rank, const std::byte* src,
            std::size_t bytes) override;
  void local(int rank, const CompiledPlan& plan, bool reduce, std::byte* dst, const std::byte* src,
             std::byte* also, std::size_t bytes) override;
  void finish_avg(int rank, const CompiledPlan& plan, std::byte* output) override;

  // Runs everything queued; throws RuntimeFailure if a wait can never be
  // satisfied (a wait queued before any record of its event).
  void run_all(std::uint64_t seed);

 private:
  struct Task {
    std::function<void()> work;  // empty for record/wait
    int wait_stream = -1;        // wait: the stream and position to reach
    std::size_t wait_position = 0;
  };
  std::vector<std::vector<Task>> queues_;  // per stream, in order
  std::vector<std::size_t> done_;          // per stream, tasks run
  // Per event slot, where its latest record sits (stream, position after it).
  std::vector<int> event_stream_;
  std::vector<std::size_t> event_position_;
};

}  // namespace collkit::realrun
