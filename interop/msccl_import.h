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
//     runtime's buffering: 8 slots, a chunk takes 1 with LL/LL128 and 4 with
//     Simple) and the transfer is written in the round of its receive; if the
//     sender overwrites the data before then, the importer first copies it
//     aside (a "stash" in scratch);
//   - local steps (cpy, re, the reduce of rrc/rrs/rrcs) are written after the
//     communication they depend on.
// Every transfer of round t is in round t on both ranks, so the programs
// cannot deadlock under rendezvous; if the file's blocks cannot progress
// even with buffering, the file deadlocks in the runtime and import throws
// ScheduleError naming the stuck thread blocks, steps and what each waits
// for. Unordered blocks touching the same chunks (races) are ordered one way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "interop/msccl_xml.h"

namespace collkit::msccl {

// Counts (ScheduleSpec::count, collkit's meaning) must be multiples of this:
// the runtime splits the buffer into nchunksperloop chunks of equal size.
std::int64_t count_unit(const Algo& algo, int ranks);

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
};

class MscclSchedule final : public Schedule {
 public:
  MscclSchedule(ScheduleSpec spec, std::shared_ptr<const Algo> algo);
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
// (deadlock, shared connection, mismatched message sizes, bad chunk range).
std::unique_ptr<MscclSchedule> import_schedule(std::shared_ptr<const Algo> algo,
                                               const ScheduleSpec& spec);

}  // namespace collkit::msccl
