// The reference executor: runs a schedule for all ranks in one process on real
// buffers, or symbolically, and checks the collective's postcondition against a
// naive reference. It also rejects malformed schedules (unmatched or mis-sized
// send/recv pairs, deadlock, out-of-bounds regions, reads of never-written
// output or scratch, hazards inside a step). Every failure throws ScheduleError
// with a message naming the rank, step, op and region (and, for a wrong
// result, the first wrong output element and the op that wrote it last,
// found by a second run without data); a schedule that translates its ops
// (Schedule::describe_op, an imported file) adds where each came from.
//
// Semantics enforced (docs/SCHEDULE.md): a rank posts all sends and recvs of
// its current step together; the k-th send from A to B matches the k-th recv
// at B from A, and only while both ranks are at the steps holding them
// (rendezvous: a send never completes into a buffer); the step's local ops run
// in order once all its sends and recvs matched. A recv's region must not
// overlap any other region of its step, and a local copy or reduce must not
// overlap its own source. Deadlock reports list at most 16 stuck ranks.
//
// Limits: element storage is recycled between runs on one thread (up to 1 GiB
// is kept for the next run); verify_symbolic stores 8 + 8 * ceil(p / 64)
// bytes per element (p = 100, n = 65537 all_reduce: about 160 MB); the
// barrier causality check needs p^2 bits and is skipped above 16384 ranks.
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/schedule.h"

namespace collkit {

enum class DType : std::uint8_t { int32, int64, float32, float64 };
enum class ReduceOp : std::uint8_t { sum, prod, min, max };
std::string_view to_string(DType t);
std::string_view to_string(ReduceOp o);
inline constexpr DType kAllDTypes[] = {DType::int32, DType::int64, DType::float32, DType::float64};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::sum, ReduceOp::prod, ReduceOp::min,
                                             ReduceOp::max};

// What the executor observed while running the schedule.
struct ExecutionStats {
  std::int64_t max_comm_steps = 0;  // max over ranks of steps that communicate
  std::int64_t max_elems_sent = 0;  // max over ranks of elements sent
  std::int64_t total_messages = 0;  // all sends of all ranks
  std::int64_t max_steps = 0;       // max over ranks of all steps
  // Barrier only: whether the causality property (every rank's completion
  // follows every rank's start) was checked. It needs p^2 bits, so it is
  // skipped above 16384 ranks.
  bool barrier_causality_checked = false;
};

// Runs the schedule on numbers chosen so the exact result is representable in
// every dtype (prod uses +-1, the others small integers), then compares every
// rank's output with a naive computation of the collective. `seed` varies the
// data.
ExecutionStats verify_numeric(const Schedule& s, DType dtype, ReduceOp op, std::uint64_t seed = 1);

// Runs the schedule symbolically: every element carries the set of (rank,
// index) contributions it holds; a reduction of two sets that share a
// contribution is an error (counted twice), and every output element must hold
// exactly the contributions the collective requires.
ExecutionStats verify_symbolic(const Schedule& s);

// Only the structural checks and statistics (matching, deadlock, bounds,
// initialised reads), with no data; cheap enough for very large p.
ExecutionStats check_structure(const Schedule& s);

}  // namespace collkit
