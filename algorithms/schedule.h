// The schedule IR: the one representation of an algorithm that every engine
// (simulator, reference executor, real executors) consumes. See docs/SCHEDULE.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/generator.h"
#include "core/channel_plan.h"
#include "core/collective.h"
#include "core/protocol.h"

namespace collkit {

enum class Buf : std::uint8_t { input, output, scratch };
std::string_view to_string(Buf b);

// A region of one rank's buffer, in elements.
struct Region {
  Buf buf = Buf::input;
  std::int64_t offset = 0;
  std::int64_t count = 0;
  bool operator==(const Region&) const = default;
};

enum class OpKind : std::uint8_t { send, recv, copy, reduce };
enum class Combine : std::uint8_t { copy, reduce };
std::string_view to_string(OpKind k);

// One operation of a step.
//   send:   peer, src = data sent
//   recv:   peer, dst = where it lands; combine = copy (dst = data) or
//           reduce (dst = dst op data)
//   copy:   dst = src            (local; src.count == dst.count)
//   reduce: dst = dst op src     (local)
//
// Two hints change only how the simulator times a transfer, never what it
// computes (the reference executor and the real executors ignore them):
//   lanes: the transfer stands for `lanes` identical transfers run in
//          parallel (channels that share a rank order, docs/SCHEDULE.md);
//          the simulator runs it as that many equal flows.
//   fan_out: 0, or g >= 2 on a send that is one of g sends of the same data
//          to g peers in one step (multicast): where the route crosses a
//          switch that multicasts and reduces (NVLS, SHARP; docs/TOPOLOGY.md),
//          the data crosses the links before that switch once for all g.
//   fan_in: 0, or g >= 2 on a send and its reducing receive when the
//          transfer is one of g whose data is reduced into the same region
//          of the receiver: through such a switch the reduced data crosses
//          the links after it once for all g, and the receiver does not
//          reduce (the switch did). On a local reduce, with `peer` the
//          rank that sent its source: it adds data that arrived by one of
//          g fan_in receives that the IR keeps apart (no two receives of a
//          step may share a region) where such a switch sums them on the
//          way (SHARP, docs/NCCL.md); the simulator charges it nothing when
//          the route from `peer` crosses such a switch. The executors
//          ignore `peer` on local ops.
struct Op {
  OpKind kind = OpKind::send;
  Combine combine = Combine::copy;
  int peer = -1;
  Region src{};
  Region dst{};
  std::uint16_t lanes = 1;
  std::uint16_t fan_out = 0;
  std::uint16_t fan_in = 0;
  bool operator==(const Op&) const = default;
};

inline Op send_op(int peer, Region src) { return Op{OpKind::send, Combine::copy, peer, src, {}}; }
inline Op recv_op(int peer, Region dst, Combine combine = Combine::copy) {
  return Op{OpKind::recv, combine, peer, {}, dst};
}
inline Op copy_op(Region src, Region dst) { return Op{OpKind::copy, Combine::copy, -1, src, dst}; }
inline Op reduce_op(Region src, Region dst) {
  return Op{OpKind::reduce, Combine::reduce, -1, src, dst};
}

// A step: its sends and receives proceed concurrently (posted together, the
// step's communication completes when all of them have); its local copy/reduce
// ops then run in the order listed. Within one step, a region written by a
// receive must not overlap any other region the step reads or writes.
struct Step {
  std::vector<Op> ops;
  bool has_communication() const;
};

// Per-rank element counts of the three buffers.
struct BufferSizes {
  std::int64_t input = 0;
  std::int64_t output = 0;
  std::int64_t scratch = 0;
};

// Alpha-beta-gamma parameters: alpha in seconds per message, beta in seconds
// per byte, gamma in seconds per byte reduced.
struct CostParams {
  double alpha = 1e-6;
  double beta = 1.0 / 100e9;
  double gamma = 0.0;
};

// What a generator is asked for. `count` means what COSTS.md says n is:
// broadcast/reduce/all_reduce: the vector per rank; scatter/gather: the total
// at the root; all_gather: the total output; reduce_scatter: the input per
// rank; all_to_all: the send buffer per rank; barrier: must be 0.
struct ScheduleSpec {
  Collective collective = Collective::all_reduce;
  std::string algorithm;  // registered name, e.g. "rabenseifner"
  std::string variant;    // e.g. "fold" or "blocks"; empty = the default
  int ranks = 1;
  int root = 0;
  std::int64_t count = 0;
  int elem_size = 4;  // bytes per element; segment sizes are chosen in bytes
  // Pipelined algorithms: segment size in elements; 0 = the closed-form optimum
  // for `model` (see optimal_segments in costs.h).
  std::int64_t segment = 0;
  // hierarchical all_reduce: ranks per group; 0 = node_size where that
  // splits the ranks into several groups, else the largest divisor of p
  // that is <= sqrt(p).
  int group_size = 0;
  // Ranks per node (consecutive ranks) of the machine the schedule is for,
  // 0 = unknown: read off the topology by the simulator (sim/sweep.h). Only
  // defaults depend on it, never correctness; msccl:FILE.xml also reads
  // which of the file's connections cross nodes (they buffer more, so the
  // sizes at which the runtime hangs move: docs/MSCCL.md).
  int node_size = 0;
  // msccl:FILE.xml: NCCL_BUFFSIZE, the bytes of a connection's Simple
  // buffer in the runtime (0 = its default, 4 MiB); it decides at which
  // sizes the file hangs in the runtime (docs/MSCCL.md, "Connection
  // buffering"). Built-in algorithms ignore it.
  std::int64_t nccl_buffsize = 0;
  // Used only to choose default segment sizes; never changes correctness.
  CostParams model{};
  // The `nccl` family (docs/NCCL.md): the protocol the schedule is timed
  // with (none = the simulator's plain transfers), and the channels it is
  // spread over: `plan` (rank orders from a topology search), or else
  // `channels` channels over default orders (0 = one).
  Protocol protocol = Protocol::none;
  int channels = 0;
  std::shared_ptr<const ChannelPlan> plan;
  // The nccl family: a topology's protocol latencies are NCCL's ring
  // figures; an algorithm whose figures differ (the tree's, in NCCL's
  // tuning table) pays the difference, seconds: per transfer between two
  // ranks of one node (hop_extra_latency[0], an NVLink or PCI hop) or of two
  // nodes (hop_extra_latency[1], a network hop), by the plan's node_of, and
  // once at the start (base_extra_latency). docs/NCCL.md, "Latencies by
  // algorithm". Negative where the algorithm's figure is lower; a route's
  // latency never goes below 0.
  double hop_extra_latency[2] = {0, 0};
  double base_extra_latency = 0;
  // nvls / nvls_tree: the channels of one node tree follow the same routes
  // (the switch inside a node, the ranks of equal local index across nodes),
  // so they run as one transfer per chunk carrying all their lanes, each
  // chunk the sum of theirs (docs/NCCL.md, "Folded channels"). false: one
  // transfer per channel, the check that folding changes no time.
  bool fold_channels = true;
  // The nccl family: the most data bytes per second one rank's channels
  // move together under `protocol`, all its sends counted (NCCL's
  // per-channel limits of the protocol, sim/nccl.h nccl_rank_rate); 0 = no
  // limit but the links. Only the simulator reads it; it never changes
  // what the schedule moves.
  double rank_rate = 0;
};

// The uneven block partition used wherever a vector of n elements is split
// into p blocks: block i has n/p elements plus one for i < n % p.
struct Partition {
  std::int64_t n = 0;
  int p = 1;
  std::int64_t size(int i) const { return n / p + (i < n % p ? 1 : 0); }
  std::int64_t offset(int i) const { return i * (n / p) + (i < n % p ? i : n % p); }
  // Total size of blocks [first, first + k) (no wrap-around).
  std::int64_t span(int first, int k) const { return offset(first + k) - offset(first); }
};

// Input and output sizes of a rank, fixed by the collective (not the
// algorithm). See docs/SCHEDULE.md for the table.
BufferSizes io_sizes(Collective c, int p, int rank, int root, std::int64_t n);

// The schedule of one (collective, algorithm, p, root, count): per rank, an
// ordered list of steps produced on demand.
class Schedule {
 public:
  virtual ~Schedule() = default;
  const ScheduleSpec& spec() const { return spec_; }
  int ranks() const { return spec_.ranks; }
  BufferSizes buffer_sizes(int rank) const;
  // Elements the rank's buffers span while it runs: input, output and
  // scratch, plus the largest step's reducing receives, which the executors
  // land in a temp area before reducing (realrun/plan.h). What the
  // simulator's cache model weighs against a cache (docs/SIMULATOR.md).
  // Walks the rank's program once; later calls (calibrate simulates one
  // schedule many times) read the remembered value. Not safe to call from
  // two threads at once.
  std::int64_t working_set(int rank) const;
  // The rank's steps as a coroutine: O(1) state per rank for the generators
  // that need it; engines iterate it once.
  virtual Generator<Step> program(int rank) const = 0;
  // Convenience: the whole list for one rank (O(steps of that rank) memory).
  std::vector<Step> steps(int rank) const;
  // Where op `op` of step `step` of `rank` comes from, in the terms of the
  // schedule's origin (an imported file's thread block and step, say), or ""
  // (the default: generated schedules need no translation). The reference
  // executor adds it to the messages that name a step.
  virtual std::string describe_op(int rank, std::int64_t step, int op) const;
  // The same for an element of a rank's buffer (e.g. "o chunk 3"), or "".
  virtual std::string describe_element(int rank, Buf buf, std::int64_t index) const;

 protected:
  explicit Schedule(ScheduleSpec spec) : spec_(std::move(spec)) {}
  virtual std::int64_t scratch_size(int rank) const = 0;

 private:
  ScheduleSpec spec_;
  mutable std::vector<std::int64_t> working_sets_;  // per rank, -1 = not yet computed
};

}  // namespace collkit
