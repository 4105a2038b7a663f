#include "realrun/device_program.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"

namespace collkit::realrun {
namespace {

// Where an operation's bytes lie: (rank, allocation, first byte, end byte).
// lines: an LL operation's, split over the lanes by 8-byte lines from lo, so
// two such spans that are equal give every byte to the same lane.
struct Span {
  int rank;
  int storage;
  std::int64_t lo, hi;
  bool lines = false;
  bool overlaps(const Span& o) const {
    return rank == o.rank && storage == o.storage && lo < o.hi && o.lo < hi;
  }
  // Whether two lanes may touch a byte both spans hold.
  bool conflicts(const Span& o) const {
    if (!overlaps(o)) return false;
    return !(lines && o.lines && lo == o.lo && hi == o.hi);
  }
};

// The reads and writes of one rank's operations since its last barrier.
struct Hazards {
  std::vector<Span> reads, writes;
  static bool any(const std::vector<Span>& set, const Span& s) {
    for (const Span& x : set)
      if (x.conflicts(s)) return true;
    return false;
  }
  // Whether an operation with these reads and writes may run on other
  // slices than the earlier ones without a barrier.
  bool conflict(const std::vector<Span>& r, const std::vector<Span>& w) const {
    for (const Span& s : r)
      if (any(writes, s)) return true;
    for (const Span& s : w)
      if (any(writes, s) || any(reads, s)) return true;
    return false;
  }
  void add(const std::vector<Span>& r, const std::vector<Span>& w) {
    reads.insert(reads.end(), r.begin(), r.end());
    writes.insert(writes.end(), w.begin(), w.end());
  }
  void clear() {
    reads.clear();
    writes.clear();
  }
};

interp::OpCode code_of(DevOpKind k, LlProtocol protocol) {
  if (protocol == LlProtocol::ll128) {
    if (k == DevOpKind::ll_send) return interp::kLl128Send;
    if (k == DevOpKind::ll_copy) return interp::kLl128Copy;
    if (k == DevOpKind::ll_reduce) return interp::kLl128Reduce;
  }
  switch (k) {
    case DevOpKind::wait:
      return interp::kWait;
    case DevOpKind::signal:
      return interp::kSignal;
    case DevOpKind::barrier:
      return interp::kBarrier;
    case DevOpKind::copy:
      return interp::kCopy;
    case DevOpKind::reduce:
      return interp::kReduce;
    case DevOpKind::finish_avg:
      return interp::kFinishAvg;
    case DevOpKind::ll_send:
      return interp::kLlSend;
    case DevOpKind::ll_copy:
      return interp::kLlCopy;
    case DevOpKind::ll_reduce:
      return interp::kLlReduce;
  }
  return interp::kWait;
}

}  // namespace

std::string_view to_string(LlProtocol p) { return p == LlProtocol::ll128 ? "LL128" : "LL"; }

std::string_view to_string(DevOpKind k) {
  switch (k) {
    case DevOpKind::wait:
      return "wait";
    case DevOpKind::signal:
      return "signal";
    case DevOpKind::barrier:
      return "barrier";
    case DevOpKind::copy:
      return "copy";
    case DevOpKind::reduce:
      return "reduce";
    case DevOpKind::finish_avg:
      return "finish_avg";
    case DevOpKind::ll_send:
      return "ll_send";
    case DevOpKind::ll_copy:
      return "ll_copy";
    case DevOpKind::ll_reduce:
      return "ll_reduce";
  }
  return "?";
}

namespace {

// Builds one DeviceProgram from the ranks' plans and their multi-rank
// program, in the order of compile_device_program's steps.
class DeviceProgramBuilder {
 public:
  DeviceProgramBuilder(std::span<const CompiledPlan* const> plans, LlProtocol protocol,
                       DeviceProgram& d)
      : plans_(plans), p_(static_cast<int>(plans.size())), protocol_(protocol), d_(d), per_(p_) {
    d.ll_bytes.assign(p_, 0);
  }

  // Each stream command as the rank's device operations (empty ones dropped).
  void translate(const MultiRankProgram& program) {
    for (const StreamCmd& c : program.cmds) translate(c, per_[c.stream]);
  }

  // Forwarding: an ll_send of exactly the bytes an earlier LL receive of the
  // rank wrote, unwritten since, goes out from that receive.
  void forward_ll() {
    std::vector<Span> w;
    for (int r = 0; r < p_; ++r) {
      std::vector<DevOp>& ops = per_[r];
      std::vector<char> gone(ops.size(), 0);
      for (std::size_t j = 0; j < ops.size(); ++j) {
        if (ops[j].kind != DevOpKind::ll_send) continue;
        const Span sent = span_of(ops[j].src, ops[j].bytes);
        for (std::size_t i = j; i-- > 0;) {
          if (gone[i]) continue;
          const DevOp& o = ops[i];
          if ((o.kind == DevOpKind::ll_copy || o.kind == DevOpKind::ll_reduce) && o.fwd_rank < 0 &&
              o.bytes == ops[j].bytes && same_span(span_of(o.dst, o.bytes), sent)) {
            ops[i].fwd_rank = ops[j].slot_rank;
            ops[i].fwd_slot = ops[j].slot;
            gone[j] = 1;
            ++d_.ll_forwards;
            break;
          }
          writes_of(o, w);
          bool touched = false;
          for (const Span& x : w) touched = touched || x.overlaps(sent);
          if (touched) break;  // the bytes sent are not a receive's result
        }
      }
      std::vector<DevOp> kept;
      kept.reserve(ops.size());
      for (std::size_t j = 0; j < ops.size(); ++j)
        if (!gone[j]) kept.push_back(ops[j]);
      ops = std::move(kept);
    }
  }

  // Lanes: barriers where slices of two operations of a rank could meet.
  void add_barriers(int lanes) {
    for (int r = 0; r < p_; ++r) {
      std::vector<DevOp> with_barriers;
      Hazards h;
      std::vector<Span> reads, writes;
      for (const DevOp& o : per_[r]) {
        accesses(o, reads, writes);
        if (lanes > 1 && h.conflict(reads, writes)) {
          DevOp b;
          b.kind = DevOpKind::barrier;
          b.flag = static_cast<int>(d_.flag_rank.size());
          d_.flag_rank.push_back(r);
          with_barriers.push_back(b);
          h.clear();
        }
        h.add(reads, writes);
        with_barriers.push_back(o);
      }
      per_[r] = std::move(with_barriers);
    }
  }

  // Every rank's operations into d.ops (rank r's from first_op[r]), counted.
  void flatten() {
    d_.first_op.push_back(0);
    for (int r = 0; r < p_; ++r) {
      for (const DevOp& o : per_[r]) {
        count(o);
        if ((o.kind == DevOpKind::copy || o.kind == DevOpKind::reduce) && o.src.rank != r)
          ++d_.pulls;
        d_.ops.push_back(o);
      }
      d_.first_op.push_back(static_cast<std::uint32_t>(d_.ops.size()));
    }
  }

 private:
  static DevRef ref(int rank, const PlanRef& r) { return DevRef{rank, r.area, r.offset}; }

  void refuse(int rank, const std::string& why) {
    if (d_.unsupported.empty()) d_.unsupported = "rank " + std::to_string(rank) + ": " + why;
  }

  // LL slots: one per message, in its receiver's area, in the order the
  // program first names the message (its ll_send or its receive).
  std::int64_t slot(int sender, std::uint32_t send) {
    const PlanMessage& m = plans_[sender]->sends[send];
    const auto [it, fresh] = slot_of_.try_emplace({sender, send}, d_.ll_bytes[m.peer]);
    if (fresh) d_.ll_bytes[m.peer] += ll_slot_bytes(m.ref.bytes, protocol_);
    return it->second;
  }

  void translate(const StreamCmd& c, std::vector<DevOp>& out) {
    DevOp o;
    switch (c.kind) {
      case CmdKind::record:
        o.kind = DevOpKind::signal;
        o.flag = c.event;
        out.push_back(o);
        break;
      case CmdKind::wait:
        o.kind = DevOpKind::wait;
        o.flag = c.event;
        out.push_back(o);
        break;
      case CmdKind::ll_send: {
        const PlanMessage& s = plans_[c.stream]->sends[c.send];
        if (s.ref.bytes == 0) break;
        o.kind = DevOpKind::ll_send;
        o.src = ref(c.stream, s.ref);
        o.bytes = s.ref.bytes;
        o.slot_rank = s.peer;
        o.slot = slot(c.stream, c.send);
        out.push_back(o);
        break;
      }
      case CmdKind::copy: {
        const PlanMessage& s = plans_[c.peer]->sends[c.send];
        const PlanMessage& r = plans_[c.stream]->recvs[c.index];
        if (r.ref.bytes == 0) break;
        o.kind = c.ll ? DevOpKind::ll_copy : DevOpKind::copy;
        o.dst = ref(c.stream, r.ref);
        o.src = ref(c.peer, s.ref);
        o.bytes = r.ref.bytes;
        if (c.ll) {
          o.slot_rank = c.stream;
          o.slot = slot(c.peer, c.send);
        }
        out.push_back(o);
        break;
      }
      case CmdKind::local:
      case CmdKind::reduce_from:
        translate_local(c, out);
        break;
      case CmdKind::finish_avg: {
        const CompiledPlan& plan = *plans_[c.stream];
        if (plan.output_bytes == 0) break;
        o.kind = DevOpKind::finish_avg;
        o.dst = {c.stream, Area::output, 0};
        o.bytes = plan.output_bytes;
        out.push_back(o);
        break;
      }
    }
  }

  // A local copy or reduce, or a reduce from a peer's send buffer.
  void translate_local(const StreamCmd& c, std::vector<DevOp>& out) {
    const CompiledPlan& plan = *plans_[c.stream];
    const PlanLocal& l = plan.locals[c.index];
    if (l.src.bytes == 0) return;
    const bool from_peer = c.kind == CmdKind::reduce_from;
    if (!from_peer && overlap(plan, l.src, l.dst)) {
      const bool same = storage_span(plan, l.src) == storage_span(plan, l.dst);
      if (!l.reduce && same) return;  // copying a region onto itself writes nothing
      // x op x (the same region) is element-wise and fine; a partial
      // overlap is not, for a copy or a reduce, once threads split it.
      if (!same || !l.reduce)
        refuse(c.stream, std::string("a local ") + (l.reduce ? "reduce" : "copy") +
                             " between overlapping regions (the interpreter splits every "
                             "operation over threads)");
    }
    DevOp o;
    o.kind = from_peer || l.reduce ? DevOpKind::reduce : DevOpKind::copy;
    o.dst = ref(c.stream, l.dst);
    o.src = from_peer ? ref(c.peer, plans_[c.peer]->sends[c.send].ref) : ref(c.stream, l.src);
    o.has_also = l.has_also;
    if (l.has_also) o.also = ref(c.stream, l.also);
    o.bytes = l.src.bytes;
    if (from_peer && c.ll) {
      o.kind = DevOpKind::ll_reduce;
      o.slot_rank = c.stream;
      o.slot = slot(c.peer, c.send);
    }
    out.push_back(o);
  }

  Span span_of(const DevRef& r, std::int64_t bytes, bool lines = false) const {
    const auto [storage, lo, hi] = storage_span(*plans_[r.rank], PlanRef{r.area, r.offset, bytes});
    return Span{r.rank, storage, lo, hi, lines};
  }
  static bool same_span(const Span& a, const Span& b) {
    return a.rank == b.rank && a.storage == b.storage && a.lo == b.lo && a.hi == b.hi;
  }

  // What a data operation writes (for the forwarding).
  void writes_of(const DevOp& o, std::vector<Span>& w) const {
    w.clear();
    switch (o.kind) {
      case DevOpKind::copy:
      case DevOpKind::reduce:
      case DevOpKind::finish_avg:
      case DevOpKind::ll_copy:
      case DevOpKind::ll_reduce:
        w.push_back(span_of(o.dst, o.bytes));
        if (o.has_also) w.push_back(span_of(o.also, o.bytes));
        break;
      default:
        break;
    }
  }

  // What an operation reads and writes, as its lanes split it.
  void accesses(const DevOp& o, std::vector<Span>& reads, std::vector<Span>& writes) const {
    reads.clear();
    writes.clear();
    switch (o.kind) {
      case DevOpKind::copy:
        reads.push_back(span_of(o.src, o.bytes));
        writes.push_back(span_of(o.dst, o.bytes));
        break;
      case DevOpKind::reduce:
        reads.push_back(span_of(o.src, o.bytes));
        reads.push_back(span_of(o.dst, o.bytes));
        writes.push_back(span_of(o.dst, o.bytes));
        if (o.has_also) writes.push_back(span_of(o.also, o.bytes));
        break;
      case DevOpKind::finish_avg:
        reads.push_back(span_of(o.dst, o.bytes));
        writes.push_back(span_of(o.dst, o.bytes));
        break;
      case DevOpKind::ll_send:  // the slot is the receiver's, written once
        reads.push_back(span_of(o.src, o.bytes, true));
        break;
      case DevOpKind::ll_copy:
        writes.push_back(span_of(o.dst, o.bytes, true));
        break;
      case DevOpKind::ll_reduce:
        reads.push_back(span_of(o.dst, o.bytes, true));
        writes.push_back(span_of(o.dst, o.bytes, true));
        if (o.has_also) writes.push_back(span_of(o.also, o.bytes, true));
        break;
      default:
        break;
    }
  }

  // The program's totals: operations by kind, bytes read and written.
  void count(const DevOp& o) {
    switch (o.kind) {
      case DevOpKind::wait:
        ++d_.waits;
        break;
      case DevOpKind::signal:
        ++d_.signals;
        break;
      case DevOpKind::barrier:
        ++d_.barriers;
        break;
      case DevOpKind::copy:
        ++d_.copies;
        d_.bytes_read += o.bytes;
        d_.bytes_written += o.bytes;
        break;
      case DevOpKind::reduce:
        ++d_.reduces;
        d_.bytes_read += 2 * o.bytes;
        d_.bytes_written += o.bytes * (o.has_also ? 2 : 1);
        break;
      case DevOpKind::finish_avg:
        d_.bytes_read += o.bytes;
        d_.bytes_written += o.bytes;
        break;
      case DevOpKind::ll_send:
        d_.bytes_read += o.bytes;
        d_.bytes_written += ll_slot_bytes(o.bytes, protocol_);
        break;
      case DevOpKind::ll_copy:
        ++d_.copies;
        d_.bytes_read += ll_slot_bytes(o.bytes, protocol_);
        d_.bytes_written += o.bytes;
        if (o.fwd_rank >= 0) d_.bytes_written += ll_slot_bytes(o.bytes, protocol_);
        break;
      case DevOpKind::ll_reduce:
        ++d_.reduces;
        d_.bytes_read += ll_slot_bytes(o.bytes, protocol_) + o.bytes;
        d_.bytes_written += o.bytes * (o.has_also ? 2 : 1);
        if (o.fwd_rank >= 0) d_.bytes_written += ll_slot_bytes(o.bytes, protocol_);
        break;
    }
  }

  std::span<const CompiledPlan* const> plans_;
  int p_;
  LlProtocol protocol_;
  DeviceProgram& d_;
  std::vector<std::vector<DevOp>> per_;                            // each rank's operations
  std::map<std::pair<int, std::uint32_t>, std::int64_t> slot_of_;  // (sender, send) -> offset
};

}  // namespace

DeviceProgram compile_device_program(std::span<const CompiledPlan* const> plans,
                                     const MultiRankProgram& program, int lanes, bool ll_forward,
                                     LlProtocol protocol) {
  if (lanes < 1) throw UsageError("interpreter: lanes must be >= 1, got " + std::to_string(lanes));
  const int p = static_cast<int>(plans.size());
  if (p < 1 || program.ranks != p)
    throw UsageError("interpreter: the multi-rank program has " + std::to_string(program.ranks) +
                     " ranks but " + std::to_string(p) + " plans were given");
  DeviceProgram d;
  d.ranks = p;
  d.lanes = lanes;
  d.type = plans[0]->type;
  d.op = plans[0]->op;
  d.ll_protocol = protocol;
  d.flag_rank = program.event_stream;
  DeviceProgramBuilder b(plans, protocol, d);
  b.translate(program);
  if (ll_forward) b.forward_ll();
  b.add_barriers(lanes);
  d.ll_messages = program.ll_messages;
  b.flatten();
  return d;
}

LlChoice choose_ll(std::int64_t size, std::int64_t ll_bytes, std::int64_t ll_size,
                   std::int64_t ll128_above) {
  if (ll_bytes <= 0 || size > ll_size) return {};
  return {ll_bytes, size > ll128_above ? LlProtocol::ll128 : LlProtocol::ll};
}

int choose_lanes(std::span<const CompiledPlan* const> plans, int max_lanes,
                 std::int64_t ll_max_bytes) {
  std::int64_t largest = 0;
  for (const CompiledPlan* p : plans) {
    for (const PlanMessage& m : p->recvs) {
      const bool ll = m.peer != p->rank && m.ref.bytes <= ll_max_bytes;
      largest = std::max(largest, ll ? m.ref.bytes * (kLaneBytes / kLlLaneBytes) : m.ref.bytes);
    }
    for (const PlanLocal& l : p->locals)
      if (l.reduce || storage_span(*p, l.src) != storage_span(*p, l.dst))  // not a no-op copy
        largest = std::max(largest, l.src.bytes);
  }
  const std::int64_t want = (largest + kLaneBytes - 1) / kLaneBytes;
  return static_cast<int>(std::clamp<std::int64_t>(want, 1, std::max(1, max_lanes)));
}

std::vector<interp::ExecOp> bind_device_program(const DeviceProgram& program,
                                                std::span<const AreaBases> bases,
                                                std::span<interp::Flag* const> flag_address,
                                                std::span<unsigned char* const> ll_area) {
  if (static_cast<int>(bases.size()) != program.ranks ||
      static_cast<int>(flag_address.size()) != program.flags())
    throw UsageError("interpreter: binding " + std::to_string(program.ranks) + " ranks and " +
                     std::to_string(program.flags()) + " flags to " + std::to_string(bases.size()) +
                     " ranks' areas and " + std::to_string(flag_address.size()) +
                     " flag addresses");
  if (program.ll_messages > 0 && static_cast<int>(ll_area.size()) != program.ranks)
    throw UsageError("interpreter: the program has " + std::to_string(program.ll_messages) +
                     " LL messages but " + std::to_string(ll_area.size()) +
                     " LL areas were given for its " + std::to_string(program.ranks) + " ranks");
  const std::uintptr_t align =
      program.ll_protocol == LlProtocol::ll128 ? sizeof(interp::Ll128Line) : sizeof(interp::LlLine);
  for (std::size_t r = 0; r < ll_area.size(); ++r)
    if (reinterpret_cast<std::uintptr_t>(ll_area[r]) % align != 0)
      throw UsageError("interpreter: rank " + std::to_string(r) + "'s LL area is not " +
                       std::to_string(align) + "-byte aligned (" +
                       std::string(to_string(program.ll_protocol)) + " lines)");
  const auto slot_at = [&](const DevOp& o) { return ll_area[o.slot_rank] + o.slot; };
  const auto at = [&](const DevRef& r) {
    return reinterpret_cast<unsigned char*>(bases[r.rank].base[static_cast<int>(r.area)]) +
           r.offset;
  };
  std::vector<interp::ExecOp> out;
  out.reserve(program.ops.size());
  for (const DevOp& o : program.ops) {
    interp::ExecOp e;
    e.code = code_of(o.kind, program.ll_protocol);
    if (o.flag >= 0) e.flag = flag_address[o.flag];
    if (o.kind == DevOpKind::wait || o.kind == DevOpKind::barrier)
      e.arrivals = static_cast<std::uint32_t>(program.lanes);
    if (o.kind == DevOpKind::copy || o.kind == DevOpKind::reduce ||
        o.kind == DevOpKind::finish_avg) {
      e.dst = at(o.dst);
      e.bytes = o.bytes;
    }
    if (o.kind == DevOpKind::copy || o.kind == DevOpKind::reduce) e.src = at(o.src);
    if (o.kind == DevOpKind::reduce && o.has_also) e.also = at(o.also);
    if (o.kind == DevOpKind::ll_send) {
      e.src = at(o.src);
      e.dst = slot_at(o);
      e.bytes = o.bytes;
    }
    if (o.kind == DevOpKind::ll_copy || o.kind == DevOpKind::ll_reduce) {
      e.dst = at(o.dst);
      e.src = slot_at(o);
      e.bytes = o.bytes;
      if (o.kind == DevOpKind::ll_reduce && o.has_also) e.also = at(o.also);
      if (o.fwd_rank >= 0) e.fwd = ll_area[o.fwd_rank] + o.fwd_slot;
    }
    out.push_back(e);
  }
  return out;
}

std::string describe_interpreter_error(const DeviceProgram& program, interp::Flag word,
                                       double spin_limit_ms) {
  const std::uint32_t code = interp::error_code(word);
  const int rank = interp::error_rank(word);
  const std::uint32_t index = interp::error_op(word);
  std::string what = "interpreter: ";
  if (code != interp::kTimeout) return what + "error word " + std::to_string(word);
  what += "rank " + std::to_string(rank) + " waited longer than " +
          std::to_string(static_cast<long long>(spin_limit_ms)) + " ms at operation " +
          std::to_string(index);
  if (rank >= 0 && rank < program.ranks && index < program.rank_ops(rank).size()) {
    const DevOp& o = program.rank_ops(rank)[index];
    what += " (" + std::string(to_string(o.kind));
    if (o.flag >= 0 && o.flag < program.flags())
      what += " for flag " + std::to_string(o.flag) + ", signalled by rank " +
              std::to_string(program.flag_rank[o.flag]);
    what += ")";
  }
  return what + ": a deadlock or a lost signal";
}

}  // namespace collkit::realrun
