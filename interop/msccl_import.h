// An MSCCL XML algorithm as a collkit Schedule (docs/MSCCL.md, "Import").
//
// The runtime runs a GPU's thread blocks concurrently, each in order, with
// flags for cross-block dependencies and one FIFO connection per (peer,
// channel) that buffers a few messages. collkit's IR has one ordered program
// per rank and rendezvous matching per ordered rank pair. The importer runs
// the file's thread blocks of all ranks together, in rounds, with the
// runtime's semantics, and writes each rank's program from what happened:
//   - a send and its receive that are both ready at once become one transfer
//     in the same round on both ranks (rendezvous first); ranks whose every
//     ready send and receive can match are advanced together, so a file
//     written from a collkit schedule comes back with the same steps;
//   - when nothing can match, ready sends go into their connection (the
//     runtime's buffering at the size being run, `Buffering` below) and the
//     transfer is written in the round of its receive; if the sender
//     overwrites the data before then, the importer first copies it aside
//     (a "stash" in scratch);
//   - local steps (cpy, re, the reduce of rrc/rrs/rrcs) are written after the
//     communication they depend on.
// Every transfer of round t is in round t on both ranks, so the programs
// cannot deadlock under rendezvous; if the file's blocks cannot progress
// even with buffering, the file deadlocks in the runtime and import throws
// RuntimeDeadlock naming the stuck thread blocks, steps and what each waits
// for. Unordered blocks touching the same chunks (races) are ordered one way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "core/error.h"
#include "interop/msccl_xml.h"

namespace collkit::msccl {

// Counts (ScheduleSpec::count, collkit's meaning) must be multiples of this:
// the runtime splits the buffer into nchunksperloop chunks of equal size.
std::int64_t count_unit(const Algo& algo, int ranks);

// How the runtime's connections hold a file's messages at one size
// (docs/MSCCL.md, "Connection buffering", which cites the source lines).
// mscclSetupCount: a call carries at most max_allowed_count chunks,
//   max(1, chunk_effective / ceil(bytes / nchunksperloop)), below
//   MSCCL_MAX_COUNT; the kernel sends a step of cnt chunks as
//   ceil(cnt / max_allowed_count) calls, each steps_per_call steps of the
//   connection whatever its bytes (Simple: MSCCL_CHUNKSTEPS = 4, empty
//   slices posted too; LL, LL128: 1). A connection holds NCCL_STEPS = 8
//   steps; across nodes the receiving proxy posts 8 more.
struct Buffering {
  std::int64_t bytes = 0;            // nBytes: elements per call x element size
  std::int64_t buffer = 0;           // the protocol's connection buffer (bytes)
  std::int64_t chunk_effective = 0;  // chunkEffectiveSize: data bytes of a full call
  int max_allowed_count = 71;        // chunks per call
  int steps_per_call = 4;
  int steps = 8;       // a connection inside a node (NCCL_STEPS)
  int net_steps = 16;  // one that crosses nodes
  int node_size = 0;   // consecutive ranks per node; 0 = all in one node
};
inline constexpr int kNcclSteps = 8;                            // NCCL_STEPS
inline constexpr std::int64_t kDefaultBuffsize = 1 << 22;       // DEFAULT_BUFFSIZE (Simple)
inline constexpr std::int64_t kDefaultLlBuffsize = 524288;      // DEFAULT_LL_BUFFSIZE
inline constexpr std::int64_t kDefaultLl128Buffsize = 4915200;  // DEFAULT_LL128_BUFFSIZE
// The buffering of `algo` run as `spec` (count, element size, nccl_buffsize,
// node_size).
Buffering buffering(const Algo& algo, const ScheduleSpec& spec);
// The calls a step of cnt chunks takes (0 for cnt 0: the kernel's loop
// over calls does not run).
int calls_of(const Buffering& b, int cnt);

// The file cannot progress in the runtime: every remaining thread block
// waits (for a message, a flag, or room in a full connection).
class RuntimeDeadlock : public ScheduleError {
 public:
  using ScheduleError::ScheduleError;
};

// Where a file starts to hang in the runtime, for spec's collective, root,
// element size, buffer and nodes (its count and segment are ignored). More
// bytes mean fewer chunks per call, so more steps per message: a deadlock
// at one size is one at every larger size, and the first one is found by
// bisection over max_allowed_count (at most 71 values).
struct Hang {
  bool any = false;          // some size hangs
  bool every = false;        // the smallest count hangs already
  std::int64_t count = 0;    // the smallest count (a multiple of count_unit) that hangs
  Buffering at;              // the buffering there
  std::int64_t last_ok = 0;  // the largest count that runs (0: none)
  std::string reason;        // the import's RuntimeDeadlock message at `count`
};
// Throws what import_schedule throws for a file that fails at every size
// for another reason (ScheduleError, FileError, UsageError).
Hang first_hang(const std::shared_ptr<const Algo>& algo, const ScheduleSpec& spec);

// What the import did, for `collkit verify`.
struct ImportStats {
  bool in_place = false;                    // the file is run in place (i and o alias)
  std::int64_t chunk = 0;                   // elements per chunk
  std::int64_t loops = 1;                   // slices of each chunk (ScheduleSpec::segment)
  std::int64_t messages = 0;                // transfers
  std::int64_t buffered = 0;                // transfers that relied on the connection's buffer
  std::int64_t stashes = 0;                 // copies made because a buffered send's data changed
  std::int64_t max_steps = 0;               // collkit steps of the longest program
  std::int64_t max_thread_block_steps = 0;  // XML steps of the longest thread block
  Buffering buffering;                      // the runtime's, at this count
};

class MscclSchedule final : public Schedule {
 public:
  MscclSchedule(ScheduleSpec spec, std::shared_ptr<const Algo> algo);
  // With the buffering given instead of the spec's (first_hang's probes).
  MscclSchedule(ScheduleSpec spec, std::shared_ptr<const Algo> algo, const Buffering& buffering);
  Generator<Step> program(int rank) const override;
  std::string describe_op(int rank, std::int64_t step, int op) const override;
  std::string describe_element(int rank, Buf buf, std::int64_t index) const override;
  const Algo& algo() const { return *algo_; }
  const std::string& protocol() const { return algo_->proto; }
  const ImportStats& stats() const { return stats_; }

  // Where an op came from: thread block, first and last XML step, role.
  struct Origin {
    int tb = -1;  // -1: a copy the importer adds (in-place setup, stash, final copy)
    int first = 0, last = 0;
    std::int64_t loop = 0;
    std::uint8_t role = 0;
  };
  struct RankProgram {
    std::vector<Step> steps;
    std::vector<std::vector<Origin>> origins;  // per step, per op
    std::int64_t scratch = 0;                  // elements
  };

 protected:
  std::int64_t scratch_size(int rank) const override;

 private:
  std::shared_ptr<const Algo> algo_;
  std::vector<RankProgram> programs_;
  ImportStats stats_;
};

// Imports `algo` for spec (collective, ranks = ngpus, root, count, segment =
// elements per slice of a chunk, 0 = one pass). UsageError for a spec the
// file cannot serve (collective, rank count, count), FileError for a rule of
// the runtime's parser, ScheduleError for a file that cannot run correctly
// (shared connection, mismatched message sizes, bad chunk range), and its
// RuntimeDeadlock where the runtime hangs at this size (first_hang: from
// which size on).
std::unique_ptr<MscclSchedule> import_schedule(std::shared_ptr<const Algo> algo,
                                               const ScheduleSpec& spec);

}  // namespace collkit::msccl
