// One rank's program of a Schedule, compiled once into flat byte-level
// operations on four memory areas (input, output, scratch, and a temp area
// for receives that reduce). The plan holds offsets, not pointers: the host
// executor (realrun/executor.h) resolves it against host buffers and runs it
// over a Transport; the GPU backends resolve the same plan against device
// buffers and run the local operations as kernels (realrun/device/). One
// compiler, every engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/schedule.h"
#include "core/dtypes.h"

namespace collkit::realrun {

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

// The memory areas a plan addresses. In place, input and output are two
// views into one storage allocation (`input_offset`/`output_offset`).
enum class Area : std::uint8_t { input = 0, output = 1, scratch = 2, temp = 3 };
inline constexpr int kAreas = 4;

struct PlanRef {
  Area area = Area::input;
  std::int64_t offset = 0;  // bytes
  std::int64_t bytes = 0;
};

struct PlanMessage {
  int peer = -1;
  PlanRef ref;
  // A receive that reduces lands in the temp area; this is the index of the
  // local reduce (temp -> destination) that consumes it, -1 for plain
  // receives and sends.
  std::int32_t reduce_local = -1;
};

// A local operation after the step's communication: dst = src (copy) or
// dst = dst op src (reduce). A reduce whose result the same step then copies
// elsewhere carries that copy as `also` (fused: one pass writes both).
struct PlanLocal {
  bool reduce = false;
  PlanRef src, dst;
  bool has_also = false;
  PlanRef also;
};

// Ranges into the plan's flat arrays.
struct PlanStep {
  std::uint32_t first_send = 0, sends = 0;
  std::uint32_t first_recv = 0, recvs = 0;
  std::uint32_t first_local = 0, locals = 0;
};

struct CompiledPlan {
  Collective collective = Collective::all_reduce;
  int ranks = 1;
  int rank = 0;
  DataType type = DataType::float32;
  RedOp op = RedOp::sum;
  bool in_place = false;
  int elem_size = 4;
  // Allocations: out of place, input and output storage; in place, one
  // storage (storage_in_bytes) holding both views and storage_out_bytes = 0.
  std::int64_t storage_in_bytes = 0, storage_out_bytes = 0;
  std::int64_t input_offset = 0, output_offset = 0;  // bytes into their storage
  std::int64_t input_bytes = 0, output_bytes = 0, scratch_bytes = 0, temp_bytes = 0;
  std::vector<PlanStep> steps;
  std::vector<PlanMessage> sends, recvs;
  std::vector<PlanLocal> locals;
  std::int64_t bytes_sent = 0;
  std::int64_t fused_copies = 0;  // reduces that carry the following copy

  // avg divides the output by the rank count at the end.
  bool finishes_avg() const { return op == RedOp::avg && is_reduction(collective); }
};

// Compiles `rank`'s program for elements of `type`. Throws UsageError for a
// bad rank or element size, ScheduleError naming the step and op for a
// region outside its buffer, a bad peer or mismatched copy sizes; in place
// the caller checks in_place_hazard first.
CompiledPlan compile_plan(const Schedule& schedule, int rank, DataType type, RedOp op,
                          bool in_place);

// Where `r` lies as (allocation, first byte, end byte): in place, input and
// output are views of one allocation. overlap() compares two such spans.
std::tuple<int, std::int64_t, std::int64_t> storage_span(const CompiledPlan& plan,
                                                         const PlanRef& r);
bool overlap(const CompiledPlan& plan, const PlanRef& a, const PlanRef& b);

// A plan with the collective's input/output layout and no steps: the
// buffers of a native (vendor) collective, laid out like the executor's.
CompiledPlan io_plan(Collective c, int ranks, int rank, int root, std::int64_t count, DataType type,
                     RedOp op, bool in_place);

// Base addresses of the four areas (host or device memory alike).
struct AreaBases {
  std::byte* base[kAreas] = {nullptr, nullptr, nullptr, nullptr};
  std::byte* at(const PlanRef& r) const {
    return r.bytes == 0 ? base[static_cast<int>(r.area)]
                        : base[static_cast<int>(r.area)] + r.offset;
  }
};

}  // namespace collkit::realrun
