#include "realrun/multirank.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <string>

#include "core/error.h"
#include "realrun/reduce_host.h"

namespace collkit::realrun {
namespace {

struct PendingSend {
  int rank;
  std::uint32_t index;  // into plans[rank]->sends
  int ready;            // event recorded when the data was ready; -1: none needed
  bool ll;              // an LL message
};

struct PendingRecv {
  std::uint32_t index;  // into the receiver's plan.recvs
  bool direct;          // reduced straight from the sender's buffer (or its LL slot)
};

// A region a rank sent, and the event its receiver recorded once it had
// read it: the sender waits for it before it writes the region again.
struct PendingPull {
  PlanRef ref;  // in the sender's plan
  int event;
};

class Compiler {
 public:
  Compiler(std::span<const CompiledPlan* const> plans, CanRead can_read, void* context,
           bool release_at_step_end, std::int64_t ll_max_bytes)
      : plans_(plans),
        can_read_(can_read),
        context_(context),
        release_at_step_end_(release_at_step_end),
        ll_max_bytes_(ll_max_bytes),
        p_(static_cast<int>(plans.size())),
        sendq_(static_cast<std::size_t>(p_) * p_),
        recvq_(static_cast<std::size_t>(p_) * p_),
        state_(p_),
        waited_(static_cast<std::size_t>(p_) * p_, -1) {
    program_.ranks = p_;
  }

  MultiRankProgram run() {
    for (int r = 0; r < p_; ++r)
      if (plans_[r]->rank != r || plans_[r]->ranks != p_)
        throw UsageError("plan " + std::to_string(r) + " is rank " +
                         std::to_string(plans_[r]->rank) + " of " +
                         std::to_string(plans_[r]->ranks) + ", expected rank " + std::to_string(r) +
                         " of " + std::to_string(p_));
    for (bool progress = true; progress;) {
      progress = false;
      for (int r = 0; r < p_; ++r) {
        State& s = state_[r];
        if (s.step >= plans_[r]->steps.size()) continue;
        if (!s.posted) {
          post(r);
          progress = true;
        }
        if (s.posted && s.outstanding == 0 && !s.reduced) {
          reduce_direct(r);
          progress = true;
        }
        if (s.posted && s.reduced && s.unconsumed == 0) {
          complete(r);
          progress = true;
        }
      }
    }
    std::string stuck;
    int n_stuck = 0;
    for (int r = 0; r < p_; ++r) {
      if (state_[r].step >= plans_[r]->steps.size()) continue;
      if (++n_stuck <= 8)
        stuck += (stuck.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) +
                 " at step " + std::to_string(state_[r].step);
    }
    if (n_stuck > 0)
      throw ScheduleError("single-process run: deadlock, no rank can progress (" + stuck +
                          (n_stuck > 8 ? ", ..." : "") + ")");
    // The iteration ends with every read of a rank's memory done, so the
    // next one (or the caller) may write anywhere.
    for (int r = 0; r < p_; ++r) {
      for (const PendingPull& pull : state_[r].pulls) wait(r, pull.event);
      state_[r].pulls.clear();
    }
    for (int r = 0; r < p_; ++r)
      if (plans_[r]->finishes_avg()) emit({CmdKind::finish_avg, r});
    return std::move(program_);
  }

 private:
  struct State {
    std::size_t step = 0;
    bool posted = false;
    std::uint32_t outstanding = 0;  // sends and receives not matched yet
    bool direct = false;            // this step's reducing receives read the senders
    bool reduced = false;           // its direct reduces have been emitted
    std::uint32_t unconsumed = 0;   // its sends a receiver will still reduce from
    // Sent regions whose readers this stream has not waited for yet (any
    // step): a write that overlaps one waits for its reader first.
    std::vector<PendingPull> pulls;
    std::vector<std::pair<int, std::uint32_t>> direct_sends;  // (sender, send) per local
    std::vector<char> direct_ll;                              // per local: an LL message
  };

  // Whether send `index` of rank r is an LL message.
  bool is_ll(int r, std::uint32_t index) const {
    const PlanMessage& m = plans_[r]->sends[index];
    return ll_max_bytes_ >= 0 && m.peer != r && m.ref.bytes > 0 && m.ref.bytes <= ll_max_bytes_;
  }

  // Whether step `step` of rank r reduces straight from its senders: every
  // receive reduces, every sender is readable, and no reduce target overlaps
  // what the step sends (the senders' peers may still be reading it).
  bool direct_step(int r, const PlanStep& step) const {
    if (!can_read_ || step.recvs == 0) return false;
    const CompiledPlan& plan = *plans_[r];
    for (std::uint32_t i = 0; i < step.recvs; ++i) {
      const PlanMessage& m = plan.recvs[step.first_recv + i];
      if (m.reduce_local < 0 || !can_read_(context_, r, m.peer)) return false;
      const PlanLocal& l = plan.locals[m.reduce_local];
      for (std::uint32_t k = 0; k < step.sends; ++k)
        if (overlap(plan, l.dst, plan.sends[step.first_send + k].ref) ||
            (l.has_also && overlap(plan, l.also, plan.sends[step.first_send + k].ref)))
          return false;
    }
    return true;
  }

  void emit(const StreamCmd& c) { program_.cmds.push_back(c); }

  int record(int stream) {
    const int ev = static_cast<int>(program_.event_stream.size());
    program_.event_stream.push_back(stream);
    emit({CmdKind::record, stream, ev});
    return ev;
  }

  // Waits for `event` on `stream` unless the stream already waited for an
  // event at least as late on the same recording stream (slots of one
  // stream are numbered in recording order).
  void wait(int stream, int event) {
    const int from = program_.event_stream[event];
    if (from == stream) return;
    int& last = waited_[static_cast<std::size_t>(stream) * p_ + from];
    if (last >= event) return;
    last = event;
    emit({CmdKind::wait, stream, event});
  }

  // Before stream r writes `ref` of its rank: wait for the readers of every
  // region it sent that `ref` overlaps. So a sender goes on to its next step
  // at once, and waits for its receivers only where it would overwrite what
  // they read (the rendezvous' "sender's step ends after the receive" moved
  // to the first write that needs it). Every write to a rank's memory is a
  // command of its own stream.
  void guard(int r, const PlanRef& ref) {
    std::vector<PendingPull>& pulls = state_[r].pulls;
    for (const PendingPull& pull : pulls)
      if (overlap(*plans_[r], pull.ref, ref)) wait(r, pull.event);
    // Pulls the stream has now waited for (or an event recorded after them)
    // need no more waits.
    std::erase_if(pulls, [&](const PendingPull& pull) {
      return waited_[static_cast<std::size_t>(r) * p_ + program_.event_stream[pull.event]] >=
             pull.event;
    });
  }

  void post(int r) {
    State& s = state_[r];
    const CompiledPlan& plan = *plans_[r];
    const PlanStep& step = plan.steps[s.step];
    s.posted = true;
    s.outstanding = step.sends + step.recvs;
    s.direct = direct_step(r, step);
    s.reduced = false;
    s.unconsumed = 0;
    s.direct_sends.assign(step.locals, {-1, 0});
    s.direct_ll.assign(step.locals, 0);
    // The data is ready here: LL messages are pushed now, the others
    // recorded for their receivers.
    bool simple = false;
    for (std::uint32_t i = 0; i < step.sends; ++i) {
      if (!is_ll(r, step.first_send + i)) {
        simple = true;
        continue;
      }
      StreamCmd c{CmdKind::ll_send, r};
      c.peer = plan.sends[step.first_send + i].peer;
      c.send = step.first_send + i;
      emit(c);
      ++program_.ll_messages;
    }
    const int ready = simple ? record(r) : -1;
    for (std::uint32_t i = 0; i < step.sends; ++i) {
      const PlanMessage& m = plan.sends[step.first_send + i];
      const bool ll = is_ll(r, step.first_send + i);
      sendq_[pair(r, m.peer)].push_back({r, step.first_send + i, ll ? -1 : ready, ll});
    }
    for (std::uint32_t i = 0; i < step.recvs; ++i) {
      const PlanMessage& m = plan.recvs[step.first_recv + i];
      recvq_[pair(m.peer, r)].push_back({step.first_recv + i, s.direct});
    }
    for (std::uint32_t i = 0; i < step.sends; ++i) match(r, plan.sends[step.first_send + i].peer);
    for (std::uint32_t i = 0; i < step.recvs; ++i) match(plan.recvs[step.first_recv + i].peer, r);
  }

  void match(int src, int dst) {
    auto& sq = sendq_[pair(src, dst)];
    auto& rq = recvq_[pair(src, dst)];
    while (!sq.empty() && !rq.empty()) {
      const PendingSend snd = sq.front();
      const PendingRecv rcv = rq.front();
      sq.pop_front();
      rq.pop_front();
      const PlanMessage& sm = plans_[src]->sends[snd.index];
      const PlanMessage& rm = plans_[dst]->recvs[rcv.index];
      if (sm.ref.bytes != rm.ref.bytes)
        throw RuntimeFailure("rank " + std::to_string(dst) + " expects " +
                             std::to_string(rm.ref.bytes) + " bytes from rank " +
                             std::to_string(src) + " but it sent " + std::to_string(sm.ref.bytes));
      if (snd.ready >= 0) wait(dst, snd.ready);
      --state_[src].outstanding;
      --state_[dst].outstanding;
      if (rcv.direct) {
        // Reduced later, in the receiver's local order, from the sender's
        // buffer; the sender's step cannot end before that.
        State& d = state_[dst];
        const PlanStep& step = plans_[dst]->steps[d.step];
        const std::size_t local = static_cast<std::size_t>(rm.reduce_local) - step.first_local;
        d.direct_sends[local] = {src, snd.index};
        d.direct_ll[local] = snd.ll ? 1 : 0;
        ++state_[src].unconsumed;
        continue;
      }
      guard(dst, rm.ref);
      StreamCmd c{CmdKind::copy, dst};
      c.peer = src;
      c.send = snd.index;
      c.index = rcv.index;
      c.ll = snd.ll;
      emit(c);
      ++program_.copies;
      program_.bytes_copied += rm.ref.bytes;
      if (src != dst && !snd.ll) state_[src].pulls.push_back({sm.ref, record(dst)});
    }
  }

  // Every message of r's step is matched: its direct reduces run now, in
  // the plan's order, and each releases its sender.
  void reduce_direct(int r) {
    State& s = state_[r];
    s.reduced = true;
    if (!s.direct) return;
    const PlanStep& step = plans_[r]->steps[s.step];
    for (std::uint32_t i = 0; i < step.locals; ++i) {
      const auto [src, send] = s.direct_sends[i];
      if (src < 0) continue;
      guard_local(r, step.first_local + i);
      StreamCmd c{CmdKind::reduce_from, r};
      c.peer = src;
      c.send = send;
      c.index = step.first_local + i;
      c.ll = s.direct_ll[i] != 0;
      emit(c);
      ++program_.direct_reduces;
      if (src != r && !c.ll) state_[src].pulls.push_back({plans_[src]->sends[send].ref, record(r)});
      --state_[src].unconsumed;
    }
  }

  void complete(int r) {
    State& s = state_[r];
    const CompiledPlan& plan = *plans_[r];
    const PlanStep& step = plan.steps[s.step];
    if (release_at_step_end_) {
      for (const PendingPull& pull : s.pulls) wait(r, pull.event);
      s.pulls.clear();
    }
    for (std::uint32_t i = 0; i < step.locals; ++i) {
      if (s.direct && s.direct_sends[i].first >= 0) continue;  // done by reduce_direct
      guard_local(r, step.first_local + i);
      StreamCmd c{CmdKind::local, r};
      c.index = step.first_local + i;
      emit(c);
    }
    ++s.step;
    s.posted = false;
  }

  void guard_local(int r, std::uint32_t local) {
    const PlanLocal& l = plans_[r]->locals[local];
    guard(r, l.dst);
    if (l.has_also) guard(r, l.also);
  }

  std::size_t pair(int src, int dst) const { return static_cast<std::size_t>(src) * p_ + dst; }

  std::span<const CompiledPlan* const> plans_;
  CanRead can_read_;
  void* context_;
  bool release_at_step_end_;
  std::int64_t ll_max_bytes_;
  int p_;
  std::vector<std::deque<PendingSend>> sendq_;
  std::vector<std::deque<PendingRecv>> recvq_;
  std::vector<State> state_;
  std::vector<int> waited_;  // [stream * p + recording stream] = latest slot waited for
  MultiRankProgram program_;
};

}  // namespace

MultiRankProgram compile_multirank(std::span<const CompiledPlan* const> plans, CanRead can_read,
                                   void* context, bool release_at_step_end,
                                   std::int64_t ll_max_bytes) {
  return Compiler(plans, can_read, context, release_at_step_end, ll_max_bytes).run();
}

void replay(const MultiRankProgram& program, std::span<const CompiledPlan* const> plans,
            std::span<const AreaBases> bases, StreamEngine& engine) {
  if (program.ll_messages > 0)
    throw UsageError(
        "a multi-rank program with LL messages runs on the interpreter only, not on "
        "streams");
  for (const StreamCmd& c : program.cmds) {
    switch (c.kind) {
      case CmdKind::ll_send:
        break;
      case CmdKind::record:
        engine.record(c.stream, c.event);
        break;
      case CmdKind::wait:
        engine.wait(c.stream, c.event);
        break;
      case CmdKind::copy: {
        const PlanMessage& s = plans[c.peer]->sends[c.send];
        const PlanMessage& r = plans[c.stream]->recvs[c.index];
        if (r.ref.bytes > 0)
          engine.copy(c.stream, bases[c.stream].at(r.ref), c.peer, bases[c.peer].at(s.ref),
                      static_cast<std::size_t>(r.ref.bytes));
        break;
      }
      case CmdKind::local: {
        const CompiledPlan& plan = *plans[c.stream];
        const PlanLocal& l = plan.locals[c.index];
        if (l.src.bytes == 0) break;
        const AreaBases& b = bases[c.stream];
        engine.local(c.stream, plan, l.reduce, b.at(l.dst), b.at(l.src),
                     l.has_also ? b.at(l.also) : nullptr, static_cast<std::size_t>(l.src.bytes));
        break;
      }
      case CmdKind::reduce_from: {
        const CompiledPlan& plan = *plans[c.stream];
        const PlanLocal& l = plan.locals[c.index];
        if (l.src.bytes == 0) break;
        const AreaBases& b = bases[c.stream];
        engine.local(c.stream, plan, true, b.at(l.dst),
                     bases[c.peer].at(plans[c.peer]->sends[c.send].ref),
                     l.has_also ? b.at(l.also) : nullptr, static_cast<std::size_t>(l.src.bytes));
        break;
      }
      case CmdKind::finish_avg: {
        const CompiledPlan& plan = *plans[c.stream];
        if (plan.output_bytes > 0)
          engine.finish_avg(c.stream, plan, bases[c.stream].base[static_cast<int>(Area::output)]);
        break;
      }
    }
  }
}

HostStreams::HostStreams(int streams, int events)
    : queues_(streams), done_(streams, 0), event_stream_(events, -1), event_position_(events, 0) {}

void HostStreams::record(int stream, int event) {
  queues_[stream].push_back({});
  event_stream_[event] = stream;
  event_position_[event] = queues_[stream].size();
}

void HostStreams::wait(int stream, int event) {
  if (event_stream_[event] < 0)
    throw RuntimeFailure("stream " + std::to_string(stream) + " waits for event " +
                         std::to_string(event) + " that was never recorded");
  Task t;
  t.wait_stream = event_stream_[event];
  t.wait_position = event_position_[event];
  queues_[stream].push_back(std::move(t));
}

void HostStreams::copy(int dst_rank, std::byte* dst, int, const std::byte* src, std::size_t bytes) {
  // Zero-byte messages may carry null pointers, which memcpy must not get.
  queues_[dst_rank].push_back({[=] {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }});
}

void HostStreams::local(int rank, const CompiledPlan& plan, bool reduce, std::byte* dst,
                        const std::byte* src, std::byte* also, std::size_t bytes) {
  const DataType type = plan.type;
  const RedOp op = plan.op;
  const std::int64_t count = static_cast<std::int64_t>(bytes) / plan.elem_size;
  queues_[rank].push_back({[=] {
    if (bytes == 0) return;
    if (reduce) {
      reduce_into(type, op, dst, src, count);
      if (also) std::memcpy(also, dst, bytes);
    } else if (dst != src) {
      std::memmove(dst, src, bytes);
    }
  }});
}

void HostStreams::finish_avg(int rank, const CompiledPlan& plan, std::byte* output) {
  const DataType type = plan.type;
  const std::int64_t count = plan.output_bytes / plan.elem_size;
  const int ranks = plan.ranks;
  queues_[rank].push_back({[=] { realrun::finish_avg(type, output, count, ranks); }});
}

void HostStreams::run_all(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int> runnable;
  for (;;) {
    runnable.clear();
    bool pending = false;
    for (std::size_t s = 0; s < queues_.size(); ++s) {
      if (done_[s] == queues_[s].size()) continue;
      pending = true;
      const Task& t = queues_[s][done_[s]];
      if (t.wait_stream < 0 || done_[t.wait_stream] >= t.wait_position)
        runnable.push_back(static_cast<int>(s));
    }
    if (!pending) break;
    if (runnable.empty())
      throw RuntimeFailure("host streams: every pending stream waits for an event not yet reached");
    const int s = runnable[std::uniform_int_distribution<std::size_t>(0, runnable.size() - 1)(rng)];
    Task& t = queues_[s][done_[s]];
    if (t.work) t.work();
    ++done_[s];
  }
  for (auto& q : queues_) q.clear();
  std::fill(done_.begin(), done_.end(), 0);
}

}  // namespace collkit::realrun
