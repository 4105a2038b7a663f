#include "sim/flow_network.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>

namespace collkit::sim_detail {
namespace {

// fill(): initial entries from which sort_initial() orders them by a radix
// sort. On the entries of an nccl all_reduce on 512 nodes of 8 GPUs,
// replayed, std::sort took about 8 ns an entry below 64 entries and 18 to
// 35 ns above; the radix sort 6 to 9 ns from 64 on, but a fixed cost (its
// counts) makes it no faster below.
constexpr std::size_t kRadixEntries = 64;
// The most distinct shares the radix sort ranks; beyond, std::sort.
constexpr int kRadixShares = 8;
// The widest slot digit: its counts (2^11 of them at most) stay in L1, and
// slots below 2^22 take two passes.
constexpr int kRadixBits = 11;

}  // namespace

std::uint32_t FlowNetwork::link_slot(LinkId id) {
  bool inserted = false;
  std::uint32_t& slot = slot_of_.insert(static_cast<std::uint64_t>(id), inserted);
  if (inserted) {
    slot = static_cast<std::uint32_t>(links_.size());
    links_.emplace_back();
    capacity_.push_back(topology_.link(id).bandwidth);
  }
  return slot;
}

std::uint32_t FlowNetwork::add_virtual_link(double capacity) {
  links_.emplace_back();
  capacity_.push_back(capacity);
  return static_cast<std::uint32_t>(links_.size() - 1);
}

void FlowNetwork::schedule(std::uint32_t flow, double time) {
  const std::uint32_t stamp = ++flows_[flow].stamp;
  std::uint64_t bits;
  static_assert(sizeof bits == sizeof time);
  std::memcpy(&bits, &time, sizeof bits);
  if (last_group_ == kNone || bits != last_bits_) {
    bool inserted = false;
    std::uint32_t& slot = group_of_.insert(bits, inserted);
    if (inserted) {
      if (!free_groups_.empty()) {
        slot = free_groups_.back();
        free_groups_.pop_back();
      } else {
        slot = static_cast<std::uint32_t>(groups_.size());
        groups_.emplace_back();
      }
      groups_[slot].time = time;
      times_.emplace(time, slot);
    }
    last_bits_ = bits;
    last_group_ = slot;
  }
  groups_[last_group_].items.push_back(Pending{flow, stamp});
}

void FlowNetwork::add(double start, const std::uint32_t* slots, std::uint32_t hops, double bytes,
                      std::uint32_t tag, double lanes, const double* coeff) {
  std::uint32_t f;
  if (!free_flows_.empty()) {
    f = free_flows_.back();
    free_flows_.pop_back();
    // The next add() reuses the slot below: its lines are fetched meanwhile
    // (adds come in bursts, a step's sends, and a slot left the network
    // long enough ago to be out of cache).
    if (!free_flows_.empty()) {
      __builtin_prefetch(&flows_[free_flows_.back()]);
      __builtin_prefetch(flows_[free_flows_.back()].hop);
    }
  } else {
    f = static_cast<std::uint32_t>(flows_.size());
    flows_.emplace_back();
    hot_.emplace_back();
    long_hops_.emplace_back();
  }
  Flow& flow = flows_[f];
  hot_[f].hops = hops;
  if (hops > kInlineHops) long_hops_[f].resize(hops);
  Hop* hop = hops_of(f);
  for (std::uint32_t h = 0; h < hops; ++h)
    hop[h] = Hop{slots[h], kNone, coeff ? lanes * coeff[h] : lanes};
  flow.lanes = lanes;
  flow.remaining = bytes;
  flow.rate = 0;
  flow.last = start;
  flow.tag = tag;
  flow.active = false;
  schedule(f, start);
}

bool FlowNetwork::peek(double& time) {
  if (times_.empty()) return false;
  time = times_.top().first;
  return true;
}

void FlowNetwork::join(std::uint32_t f) {
  Flow& flow = flows_[f];
  Hop* hop = hops_of(f);
  for (std::uint32_t h = 0; h < hot_[f].hops; ++h) {
    Link& link = links_[hop[h].link];
    hop[h].pos = static_cast<std::uint32_t>(link.flows.size());
    link.flows.push_back(LinkFlow{f, h, hop[h].weight});
    max_link_flows_ = std::max(max_link_flows_, static_cast<std::int64_t>(link.flows.size()));
    mark_dirty(hop[h].link, link);
  }
  flow.active = true;
}

void FlowNetwork::leave(std::uint32_t f) {
  Flow& flow = flows_[f];
  const Hop* const hops = hops_of(f);
  for (std::uint32_t h = 0; h < hot_[f].hops; ++h) {
    const Hop& hop = hops[h];
    Link& link = links_[hop.link];
    const LinkFlow moved = link.flows.back();
    link.flows[hop.pos] = moved;
    hops_of(moved.flow)[moved.hop].pos = hop.pos;
    link.flows.pop_back();
    mark_dirty(hop.link, link);
  }
  flow.rate = 0;
  flow.active = false;
  ++flow.stamp;
  free_flows_.push_back(f);
}

void FlowNetwork::pop_at(double time, std::vector<std::uint32_t>& completed) {
  if (times_.empty() || times_.top().first != time) return;
  const std::uint32_t g = times_.top().second;
  times_.pop();
  std::uint64_t bits;
  std::memcpy(&bits, &time, sizeof bits);
  group_of_.erase(bits);
  if (last_group_ == g) last_group_ = kNone;
  // Swapped out so that the group can be reused at once; events scheduled for
  // this same instant while the caller reacts land in a fresh group.
  popped_.clear();
  popped_.swap(groups_[g].items);
  free_groups_.push_back(g);
  // An instant's events are spread over thousands of flows: each entry is a
  // cache miss (both lines: the stamp, then the hops that join and leave
  // walk), so the entry kPrefetch events ahead is fetched meanwhile.
  // The links it joins or leaves are fetched kPrefetch / 2 events ahead,
  // once its hops have arrived.
  constexpr std::size_t kPrefetch = 8;
  const std::size_t n = popped_.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kPrefetch < n) {
      const std::uint32_t f = popped_[i + kPrefetch].flow;
      __builtin_prefetch(&flows_[f]);
      __builtin_prefetch(flows_[f].hop);
      __builtin_prefetch(&hot_[f]);
    }
    if (i + kPrefetch / 2 < n) {
      const std::uint32_t f = popped_[i + kPrefetch / 2].flow;
      const Hop* const hops = hops_of(f);
      for (std::uint32_t h = 0; h < hot_[f].hops; ++h) __builtin_prefetch(&links_[hops[h].link]);
    }
    // And kPrefetch / 4 ahead, once the links are there, the places in
    // their flow lists that a join appends to and a leave moves from and to.
    if (i + kPrefetch / 4 < n) {
      const std::uint32_t f = popped_[i + kPrefetch / 4].flow;
      const Hop* const hops = hops_of(f);
      for (std::uint32_t h = 0; h < hot_[f].hops; ++h) {
        const std::vector<LinkFlow>& list = links_[hops[h].link].flows;
        if (list.empty()) continue;
        __builtin_prefetch(&list.back());
        if (hops[h].pos < list.size()) __builtin_prefetch(&list[hops[h].pos]);
      }
    }
    const Pending& e = popped_[i];
    Flow& flow = flows_[e.flow];
    if (flow.stamp != e.stamp) continue;
    ++flow.stamp;  // consumed: no event is pending until the next schedule()
    ++events_;
    if (!flow.active) {
      join(e.flow);
    } else {
      completed.push_back(flow.tag);
      leave(e.flow);
    }
  }
}

void FlowNetwork::fill() {
  // Progressive filling: the link offering the smallest equal share to its
  // unfrozen flows is the next bottleneck; its flows freeze at that share and
  // their usage is removed from the other links they cross. A heap keyed by
  // (share, slot) with versioned entries finds it in O(log links) and makes
  // ties deterministic.
  //
  // A link's entry may hold a share below its current one (fill_key): shares
  // mostly rise as flows freeze elsewhere, and a rise is applied only when
  // the entry comes to the top (re-pushed with the current share). An entry
  // is popped as the bottleneck only when its share is the current one, and
  // since no entry exceeds its link's current share, that link has the
  // smallest (share, slot) of all, as with an entry per change. A share that
  // rounding lowers is pushed at once.
  //
  // The initial entries (one per link, a strict order: no two share a slot)
  // are sorted instead of heaped, and the heap holds only the entries pushed
  // later (a few per fill): the next entry is the smaller of the sorted
  // run's head and the heap's top, the same sequence a heap of all of them
  // pops (entries equal in both share and slot are one live and stale ones
  // of a link, skipped in either order). Most initial entries end stale
  // (their flows froze elsewhere) or unreached, and a stale one now costs a
  // step along the run rather than a pop.
  fill_heap_.clear();
  fill_sorted_.clear();
  const ShareLater later;
  // A component can be larger than the caches (at 2048x8 the walk,
  // filling and rescheduling missed on lines they had all just visited),
  // so its links' and flows' lines are fetched some entries ahead in each
  // pass over them.
  constexpr std::size_t kAhead = 8;
  for (std::size_t k = 0; k < comp_links_.size(); ++k) {
    if (k + kAhead < comp_links_.size()) __builtin_prefetch(&links_[comp_links_[k + kAhead]]);
    const std::uint32_t l = comp_links_[k];
    const Link& link = links_[l];
    if (link.fill_count > 0) fill_sorted_.push_back(Share{link.fill_key, l, link.fill_version});
  }
  sort_initial();
  std::size_t next = 0;  // the sorted run's head
  // Shares are non-decreasing in exact arithmetic; the floor keeps rounding in
  // fill_left from ever producing a smaller (or zero) rate.
  double floor = 0;
  // Once every flow is frozen every link's count is 0: what is left would
  // only be popped and skipped.
  std::size_t unfrozen = comp_flows_.size();
  while (unfrozen > 0 && (next < fill_sorted_.size() || !fill_heap_.empty())) {
    Share top;
    if (next == fill_sorted_.size() ||
        (!fill_heap_.empty() && later(fill_sorted_[next], fill_heap_.front()))) {
      std::pop_heap(fill_heap_.begin(), fill_heap_.end(), later);
      top = fill_heap_.back();
      fill_heap_.pop_back();
    } else {
      top = fill_sorted_[next++];
    }
    Link& bottleneck = links_[top.link];
    if (top.version != bottleneck.fill_version || bottleneck.fill_count == 0) continue;
    const double share = std::max(bottleneck.fill_left, 0.0) / bottleneck.fill_weight;
    if (share > top.share) {
      bottleneck.fill_key = share;
      fill_heap_.push_back(Share{share, top.link, ++bottleneck.fill_version});
      std::push_heap(fill_heap_.begin(), fill_heap_.end(), later);
      continue;
    }
    const double rate = std::max(top.share, floor);
    floor = rate;
    bottleneck.fill_count = 0;
    ++bottleneck.fill_version;
    // The other links of the flows frozen here lose their usage; each gets
    // one new heap entry once all of them are done (an entry per flow would
    // only leave stale entries behind: nothing is popped in between).
    touched_.clear();
    const std::vector<LinkFlow>& frozen = bottleneck.flows;
    for (std::size_t k = 0; k < frozen.size(); ++k) {
      if (k + kAhead / 2 < frozen.size()) {
        const std::uint32_t ahead = frozen[k + kAhead / 2].flow;
        __builtin_prefetch(&hot_[ahead]);
        __builtin_prefetch(&flows_[ahead]);
        __builtin_prefetch(flows_[ahead].hop);
      }
      const LinkFlow& lf = frozen[k];
      FlowHot& hot = hot_[lf.flow];
      if (hot.frozen) continue;
      hot.frozen = true;
      --unfrozen;
      Flow& flow = flows_[lf.flow];
      flow.fill_rate = rate * flow.lanes;
      const Hop* const hops = hops_of(lf.flow);
      for (std::uint32_t h = 0; h < hot.hops; ++h) {
        const Hop& hop = hops[h];
        if (hop.link == top.link) continue;
        Link& other = links_[hop.link];
        other.fill_left -= rate * hop.weight;
        other.fill_weight -= hop.weight;
        --other.fill_count;
        if (!other.touched) {
          other.touched = true;
          touched_.push_back(hop.link);
        }
      }
    }
    for (std::uint32_t l : touched_) {
      Link& other = links_[l];
      other.touched = false;
      if (other.fill_count == 0) continue;
      const double share = std::max(other.fill_left, 0.0) / other.fill_weight;
      if (share < other.fill_key) {
        other.fill_key = share;
        fill_heap_.push_back(Share{share, l, ++other.fill_version});
        std::push_heap(fill_heap_.begin(), fill_heap_.end(), later);
      }
    }
  }
}

void FlowNetwork::sort_initial() {
  // A component's links are a few classes carrying a few flow counts, so its
  // initial entries hold a handful of distinct shares (never more than 7 in
  // an nccl all_reduce on 512 nodes of 8 GPUs, where 96% of neighbours in
  // the sorted run tie on share): the order is by slot within each share.
  // std::sort compared them with branches that the data decide (5.6% of the
  // nccl all_reduce on 2048 nodes); a least-significant-digit radix sort
  // has none. Its key is the share's rank among the distinct shares above
  // the slot, with the version below it as payload: 8 bytes an entry and
  // usually two counting passes. No two entries share a slot, so the order
  // is strict and both sorts give the same sequence.
  //
  // Shares are compared with == and < as ShareLater does, not as bit
  // patterns; the entries get their share back from its rank, which is
  // exact as long as equal shares have one bit pattern: positive ones do
  // (a share is a capacity over a sum of positive weights). Anything else
  // (zero, -0.0, NaN; none arises) sends the entries to std::sort as before,
  // as do more than kRadixShares distinct shares.
  const ShareLater later;
  const auto ascending = [&later](const Share& a, const Share& b) { return later(b, a); };
  const std::size_t n = fill_sorted_.size();
  std::array<double, kRadixShares> distinct{};
  int shares = 0;
  bool radix = n >= kRadixEntries;
  for (std::size_t k = 0; radix && k < n; ++k) {
    const double share = fill_sorted_[k].share;
    // Every distinct share is compared, without an early exit: which one
    // matches follows the data, the trip count does not.
    bool found = false;
    for (int i = 0; i < shares; ++i) found |= distinct[i] == share;
    if (found) continue;
    if (shares == kRadixShares || !(share > 0)) {
      radix = false;
    } else {
      distinct[shares++] = share;
    }
  }
  const int slot_bits = std::max(1, static_cast<int>(std::bit_width(links_.size() - 1)));
  const int rank_bits = static_cast<int>(std::bit_width(static_cast<unsigned>(shares - 1)));
  if (!radix || slot_bits + rank_bits > 32) {
    std::sort(fill_sorted_.begin(), fill_sorted_.end(), ascending);
    return;
  }
  std::sort(distinct.begin(), distinct.begin() + shares);
  const int bits = slot_bits + rank_bits;
  const int passes = (bits + kRadixBits - 1) / kRadixBits;
  const int digit = (bits + passes - 1) / passes;
  const std::uint64_t mask = (std::uint64_t{1} << digit) - 1;
  const std::size_t buckets = std::size_t{1} << digit;
  // The keys and every pass's counts in one read of the entries. The rank
  // counts the smaller distinct shares (no search to mispredict).
  fill_counts_.assign(buckets * passes, 0);
  fill_keys_.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    const Share& e = fill_sorted_[k];
    std::uint64_t rank = 0;
    for (int i = 0; i < shares; ++i) rank += distinct[i] < e.share ? 1 : 0;
    const std::uint64_t order = rank << slot_bits | e.link;
    fill_keys_[k] = order << 32 | e.version;
    for (int pass = 0; pass < passes; ++pass)
      ++fill_counts_[pass * buckets + ((order >> (pass * digit)) & mask)];
  }
  fill_spare_keys_.resize(n);
  for (int pass = 0; pass < passes; ++pass) {
    const int shift = 32 + pass * digit;
    std::uint32_t* const counts = fill_counts_.data() + pass * buckets;
    std::uint32_t sum = 0;
    for (std::size_t b = 0; b < buckets; ++b) sum += std::exchange(counts[b], sum);
    if (pass + 1 < passes) {
      std::uint64_t* const out = fill_spare_keys_.data();
      for (const std::uint64_t key : fill_keys_) out[counts[(key >> shift) & mask]++] = key;
      fill_keys_.swap(fill_spare_keys_);
    } else {
      // The last pass writes the entries back.
      const std::uint32_t slot_mask =
          static_cast<std::uint32_t>((std::uint64_t{1} << slot_bits) - 1);
      for (const std::uint64_t key : fill_keys_) {
        const auto order = static_cast<std::uint32_t>(key >> 32);
        fill_sorted_[counts[(key >> shift) & mask]++] =
            Share{distinct[order >> slot_bits], order & slot_mask, static_cast<std::uint32_t>(key)};
      }
    }
  }
}

void FlowNetwork::reallocate(double now) {
  // Component by component: every flow reachable from a changed link through
  // shared links. Rates outside those components cannot change (max-min
  // allocations decompose over connected components), and small components
  // keep the filling heap small.
  ++epoch_;
  if (link_mark_.size() < links_.size()) link_mark_.resize(links_.size(), 0);
  for (std::uint32_t start : dirty_links_) {
    links_[start].dirty = false;
    if (link_mark_[start] == epoch_) continue;
    link_mark_[start] = epoch_;
    comp_links_.assign(1, start);
    comp_flows_.clear();
    for (std::size_t i = 0; i < comp_links_.size(); ++i) {
      // The walk hops from link to its flow list to flow to link, each a
      // likely cache miss, so it is fetched as a pipeline: a link's line
      // when it is found (its mark is dense, apart from it), its flow list
      // four links ahead, and its flows' lines (both: filling reads the
      // first, the walk the hops) two links ahead.
      if (i + 4 < comp_links_.size()) __builtin_prefetch(links_[comp_links_[i + 4]].flows.data());
      if (i + 2 < comp_links_.size()) {
        for (const LinkFlow& lf : links_[comp_links_[i + 2]].flows) {
          __builtin_prefetch(&hot_[lf.flow]);
          __builtin_prefetch(&flows_[lf.flow]);
          __builtin_prefetch(flows_[lf.flow].hop);
        }
      }
      // The link's filling state is set up here, while its flows are at
      // hand, rather than in a second pass in fill().
      const std::uint32_t l = comp_links_[i];
      Link& current = links_[l];
      double weight = 0;
      for (const LinkFlow& lf : current.flows) {
        weight += lf.weight;
        FlowHot& hot = hot_[lf.flow];
        if (hot.mark == epoch_) continue;
        hot.mark = epoch_;
        hot.frozen = false;
        comp_flows_.push_back(lf.flow);
        const Hop* const hops = hops_of(lf.flow);
        for (std::uint32_t h = 0; h < hot.hops; ++h) {
          const Hop& hop = hops[h];
          if (link_mark_[hop.link] == epoch_) continue;
          link_mark_[hop.link] = epoch_;
          comp_links_.push_back(hop.link);
          __builtin_prefetch(&links_[hop.link]);
        }
      }
      current.fill_left = capacity_[l];
      current.fill_count = static_cast<std::uint32_t>(current.flows.size());
      current.fill_weight = weight;
      ++current.fill_version;
      current.fill_key = capacity_[l] / weight;
    }
    if (comp_flows_.empty()) continue;
    if (comp_flows_.size() == 1) {
      // A flow alone on its links (the common case on switched fabrics) gets
      // its bottleneck, which is what progressive filling would give it.
      Flow& flow = flows_[comp_flows_.front()];
      double level = std::numeric_limits<double>::infinity();
      const Hop* const hops = hops_of(comp_flows_.front());
      for (std::uint32_t h = 0; h < hot_[comp_flows_.front()].hops; ++h)
        level = std::min(level, capacity_[hops[h].link] / hops[h].weight);
      flow.fill_rate = level * flow.lanes;
    } else {
      fill();
    }
    // Only flows whose rate changed get a new completion time; the others
    // keep their pending event, so their finish times are not re-rounded.
    for (std::size_t k = 0; k < comp_flows_.size(); ++k) {
      if (k + 8 < comp_flows_.size()) __builtin_prefetch(&flows_[comp_flows_[k + 8]]);
      const std::uint32_t f = comp_flows_[k];
      Flow& flow = flows_[f];
      if (flow.fill_rate == flow.rate) continue;
      flow.remaining = std::max(0.0, flow.remaining - flow.rate * (now - flow.last));
      flow.last = now;
      flow.rate = flow.fill_rate;
      schedule(f, now + flow.remaining / flow.rate);
    }
  }
  dirty_links_.clear();
}

}  // namespace collkit::sim_detail
