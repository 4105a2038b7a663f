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
//   ll_send       -> ll_send                 the sender pushes into the receiver's LL slot
//   copy, reduce_from (ll) -> ll_copy / ll_reduce   from the rank's own LL slot
//                            (+ fwd: the ll_send of its result folded in)
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
// needs none. LL operations split by lines of their user-side region, so
// two of them on the same region need no barrier between them (ring's
// "reduce what arrived, send it on" in LL is barrier-free). The nccl
// family's channels are not told apart: the plans hold no channel, and
// slicing every operation over the lanes parallelises every algorithm
// alike, channels included.
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

enum class DevOpKind : std::uint8_t {
  wait,
  signal,
  barrier,
  copy,
  reduce,
  finish_avg,
  ll_send,
  ll_copy,
  ll_reduce
};
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
  std::int64_t bytes = 0;  // copy, reduce, finish_avg, ll_*
  // ll_*: the message's slot, at byte `slot` of rank slot_rank's LL area
  // (ll_send: the receiver's; ll_copy, ll_reduce: the rank's own). The
  // user-side region is src for ll_send, dst for the others.
  int slot_rank = -1;
  std::int64_t slot = -1;
  // ll_copy, ll_reduce: a message sent on from the result (an ll_send of
  // dst folded into the receive), to byte fwd_slot of rank fwd_rank's area.
  int fwd_rank = -1;
  std::int64_t fwd_slot = -1;
};

// How a program's LL messages travel (realrun/interpreter.h): LL's 16-byte
// lines of 8 data bytes, or LL128's 128-byte lines of 120.
enum class LlProtocol : std::uint8_t { ll, ll128 };
std::string_view to_string(LlProtocol p);

// Bytes of a slot for a message of `bytes`: 16 per 8 data bytes (LL), 128
// per 120 (LL128; so every LL128 slot stays 128-byte aligned).
inline constexpr std::int64_t ll_slot_bytes(std::int64_t bytes,
                                            LlProtocol protocol = LlProtocol::ll) {
  if (protocol == LlProtocol::ll128)
    return (bytes + interp::kLl128DataBytes - 1) / interp::kLl128DataBytes *
           static_cast<std::int64_t>(sizeof(interp::Ll128Line));
  return (bytes + interp::kLlDataBytes - 1) / interp::kLlDataBytes *
         static_cast<std::int64_t>(sizeof(interp::LlLine));
}

struct DeviceProgram {
  int ranks = 0;
  int lanes = 1;  // thread blocks (host: threads) per rank
  DataType type = DataType::float32;
  RedOp op = RedOp::sum;
  std::vector<DevOp> ops;  // every rank's, rank after rank
  std::vector<std::uint32_t>
      first_op;                // ranks + 1 entries: rank r's are [first_op[r], first_op[r+1])
  std::vector<int> flag_rank;  // per flag, the rank whose lanes signal it
  std::vector<std::int64_t> ll_bytes;       // per rank, its LL area (zeroed before the first run)
  LlProtocol ll_protocol = LlProtocol::ll;  // of every LL message of the program
  // Empty when the interpreter can run it; otherwise why not (the streams
  // engine runs such plans: a local copy between overlapping regions).
  std::string unsupported;

  // Counts, and the bytes the data operations read and write (the memory
  // traffic when every rank's memory is one GPU's: docs/results/gpu-interpreter.md).
  std::int64_t waits = 0, signals = 0, barriers = 0;
  std::int64_t copies = 0, reduces = 0, pulls = 0;  // pulls: data ops reading another rank
  std::int64_t ll_messages = 0;                     // LL messages: ll_send operations + forwards
  std::int64_t ll_forwards = 0;  // of those, sent on by the receive that wrote their data
  std::int64_t bytes_read = 0, bytes_written = 0;

  int flags() const { return static_cast<int>(flag_rank.size()); }
  std::span<const DevOp> rank_ops(int r) const {
    return {ops.data() + first_op[r], ops.data() + first_op[r + 1]};
  }
};

// plans and program as compile_multirank took and made them (program from
// those plans; with a can_read that allowed direct reduces or without).
// ll_forward: an ll_send whose bytes are exactly what an earlier LL receive
// of the rank wrote, with nothing writing them in between, is folded into
// that receive (it sends each line on as it computes it; the message leaves
// earlier, never with other data). protocol: how every LL message travels.
// Throws UsageError for lanes < 1.
DeviceProgram compile_device_program(std::span<const CompiledPlan* const> plans,
                                     const MultiRankProgram& program, int lanes,
                                     bool ll_forward = true, LlProtocol protocol = LlProtocol::ll);

// Lanes for the plans' program: one per kLaneBytes of its largest data
// operation (a message or a local operation), at least 1, at most
// max_lanes (the blocks per rank a GPU holds at once). A starting point, to
// be tuned on a GPU (docs/BENCH.md).
inline constexpr std::int64_t kLaneBytes = std::int64_t{32} << 10;
// An LL message's lines take more instructions per byte: one lane per
// kLlLaneBytes of the largest one (ring at 1 MiB, P = 8, every message LL,
// on an H100: 4 / 8 / 16 lanes 97 / 65 / 59 us;
// docs/results/gpu-interpreter.md, "LL messages").
inline constexpr std::int64_t kLlLaneBytes = std::int64_t{8} << 10;

// The largest message the CUDA interpreter sends as LL by default, and the
// largest collective (bytes per rank, the bench's size) that uses LL at all
// (COLLKIT_INTERPRETER_LL_BYTES and COLLKIT_INTERPRETER_LL_SIZE override
// them). Measured on an H100, P = 8, every all_reduce algorithm, 4 KiB to
// 64 MiB, limits 0 / 64 KiB / 256 KiB / all side by side
// (docs/results/gpu-interpreter.md, "LL messages"): 256 KiB came within 1%
// of the best limit per row on geometric mean, and LL lost at every size
// from 4 MiB.
inline constexpr std::int64_t kInterpreterLlBytes = std::int64_t{256} << 10;
inline constexpr std::int64_t kInterpreterLlSize = std::int64_t{1} << 20;
// Sizes above which the LL messages go as LL128 lines by default
// (COLLKIT_INTERPRETER_LL128_ABOVE overrides it). Measured on an H100, P =
// 8, all_reduce, LL against LL128 side by side
// (docs/results/gpu-interpreter.md, "LL128"): LL128 was 2-16% slower up
// to 256 KiB on every algorithm, and at 1 MiB 3% faster on geometric mean,
// ring 17% (41 against 49 us: it moves 128 bytes per 120 of data, LL 16
// per 8).
inline constexpr std::int64_t kInterpreterLl128Above = std::int64_t{512} << 10;

// Which messages of a collective of `size` bytes per rank (the bench's
// size) go by LL, and in which lines: messages of at most max_bytes
// (compile_multirank's ll_max_bytes; -1: none), where size <= ll_size and
// ll_bytes > 0; as LL128 where size > ll128_above.
struct LlChoice {
  std::int64_t max_bytes = -1;
  LlProtocol protocol = LlProtocol::ll;
};
LlChoice choose_ll(std::int64_t size, std::int64_t ll_bytes, std::int64_t ll_size,
                   std::int64_t ll128_above);

// Messages of at most ll_max_bytes (LL ones, as compile_multirank was told)
// count one lane per kLlLaneBytes.
int choose_lanes(std::span<const CompiledPlan* const> plans, int max_lanes,
                 std::int64_t ll_max_bytes = -1);

// The program's operations bound to memory: bases[r] are rank r's areas,
// flag_address[f] where flag f lives, ll_area[r] rank r's LL area
// (program.ll_bytes[r] bytes, 16-byte aligned, 128 for LL128; may be empty
// when no rank has one; a misaligned one is a UsageError). first_op of the program indexes the
// result as it does program.ops.
std::vector<interp::ExecOp> bind_device_program(const DeviceProgram& program,
                                                std::span<const AreaBases> bases,
                                                std::span<interp::Flag* const> flag_address,
                                                std::span<unsigned char* const> ll_area = {});

// What an error word of the interpreter means, for an error message:
// "rank 3 waited longer than 2000 ms at operation 17 (wait for flag 12, signalled by rank 2):
// a deadlock or a lost signal".
std::string describe_interpreter_error(const DeviceProgram& program, interp::Flag word,
                                       double spin_limit_ms);

}  // namespace collkit::realrun
