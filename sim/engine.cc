#include "sim/engine.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "sim/flat_map.h"
#include "sim/flow_network.h"
#include "sim/orbits.h"

namespace collkit {
namespace {

using sim_detail::FlowNetwork;

constexpr std::uint32_t kNil = 0xffffffffu;

// A send or receive posted before its counterpart, kept by its receiver.
// Per ordered pair only one side can be waiting (a post of the other side
// matches at once), so the oldest waiting post of the peer on the opposite
// side is the FIFO match.
struct Post {
  double time;
  std::int64_t count;
  // The sender, for both kinds (the receiver keeps the post), with the kind
  // in bit 31 and a reducing receive in bit 30 (ranks are < 2^30).
  std::uint32_t peer_bits;
  // Lanes and fans (PostExtra), kNil when they are the defaults: kept aside
  // so that a RankState stays one cache line. An eager send already under
  // way has its Eager record here instead, with kEagerBit.
  std::uint32_t extra;
  int peer() const { return static_cast<int>(peer_bits & 0x3fffffffu); }
  bool is_send() const { return (peer_bits >> 31) != 0; }
  bool reduce() const { return ((peer_bits >> 30) & 1u) != 0; }
  static Post make(double time, std::int64_t count, int peer, bool is_send, bool reduce) {
    return Post{
        time, count,
        static_cast<std::uint32_t>(peer) | (is_send ? 1u << 31 : 0u) | (reduce ? 1u << 30 : 0u),
        kNil};
  }
};
static_assert(sizeof(Post) == 24, "a RankState must stay one cache line");

// Marks an Eager record's index in Post::extra and in a flow's tag (the
// others are PostExtra and Transfer indices).
constexpr std::uint32_t kEagerBit = 1u << 31;

// The rarely set parts of a post (Op::lanes, fan_out, fan_in).
struct PostExtra {
  std::uint16_t lanes = 1;
  std::uint16_t fan_out = 0;
  std::uint16_t fan_in = 0;
  bool dirty =
      false;  // a send of data its rank wrote during the call (EndpointProps::dirty_factor)
};

// Element ranges of one buffer, disjoint and merged: what a rank wrote
// during the call (EndpointProps::dirty_factor).
class Ranges {
 public:
  void add(std::int64_t lo, std::int64_t hi) {
    if (lo >= hi) return;
    auto it = map_.upper_bound(lo);
    if (it != map_.begin() && std::prev(it)->second >= lo) {
      --it;
      lo = it->first;
    }
    while (it != map_.end() && it->first <= hi) {
      hi = std::max(hi, it->second);
      it = map_.erase(it);
    }
    map_.emplace(lo, hi);
  }
  void remove(std::int64_t lo, std::int64_t hi) {
    if (lo >= hi) return;
    auto it = map_.upper_bound(lo);
    if (it != map_.begin() && std::prev(it)->second > lo) --it;
    while (it != map_.end() && it->first < hi) {
      const std::int64_t a = it->first, b = it->second;
      it = map_.erase(it);
      if (a < lo) map_.emplace(a, lo);
      if (b > hi) map_.emplace(hi, b);
    }
  }
  bool overlaps(std::int64_t lo, std::int64_t hi) const {
    if (lo >= hi) return false;
    auto it = map_.upper_bound(lo);
    if (it != map_.begin() && std::prev(it)->second > lo) return true;
    return it != map_.end() && it->first < hi;
  }

 private:
  std::map<std::int64_t, std::int64_t> map_;  // lo -> hi
};

// Posts beyond a rank's first, in a pool with a free list, chained per
// ordered pair (oldest first).
struct Posted {
  Post post;
  std::uint32_t next;
};

// The waiting posts of one ordered pair beyond a rank's first: head and tail
// nodes. A node is a Posted index, or with kEagerBit an Eager record's (an
// eager send chains through its own record, see Eager::next).
struct PairChain {
  std::uint32_t head;
  std::uint32_t tail;
};

// Per-rank state: the rank's coroutine plus the bookkeeping of its current
// step and its waiting posts. One cache line: at 2^20 ranks every access to a
// peer is a cache miss, so a match should need no other line.
struct alignas(64) RankState {
  Generator<Step> program;
  double done = 0;   // latest completion among the step's finished ops (>= its start)
  double local = 0;  // cost of the step's local reductions and copies, paid after its communication
  std::int32_t pending = 0;  // communication ops still outstanding; -1 once finished
  // Unmatched posts whose receiver is this rank (its own receives and sends
  // addressed to it). Matching looks here rather than in a table keyed by
  // pair, since this line is touched anyway when the transfer completes.
  // Short mode (the common case: the few posts of a step plus early sends
  // from ranks a little ahead): oldest first, `first`, then a pooled list of
  // `listed` more, scanned. Once more than kListed wait, the receiver
  // switches to indexed mode: the waiting posts beyond `first` move into
  // per-pair chains (Engine::chains_) and `more_head` counts them, until
  // none is left. Eager senders (NCCL's FIFO) run hundreds of chunks ahead
  // of their receivers; the scan made that quadratic (82% of the time of a
  // 10-node nccl all_reduce sweep), while a table for every post cost 1.8x at
  // 2^20 ranks of recursive doubling.
  bool has_first = false;
  bool indexed = false;
  std::uint16_t listed = 0;
  Post first{};
  std::uint32_t more_head = kNil;  // short mode: the list; indexed mode: posts chained
  std::uint32_t more_tail = kNil;
};

static_assert(sizeof(RankState) == 64, "one cache line per rank");

struct Transfer {
  int src;
  int dst;
  double bytes;
  bool reduce;
  bool local = false;  // a rank's local work on a shared host (src == dst)
  // Pipelined endpoints: the receiver sees the data `tail` seconds after the
  // sender has put its last byte out (the route's latency); a reduction
  // overlaps the transfer from `begin`.
  double tail = 0;
  double begin = 0;
};

// An eager send (a pipelined sender's: its data leaves when the send is
// posted) from start to receipt: its transfer in the network, then its data
// waiting at the receiver, then the matching receive. One record, one cache
// line: its send's post, its flow's tag and its receive all lead here, and
// each of them was a separate miss when transfer, post extra and arrival
// were three records.
struct alignas(64) Eager {
  double begin = 0;  // when the data started to flow
  double bytes = 0;
  double tail = 0;  // as Transfer::tail
  double time = 0;  // when it is there, once arrived
  double receive_time = 0;
  // While the send waits in its pair's chain (indexed mode): its post's
  // count and the next node of the chain, so that a receive taking it from
  // the chain reads this line only, not a Posted node as well.
  std::int64_t count = 0;
  std::uint32_t next = kNil;
  int src = 0;
  int dst = 0;
  bool arrived = false;
  bool reduced_in_switch = false;
  bool receive_posted = false;
  bool reduce = false;
};
static_assert(sizeof(Eager) == 64, "one cache line per eager send");

class Engine {
 public:
  Engine(const Schedule& schedule, const Topology& topology, const SimOptions& options,
         const RankTurn* turn)
      : schedule_(schedule),
        topology_(topology),
        options_(options),
        p_(schedule.ranks()),
        elem_size_(schedule.spec().elem_size),
        ranks_(static_cast<std::size_t>(p_)),
        protocol_(schedule.spec().protocol != Protocol::none ? schedule.spec().protocol
                                                             : topology.default_protocol),
        efficiency_(topology.protocol(protocol_).efficiency),
        rank_rate_(schedule.spec().rank_rate),
        turn_(turn),
        order_(turn ? turn->order() : 1) {
    routes_.resize(route_cache_size(p_));
    if (options_.model == NetModel::flow) network_.emplace(topology_);
    if (options_.rank_times) result_.rank_times.assign(static_cast<std::size_t>(p_), 0.0);
    init_cache_scale();
    init_shared_hosts();
    init_endpoint_costs();
    for (int r = 0; r < p_ && written_.empty(); ++r)
      if (topology_.endpoint(r).dirty_factor != 1) written_.resize(static_cast<std::size_t>(p_));
  }

  SimResult run() {
    // The protocol's base latency: every rank starts its program after it.
    const double base = std::max(
        0.0, topology_.protocol(protocol_).base_latency + schedule_.spec().base_extra_latency);
    // Under a turn only the representatives run: each stands for its orbit.
    for (int r = 0; r < p_; ++r) {
      if (turn_ && turn_->power(r) != 0) continue;
      ranks_[r].program = schedule_.program(r);
      advance(r, base);
      drain();
    }
    if (options_.model == NetModel::flow) run_network();
    if (finished_ != p_ / order_ || unmatched_posts()) throw_deadlock();
    if (turn_ && options_.rank_times)
      for (int r = 0; r < p_; ++r) result_.rank_times[r] = result_.rank_times[turn_->rep(r)];
    result_.orbit = order_;
    result_.messages *= order_;
    result_.bytes *= order_;
    double launch = 0;
    for (int r = 0; r < p_; ++r) launch = std::max(launch, topology_.endpoint(r).launch);
    result_.launch_floor = launch * std::max(1, options_.launch_devices);
    result_.time = std::max(end_time_, result_.launch_floor);
    result_.events = events_ + (network_ ? network_->events() : 0);
    if (network_) result_.max_link_flows = network_->max_link_flows();
    return result_;
  }

 private:
  double hop_extra(int src, int dst) const {
    return sim_detail::hop_extra(schedule_.spec(), src, dst);
  }

  // Runs the rank's steps from time `t` until one communicates (its ops are
  // then posted) or the program ends. Steps with only local ops cost their
  // reductions and copies and need no event.
  void advance(int rank, double t) {
    RankState& s = ranks_[rank];
    for (;;) {
      if (!s.program.next()) {
        s.pending = -1;
        s.done = t;
        s.program = {};  // frees the coroutine frame now, not at the end of the run
        if (!written_.empty()) written_[static_cast<std::size_t>(rank)] = {};
        end_time_ = std::max(end_time_, t);
        if (options_.rank_times) result_.rank_times[rank] = t;
        ++finished_;
        return;
      }
      ++events_;
      const Step& step = s.program.value();
      int comm = 0;
      double local = 0;
      for (const Op& op : step.ops) {
        if (op.kind == OpKind::send || op.kind == OpKind::recv) {
          ++comm;
        } else if (op.kind == OpKind::reduce) {
          // A sum an in-network switch already made (Op::fan_in on a local
          // reduce): free where the data's route from op.peer crossed one.
          if (op.fan_in >= 2 && op.peer >= 0 && split_geometry(op.peer, rank).in_network) continue;
          local += reduce_time(rank, static_cast<double>(op.src.count) * elem_size_);
        } else if (op.kind == OpKind::copy) {
          local += copy_time(rank, static_cast<double>(op.src.count) * elem_size_);
        }
      }
      if (comm == 0) {
        note_writes(rank, step);
        if (!core_slot_.empty() && local > 0) {
          // Local work on a shared host is a flow: the rank waits for it.
          s.done = t;
          s.local = 0;
          s.pending = 1;
          start_local(rank, t, local);
          return;
        }
        t += local;
        continue;
      }
      s.done = t;
      s.local = local;
      if (local > 0 && pipelined_[static_cast<std::size_t>(rank)]) {
        // GPU kernels reduce and copy alongside the step's communication.
        s.done = t + local;
        s.local = 0;
      }
      s.pending = comm;
      if (comm > 1) prefetch_posts(rank, step);
      for (const Op& op : step.ops)
        if (op.kind == OpKind::send || op.kind == OpKind::recv) post(rank, op, t);
      note_writes(rank, step);
      return;
    }
  }

  // Matching a post reads its receiver's line, then the pair's chain slot
  // and the record at its head: each a likely cache miss when the receiver
  // is indexed (eager senders far ahead), one after the other per post. An
  // eager send (a pipelined sender's) then looks up its route, in routes_
  // or, for a fan, in splits_: a set's keys, then the entry. A step's posts
  // are independent of each other up to that point, so their lines are
  // fetched together first: the slots and sets of every post, then, once
  // those are in flight, the route entries of the sends and the records
  // the rank's own receives will take. Hints only: what post() finds is
  // unchanged.
  void prefetch_posts(int rank, const Step& step) {
    if (turn_) return;  // posts go to their canonical pair (post()), not these
    const bool eager = pipelined(rank);
    for (const Op& op : step.ops) {
      if ((op.kind != OpKind::send && op.kind != OpKind::recv) || op.peer < 0 || op.peer >= p_)
        continue;
      const bool is_send = op.kind == OpKind::send;
      const int dst = is_send ? op.peer : rank;
      __builtin_prefetch(&ranks_[static_cast<std::size_t>(dst)]);
      chains_.prefetch(pair_key(dst, is_send ? rank : op.peer));
      if (is_send && eager) {
        if (op.fan_out >= 2 || op.fan_in >= 2) {
          if (!splits_.empty()) splits_.prefetch_keys(pair_key(rank, op.peer));
        } else if (route_bypass_ == 0) {
          routes_.prefetch_keys(pair_key(rank, op.peer));
        }
      }
    }
    const bool indexed = ranks_[static_cast<std::size_t>(rank)].indexed;
    for (const Op& op : step.ops) {
      if ((op.kind != OpKind::send && op.kind != OpKind::recv) || op.peer < 0 || op.peer >= p_)
        continue;
      if (op.kind == OpKind::send) {
        if (!eager) continue;
        const char* entry = nullptr;
        if (op.fan_out >= 2 || op.fan_in >= 2) {
          if (!splits_.empty())
            entry = reinterpret_cast<const char*>(splits_.find(pair_key(rank, op.peer)));
        } else if (route_bypass_ == 0) {
          entry = reinterpret_cast<const char*>(routes_.find(pair_key(rank, op.peer)));
        }
        if (entry != nullptr) {
          __builtin_prefetch(entry);
          __builtin_prefetch(entry + 64);
        }
        continue;
      }
      if (!indexed) continue;
      if (const PairChain* c = chains_.find(pair_key(rank, op.peer))) {
        if ((c->head & kEagerBit) != 0) {
          __builtin_prefetch(&eagers_[c->head & ~kEagerBit]);
        } else {
          __builtin_prefetch(&posted_[c->head]);
        }
      }
    }
  }

  // What the rank wrote during the call (EndpointProps::dirty_factor): a
  // receive, a reduction or a copy dirties its destination, except a copy
  // of the input into the output, which the real executors do not send
  // from: they send the input itself (realrun/plan.cc, source_of). Applied
  // after the step's sends were posted (they read the state before it).
  Ranges* written(int rank, Buf buf) {
    if (written_.empty() || buf == Buf::input) return nullptr;
    return &written_[static_cast<std::size_t>(rank)][buf == Buf::output ? 0 : 1];
  }
  bool is_dirty(int rank, const Region& r) {
    const Ranges* w = written(rank, r.buf);
    return w != nullptr && w->overlaps(r.offset, r.offset + r.count);
  }
  void note_writes(int rank, const Step& step) {
    if (written_.empty()) return;
    for (const Op& op : step.ops) {
      if (op.kind == OpKind::send) continue;
      Ranges* w = written(rank, op.dst.buf);
      if (w == nullptr) continue;
      const std::int64_t lo = op.dst.offset, hi = op.dst.offset + op.dst.count;
      if (op.kind == OpKind::copy && op.src.buf == Buf::input && op.dst.buf == Buf::output)
        w->remove(lo, hi);
      else
        w->add(lo, hi);
    }
  }

  // What the engine reads of a rank's endpoint per message, kept here:
  // Topology::endpoint() is a virtual call that copies all of EndpointProps
  // (it was 3% of an NVLS run, called four times per message). Distinct
  // values once each, and per rank an index (none while all ranks share one).
  struct EndpointCosts {
    double overhead;
    double reduce_bw;
    double copy_bw;
  };
  void init_endpoint_costs() {
    pipelined_.resize(static_cast<std::size_t>(p_));
    std::map<std::array<std::uint64_t, 3>, std::uint32_t> index;
    std::vector<std::uint32_t> of(static_cast<std::size_t>(p_));
    for (int r = 0; r < p_; ++r) {
      const EndpointProps ep = topology_.endpoint(r);
      pipelined_[static_cast<std::size_t>(r)] = ep.pipelined;
      const EndpointCosts c{ep.overhead, ep.reduce_bw, ep.copy_bw};
      std::array<std::uint64_t, 3> bits;
      std::memcpy(bits.data(), &c, sizeof c);
      const auto [it, fresh] = index.emplace(bits, static_cast<std::uint32_t>(costs_.size()));
      if (fresh) costs_.push_back(c);
      of[static_cast<std::size_t>(r)] = it->second;
    }
    if (costs_.size() > 1) cost_of_ = std::move(of);
  }
  const EndpointCosts& costs(int rank) const {
    return cost_of_.empty() ? costs_[0] : costs_[cost_of_[static_cast<std::size_t>(rank)]];
  }
  bool pipelined(int rank) const { return pipelined_[static_cast<std::size_t>(rank)] != 0; }

  double reduce_time(int rank, double bytes) const {
    const double bw = costs(rank).reduce_bw;
    return bw > 0 ? bytes * scale(rank) / bw : 0.0;
  }

  double copy_time(int rank, double bytes) const {
    const double bw = costs(rank).copy_bw;
    return bw > 0 ? bytes * scale(rank) / bw : 0.0;
  }

  // Shared hosts (EndpointProps::host_cores, flow model only): each rank's
  // local work is a flow of `seconds alone` units over its own core (1 unit
  // per second) and its host's cores (host_cores units per second), so k
  // ranks working at once on a host of c cores each run at min(1, c / k).
  void init_shared_hosts() {
    if (!network_) return;
    std::vector<std::uint32_t> host_slot;
    for (int r = 0; r < p_; ++r) {
      const EndpointProps ep = topology_.endpoint(r);
      if (!(ep.host_cores > 0)) continue;
      if (core_slot_.empty()) {
        core_slot_.assign(static_cast<std::size_t>(p_), kNil);
        host_of_.assign(static_cast<std::size_t>(p_), kNil);
      }
      const auto h = static_cast<std::size_t>(std::max(ep.host, 0));
      if (host_slot.size() <= h) host_slot.resize(h + 1, kNil);
      if (host_slot[h] == kNil) host_slot[h] = network_->add_virtual_link(ep.host_cores);
      core_slot_[static_cast<std::size_t>(r)] = network_->add_virtual_link(1.0);
      host_of_[static_cast<std::size_t>(r)] = host_slot[h];
      if (ep.receiver_copies) {
        if (copies_.empty()) copies_.assign(static_cast<std::size_t>(p_), 0);
        copies_[static_cast<std::size_t>(r)] = 1;
      }
    }
  }
  // EndpointProps::receiver_copies: the rank's core copies what it receives.
  bool copies(int rank) const {
    return !copies_.empty() && copies_[static_cast<std::size_t>(rank)] != 0;
  }
  bool shares_host(int rank) const {
    return !core_slot_.empty() && core_slot_[static_cast<std::size_t>(rank)] != kNil;
  }
  void start_local(int rank, double start, double seconds) {
    const std::uint32_t tag = new_transfer(Transfer{rank, rank, seconds, false, true});
    const std::uint32_t slots[2] = {core_slot_[static_cast<std::size_t>(rank)],
                                    host_of_[static_cast<std::size_t>(rank)]};
    network_->add(start, slots, 2, seconds, tag);
  }

  // The cache model (EndpointProps::cache_bytes): ranks whose working set
  // (Schedule::working_set: input, output, scratch and the temp area of
  // reducing receives) exceeds their endpoint's cache get dram_factor, the
  // others 1. Kept empty (all 1) when no rank is past its cache, so the
  // common case costs one test per byte count.
  void init_cache_scale() {
    for (int r = 0; r < p_; ++r) {
      const EndpointProps ep = topology_.endpoint(r);
      if (!(ep.cache_bytes > 0) || ep.dram_factor == 1) continue;
      if (static_cast<double>(schedule_.working_set(r)) * elem_size_ <= ep.cache_bytes) continue;
      if (scale_.empty()) scale_.assign(static_cast<std::size_t>(p_), 1.0);
      scale_[static_cast<std::size_t>(r)] = ep.dram_factor;
    }
  }
  double scale(int rank) const {
    return scale_.empty() ? 1.0 : scale_[static_cast<std::size_t>(rank)];
  }

  void post(int rank, const Op& op, double t) {
    const bool is_send = op.kind == OpKind::send;
    const std::int64_t count = is_send ? op.src.count : op.dst.count;
    if (op.peer < 0 || op.peer >= p_ || op.peer == rank)
      throw ScheduleError(describe_op(rank, op) + ": peer out of range for " + std::to_string(p_) +
                          " ranks");
    if (count < 0) throw ScheduleError(describe_op(rank, op) + ": negative count");
    int src = is_send ? rank : op.peer;
    int dst = is_send ? op.peer : rank;
    if (turn_ && is_send) {
      // Under a turn a send to a rank k turns from its representative is
      // the pair turned back k times: posted at that representative.
      const int k = turn_->power(dst);
      if (k != 0) {
        src = turn_->apply(src, order_ - k);
        dst = turn_->rep(dst);
      }
    }
    const bool my_dirty = is_send && is_dirty(rank, op.src);
    Post other{};
    if (!take_match(dst, src, is_send, other)) {
      Post mine = Post::make(t, count, src, is_send, !is_send && op.combine == Combine::reduce);
      std::uint32_t transfer = kNil;
      // An eager sender (a pipelined endpoint: NCCL's FIFO) does not wait
      // for the receive: its data leaves now and waits at the receiver.
      if (is_send && pipelined(src)) {
        transfer = start_transfer(src, dst, static_cast<double>(count) * elem_size_, false, t,
                                  op.lanes, op.fan_out, op.fan_in, /*eager=*/true, my_dirty);
      }
      // The receive of an eager send needs only its Eager record (its cost,
      // written data included, is set).
      if (transfer != kNil) {
        mine.extra = transfer | kEagerBit;
      } else if (op.lanes != 1 || op.fan_out != 0 || op.fan_in != 0 || my_dirty) {
        mine.extra = new_extra(PostExtra{op.lanes, op.fan_out, op.fan_in, my_dirty});
      }
      enqueue(dst, mine);
      return;
    }
    check_counts(src, dst, is_send ? count : other.count, is_send ? other.count : count);
    if (other.extra != kNil && (other.extra & kEagerBit) != 0) {
      // The receive of an eager send that is under way or has arrived.
      receive_eager(dst, other.extra & ~kEagerBit, op.combine == Combine::reduce, t);
      return;
    }
    PostExtra ox;
    if (other.extra != kNil) {
      ox = extras_[other.extra];
      free_extras_.push_back(other.extra);
    }
    const bool reduce = is_send ? other.reduce() : op.combine == Combine::reduce;
    // Lanes and fans come from whichever side names them (the generators
    // put the same value on both).
    const std::uint16_t lanes = std::max(op.lanes, ox.lanes);
    const std::uint16_t fan_out = is_send ? op.fan_out : ox.fan_out;
    const std::uint16_t fan_in = std::max(op.fan_in, ox.fan_in);
    const bool dirty = is_send ? my_dirty : ox.dirty;
    if (pipelined(src)) {
      // Eager even though the receive was posted first (engines may post
      // out of time order): the data leaves when the send is posted, and
      // the receive is done when both the data and the receive are there.
      const std::uint32_t transfer =
          start_transfer(src, dst, static_cast<double>(count) * elem_size_, false,
                         is_send ? t : other.time, lanes, fan_out, fan_in, true, dirty);
      receive_eager(dst, transfer, reduce, is_send ? other.time : t);
      return;
    }
    start_transfer(src, dst, static_cast<double>(count) * elem_size_, reduce,
                   std::max(t, other.time), lanes, fan_out, fan_in, /*eager=*/false, dirty);
  }

  void check_counts(int src, int dst, std::int64_t sent, std::int64_t expected) const {
    if (sent != expected)
      throw ScheduleError("rank " + std::to_string(src) + " sends " + std::to_string(sent) +
                          " elements to rank " + std::to_string(dst) +
                          " but the matching receive expects " + std::to_string(expected));
  }

  // Short mode keeps at most this many posts in a receiver's list.
  static constexpr std::uint16_t kListed = 16;

  std::uint32_t new_posted(const Post& post) {
    std::uint32_t idx;
    if (!free_posted_.empty()) {
      idx = free_posted_.back();
      free_posted_.pop_back();
    } else {
      idx = static_cast<std::uint32_t>(posted_.size());
      posted_.emplace_back();
    }
    posted_[idx] = Posted{post, kNil};
    return idx;
  }

  // A chain node's link to the next (PairChain).
  std::uint32_t& next_of(std::uint32_t node) {
    return (node & kEagerBit) != 0 ? eagers_[node & ~kEagerBit].next : posted_[node].next;
  }
  // The post a chain node stands for (an eager send's as posted, but for
  // its time, which nothing reads once the send is under way).
  Post post_of(std::uint32_t node) const {
    if ((node & kEagerBit) == 0) return posted_[node].post;
    const Eager& e = eagers_[node & ~kEagerBit];
    Post p = Post::make(0, e.count, e.src, true, false);
    p.extra = node;
    return p;
  }

  // Appends chain node `node` (from `peer`) to the chain of its pair at
  // receiver `dst`.
  void chain(int dst, int peer, std::uint32_t node) {
    next_of(node) = kNil;
    bool fresh = false;
    PairChain& c = chains_.insert(pair_key(dst, peer), fresh);
    if (fresh) {
      c = PairChain{node, node};
    } else {
      next_of(c.tail) = node;
      c.tail = node;
    }
  }
  // Chains a new post: an eager send as its Eager record, others pooled.
  void chain_new(int dst, const Post& mine) {
    if (mine.extra != kNil && (mine.extra & kEagerBit) != 0) {
      eagers_[mine.extra & ~kEagerBit].count = mine.count;
      chain(dst, mine.peer(), mine.extra);
      return;
    }
    chain(dst, mine.peer(), new_posted(mine));
  }

  // Appends a post to the receiver's waiting posts. Each pair stays FIFO in
  // both modes: `first` is older than every listed or chained post, the list
  // is in posting order, and the switch moves the list into the chains in
  // that order.
  void enqueue(int dst, const Post& mine) {
    RankState& receiver = ranks_[dst];
    if (receiver.indexed) {
      chain_new(dst, mine);
      ++receiver.more_head;
      return;
    }
    if (!receiver.has_first) {
      receiver.first = mine;
      receiver.has_first = true;
      return;
    }
    if (receiver.listed == kListed) {
      std::uint32_t i = receiver.more_head;
      while (i != kNil) {
        const std::uint32_t next = posted_[i].next;
        chain(dst, posted_[i].post.peer(), i);
        i = next;
      }
      chain_new(dst, mine);
      receiver.indexed = true;
      receiver.more_head = receiver.listed + 1u;
      receiver.more_tail = kNil;
      receiver.listed = 0;
      return;
    }
    const std::uint32_t idx = new_posted(mine);
    if (receiver.more_tail == kNil) {
      receiver.more_head = idx;
    } else {
      posted_[receiver.more_tail].next = idx;
    }
    receiver.more_tail = idx;
    ++receiver.listed;
  }

  // The receive matching an eager send: done when the data is there (or at
  // once if it already is), plus what a reduction that could not keep up
  // with the transfer adds.
  void receive_eager(int dst, std::uint32_t transfer, bool reduce, double t) {
    Eager& a = eagers_[transfer];
    if (a.arrived) {
      complete(dst, receive_done(dst, a.begin, a.bytes, a.time, reduce && !a.reduced_in_switch, t));
      free_eagers_.push_back(transfer);
      return;
    }
    // Still in flight: the arrival completes the receive.
    a.receive_posted = true;
    a.receive_time = t;
    a.reduce = reduce;
  }

  // When a receive is done: the data has arrived (`seen`) and the receive was
  // posted (`posted`); a reduction follows the data, or on a pipelined
  // endpoint runs alongside the transfer from its `begin`, at reduce_bw.
  double receive_done(int dst, double begin, double bytes, double seen, bool reduce,
                      double posted) const {
    double done = std::max(seen, posted);
    if (!reduce) return done;
    const double work = reduce_time(dst, bytes);
    if (pipelined(dst)) return std::max(done, begin + work);
    return done + work;
  }
  // Removes from the receiver's waiting posts the oldest one from `src` on
  // the side opposite to `is_send`, into `out`; false if there is none. Per
  // pair only one side waits, so the pair's oldest post is the match or
  // there is none.
  bool take_match(int dst, int src, bool is_send, Post& out) {
    RankState& receiver = ranks_[dst];
    if (receiver.indexed) return take_indexed(dst, src, is_send, out);
    if (!receiver.has_first) return false;
    const auto wanted = [&](const Post& p) { return p.peer() == src && p.is_send() != is_send; };
    if (wanted(receiver.first)) {
      out = receiver.first;
      const std::uint32_t idx = receiver.more_head;
      if (idx == kNil) {
        receiver.has_first = false;
        return true;
      }
      receiver.first = posted_[idx].post;
      receiver.more_head = posted_[idx].next;
      if (receiver.more_head == kNil) receiver.more_tail = kNil;
      free_posted_.push_back(idx);
      --receiver.listed;
      return true;
    }
    std::uint32_t prev = kNil;
    for (std::uint32_t i = receiver.more_head; i != kNil; prev = i, i = posted_[i].next) {
      if (!wanted(posted_[i].post)) continue;
      out = posted_[i].post;
      if (prev == kNil) {
        receiver.more_head = posted_[i].next;
      } else {
        posted_[prev].next = posted_[i].next;
      }
      if (receiver.more_tail == i) receiver.more_tail = prev;
      free_posted_.push_back(i);
      --receiver.listed;
      return true;
    }
    return false;
  }

  // take_match in indexed mode: `first`, else the head of the pair's chain
  // (per pair only one side waits, so that is the match or there is none).
  // The receiver returns to short mode when its last chained post is taken.
  bool take_indexed(int dst, int src, bool is_send, Post& out) {
    RankState& receiver = ranks_[dst];
    if (receiver.has_first && receiver.first.peer() == src) {
      if (receiver.first.is_send() == is_send) return false;
      out = receiver.first;
      receiver.has_first = false;
      return true;
    }
    const std::uint64_t key = pair_key(dst, src);
    PairChain* c = chains_.find(key);
    if (c == nullptr) return false;
    const std::uint32_t node = c->head;
    // An eager node is a send: its record (a cache miss, and no use to a
    // send, which cannot match it) is read only for a receive that takes it.
    const bool head_sends = (node & kEagerBit) != 0 || posted_[node].post.is_send();
    if (head_sends == is_send) return false;
    out = post_of(node);
    const std::uint32_t next = next_of(node);
    if (next == kNil) {
      chains_.erase(key);
    } else {
      c->head = next;
      // The pair's next receive, often later in this same step (a chunk's
      // reduce-scatter and all-gather come from the same peer), takes it:
      // prefetch_posts() fetched the heads the step's receives found.
      if ((next & kEagerBit) != 0) {
        __builtin_prefetch(&eagers_[next & ~kEagerBit]);
      } else {
        __builtin_prefetch(&posted_[next]);
      }
    }
    if ((node & kEagerBit) == 0) free_posted_.push_back(node);
    if (--receiver.more_head == 0) {
      receiver.indexed = false;
      receiver.more_head = kNil;
      receiver.more_tail = kNil;
    }
    return true;
  }

  // What a transfer needs of its route, from a set-associative cache keyed by
  // the ordered pair: schedules talk to few peers per rank while a graph
  // topology's route() walks a shortest-path tree under a lock. A fixed-size
  // table (a colliding pair evicts) bounds memory and never rehashes, which
  // matters for log-step algorithms at 2^20 ranks whose pairs are used once.
  struct Route {
    double latency;
    double bottleneck;
    const std::uint32_t* slots;  // link slots in the flow network (flow model only)
    std::uint32_t hops;
  };
  static constexpr std::uint32_t kCachedHops = 12;
  struct CachedRoute {
    double latency = 0;
    double bottleneck = 0;
    std::uint32_t hops = 0;
    std::uint32_t slots[kCachedHops];
  };

  // A set-associative cache of per-pair entries (routes_, splits_): the keys
  // of a set's kWays ways share two cache lines, apart from the entries, so
  // a lookup reads its keys and then its entry. Sixteen ways: with two,
  // NVLS's ten-odd peers per rank kept colliding (conflict misses, each a
  // route walk in the topology) until the table had grown to 18 entries per
  // pair, 15 MB that every lookup missed in; with eight, the sets that got
  // more than eight pairs at the load the table settles at (one in a
  // hundred) still made 1.8 walks per pair at 4096 ranks, against 1.07 with
  // sixteen. A miss takes a free way, or in a full set the way of a
  // rotating victim index (evicting the oldest misses on every lookup when
  // one pair more than the ways take turns).
  template <typename Entry>
  class PairCache {
   public:
    static constexpr std::size_t kWays = 16;
    static constexpr std::uint64_t kNoKey = ~std::uint64_t{0};

    std::size_t size() const { return entries_.size(); }
    bool empty() const { return entries_.empty(); }
    void resize(std::size_t entries) {
      entries = std::max(entries, kWays);
      keys_.assign(entries / kWays, Keys{});
      entries_.assign(entries, Entry{});
    }
    // Starts fetching the keys of the set where `key` would be (a hint only).
    void prefetch_keys(std::uint64_t key) const {
      const Keys* k = &keys_[set_of(key)];
      __builtin_prefetch(k);
      __builtin_prefetch(reinterpret_cast<const char*>(k) + 64);
    }
    Entry* find(std::uint64_t key) {
      const std::size_t set = set_of(key);
      const Keys& k = keys_[set];
      for (std::size_t way = 0; way < kWays; ++way)
        if (k.key[way] == key) return &entries_[set * kWays + way];
      return nullptr;
    }
    Entry& insert(std::uint64_t key) {
      const std::size_t set = set_of(key);
      Keys& k = keys_[set];
      std::size_t way = 0;
      while (way < kWays && k.key[way] != kNoKey) ++way;
      if (way == kWays) {
        way = victim_;
        victim_ = (victim_ + 1) % kWays;
      }
      k.key[way] = key;
      return entries_[set * kWays + way];
    }
    // Doubles the table, keeping every entry (a set's keys go to two sets).
    void grow() {
      PairCache old;
      old.keys_.swap(keys_);
      old.entries_.swap(entries_);
      resize(old.size() * 2);
      for (std::size_t set = 0; set < old.keys_.size(); ++set) {
        for (std::size_t way = kWays; way-- > 0;) {
          const std::uint64_t key = old.keys_[set].key[way];
          if (key != kNoKey) insert(key) = old.entries_[set * kWays + way];
        }
      }
    }

   private:
    struct alignas(64) Keys {
      Keys() { std::fill(std::begin(key), std::end(key), kNoKey); }
      std::uint64_t key[kWays];
    };
    std::size_t set_of(std::uint64_t key) const {
      // Both ranks of the pair mixed into every bit of the set index.
      key ^= key >> 33;
      key *= 0xff51afd7ed558ccdULL;
      key ^= key >> 33;
      key *= 0xc4ceb9fe1a85ec53ULL;
      key ^= key >> 33;
      return static_cast<std::size_t>(key) & (keys_.size() - 1);
    }
    std::vector<Keys> keys_;
    std::vector<Entry> entries_;
    std::size_t victim_ = 0;
  };

  // Ring-like schedules use about p pairs.
  static std::size_t route_cache_size(int p) {
    std::size_t size = 16;
    while (size < 4 * static_cast<std::size_t>(p) && size < (std::size_t{1} << 16)) size *= 2;
    return size;
  }

  // When almost every lookup misses (pairs used once, as in recursive
  // doubling at 2^20 ranks), probing the table only costs a cache miss per
  // message: the cache is then bypassed for a while and re-tried. When pairs
  // come back but more than one lookup in kGrowMisses misses and the misses
  // since the last resize could have filled half the table (not only first
  // lookups of new pairs: NVLS has about ten peers per rank, and 4p entries
  // kept an eighth of the lookups missing, each a route walk in the
  // topology), the cache doubles, up to kMaxRouteCache entries. This never
  // changes a result, only where a route comes from.
  static constexpr std::uint32_t kRouteWindow = 1u << 16;
  static constexpr std::uint32_t kBypassWindows = 15;
  static constexpr std::uint32_t kGrowMisses = 32;
  static constexpr std::size_t kMaxRouteCache = std::size_t{1} << 20;
  // splits_ has no bypass to decide, and every lookup in a window spent at
  // too small a size misses (NVLS cycles through more pairs than fit): a
  // shorter window lets it reach its size after a few thousand misses.
  static constexpr std::uint32_t kSplitWindow = 1u << 12;

  Route route(int src, int dst) {
    if (++route_lookups_ == kRouteWindow) {
      if (route_bypass_ > 0) {
        --route_bypass_;
      } else if (route_hits_ < kRouteWindow / 16) {
        route_bypass_ = kBypassWindows;
      } else if (route_hits_ < kRouteWindow - kRouteWindow / kGrowMisses &&
                 route_inserts_ > routes_.size() / 2 && routes_.size() < kMaxRouteCache) {
        routes_.grow();
        route_inserts_ = 0;
      }
      route_lookups_ = 0;
      route_hits_ = 0;
    }
    const std::uint64_t key = pair_key(src, dst);
    if (route_bypass_ == 0) {
      if (const CachedRoute* c = routes_.find(key)) {
        ++route_hits_;
        return Route{c->latency, c->bottleneck, c->slots, c->hops};
      }
    }
    topology_.route(src, dst, route_);
    if (route_.empty())
      throw Error("topology '" + topology_.name + "' has no route from rank " +
                  std::to_string(src) + " to rank " + std::to_string(dst));
    Route r{0, std::numeric_limits<double>::infinity(), nullptr,
            static_cast<std::uint32_t>(route_.size())};
    for (LinkId id : route_) {
      const LinkProps link = topology_.link(id);
      r.latency += link.latency_for(protocol_);
      r.bottleneck = std::min(r.bottleneck, link.bandwidth);
    }
    r.latency = std::max(0.0, r.latency + hop_extra(src, dst));
    const bool cache = route_bypass_ == 0 && r.hops <= kCachedHops;
    std::uint32_t* slots;
    if (cache) {
      ++route_inserts_;
      CachedRoute& c = routes_.insert(key);
      c.latency = r.latency;
      c.bottleneck = r.bottleneck;
      c.hops = r.hops;
      slots = c.slots;
    } else {
      scratch_slots_.resize(r.hops);
      slots = scratch_slots_.data();
    }
    if (network_)
      for (std::uint32_t i = 0; i < r.hops; ++i) slots[i] = link_slot(route_[i]);
    r.slots = slots;
    return r;
  }

  // Both sides have posted at `start` (or, `eager`, the sender has: its
  // receive is not posted yet). The sender pays its overhead, the header
  // crosses the route (sum of latencies), then the data flows; the receiver
  // of a reducing recv then pays the reduction. Pipelined senders
  // (EndpointProps::pipelined) put the data out at once and are done when it
  // has left; their receivers see it a route latency later, reduced on the
  // way where their endpoint is pipelined too. A protocol moves
  // bytes / efficiency on the wire. Eager transfers return their Eager
  // record, others kNil.
  std::uint32_t start_transfer(int src, int dst, double bytes, bool reduce, double start,
                               std::uint16_t lanes = 1, std::uint16_t fan_out = 0,
                               std::uint16_t fan_in = 0, bool eager = false, bool dirty = false) {
    // An in-network transfer needs only the route's latency, which its
    // split geometry keeps: the route cache is not visited for it.
    const bool fan = fan_out >= 2 || fan_in >= 2;
    Split& split = split_;
    const bool in_network = fan && split_route(src, dst, fan_out, fan_in, split);
    const Route r = in_network ? Route{split.latency, 0, nullptr, 0} : route(src, dst);
    const bool pipelined = this->pipelined(src);
    const double begin = start + costs(src).overhead + (pipelined ? 0.0 : r.latency);
    ++result_.messages;
    result_.bytes += bytes;
    const double tail = pipelined ? r.latency : 0.0;
    // Past the cache of either end, the data costs dram_factor times more.
    double cost_bytes = bytes * std::max(scale(src), scale(dst));
    // Within the cache, data the sender wrote during the call is read out
    // of its core's cache (EndpointProps::dirty_factor).
    if (dirty && scale(src) == 1 && scale(dst) == 1)
      cost_bytes *= topology_.endpoint(src).dirty_factor;
    if (efficiency_ != 1) cost_bytes /= efficiency_;
    const bool reduced_in_switch = in_network && split.reduced_in_switch;
    if (reduced_in_switch) reduce = false;
    std::uint32_t eager_id = kNil;
    if (eager) {
      eager_id = new_eager();
      Eager& a = eagers_[eager_id];
      a.begin = begin;
      a.bytes = bytes;
      a.tail = tail;
      a.src = src;
      a.dst = dst;
      a.reduced_in_switch = reduced_in_switch;
    }
    const auto transfer = [&] {
      Transfer t{src, dst, bytes, reduce};
      t.tail = tail;
      t.begin = begin;
      return t;
    };
    // The nccl family's per-rank limit (ScheduleSpec::rank_rate) counts
    // data bytes: cost_bytes / data of them per byte the flow delivers.
    const bool limited = rank_rate_ > 0 && !in_network && bytes > 0;
    if (!network_ || bytes == 0) {
      double rate = (in_network ? split.alone_level : r.bottleneck) * lanes;
      if (limited) rate = std::min(rate, rank_rate_ * cost_bytes / bytes);
      const double done = bytes == 0 ? begin : begin + cost_bytes / rate;
      if (eager) {
        finish_eager(eager_id, done);
      } else {
        finish_transfer(transfer(), done);
      }
      return eager_id;
    }
    // An eager flow's tag is its Eager record: it needs no Transfer.
    const std::uint32_t tag = eager ? eager_id | kEagerBit : new_transfer(transfer());
    if (!in_network && copies(dst)) {
      // The receiver's core does the copy (EndpointProps::receiver_copies).
      // The flow is then counted in seconds of that core's work: it has
      // cost_bytes / (the route's rate alone) of them, each takes that rate
      // in bytes of every link of its route, and one unit of its core and
      // host. Alone it runs as fast as without them; on the core it shares
      // time evenly with the local work and the copies of the host's other
      // ranks, as the operating system's scheduler does.
      const std::uint32_t hops = r.hops + 2;
      copy_slots_.assign(r.slots, r.slots + r.hops);
      copy_slots_.push_back(core_slot_[static_cast<std::size_t>(dst)]);
      copy_slots_.push_back(host_of_[static_cast<std::size_t>(dst)]);
      copy_coeff_.assign(r.hops, r.bottleneck);
      copy_coeff_.push_back(1.0);
      copy_coeff_.push_back(1.0);
      add_flow(begin, copy_slots_.data(), hops, cost_bytes / r.bottleneck, tag, lanes,
               copy_coeff_.data());
      return eager_id;
    }
    if (limited) {
      // Every send of the rank crosses its own virtual link of rank_rate
      // data bytes per second (its channels' thread blocks), after the
      // route's links.
      copy_slots_.assign(r.slots, r.slots + r.hops);
      copy_slots_.push_back(rate_slot(src));
      copy_coeff_.assign(r.hops, 1.0);
      copy_coeff_.push_back(bytes / cost_bytes);
      add_flow(begin, copy_slots_.data(), r.hops + 1, cost_bytes, tag, lanes, copy_coeff_.data());
      return eager_id;
    }
    if (!in_network && lanes == 1 && !turn_) {
      network_->add(begin, r.slots, r.hops, cost_bytes, tag);
      return eager_id;
    }
    // The general form: per-hop coefficients (in-network fans) and lanes.
    if (in_network) {
      add_flow(begin, split.slots, split.count, cost_bytes, tag, lanes, split.coeff.data());
    } else {
      add_flow(begin, r.slots, r.hops, cost_bytes, tag, lanes);
    }
    return eager_id;
  }

  std::uint32_t new_extra(const PostExtra& x) {
    if (!free_extras_.empty()) {
      const std::uint32_t id = free_extras_.back();
      free_extras_.pop_back();
      extras_[id] = x;
      return id;
    }
    extras_.push_back(x);
    return static_cast<std::uint32_t>(extras_.size() - 1);
  }

  std::uint32_t new_eager() {
    if (!free_eagers_.empty()) {
      const std::uint32_t id = free_eagers_.back();
      free_eagers_.pop_back();
      // The next eager send's record, fetched meanwhile (as FlowNetwork::add).
      if (!free_eagers_.empty()) __builtin_prefetch(&eagers_[free_eagers_.back()]);
      eagers_[id] = Eager{};
      return id;
    }
    if (eagers_.size() >= kEagerBit) throw Error("more than 2^31 eager sends in flight at once");
    eagers_.emplace_back();
    return static_cast<std::uint32_t>(eagers_.size() - 1);
  }

  // A transfer that is one of `fan` through a switch that multicasts and
  // reduces (Op::fan, Topology::in_network_side): the route up to and into
  // the first such switch, then out of it. A multicast send (send_fan >= 2)
  // puts its data on the links before the switch once for its fan; a
  // receive reduced in the switch (recv_fan >= 2) gets the reduced data on
  // the links after it once for its fan, and the receiver does not reduce.
  // The switch's ports carry such traffic at its in-network rate (one
  // virtual link per port and direction). False when the route crosses no
  // such switch: the transfer is then an ordinary one.
  struct Split {
    // The hops' link slots, then the entry and exit ports' (the geometry's
    // own array, valid until the next split_geometry()).
    const std::uint32_t* slots = nullptr;
    std::uint32_t count = 0;
    std::vector<double> coeff;  // per slot
    double alone_level = 0;     // the flow's rate alone (alpha_beta)
    double latency = 0;         // the route's, as route() gives it
    bool reduced_in_switch = false;
  };
  bool split_route(int src, int dst, std::uint16_t send_fan, std::uint16_t recv_fan, Split& out) {
    const SplitGeometry& g = split_geometry(src, dst);
    if (!g.in_network) return false;
    const double up = send_fan >= 2 ? 1.0 / send_fan : 1.0;
    const double down = recv_fan >= 2 ? 1.0 / recv_fan : 1.0;
    // The narrowest link over c on each side (division by c > 0 keeps the
    // order, so this is the smallest bw / c hop by hop), and the switch's
    // in-network rate on the port the data enters and the one it leaves by.
    // Only alpha_beta times a transfer by its rate alone.
    if (!network_)
      out.alone_level =
          std::min({g.up_bw / up, g.down_bw / down, g.port_bw / up, g.port_bw / down});
    out.latency = g.latency;
    if (network_) {
      out.slots = g.hops <= kCachedHops ? g.slots : long_split_slots_.data();
      out.count = g.hops + 2;
      if (out.coeff.size() < out.count) out.coeff.resize(out.count);
      double* coeff = out.coeff.data();
      for (std::uint32_t i = 0; i < g.hops; ++i) coeff[i] = i <= g.into ? up : down;
      coeff[g.hops] = up;
      coeff[g.hops + 1] = down;
    }
    out.reduced_in_switch = recv_fan >= 2;
    return true;
  }

  // What split_route needs of a pair's route, whatever the fans, kept in a
  // set-associative cache like routes_ (allocated on the first fan at
  // routes_'s size, grown by its own misses): every NVLS transfer is a fan, and asking the topology
  // for its route each time cost a graph walk per message. What the flow model reads comes first,
  // so that a route of up to 8 hops needs one line.
  struct alignas(64) SplitGeometry {
    bool in_network = false;  // the route crosses such a switch before its last link
    std::uint32_t hops = 0;
    std::uint32_t into = 0;  // the hop into the first such switch
    double latency = 0;      // sum of the links' latencies, in route order as route() sums
    // Flow model: the link slots of the hops, then the entry and exit ports'
    // (in long_split_slots_ for a route of more than kCachedHops, not cached).
    std::uint32_t slots[kCachedHops + 2];
    double up_bw = 0;    // narrowest link of hops 0..into
    double down_bw = 0;  // narrowest link of the hops after it
    double port_bw = 0;  // the switch's in-network rate per port
  };
  const SplitGeometry& split_geometry(int src, int dst) {
    if (splits_.empty()) splits_.resize(routes_.size());
    // Grown by its own misses, as routes_ is: an in-network transfer does
    // not look in routes_.
    if (++split_lookups_ == kSplitWindow) {
      if (split_hits_ < kSplitWindow - kSplitWindow / kGrowMisses &&
          split_inserts_ > splits_.size() / 2 && splits_.size() < kMaxRouteCache) {
        splits_.grow();
        split_inserts_ = 0;
      }
      split_lookups_ = 0;
      split_hits_ = 0;
    }
    const std::uint64_t key = pair_key(src, dst);
    if (const SplitGeometry* hit = splits_.find(key)) {
      ++split_hits_;
      return *hit;
    }
    topology_.route(src, dst, split_route_);
    SplitGeometry g;
    g.hops = static_cast<std::uint32_t>(split_route_.size());
    std::size_t into = split_route_.size();
    for (std::size_t i = 0; i < split_route_.size(); ++i) {
      double bw = 0;
      if (topology_.in_network_side(split_route_[i], bw) == 1) {
        into = i;
        g.port_bw = bw;
        break;
      }
    }
    g.in_network = into + 1 < split_route_.size();
    if (g.in_network) {
      g.into = static_cast<std::uint32_t>(into);
      g.up_bw = g.down_bw = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < split_route_.size(); ++i) {
        const LinkProps link = topology_.link(split_route_[i]);
        g.latency += link.latency_for(protocol_);
        const double bw = link.bandwidth;
        double& side = i <= into ? g.up_bw : g.down_bw;
        side = std::min(side, bw);
      }
    }
    if (g.in_network && network_) {
      if (g.hops > kCachedHops) long_split_slots_.resize(g.hops + 2);
      std::uint32_t* slots = g.hops <= kCachedHops ? g.slots : long_split_slots_.data();
      for (std::uint32_t i = 0; i < g.hops; ++i) slots[i] = link_slot(split_route_[i]);
      slots[g.hops] = port_slot(split_route_[into], g.port_bw);
      slots[g.hops + 1] = port_slot(split_route_[into + 1], g.port_bw);
    }
    if (g.hops > kCachedHops) {
      long_split_ = g;
      return long_split_;
    }
    ++split_inserts_;
    SplitGeometry& cached = splits_.insert(key);
    cached = g;
    return cached;
  }

  // The virtual link of ScheduleSpec::rank_rate that `rank`'s sends share.
  std::uint32_t rate_slot(int rank) {
    rank = owner(rank);  // under a turn, one virtual link per orbit of them (weight 1)
    if (rate_slots_.empty()) rate_slots_.assign(static_cast<std::size_t>(p_), kNil);
    std::uint32_t& slot = rate_slots_[static_cast<std::size_t>(rank)];
    if (slot == kNil) slot = network_->add_virtual_link(rank_rate_);
    return slot;
  }

  std::uint32_t port_slot(LinkId link, double bw) {
    if (turn_) link = turn_->rep_link(link);
    bool inserted = false;
    std::uint32_t& slot = port_slots_.insert(static_cast<std::uint64_t>(link), inserted);
    if (inserted) {
      slot = network_->add_virtual_link(bw);
      if (turn_) set_multiplicity(slot, link);
    }
    return slot;
  }

  // The network slot of a topology link: under a turn, its orbit
  // representative's, which carries the orbit's flows (set_multiplicity).
  std::uint32_t link_slot(LinkId link) {
    if (!turn_) return network_->link_slot(link);
    link = turn_->rep_link(link);
    const std::uint32_t slot = network_->link_slot(link);
    set_multiplicity(slot, link);
    return slot;
  }
  // A flow entered once for its orbit of `order` flows loads the
  // representative of a link orbit of size s with order / s of its own
  // load per hop in that orbit: each hop's link is hit by order / s of the
  // flow's images (the turn acts freely on ranks, so the images are
  // distinct flows), and by symmetry every flow of the orbit has one rate.
  void set_multiplicity(std::uint32_t slot, LinkId rep) {
    if (multiplicity_.size() <= slot) multiplicity_.resize(slot + 1, 1.0);
    multiplicity_[slot] = static_cast<double>(order_) / turn_->orbit_size(rep);
  }
  double multiplicity(std::uint32_t slot) const {
    return slot < multiplicity_.size() ? multiplicity_[slot] : 1.0;
  }
  // FlowNetwork::add, under a turn with every hop weighted by its slot's
  // multiplicity and hops on one representative merged (their weights add).
  void add_flow(double begin, const std::uint32_t* slots, std::uint32_t hops, double bytes,
                std::uint32_t tag, double lanes = 1, const double* coeff = nullptr) {
    if (!turn_) {
      network_->add(begin, slots, hops, bytes, tag, lanes, coeff);
      return;
    }
    orbit_slots_.clear();
    orbit_coeff_.clear();
    for (std::uint32_t h = 0; h < hops; ++h) {
      const double c = (coeff ? coeff[h] : 1.0) * multiplicity(slots[h]);
      std::size_t i = 0;
      while (i < orbit_slots_.size() && orbit_slots_[i] != slots[h]) ++i;
      if (i == orbit_slots_.size()) {
        orbit_slots_.push_back(slots[h]);
        orbit_coeff_.push_back(c);
      } else {
        orbit_coeff_[i] += c;
      }
    }
    network_->add(begin, orbit_slots_.data(), static_cast<std::uint32_t>(orbit_slots_.size()),
                  bytes, tag, lanes, orbit_coeff_.data());
  }

  // The tag of a flow in the network: a transfer slot, reused once free.
  std::uint32_t new_transfer(const Transfer& t) {
    std::uint32_t tag;
    if (!free_transfers_.empty()) {
      tag = free_transfers_.back();
      free_transfers_.pop_back();
    } else {
      if (transfers_.size() >= kEagerBit) throw Error("more than 2^31 transfers in flight at once");
      tag = static_cast<std::uint32_t>(transfers_.size());
      transfers_.emplace_back();
    }
    transfers_[tag] = t;
    return tag;
  }

  void finish_transfer(const Transfer& t, double done) {
    if (t.local) {
      complete(t.src, done);
      return;
    }
    complete(t.src, done);
    const double seen = done + t.tail;
    if (t.reduce && shares_host(t.dst) && !pipelined(t.dst)) {
      // On a shared host the reduction is local work after the step's
      // communication, run as a flow with the rest of it.
      ranks_[t.dst].local += reduce_time(t.dst, t.bytes);
      complete(t.dst, seen);
      return;
    }
    complete(t.dst, receive_done(t.dst, t.begin, t.bytes, seen, t.reduce, seen));
  }

  // The flow of eager send `id` has put its last byte out at `done`.
  void finish_eager(std::uint32_t id, double done) {
    Eager& a = eagers_[id];
    complete(a.src, done);
    const double seen = done + a.tail;
    a.time = seen;
    a.arrived = true;
    if (a.receive_posted) {
      complete(a.dst, receive_done(a.dst, a.begin, a.bytes, seen, a.reduce && !a.reduced_in_switch,
                                   a.receive_time));
      free_eagers_.push_back(id);
    }
  }

  // An op of the rank's current step completes at `time` (which may lie
  // ahead of the network clock: nothing else can delay it). The step ends with
  // its last op; the rank then runs its local reductions and copies and its next step.
  void complete(int rank, double time) {
    rank = owner(rank);
    RankState& s = ranks_[rank];
    s.done = std::max(s.done, time);
    if (--s.pending == 0) ready_.push_back(rank);
  }

  void drain() {
    while (!ready_.empty()) {
      const int rank = ready_.back();
      ready_.pop_back();
      RankState& s = ranks_[rank];
      if (s.local > 0 && shares_host(rank)) {
        const double seconds = s.local;
        s.local = 0;
        s.pending = 1;
        start_local(rank, s.done, seconds);
        continue;
      }
      advance(rank, s.done + s.local);
    }
  }

  static constexpr std::size_t kPrefetch = 8;
  void prefetch_record(std::uint32_t tag) const {
    if ((tag & kEagerBit) != 0) {
      __builtin_prefetch(&eagers_[tag & ~kEagerBit]);
    } else {
      __builtin_prefetch(&transfers_[tag]);
    }
  }

  // Event loop of the flow model. All events at one instant are applied
  // before rates are recomputed once, including flows that ranks released by
  // those events start at the same instant.
  void run_network() {
    FlowNetwork& net = *network_;
    double now = 0;
    while (net.peek(now)) {
      double next = now;
      do {
        completed_.clear();
        net.pop_at(now, completed_);
        // The record of the flow kPrefetch ahead is fetched while this one
        // is finished, rather than one miss at a time.
        const std::size_t n = completed_.size();
        for (std::size_t i = 0; i < n; ++i) {
          if (i + kPrefetch < n) prefetch_record(completed_[i + kPrefetch]);
          const std::uint32_t tag = completed_[i];
          if ((tag & kEagerBit) != 0) {
            finish_eager(tag & ~kEagerBit, now);
            continue;
          }
          const Transfer t = transfers_[tag];
          free_transfers_.push_back(tag);
          finish_transfer(t, now);
        }
        drain();
      } while (net.peek(next) && next == now);
      net.reallocate(now);
    }
  }

  static std::uint64_t pair_key(int src, int dst) {
    return static_cast<std::uint64_t>(src) << 32 | static_cast<std::uint32_t>(dst);
  }

  std::string describe_op(int rank, const Op& op) const {
    return "schedule " + std::string(to_string(schedule_.spec().collective)) + "/" +
           schedule_.spec().algorithm + ": rank " + std::to_string(rank) + " " +
           std::string(to_string(op.kind)) + " with peer " + std::to_string(op.peer);
  }

  // Eager sends can leave a send nobody received behind ranks that all
  // finished: that is as wrong as a deadlock.
  bool unmatched_posts() const {
    if (chains_.size() != 0) return true;
    for (const RankState& r : ranks_)
      if (r.has_first) return true;
    return false;
  }

  [[noreturn]] void throw_deadlock() const {
    // Every unfinished rank waits on at least one unmatched post.
    struct Waiting {
      int rank;
      bool is_send;
      int peer;
      std::int64_t count;
    };
    std::vector<Waiting> waiting;
    const auto add = [&](int dst, const Post& e) {
      waiting.push_back(e.is_send() ? Waiting{e.peer(), true, dst, e.count}
                                    : Waiting{dst, false, e.peer(), e.count});
    };
    for (int dst = 0; dst < p_; ++dst) {
      if (ranks_[dst].has_first) add(dst, ranks_[dst].first);
      if (ranks_[dst].indexed) continue;
      for (std::uint32_t i = ranks_[dst].more_head; i != kNil; i = posted_[i].next)
        add(dst, posted_[i].post);
    }
    chains_.for_each([&](std::uint64_t key, const PairChain& chain) {
      for (std::uint32_t i = chain.head; i != kNil;
           i = (i & kEagerBit) != 0 ? eagers_[i & ~kEagerBit].next : posted_[i].next)
        add(static_cast<int>(key >> 32), post_of(i));
    });
    // Stable, on a key that separates every pair and side: the chains come
    // out of a hash table, and the message must not depend on its order.
    std::stable_sort(waiting.begin(), waiting.end(), [](const Waiting& a, const Waiting& b) {
      if (a.rank != b.rank) return a.rank < b.rank;
      if (a.peer != b.peer) return a.peer < b.peer;
      return a.is_send && !b.is_send;
    });
    std::string msg =
        "deadlock in schedule " + std::string(to_string(schedule_.spec().collective)) + "/" +
        schedule_.spec().algorithm + " (p=" + std::to_string(p_) +
        "): " + std::to_string(p_ - finished_ * order_) + " rank(s) cannot finish; stuck ranks:";
    constexpr std::size_t kShown = 8;
    for (std::size_t i = 0; i < waiting.size() && i < kShown; ++i) {
      const Waiting& w = waiting[i];
      msg += (i == 0 ? " " : "; ") + std::string("rank ") + std::to_string(w.rank) +
             (w.is_send ? " sends to " : " receives from ") + std::to_string(w.peer) + " (" +
             std::to_string(w.count) + " elements, unmatched)";
    }
    if (waiting.size() > kShown)
      msg += "; ... and " + std::to_string(waiting.size() - kShown) + " more unmatched posts";
    throw ScheduleError(msg);
  }

  // Under a turn, the representative whose state stands for `rank`.
  int owner(int rank) const { return turn_ ? turn_->rep(rank) : rank; }

  const Schedule& schedule_;
  const Topology& topology_;
  const SimOptions options_;
  const int p_;
  const int elem_size_;
  std::vector<double> scale_;  // per rank, from the cache model; empty = 1 for all
  // Per rank, output and scratch ranges written during the call; empty
  // unless some endpoint has a dirty_factor.
  std::vector<std::array<Ranges, 2>> written_;
  // Shared hosts: per rank, its core's and its host's virtual link slots
  // (kNil for a rank whose host does not share); empty = none shares.
  std::vector<std::uint32_t> core_slot_;
  std::vector<std::uint32_t> host_of_;
  std::vector<char> copies_;               // by rank: EndpointProps::receiver_copies (empty: none)
  std::vector<std::uint32_t> copy_slots_;  // start_transfer's scratch for such a flow
  std::vector<double> copy_coeff_;
  std::vector<RankState> ranks_;
  std::vector<int> ready_;
  std::vector<Posted> posted_;
  std::vector<std::uint32_t> free_posted_;
  sim_detail::FlatMap<PairChain> chains_;  // by pair_key(dst, src)
  std::vector<LinkId> route_;
  PairCache<CachedRoute> routes_;
  std::vector<std::uint32_t> scratch_slots_;  // routes not cached
  const Protocol protocol_;
  const double efficiency_;                 // of the protocol on this topology (1 = none)
  const double rank_rate_;                  // ScheduleSpec::rank_rate (0 = none)
  std::vector<std::uint32_t> rate_slots_;   // by rank: rate_slot(), kNil until used
  const RankTurn* turn_;                    // the orbit reduction's (null: every rank runs)
  const int order_;                         // ranks per orbit (1 without a turn)
  std::vector<double> multiplicity_;        // by slot, under a turn (set_multiplicity)
  std::vector<std::uint32_t> orbit_slots_;  // add_flow()'s merged hops
  std::vector<double> orbit_coeff_;
  std::vector<LinkId> split_route_;
  PairCache<SplitGeometry> splits_;  // by pair, as routes_; empty until a fan
  SplitGeometry long_split_;         // a route too long for the cache
  std::vector<std::uint32_t> long_split_slots_;
  Split split_;                                    // start_transfer's, kept to reuse its storage
  sim_detail::FlatMap<std::uint32_t> port_slots_;  // in-network port (by link) -> virtual link
  std::vector<char> pipelined_;                    // per rank: EndpointProps::pipelined
  std::vector<EndpointCosts> costs_;               // distinct, in rank order of first use
  std::vector<std::uint32_t> cost_of_;             // per rank, into costs_; empty = costs_[0]
  std::vector<PostExtra> extras_;
  std::vector<std::uint32_t> free_extras_;
  std::vector<Eager> eagers_;
  std::vector<std::uint32_t> free_eagers_;
  std::uint32_t route_lookups_ = 0;
  std::uint32_t route_hits_ = 0;
  std::uint32_t route_bypass_ = 0;  // windows left without the cache
  std::size_t route_inserts_ = 0;   // routes cached since the last resize
  std::uint32_t split_lookups_ = 0;
  std::uint32_t split_hits_ = 0;
  std::size_t split_inserts_ = 0;
  // Present in flow mode only: under alpha_beta every transfer's end is known
  // when it starts, so no event queue is needed at all.
  std::optional<FlowNetwork> network_;
  std::vector<Transfer> transfers_;
  std::vector<std::uint32_t> free_transfers_;
  std::vector<std::uint32_t> completed_;
  SimResult result_;
  double end_time_ = 0;
  int finished_ = 0;
  std::int64_t events_ = 0;
};

}  // namespace

SimResult simulate(const Schedule& schedule, const Topology& topology, const SimOptions& options) {
  if (topology.num_ranks() < schedule.ranks())
    throw UsageError("topology '" + topology.name + "' has " +
                     std::to_string(topology.num_ranks()) + " ranks but schedule " +
                     std::string(to_string(schedule.spec().collective)) + "/" +
                     schedule.spec().algorithm + " needs " + std::to_string(schedule.ranks()));
  const sim_detail::OrbitPlan plan = sim_detail::plan_orbits(schedule, topology, options);
  SimResult result = Engine(schedule, topology, options, plan.turn ? &*plan.turn : nullptr).run();
  result.orbit_note = plan.note;
  return result;
}

std::string_view to_string(NetModel m) { return m == NetModel::flow ? "flow" : "alpha-beta"; }

NetModel parse_net_model(std::string_view name) {
  if (name == "flow") return NetModel::flow;
  if (name == "alpha-beta") return NetModel::alpha_beta;
  throw UsageError("unknown network model '" + std::string(name) + "'; valid: flow, alpha-beta");
}

int parse_launch_mode(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return UsageError("--launch '" + text + "': " + why);
  };
  if (text == "proc") return 1;
  if (text.rfind("group:", 0) != 0)
    throw bad(
        "expected proc (one process per device) or group:G (one thread launches on G devices, as "
        "nccl-tests -g G)");
  const std::string g = text.substr(6);
  if (g.empty() || g.size() > 6 || g.find_first_not_of("0123456789") != std::string::npos)
    throw bad("G must be a device count 1..4096");
  const int v = std::stoi(g);
  if (v < 1 || v > 4096) throw bad("G must be a device count 1..4096");
  return v;
}

}  // namespace collkit
