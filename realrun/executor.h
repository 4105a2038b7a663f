// The host executor: runs one rank's compiled plan (realrun/plan.h) on host
// buffers over a Transport. The program is compiled once (the timed loop
// never touches the coroutine), then run as often as the benchmark asks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "core/dtypes.h"
#include "realrun/plan.h"
#include "realrun/transport.h"

namespace collkit::realrun {

// Heap storage aligned for vector loads (and for pinned/registered memory
// later); zero-sized buffers have a null pointer.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t bytes);
  std::byte* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte[], Free> data_;
  std::size_t size_ = 0;
};

class Executor {
 public:
  // Compiles `rank`'s program for elements of `type` and allocates the
  // rank's buffers (in place: one buffer per in_place_layout; the caller
  // checks in_place_hazard first). Throws ScheduleError naming the step and
  // op for a region outside its buffer, a bad peer or mismatched copy sizes.
  Executor(const Schedule& schedule, int rank, DataType type, RedOp op, bool in_place = false);

  int rank() const { return plan_.rank; }
  bool in_place() const { return plan_.in_place; }
  const CompiledPlan& plan() const { return plan_; }
  // The collective's input and output as bytes (aliased when in place).
  std::span<std::byte> input() const {
    return {input_, static_cast<std::size_t>(plan_.input_bytes)};
  }
  std::span<std::byte> output() const {
    return {output_, static_cast<std::size_t>(plan_.output_bytes)};
  }

  // One execution of the collective. avg divides the output by the rank
  // count at the end.
  void run(Transport& transport);

  std::int64_t steps() const { return static_cast<std::int64_t>(plan_.steps.size()); }
  std::int64_t bytes_sent() const { return plan_.bytes_sent; }

 private:
  CompiledPlan plan_;
  AlignedBuffer storage_in_, storage_out_, scratch_, temp_;
  std::byte* input_ = nullptr;
  std::byte* output_ = nullptr;
  // The plan resolved against this executor's buffers.
  std::vector<Message> sends_, recvs_;
  struct Local {
    bool reduce = false;
    std::byte* src = nullptr;
    std::byte* dst = nullptr;
    std::byte* also = nullptr;  // fused copy of a reduce's result, or null
    std::int64_t bytes = 0;
  };
  std::vector<Local> locals_;
};

}  // namespace collkit::realrun
