#include "realrun/device_program.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "core/error.h"

namespace collkit::realrun {
namespace {

// Where an operation's bytes lie: (rank, allocation, first byte, end byte).
struct Span {
  int rank;
  int storage;
  std::int64_t lo, hi;
  bool overlaps(const Span& o) const {
    return rank == o.rank && storage == o.storage && lo < o.hi && o.lo < hi;
  }
};

// The reads and writes of one rank's operations since its last barrier.
struct Hazards {
  std::vector<Span> reads, writes;
  static bool any(const std::vector<Span>& set, const Span& s) {
    for (const Span& x : set)
      if (x.overlaps(s)) return true;
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

interp::OpCode code_of(DevOpKind k) {
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
  }
  return interp::kWait;
}

}  // namespace

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
  }
  return "?";
}

DeviceProgram compile_device_program(std::span<const CompiledPlan* const> plans,
                                     const MultiRankProgram& program, int lanes) {
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
  d.flag_rank = program.event_stream;
  std::vector<std::vector<DevOp>> per(p);
  const auto ref = [](int rank, const PlanRef& r) { return DevRef{rank, r.area, r.offset}; };
  const auto refuse = [&](int rank, const std::string& why) {
    if (d.unsupported.empty()) d.unsupported = "rank " + std::to_string(rank) + ": " + why;
  };

  for (const StreamCmd& c : program.cmds) {
    std::vector<DevOp>& out = per[c.stream];
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
      case CmdKind::copy: {
        const PlanMessage& s = plans[c.peer]->sends[c.send];
        const PlanMessage& r = plans[c.stream]->recvs[c.index];
        if (r.ref.bytes == 0) break;
        o.kind = DevOpKind::copy;
        o.dst = ref(c.stream, r.ref);
        o.src = ref(c.peer, s.ref);
        o.bytes = r.ref.bytes;
        out.push_back(o);
        break;
      }
      case CmdKind::local:
      case CmdKind::reduce_from: {
        const CompiledPlan& plan = *plans[c.stream];
        const PlanLocal& l = plan.locals[c.index];
        if (l.src.bytes == 0) break;
        const bool from_peer = c.kind == CmdKind::reduce_from;
        if (!from_peer && overlap(plan, l.src, l.dst)) {
          const bool same = storage_span(plan, l.src) == storage_span(plan, l.dst);
          if (!l.reduce && same) break;  // copying a region onto itself writes nothing
          // x op x (the same region) is element-wise and fine; a partial
          // overlap is not, for a copy or a reduce, once threads split it.
          if (!same || !l.reduce)
            refuse(c.stream, std::string("a local ") + (l.reduce ? "reduce" : "copy") +
                                 " between overlapping regions (the interpreter splits every "
                                 "operation over threads)");
        }
        o.kind = from_peer || l.reduce ? DevOpKind::reduce : DevOpKind::copy;
        o.dst = ref(c.stream, l.dst);
        o.src = from_peer ? ref(c.peer, plans[c.peer]->sends[c.send].ref) : ref(c.stream, l.src);
        o.has_also = l.has_also;
        if (l.has_also) o.also = ref(c.stream, l.also);
        o.bytes = l.src.bytes;
        out.push_back(o);
        break;
      }
      case CmdKind::finish_avg: {
        const CompiledPlan& plan = *plans[c.stream];
        if (plan.output_bytes == 0) break;
        o.kind = DevOpKind::finish_avg;
        o.dst = {c.stream, Area::output, 0};
        o.bytes = plan.output_bytes;
        out.push_back(o);
        break;
      }
    }
  }

  // Lanes: barriers where slices of two operations of a rank could meet.
  const auto span_of = [&](const DevRef& r, std::int64_t bytes) {
    const auto [storage, lo, hi] = storage_span(*plans[r.rank], PlanRef{r.area, r.offset, bytes});
    return Span{r.rank, storage, lo, hi};
  };
  for (int r = 0; r < p; ++r) {
    std::vector<DevOp> with_barriers;
    Hazards h;
    std::vector<Span> reads, writes;
    for (const DevOp& o : per[r]) {
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
        default:
          break;
      }
      if (lanes > 1 && h.conflict(reads, writes)) {
        DevOp b;
        b.kind = DevOpKind::barrier;
        b.flag = static_cast<int>(d.flag_rank.size());
        d.flag_rank.push_back(r);
        with_barriers.push_back(b);
        h.clear();
      }
      h.add(reads, writes);
      with_barriers.push_back(o);
    }
    per[r] = std::move(with_barriers);
  }

  d.first_op.push_back(0);
  for (int r = 0; r < p; ++r) {
    for (const DevOp& o : per[r]) {
      switch (o.kind) {
        case DevOpKind::wait:
          ++d.waits;
          break;
        case DevOpKind::signal:
          ++d.signals;
          break;
        case DevOpKind::barrier:
          ++d.barriers;
          break;
        case DevOpKind::copy:
          ++d.copies;
          d.bytes_read += o.bytes;
          d.bytes_written += o.bytes;
          break;
        case DevOpKind::reduce:
          ++d.reduces;
          d.bytes_read += 2 * o.bytes;
          d.bytes_written += o.bytes * (o.has_also ? 2 : 1);
          break;
        case DevOpKind::finish_avg:
          d.bytes_read += o.bytes;
          d.bytes_written += o.bytes;
          break;
      }
      if ((o.kind == DevOpKind::copy || o.kind == DevOpKind::reduce) && o.src.rank != r) ++d.pulls;
      d.ops.push_back(o);
    }
    d.first_op.push_back(static_cast<std::uint32_t>(d.ops.size()));
  }
  return d;
}

int choose_lanes(std::span<const CompiledPlan* const> plans, int max_lanes) {
  std::int64_t largest = 0;
  for (const CompiledPlan* p : plans) {
    for (const PlanMessage& m : p->recvs) largest = std::max(largest, m.ref.bytes);
    for (const PlanLocal& l : p->locals)
      if (l.reduce || storage_span(*p, l.src) != storage_span(*p, l.dst))  // not a no-op copy
        largest = std::max(largest, l.src.bytes);
  }
  const std::int64_t want = (largest + kLaneBytes - 1) / kLaneBytes;
  return static_cast<int>(std::clamp<std::int64_t>(want, 1, std::max(1, max_lanes)));
}

std::vector<interp::ExecOp> bind_device_program(const DeviceProgram& program,
                                                std::span<const AreaBases> bases,
                                                std::span<interp::Flag* const> flag_address) {
  if (static_cast<int>(bases.size()) != program.ranks ||
      static_cast<int>(flag_address.size()) != program.flags())
    throw UsageError("interpreter: binding " + std::to_string(program.ranks) + " ranks and " +
                     std::to_string(program.flags()) + " flags to " + std::to_string(bases.size()) +
                     " ranks' areas and " + std::to_string(flag_address.size()) +
                     " flag addresses");
  const auto at = [&](const DevRef& r) {
    return reinterpret_cast<unsigned char*>(bases[r.rank].base[static_cast<int>(r.area)]) +
           r.offset;
  };
  std::vector<interp::ExecOp> out;
  out.reserve(program.ops.size());
  for (const DevOp& o : program.ops) {
    interp::ExecOp e;
    e.code = code_of(o.kind);
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
