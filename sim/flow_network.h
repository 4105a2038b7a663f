// Flow-level network for NetModel::flow: active flows share every directed
// link max-min fairly (progressive filling), rates are recomputed at each
// instant where a flow enters or leaves, and only for the connected component
// (flows linked through shared links) that the change can reach. See
// docs/SIMULATOR.md.
#pragma once

#include <cstdint>
#include <queue>
#include <utility>
#include <vector>

#include "sim/flat_map.h"
#include "topologies/topology.h"

namespace collkit::sim_detail {

class FlowNetwork {
 public:
  explicit FlowNetwork(const Topology& topology) : topology_(topology) {}

  // The dense slot of a link (assigned on first use: topologies such as
  // fully_connected at large p have far more links than a run ever touches).
  std::uint32_t link_slot(LinkId id);
  // A link of the model that is no link of the topology (a shared host's
  // cores, a rank's own core), with its capacity in units per second.
  std::uint32_t add_virtual_link(double capacity);

  // A flow of `bytes` (> 0) over the links `slots[0..hops)` that starts
  // occupying them at time `start`; `tag` comes back from pop_at() when its
  // last byte arrives.
  //
  // Weighted form: the flow stands for `lanes` identical flows (its rate is
  // `lanes` times the fair level), and on hop h each byte it delivers uses
  // coeff[h] bytes of that link (1/g where g transfers share the bytes, as
  // multicast or in-switch reduction does). Max-min fairness is then over
  // the level every flow rises at: a link saturates when the sum of
  // lanes x coeff of its flows times the level reaches its capacity. With
  // lanes 1 and every coefficient 1 (coeff null) this is the plain form,
  // bit for bit.
  void add(double start, const std::uint32_t* slots, std::uint32_t hops, double bytes,
           std::uint32_t tag, double lanes = 1, const double* coeff = nullptr);

  // Time of the earliest pending event; false when none is left.
  bool peek(double& time);

  // Processes every event at exactly `time` (which must be the earliest):
  // flows entering the network join their links, flows whose data is
  // delivered leave and their tags are appended to `completed` in event order.
  void pop_at(double time, std::vector<std::uint32_t>& completed);

  // Recomputes the max-min fair rates of the components touched since the
  // last call, at time `now`, and schedules the new completion times.
  void reallocate(double now);

  std::int64_t events() const { return events_; }
  // The most flows one link has carried at once.
  std::int64_t max_link_flows() const { return max_link_flows_; }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  struct Hop {
    std::uint32_t link;  // link slot
    std::uint32_t pos;   // index of this flow in that link's `flows`
    double weight;       // lanes x coefficient: link bytes per unit of the fair level
  };
  // A flow's hops live in the second cache line of its 128-byte entry (no
  // pointer to follow, and the pair of lines is fetched together), or in
  // long_hops_[slot] when it has more than kInlineHops (kept across reuse).
  static constexpr std::uint32_t kInlineHops = 4;
  struct alignas(128) Flow {
    double remaining = 0;  // bytes still to deliver as of `last`
    double rate = 0;       // bytes per second since `last`
    double last = 0;
    double fill_rate = 0;  // scratch for progressive filling
    double lanes = 1;      // rate = lanes x the fair level
    std::uint32_t tag = 0;
    // Identifies the flow's one pending event: entries carrying an older
    // stamp were superseded by a rate change (or the flow left) and are skipped.
    std::uint32_t stamp = 0;
    bool active = false;  // has joined its links
    alignas(64) Hop hop[kInlineHops];
  };
  // What component discovery and filling test of every flow they meet (most
  // of them already seen), dense by slot so that those tests stay in cache.
  struct FlowHot {
    std::uint32_t hops = 0;
    std::uint32_t mark = 0;
    bool frozen = false;
  };
  struct LinkFlow {
    std::uint32_t flow;
    std::uint32_t hop;
    double weight;  // the hop's weight, read here by fill() without visiting the flow
  };
  // One cache line per link (its capacity is in capacity_): at 80 bytes
  // most links straddled two, and joins, leaves, component walks and
  // filling all visit links at random.
  struct alignas(64) Link {
    std::vector<LinkFlow> flows;
    double fill_left = 0;
    double fill_weight = 0;  // sum of the unfrozen flows' hop weights
    double fill_key = 0;     // share of its live entry (<= the current share)
    std::uint32_t fill_count = 0;
    std::uint32_t fill_version = 0;
    bool touched = false;  // fill(): in touched_
    bool dirty = false;    // in dirty_links_
  };
  static_assert(sizeof(Link) == 64, "one cache line per link");
  // Events are grouped by exact time: collectives move in lock step, so many
  // flows start or end at the same instant (about 30 per instant for ring on
  // a fat tree). A heap orders the distinct times; each time's group lists
  // (flow, stamp) in scheduling order, which is the deterministic order in
  // which equal-time events are processed. A rescheduled flow leaves a stale
  // entry behind instead of being searched for.
  struct Pending {
    std::uint32_t flow;
    std::uint32_t stamp;
  };
  struct Group {
    double time = 0;
    std::vector<Pending> items;
  };
  struct GroupLater {
    bool operator()(const std::pair<double, std::uint32_t>& a,
                    const std::pair<double, std::uint32_t>& b) const {
      return a.first > b.first;
    }
  };
  struct Share {
    double share;
    std::uint32_t link;
    std::uint32_t version;
  };
  struct ShareLater {
    bool operator()(const Share& a, const Share& b) const {
      return a.share != b.share ? a.share > b.share : a.link > b.link;
    }
  };

  Hop* hops_of(std::uint32_t f) {
    return hot_[f].hops <= kInlineHops ? flows_[f].hop : long_hops_[f].data();
  }
  void schedule(std::uint32_t flow, double time);
  void join(std::uint32_t f);
  // Max-min fair rates (fill_rate) of the flows in comp_flows_, from the
  // filling state reallocate() gave the links in comp_links_.
  void fill();
  // fill(): orders fill_sorted_ by (share, slot), ShareLater's order reversed.
  void sort_initial();
  void leave(std::uint32_t f);
  // Lists a link whose flows changed for the next reallocate(), once: an
  // instant changes each link many times (about 11 times on average for an
  // nccl all_reduce on 1024 ranks), and components are discovered in the
  // order of the links' first change either way.
  void mark_dirty(std::uint32_t slot, Link& link) {
    if (link.dirty) return;
    link.dirty = true;
    dirty_links_.push_back(slot);
  }

  const Topology& topology_;
  FlatMap<std::uint32_t> slot_of_;
  std::vector<Link> links_;
  std::vector<double> capacity_;  // by link slot
  std::vector<Flow> flows_;
  std::vector<FlowHot> hot_;
  std::vector<std::vector<Hop>> long_hops_;
  std::vector<std::uint32_t> free_flows_;
  FlatMap<std::uint32_t> group_of_;  // bit pattern of a time -> its group
  // The group of the last schedule() (kNone once popped): flows that a
  // component's rates set in lock step end at one time, and 99% of the
  // schedules of an nccl all_reduce on 1024 ranks repeat the previous time,
  // so they skip the lookup in group_of_.
  std::uint64_t last_bits_ = 0;
  std::uint32_t last_group_ = kNone;
  std::vector<Group> groups_;
  std::vector<std::uint32_t> free_groups_;
  // Distinct times only: two groups never share a time while both are queued.
  std::priority_queue<std::pair<double, std::uint32_t>,
                      std::vector<std::pair<double, std::uint32_t>>, GroupLater>
      times_;
  std::vector<Pending> popped_;
  std::int64_t events_ = 0;
  std::int64_t max_link_flows_ = 0;

  std::vector<std::uint32_t> dirty_links_;
  std::uint32_t epoch_ = 0;
  // Per link slot: the epoch of the last reallocate() whose component walk
  // reached it. Dense, so that the walk tests the links it meets (most
  // already reached) without fetching their lines.
  std::vector<std::uint32_t> link_mark_;
  std::vector<std::uint32_t> comp_links_;
  std::vector<std::uint32_t> comp_flows_;
  std::vector<Share> fill_sorted_;  // fill(): the links' initial entries, in order
  std::vector<Share> fill_heap_;    // fill(): the entries pushed since
  // sort_initial(): the radix sort's keys, its other buffer and its counts.
  std::vector<std::uint64_t> fill_keys_;
  std::vector<std::uint64_t> fill_spare_keys_;
  std::vector<std::uint32_t> fill_counts_;
  std::vector<std::uint32_t> touched_;
};

}  // namespace collkit::sim_detail
