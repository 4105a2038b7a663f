// Every rank's program for the schedule interpreter (realrun/interpreter.h):
// one persistent GPU kernel, or one host thread per rank, runs each rank's
// operations in order, and ranks meet only through flags in memory. The
// program is compiled from the single-process multi-rank program
// (realrun/multirank.h), which already holds the rendezvous matching of the
// plans (per-pair FIFO, as the reference executor): each of its stream
// commands becomes one operation of the stream's rank.
//
//   record        -> signal(flag)            the flag is the event slot
//   wait          -> wait(flag)              for every lane of the recorder
//   copy          -> copy                    the receiver pulls the sender's bytes
//   reduce_from   -> reduce                  the pull fused with the reduce (+ also)
//   local         -> copy / reduce           within the rank
//   finish_avg    -> finish_avg
//
// So the synchronisation is exactly the event order of the streams engine:
// a receiver pulls only after the sender's "data ready" signal, and a sender
// writes the sent region again only after the receiver's "pulled" signal.
//
// Lanes: every rank runs on `lanes` thread blocks (host: threads), each doing
// its slice of every data operation. Slices of two operations differ, so
// where an operation reads or writes bytes an earlier operation of the same
// rank wrote (or writes bytes it read) since the last barrier, the compiler
// puts a barrier (a flag of the rank's own lanes) between them. One lane
// needs none. The nccl family's channels are not told apart: the plans hold
// no channel, and slicing every operation over the lanes parallelises every
// algorithm alike, channels included.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtypes.h"
#include "realrun/interpreter.h"
#include "realrun/multirank.h"
#include "realrun/plan.h"

namespace collkit::realrun {

enum class DevOpKind : std::uint8_t { wait, signal, barrier, copy, reduce, finish_avg };
std::string_view to_string(DevOpKind k);

// A byte range of one rank's area.
struct DevRef {
  int rank = 0;
  Area area = Area::input;
  std::int64_t offset = 0;
};

struct DevOp {
  DevOpKind kind = DevOpKind::wait;
  int flag = -1;  // wait, signal, barrier
  DevRef dst, src;
  bool has_also = false;
  DevRef also;
  std::int64_t bytes = 0;  // copy, reduce, finish_avg
};

struct DeviceProgram {
  int ranks = 0;
  int lanes = 1;  // thread blocks (host: threads) per rank
  DataType type = DataType::float32;
  RedOp op = RedOp::sum;
  std::vector<DevOp> ops;  // every rank's, rank after rank
  std::vector<std::uint32_t>
      first_op;                // ranks + 1 entries: rank r's are [first_op[r], first_op[r+1])
  std::vector<int> flag_rank;  // per flag, the rank whose lanes signal it
  // Empty when the interpreter can run it; otherwise why not (the streams
  // engine runs such plans: a local copy between overlapping regions).
  std::string unsupported;

  // Counts, and the bytes the data operations read and write (the memory
  // traffic when every rank's memory is one GPU's: docs/RESULTS.md).
  std::int64_t waits = 0, signals = 0, barriers = 0;
  std::int64_t copies = 0, reduces = 0, pulls = 0;  // pulls: data ops reading another rank
  std::int64_t bytes_read = 0, bytes_written = 0;

  int flags() const { return static_cast<int>(flag_rank.size()); }
  std::span<const DevOp> rank_ops(int r) const {
    return {ops.data() + first_op[r], ops.data() + first_op[r + 1]};
  }
};

// plans and program as compile_multirank took and made them (program from
// those plans; with a can_read that allowed direct reduces or without).
// Throws UsageError for lanes < 1.
DeviceProgram compile_device_program(std::span<const CompiledPlan* const> plans,
                                     const MultiRankProgram& program, int lanes);

// Lanes for the plans' program: one per kLaneBytes of its largest data
// operation (a message or a local operation), at least 1, at most
// max_lanes (the blocks per rank a GPU holds at once). A starting point, to
// be tuned on a GPU (docs/BENCH.md).
inline constexpr std::int64_t kLaneBytes = std::int64_t{32} << 10;
int choose_lanes(std::span<const CompiledPlan* const> plans, int max_lanes);

// The program's operations bound to memory: bases[r] are rank r's areas,
// flag_address[f] where flag f lives. first_op of the program indexes the
// result as it does program.ops.
std::vector<interp::ExecOp> bind_device_program(const DeviceProgram& program,
                                                std::span<const AreaBases> bases,
                                                std::span<interp::Flag* const> flag_address);

// What an error word of the interpreter means, for an error message:
// "rank 3 waited longer than 2000 ms at operation 17 (wait for flag 12, signalled by rank 2):
// a deadlock or a lost signal".
std::string describe_interpreter_error(const DeviceProgram& program, interp::Flag word,
                                       double spin_limit_ms);

}  // namespace collkit::realrun
