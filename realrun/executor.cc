#include "realrun/executor.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <new>
#include <string>

#include "algorithms/error.h"
#include "realrun/reduce_host.h"

namespace collkit::realrun {
namespace {

constexpr std::align_val_t kAlignment{64};

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

AlignedBuffer::AlignedBuffer(std::size_t bytes) : size_(bytes) {
  if (bytes > 0) data_.reset(static_cast<std::byte*>(::operator new(bytes, kAlignment)));
}

void AlignedBuffer::Free::operator()(std::byte* p) const { ::operator delete(p, kAlignment); }

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

Executor::Executor(const Schedule& schedule, int rank, DataType type, RedOp op, bool in_place)
    : collective_(schedule.spec().collective),
      ranks_(schedule.ranks()),
      rank_(rank),
      type_(type),
      op_(op),
      in_place_(in_place),
      elem_size_(size_of(type)) {
  if (rank < 0 || rank >= ranks_)
    throw UsageError("rank " + std::to_string(rank) + " is out of range for " +
                     std::to_string(ranks_) + " ranks");
  if (schedule.spec().elem_size != elem_size_)
    throw UsageError("schedule was generated for " + std::to_string(schedule.spec().elem_size) +
                     "-byte elements but the data type " + std::string(to_string(type)) + " has " +
                     std::to_string(elem_size_));
  compile(schedule);
}

void Executor::compile(const Schedule& schedule) {
  const BufferSizes sizes = schedule.buffer_sizes(rank_);
  const ScheduleSpec& spec = schedule.spec();
  const std::int64_t e = elem_size_;
  if (in_place_) {
    const InPlaceLayout l = in_place_layout(collective_, ranks_, rank_, spec.root, spec.count);
    if (!l.defined) throw UsageError(l.reason);
    storage_in_ = AlignedBuffer(static_cast<std::size_t>(l.buffer * e));
    input_ = storage_in_.data() + l.input_offset * e;
    output_ = storage_in_.data() + l.output_offset * e;
  } else {
    storage_in_ = AlignedBuffer(static_cast<std::size_t>(sizes.input * e));
    storage_out_ = AlignedBuffer(static_cast<std::size_t>(sizes.output * e));
    input_ = storage_in_.data();
    output_ = storage_out_.data();
  }
  input_bytes_ = static_cast<std::size_t>(sizes.input * e);
  output_bytes_ = static_cast<std::size_t>(sizes.output * e);
  scratch_ = AlignedBuffer(static_cast<std::size_t>(sizes.scratch * e));

  // First pass: byte offsets per buffer (the temp area for reducing
  // receives is sized by the largest step), then pointers once allocated.
  enum : std::uint8_t { kInput, kOutput, kScratch, kTemp };
  struct Ref {
    std::uint8_t buf;
    std::int64_t offset;
    std::int64_t bytes;
  };
  struct Comm {
    int peer;
    Ref ref;
  };
  struct Loc {
    bool reduce;
    Ref src, dst;
  };
  std::vector<Comm> sends, recvs;
  std::vector<Loc> locals;
  std::int64_t temp_bytes = 0;
  std::int64_t step_index = 0;

  const auto ref = [&](const Region& r, const std::string& at) -> Ref {
    const std::int64_t limit = r.buf == Buf::input    ? sizes.input
                               : r.buf == Buf::output ? sizes.output
                                                      : sizes.scratch;
    if (r.offset < 0 || r.count < 0 || r.offset + r.count > limit)
      throw ScheduleError(at + ": region " + describe(r) + " is outside the " +
                          std::string(to_string(r.buf)) + " buffer of " + std::to_string(limit) +
                          " elements");
    const std::uint8_t b = r.buf == Buf::input ? kInput : r.buf == Buf::output ? kOutput : kScratch;
    return {b, r.offset * e, r.count * e};
  };

  // Copy propagation: while an output region still holds an untouched copy of
  // input (a local copy op wrote it and nothing wrote either side since), a
  // send of it reads the input instead. Out of place over shared memory this
  // matters: the peer reads a message by a single copy from our buffer, and a
  // region we rewrite every iteration bounces its cache lines between the
  // cores (measured 2.2x slower for a 2 MiB all_gather block, docs/RESULTS.md).
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
    if (in_place_ || src.buf != Buf::output || src.count == 0) return src;
    for (const Alias& a : aliases)
      if (src.offset >= a.out.offset && src.offset + src.count <= a.out.offset + a.out.count)
        return Region{Buf::input, a.in_offset + (src.offset - a.out.offset), src.count};
    return src;
  };

  for (const Step& step : schedule.program(rank_)) {
    CompiledStep cs;
    cs.first_send = static_cast<std::uint32_t>(sends.size());
    cs.first_recv = static_cast<std::uint32_t>(recvs.size());
    cs.first_local = static_cast<std::uint32_t>(locals.size());
    std::int64_t step_temp = 0;
    for (std::size_t i = 0; i < step.ops.size(); ++i) {
      const Op& op = step.ops[i];
      const std::string at = where(rank_, step_index, i, op);
      switch (op.kind) {
        case OpKind::send:
        case OpKind::recv:
          if (op.peer < 0 || op.peer >= ranks_)
            throw ScheduleError(at + ": peer " + std::to_string(op.peer) + " is out of range for " +
                                std::to_string(ranks_) + " ranks");
          if (op.kind == OpKind::send) {
            ref(op.src, at);  // bounds are checked on the region the schedule names
            sends.push_back({op.peer, ref(source_of(op.src), at)});
            bytes_sent_ += op.src.count * e;
          } else if (op.combine == Combine::copy) {
            recvs.push_back({op.peer, ref(op.dst, at)});
          } else {
            // Lands in the temp area, then is reduced into place after the
            // step's communication, before the step's local ops.
            const Ref dst = ref(op.dst, at);
            const Ref tmp{kTemp, step_temp, dst.bytes};
            step_temp += dst.bytes;
            recvs.push_back({op.peer, tmp});
            locals.push_back({true, tmp, dst});
          }
          break;
        case OpKind::copy:
        case OpKind::reduce:
          break;
      }
    }
    for (const Op& op : step.ops)
      if (op.kind == OpKind::recv) forget_writes_to(op.dst);
    for (std::size_t i = 0; i < step.ops.size(); ++i) {
      const Op& op = step.ops[i];
      if (op.kind != OpKind::copy && op.kind != OpKind::reduce) continue;
      forget_writes_to(op.dst);
      if (op.kind == OpKind::copy && op.src.buf == Buf::input && op.dst.buf == Buf::output &&
          op.src.count == op.dst.count)
        aliases.push_back({op.dst, op.src.offset});
      const std::string at = where(rank_, step_index, i, op);
      if (op.src.count != op.dst.count)
        throw ScheduleError(at + ": source " + describe(op.src) + " and destination " +
                            describe(op.dst) + " differ in size");
      locals.push_back({op.kind == OpKind::reduce, ref(op.src, at), ref(op.dst, at)});
    }
    temp_bytes = std::max(temp_bytes, step_temp);
    cs.sends = static_cast<std::uint32_t>(sends.size()) - cs.first_send;
    cs.recvs = static_cast<std::uint32_t>(recvs.size()) - cs.first_recv;
    cs.locals = static_cast<std::uint32_t>(locals.size()) - cs.first_local;
    steps_.push_back(cs);
    ++step_index;
  }

  temp_ = AlignedBuffer(static_cast<std::size_t>(temp_bytes));
  std::byte* const bases[] = {input_, output_, scratch_.data(), temp_.data()};
  const auto ptr = [&](const Ref& r) {
    return r.bytes == 0 ? bases[r.buf] : bases[r.buf] + r.offset;
  };
  sends_.reserve(sends.size());
  for (const Comm& c : sends)
    sends_.push_back({c.peer, ptr(c.ref), static_cast<std::size_t>(c.ref.bytes)});
  recvs_.reserve(recvs.size());
  for (const Comm& c : recvs)
    recvs_.push_back({c.peer, ptr(c.ref), static_cast<std::size_t>(c.ref.bytes)});
  locals_.reserve(locals.size());
  for (const Loc& l : locals) locals_.push_back({l.reduce, ptr(l.src), ptr(l.dst), l.src.bytes});
}

void Executor::run(Transport& transport) {
  if (transport.size() != ranks_ || transport.rank() != rank_)
    throw RuntimeFailure("transport is rank " + std::to_string(transport.rank()) + " of " +
                         std::to_string(transport.size()) + " but the executor runs rank " +
                         std::to_string(rank_) + " of " + std::to_string(ranks_));
  for (const CompiledStep& s : steps_) {
    if (s.sends + s.recvs > 0)
      transport.exchange({sends_.data() + s.first_send, s.sends},
                         {recvs_.data() + s.first_recv, s.recvs});
    for (std::uint32_t i = 0; i < s.locals; ++i) {
      const Local& l = locals_[s.first_local + i];
      if (l.bytes == 0) continue;
      if (l.reduce) {
        reduce_into(type_, op_, l.dst, l.src, l.bytes / elem_size_);
      } else if (l.src != l.dst) {
        std::memmove(l.dst, l.src, static_cast<std::size_t>(l.bytes));
      }
    }
  }
  if (op_ == RedOp::avg && is_reduction(collective_))
    finish_avg(type_, output_, static_cast<std::int64_t>(output_bytes_) / elem_size_, ranks_);
}

}  // namespace collkit::realrun
