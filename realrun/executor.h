// The real executor: runs one rank's program of a Schedule on byte buffers
// over a Transport. The program is compiled once into flat byte-level
// operations (the timed loop never touches the coroutine), then run as often
// as the benchmark asks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "realrun/transport.h"
#include "reports/dtypes.h"

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

// Where input and output sit in the one buffer of an in-place operation, as
// NCCL defines it (recvbuff == sendbuff for all_reduce, broadcast and
// reduce; sendbuff = recvbuff + rank * sendcount for all_gather; recvbuff =
// sendbuff + rank * recvcount for reduce_scatter). Offsets and size in
// elements.
struct InPlaceLayout {
  bool defined = false;
  std::string reason;  // why not, when !defined
  std::int64_t buffer = 0;
  std::int64_t input_offset = 0;
  std::int64_t output_offset = 0;
};
InPlaceLayout in_place_layout(Collective c, int ranks, int rank, int root, std::int64_t count);

// Empty if this rank's program computes the right result with input and
// output aliased per `layout`; otherwise why not (for instance the program
// reads an input element after writing the output element at the same
// address). Every rank must agree before running in place.
std::string in_place_hazard(const Schedule& schedule, int rank, const InPlaceLayout& layout);

class Executor {
 public:
  // Compiles `rank`'s program for elements of `type` and allocates the
  // rank's buffers (in place: one buffer per in_place_layout; the caller
  // checks in_place_hazard first). Throws ScheduleError naming the step and
  // op for a region outside its buffer, a bad peer or mismatched copy sizes.
  Executor(const Schedule& schedule, int rank, DataType type, RedOp op, bool in_place = false);

  int rank() const { return rank_; }
  bool in_place() const { return in_place_; }
  // The collective's input and output as bytes (aliased when in place).
  std::span<std::byte> input() const { return {input_, input_bytes_}; }
  std::span<std::byte> output() const { return {output_, output_bytes_}; }

  // One execution of the collective. avg divides the output by the rank
  // count at the end.
  void run(Transport& transport);

  std::int64_t steps() const { return static_cast<std::int64_t>(steps_.size()); }
  std::int64_t bytes_sent() const { return bytes_sent_; }

 private:
  struct Local {
    bool reduce = false;
    std::byte* src = nullptr;
    std::byte* dst = nullptr;
    std::int64_t bytes = 0;
  };
  // Ranges into the flat arrays below.
  struct CompiledStep {
    std::uint32_t first_send = 0, sends = 0;
    std::uint32_t first_recv = 0, recvs = 0;
    std::uint32_t first_local = 0, locals = 0;
  };

  void compile(const Schedule& schedule);

  Collective collective_;
  int ranks_;
  int rank_;
  DataType type_;
  RedOp op_;
  bool in_place_;
  int elem_size_;
  AlignedBuffer storage_in_, storage_out_, scratch_, temp_;
  std::byte* input_ = nullptr;
  std::byte* output_ = nullptr;
  std::size_t input_bytes_ = 0, output_bytes_ = 0;
  std::vector<CompiledStep> steps_;
  std::vector<Message> sends_, recvs_;
  std::vector<Local> locals_;
  std::int64_t bytes_sent_ = 0;
};

}  // namespace collkit::realrun
