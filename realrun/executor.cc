#include "realrun/executor.h"

#include <cstring>
#include <new>
#include <string>

#include "core/error.h"
#include "realrun/reduce_host.h"

namespace collkit::realrun {
namespace {

constexpr std::align_val_t kAlignment{64};

}  // namespace

AlignedBuffer::AlignedBuffer(std::size_t bytes) : size_(bytes) {
  if (bytes > 0) data_.reset(static_cast<std::byte*>(::operator new(bytes, kAlignment)));
}

void AlignedBuffer::Free::operator()(std::byte* p) const { ::operator delete(p, kAlignment); }

Executor::Executor(const Schedule& schedule, int rank, DataType type, RedOp op, bool in_place)
    : plan_(compile_plan(schedule, rank, type, op, in_place)) {
  const auto size = [](std::int64_t b) { return static_cast<std::size_t>(b); };
  storage_in_ = AlignedBuffer(size(plan_.storage_in_bytes));
  storage_out_ = AlignedBuffer(size(plan_.storage_out_bytes));
  scratch_ = AlignedBuffer(size(plan_.scratch_bytes));
  temp_ = AlignedBuffer(size(plan_.temp_bytes));
  input_ = storage_in_.data() + (plan_.in_place ? plan_.input_offset : 0);
  output_ = plan_.in_place ? storage_in_.data() + plan_.output_offset : storage_out_.data();
  AreaBases bases;
  bases.base[static_cast<int>(Area::input)] = input_;
  bases.base[static_cast<int>(Area::output)] = output_;
  bases.base[static_cast<int>(Area::scratch)] = scratch_.data();
  bases.base[static_cast<int>(Area::temp)] = temp_.data();
  sends_.reserve(plan_.sends.size());
  for (const PlanMessage& m : plan_.sends)
    sends_.push_back({m.peer, bases.at(m.ref), size(m.ref.bytes)});
  recvs_.reserve(plan_.recvs.size());
  for (const PlanMessage& m : plan_.recvs)
    recvs_.push_back({m.peer, bases.at(m.ref), size(m.ref.bytes)});
  locals_.reserve(plan_.locals.size());
  for (const PlanLocal& l : plan_.locals)
    locals_.push_back({l.reduce, bases.at(l.src), bases.at(l.dst),
                       l.has_also ? bases.at(l.also) : nullptr, l.src.bytes});
}

void Executor::run(Transport& transport) {
  if (transport.size() != plan_.ranks || transport.rank() != plan_.rank)
    throw RuntimeFailure("transport is rank " + std::to_string(transport.rank()) + " of " +
                         std::to_string(transport.size()) + " but the executor runs rank " +
                         std::to_string(plan_.rank) + " of " + std::to_string(plan_.ranks));
  const int e = plan_.elem_size;
  for (const PlanStep& s : plan_.steps) {
    if (s.sends + s.recvs > 0)
      transport.exchange({sends_.data() + s.first_send, s.sends},
                         {recvs_.data() + s.first_recv, s.recvs});
    for (std::uint32_t i = 0; i < s.locals; ++i) {
      const Local& l = locals_[s.first_local + i];
      if (l.bytes == 0) continue;
      if (l.reduce) {
        reduce_into(plan_.type, plan_.op, l.dst, l.src, l.bytes / e);
        // On the host the fused copy is a second pass over cache-hot data.
        if (l.also) std::memcpy(l.also, l.dst, static_cast<std::size_t>(l.bytes));
      } else if (l.src != l.dst) {
        std::memmove(l.dst, l.src, static_cast<std::size_t>(l.bytes));
      }
    }
  }
  if (plan_.finishes_avg()) finish_avg(plan_.type, output_, plan_.output_bytes / e, plan_.ranks);
}

}  // namespace collkit::realrun
