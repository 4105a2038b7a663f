#include "realrun/plan.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <tuple>

#include "core/error.h"

namespace collkit::realrun {
namespace {

std::string where(int rank, std::int64_t step, std::size_t op_index, const Op& op) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(step) + " op " +
         std::to_string(op_index) + " (" + std::string(to_string(op.kind)) + ")";
}

std::string describe(const Region& r) {
  return std::string(to_string(r.buf)) + "[" + std::to_string(r.offset) + ", +" +
         std::to_string(r.count) + ")";
}

// Disjoint half-open intervals [first, second) of element positions.
class IntervalSet {
 public:
  void insert(std::int64_t lo, std::int64_t hi) {
    if (lo >= hi) return;
    auto it = set_.upper_bound(lo);
    if (it != set_.begin() && std::prev(it)->second >= lo) --it;
    while (it != set_.end() && it->first <= hi) {
      lo = std::min(lo, it->first);
      hi = std::max(hi, it->second);
      it = set_.erase(it);
    }
    set_.emplace(lo, hi);
  }
  bool overlaps(std::int64_t lo, std::int64_t hi) const {
    if (lo >= hi) return false;
    auto it = set_.upper_bound(lo);
    if (it != set_.begin() && std::prev(it)->second > lo) return true;
    return it != set_.end() && it->first < hi;
  }

 private:
  std::map<std::int64_t, std::int64_t> set_;
};

}  // namespace

InPlaceLayout in_place_layout(Collective c, int ranks, int rank, int root, std::int64_t count) {
  const BufferSizes io = io_sizes(c, ranks, rank, root, count);
  const Partition part{count, ranks};
  InPlaceLayout l;
  switch (c) {
    case Collective::all_reduce:
    case Collective::broadcast:
    case Collective::reduce:
      // Non-roots of broadcast/reduce have an empty output or input; the one
      // buffer holds whichever they have.
      return {true, "", std::max(io.input, io.output), 0, 0};
    case Collective::all_gather:
      return {true, "", io.output, part.offset(rank), 0};
    case Collective::reduce_scatter:
      return {true, "", io.input, 0, part.offset(rank)};
    case Collective::scatter:
    case Collective::gather:
    case Collective::all_to_all:
      l.reason = "in-place " + std::string(to_string(c)) +
                 " is not defined here (NCCL has no such collective in place)";
      return l;
    case Collective::barrier:
      l.reason = "barrier moves no data";
      return l;
  }
  return l;
}

std::string in_place_hazard(const Schedule& schedule, int rank, const InPlaceLayout& layout) {
  if (!layout.defined) return layout.reason;
  // Positions (in the shared buffer) whose output element has been written
  // with a value that may differ from the input element there. Reading the
  // input at such a position would see the output instead.
  IntervalSet written;
  std::int64_t step_index = 0;
  const auto input_pos = [&](const Region& r) {
    return std::pair{layout.input_offset + r.offset, layout.input_offset + r.offset + r.count};
  };
  const auto output_pos = [&](const Region& r) {
    return std::pair{layout.output_offset + r.offset, layout.output_offset + r.offset + r.count};
  };
  const auto hazard = [&](const Op& op, const char* what) {
    return "rank " + std::to_string(rank) + " step " + std::to_string(step_index) + " " +
           std::string(to_string(op.kind)) + " " + what;
  };
  for (const Step& step : schedule.program(rank)) {
    // Communication: sends read while receives write, all at once.
    IntervalSet step_writes;
    for (const Op& op : step.ops) {
      if (op.kind != OpKind::send && op.dst.buf == Buf::input && op.dst.count > 0)
        return hazard(op, "writes the input, which in place is the output");
    }
    for (const Op& op : step.ops)
      if (op.kind == OpKind::recv && op.dst.buf == Buf::output) {
        auto [lo, hi] = output_pos(op.dst);
        step_writes.insert(lo, hi);
      }
    for (const Op& op : step.ops) {
      if (op.kind != OpKind::send || op.src.buf != Buf::input) continue;
      auto [lo, hi] = input_pos(op.src);
      if (written.overlaps(lo, hi) || step_writes.overlaps(lo, hi))
        return hazard(op, "reads input that in place has been overwritten by output");
    }
    for (const Op& op : step.ops)
      if (op.kind == OpKind::recv && op.dst.buf == Buf::output) {
        auto [lo, hi] = output_pos(op.dst);
        written.insert(lo, hi);
      }
    // Local ops, in order.
    for (const Op& op : step.ops) {
      if (op.kind != OpKind::copy && op.kind != OpKind::reduce) continue;
      if (op.src.buf == Buf::input) {
        auto [lo, hi] = input_pos(op.src);
        // Copying an input element onto the output element at the same
        // address is a no-op in place: it writes nothing new.
        if (op.kind == OpKind::copy && op.dst.buf == Buf::output &&
            output_pos(op.dst) == input_pos(op.src) && !written.overlaps(lo, hi))
          continue;
        if (written.overlaps(lo, hi))
          return hazard(op, "reads input that in place has been overwritten by output");
      }
      if (op.dst.buf == Buf::output) {
        auto [lo, hi] = output_pos(op.dst);
        written.insert(lo, hi);
      }
    }
    ++step_index;
  }
  return "";
}

std::tuple<int, std::int64_t, std::int64_t> storage_span(const CompiledPlan& plan,
                                                         const PlanRef& r) {
  int storage = static_cast<int>(r.area);
  std::int64_t at = r.offset;
  if (plan.in_place && (r.area == Area::input || r.area == Area::output)) {
    storage = 0;
    at += r.area == Area::input ? plan.input_offset : plan.output_offset;
  }
  return {storage, at, at + r.bytes};
}

bool overlap(const CompiledPlan& plan, const PlanRef& a, const PlanRef& b) {
  const auto [sa, lo_a, hi_a] = storage_span(plan, a);
  const auto [sb, lo_b, hi_b] = storage_span(plan, b);
  return sa == sb && lo_a < hi_b && lo_b < hi_a;
}

CompiledPlan io_plan(Collective c, int ranks, int rank, int root, std::int64_t count, DataType type,
                     RedOp op, bool in_place) {
  CompiledPlan plan;
  plan.collective = c;
  plan.ranks = ranks;
  plan.rank = rank;
  plan.type = type;
  plan.op = op;
  plan.in_place = in_place;
  plan.elem_size = size_of(type);
  if (rank < 0 || rank >= ranks)
    throw UsageError("rank " + std::to_string(rank) + " is out of range for " +
                     std::to_string(ranks) + " ranks");
  const BufferSizes io = io_sizes(c, ranks, rank, root, count);
  const std::int64_t e = plan.elem_size;
  if (in_place) {
    const InPlaceLayout l = in_place_layout(c, ranks, rank, root, count);
    if (!l.defined) throw UsageError(l.reason);
    plan.storage_in_bytes = l.buffer * e;
    plan.input_offset = l.input_offset * e;
    plan.output_offset = l.output_offset * e;
  } else {
    plan.storage_in_bytes = io.input * e;
    plan.storage_out_bytes = io.output * e;
  }
  plan.input_bytes = io.input * e;
  plan.output_bytes = io.output * e;
  return plan;
}

CompiledPlan compile_plan(const Schedule& schedule, int rank, DataType type, RedOp op,
                          bool in_place) {
  const ScheduleSpec& spec = schedule.spec();
  if (spec.elem_size != size_of(type))
    throw UsageError("schedule was generated for " + std::to_string(spec.elem_size) +
                     "-byte elements but the data type " + std::string(to_string(type)) + " has " +
                     std::to_string(size_of(type)));
  CompiledPlan plan =
      io_plan(spec.collective, schedule.ranks(), rank, spec.root, spec.count, type, op, in_place);
  const BufferSizes sizes = schedule.buffer_sizes(rank);
  const std::int64_t e = plan.elem_size;
  if (sizes.input * e != plan.input_bytes || sizes.output * e != plan.output_bytes)
    throw ScheduleError("rank " + std::to_string(rank) + ": the schedule's input/output sizes (" +
                        std::to_string(sizes.input) + ", " + std::to_string(sizes.output) +
                        ") differ from the collective's");
  plan.scratch_bytes = sizes.scratch * e;

  const auto ref = [&](const Region& r, const std::string& at) -> PlanRef {
    const std::int64_t limit = r.buf == Buf::input    ? sizes.input
                               : r.buf == Buf::output ? sizes.output
                                                      : sizes.scratch;
    if (r.offset < 0 || r.count < 0 || r.offset + r.count > limit)
      throw ScheduleError(at + ": region " + describe(r) + " is outside the " +
                          std::string(to_string(r.buf)) + " buffer of " + std::to_string(limit) +
                          " elements");
    const Area a = r.buf == Buf::input    ? Area::input
                   : r.buf == Buf::output ? Area::output
                                          : Area::scratch;
    return {a, r.offset * e, r.count * e};
  };
  const auto disjoint = [&](const PlanRef& a, const PlanRef& b) { return !overlap(plan, a, b); };
  const auto same = [&](const PlanRef& a, const PlanRef& b) {
    return storage_span(plan, a) == storage_span(plan, b);
  };

  // Copy propagation: while an output region still holds an untouched copy of
  // input (a local copy op wrote it and nothing wrote either side since), a
  // send of it reads the input instead. Out of place over shared memory this
  // matters: the peer reads a message by a single copy from our buffer, and a
  // region we rewrite every iteration bounces its cache lines between the
  // cores (measured 2.2x slower for a 2 MiB all_gather block, docs/results/mpi.md).
  struct Alias {
    Region out;
    std::int64_t in_offset;
  };
  std::vector<Alias> aliases;
  const auto overlaps = [](const Region& a, const Region& b) {
    return a.buf == b.buf && a.offset < b.offset + b.count && b.offset < a.offset + a.count;
  };
  const auto forget_writes_to = [&](const Region& w) {
    std::erase_if(aliases, [&](const Alias& a) {
      return overlaps(a.out, w) || overlaps({Buf::input, a.in_offset, a.out.count}, w);
    });
  };
  const auto source_of = [&](Region src) {
    if (in_place || src.buf != Buf::output || src.count == 0) return src;
    for (const Alias& a : aliases)
      if (src.offset >= a.out.offset && src.offset + src.count <= a.out.offset + a.out.count)
        return Region{Buf::input, a.in_offset + (src.offset - a.out.offset), src.count};
    return src;
  };

  std::int64_t step_index = 0;
  for (const Step& step : schedule.program(rank)) {
    PlanStep cs;
    cs.first_send = static_cast<std::uint32_t>(plan.sends.size());
    cs.first_recv = static_cast<std::uint32_t>(plan.recvs.size());
    cs.first_local = static_cast<std::uint32_t>(plan.locals.size());
    std::int64_t step_temp = 0;
    for (std::size_t i = 0; i < step.ops.size(); ++i) {
      const Op& o = step.ops[i];
      const std::string at = where(rank, step_index, i, o);
      switch (o.kind) {
        case OpKind::send:
        case OpKind::recv:
          if (o.peer < 0 || o.peer >= plan.ranks)
            throw ScheduleError(at + ": peer " + std::to_string(o.peer) + " is out of range for " +
                                std::to_string(plan.ranks) + " ranks");
          if (o.kind == OpKind::send) {
            ref(o.src, at);  // bounds are checked on the region the schedule names
            plan.sends.push_back({o.peer, ref(source_of(o.src), at), -1});
            plan.bytes_sent += o.src.count * e;
          } else if (o.combine == Combine::copy) {
            plan.recvs.push_back({o.peer, ref(o.dst, at), -1});
          } else {
            // Lands in the temp area, then is reduced into place after the
            // step's communication, before the step's local ops.
            const PlanRef dst = ref(o.dst, at);
            const PlanRef tmp{Area::temp, step_temp, dst.bytes};
            step_temp += dst.bytes;
            plan.recvs.push_back({o.peer, tmp, static_cast<std::int32_t>(plan.locals.size())});
            plan.locals.push_back({true, tmp, dst, false, {}});
          }
          break;
        case OpKind::copy:
        case OpKind::reduce:
          break;
      }
    }
    for (const Op& o : step.ops)
      if (o.kind == OpKind::recv) forget_writes_to(o.dst);
    for (std::size_t i = 0; i < step.ops.size(); ++i) {
      const Op& o = step.ops[i];
      if (o.kind != OpKind::copy && o.kind != OpKind::reduce) continue;
      forget_writes_to(o.dst);
      if (o.kind == OpKind::copy && o.src.buf == Buf::input && o.dst.buf == Buf::output &&
          o.src.count == o.dst.count)
        aliases.push_back({o.dst, o.src.offset});
      const std::string at = where(rank, step_index, i, o);
      if (o.src.count != o.dst.count)
        throw ScheduleError(at + ": source " + describe(o.src) + " and destination " +
                            describe(o.dst) + " differ in size");
      const PlanLocal l{o.kind == OpKind::reduce, ref(o.src, at), ref(o.dst, at), false, {}};
      // Fusion: a reduce immediately followed by a copy of exactly its result
      // to a place that neither operand occupies becomes one pass.
      const std::size_t n_locals = plan.locals.size();
      if (!l.reduce && n_locals > cs.first_local) {
        PlanLocal& prev = plan.locals.back();
        if (prev.reduce && !prev.has_also && l.src.bytes > 0 && same(l.src, prev.dst) &&
            disjoint(l.dst, prev.dst) && disjoint(l.dst, prev.src)) {
          prev.has_also = true;
          prev.also = l.dst;
          ++plan.fused_copies;
          continue;
        }
      }
      plan.locals.push_back(l);
    }
    plan.temp_bytes = std::max(plan.temp_bytes, step_temp);
    cs.sends = static_cast<std::uint32_t>(plan.sends.size()) - cs.first_send;
    cs.recvs = static_cast<std::uint32_t>(plan.recvs.size()) - cs.first_recv;
    cs.locals = static_cast<std::uint32_t>(plan.locals.size()) - cs.first_local;
    plan.steps.push_back(cs);
    ++step_index;
  }
  return plan;
}

}  // namespace collkit::realrun
