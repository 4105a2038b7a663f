#include "sim/orbits.h"

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

namespace collkit::sim_detail {

double hop_extra(const ScheduleSpec& spec, int src, int dst) {
  if (spec.hop_extra_latency[0] == 0 && spec.hop_extra_latency[1] == 0) return 0;
  const ChannelPlan* plan = spec.plan.get();
  const bool same_node = plan && !plan->node_of.empty()
                             ? plan->node_of[static_cast<std::size_t>(src)] ==
                                   plan->node_of[static_cast<std::size_t>(dst)]
                             : false;
  return spec.hop_extra_latency[same_node ? 0 : 1];
}

namespace {

// What of an op the engine's timing reads: regions only by their counts
// (their offsets name data, which the turn moves).
struct OpKey {
  OpKind kind;
  Combine combine;
  Buf src_buf, dst_buf;
  std::uint16_t lanes, fan_out, fan_in;
  int peer;
  std::int64_t src_count, dst_count;
  bool operator==(const OpKey&) const = default;
};

OpKey key_of(const Op& op, int peer) {
  return OpKey{op.kind,    op.combine, op.src.buf, op.dst.buf,   op.lanes,
               op.fan_out, op.fan_in,  peer,       op.src.count, op.dst.count};
}

std::uint64_t pair_key(int src, int dst) {
  return static_cast<std::uint64_t>(src) << 32 | static_cast<std::uint32_t>(dst);
}

// Ops of one step in the order the comparison takes them: by kind, then
// peer, stably (the engine posts a step's ops at one instant, so their
// order matters only between ops on one peer; programs list their in-node
// peers by index, which the turn rotates).
void sort_step(std::vector<OpKey>& step) {
  // Insertion sort: stable, and a step has a few dozen ops at most.
  const auto before = [](const OpKey& a, const OpKey& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.peer < b.peer;
  };
  for (std::size_t i = 1; i < step.size(); ++i)
    for (std::size_t j = i; j > 0 && before(step[j], step[j - 1]); --j)
      std::swap(step[j], step[j - 1]);
}

// Every rank's program against its representative's, turned; collects the
// pairs (src, dst) whose routes the run asks for, one per orbit of pairs
// (dst a representative). Empty string when they all match.
std::string check_programs(const Schedule& schedule, const RankTurn& turn,
                           std::unordered_set<std::uint64_t>& pairs) {
  const int p = schedule.ranks();
  const int order = turn.order();
  std::vector<OpKey> ops, want, got;
  std::vector<std::size_t> step_begin;
  const auto canonical = [&](int src, int dst) {
    const int k = turn.power(dst);
    return pair_key(turn.apply(src, (order - k) % order), turn.rep(dst));
  };
  // Rank 0's program, suspended at its first communication, for the whole
  // check: schedules share per-call state among their programs for as
  // long as one of them holds it (the nccl family's NVLS plans, O(p) to
  // build), and the check's programs run one at a time.
  Generator<Step> keep = schedule.program(0);
  while (keep.next() && !keep.value().has_communication()) {
  }
  for (int r0 = 0; r0 < p; ++r0) {
    if (turn.power(r0) != 0) continue;
    ops.clear();
    step_begin.assign(1, 0);
    Generator<Step> program = schedule.program(r0);
    while (program.next()) {
      for (const Op& op : program.value().ops) {
        if (op.peer >= p)
          return "rank " + std::to_string(r0) + " names peer " + std::to_string(op.peer);
        ops.push_back(key_of(op, op.peer));
        if (op.peer < 0) continue;
        if (op.kind == OpKind::send) pairs.insert(canonical(r0, op.peer));
        if (op.kind == OpKind::recv || (op.kind == OpKind::reduce && op.fan_in >= 2))
          pairs.insert(canonical(op.peer, r0));
      }
      step_begin.push_back(ops.size());
    }
    const std::size_t steps = step_begin.size() - 1;
    for (int k = 1; k < order; ++k) {
      const int r = turn.apply(r0, k);
      Generator<Step> image = schedule.program(r);
      std::size_t step = 0;
      const auto differs = [&](const std::string& where) {
        return "rank " + std::to_string(r) + "'s program is not rank " + std::to_string(r0) +
               "'s turned (" + where + ")";
      };
      while (image.next()) {
        const Step& s = image.value();
        if (step == steps) return differs("it has more steps");
        want.assign(ops.begin() + static_cast<std::ptrdiff_t>(step_begin[step]),
                    ops.begin() + static_cast<std::ptrdiff_t>(step_begin[step + 1]));
        for (OpKey& w : want)
          if (w.peer >= 0) w.peer = turn.apply(w.peer, k);
        got.clear();
        for (const Op& op : s.ops) got.push_back(key_of(op, op.peer));
        if (want != got) {  // the same ops listed in another order?
          sort_step(want);
          sort_step(got);
          if (want != got) return differs("step " + std::to_string(step));
        }
        ++step;
      }
      if (step != steps) return differs("it has fewer steps");
    }
  }
  return {};
}

// Routes of every pair in `pairs` against the routes of its images.
std::string check_routes(const Schedule& schedule, const Topology& topology, const RankTurn& turn,
                         const std::unordered_set<std::uint64_t>& pairs) {
  const int order = turn.order();
  std::vector<LinkId> base, image;
  for (const std::uint64_t key : pairs) {
    const int src = static_cast<int>(key >> 32), dst = static_cast<int>(key & 0xffffffffu);
    if (src == dst) continue;
    topology.route(src, dst, base);
    const double extra = hop_extra(schedule.spec(), src, dst);
    for (int k = 1; k < order; ++k) {
      const int s = turn.apply(src, k), d = turn.apply(dst, k);
      topology.route(s, d, image);
      bool same = image.size() == base.size() && hop_extra(schedule.spec(), s, d) == extra;
      for (std::size_t h = 0; same && h < base.size(); ++h)
        same = image[h] == turn.apply_link(base[h], k);
      if (!same)
        return "the route from rank " + std::to_string(s) + " to rank " + std::to_string(d) +
               " is not that from rank " + std::to_string(src) + " to rank " + std::to_string(dst) +
               " turned";
    }
  }
  return {};
}

}  // namespace

OrbitPlan plan_orbits(const Schedule& schedule, const Topology& topology,
                      const SimOptions& options) {
  OrbitPlan plan;
  if (!options.orbits) {
    plan.note = "none: off (--no-orbits)";
    return plan;
  }
  std::vector<RankTurn> offered;
  if (const RankTurn* node = topology.turn(TurnKind::node)) {
    offered.push_back(*node);
    if (node->nodes % 2 == 0 && node->nodes >= 4) {
      offered.push_back(*node);
      offered.back().stride = 2;
    }
  }
  if (const RankTurn* local = topology.turn(TurnKind::local)) offered.push_back(*local);
  if (offered.empty()) {
    plan.note = "none: the topology offers no proven turn of its ranks";
    return plan;
  }
  // The larger orbits first.
  std::stable_sort(offered.begin(), offered.end(),
                   [](const RankTurn& a, const RankTurn& b) { return a.order() > b.order(); });
  const int p = schedule.ranks();
  for (int r = 0; r < p; ++r) {
    const EndpointProps ep = topology.endpoint(r);
    if (ep.host_cores > 0 || ep.dirty_factor != 1 || (ep.cache_bytes > 0 && ep.dram_factor != 1)) {
      plan.note = "none: rank " + std::to_string(r) +
                  "'s endpoint has per-rank state (shared host, cache or dirty-data model)";
      return plan;
    }
  }
  std::string why;
  for (const RankTurn& t : offered) {
    const RankTurn* turn = &t;
    const std::string name = std::string(to_string(turn->kind)) +
                             (turn->stride > 1 ? " by " + std::to_string(turn->stride) : "");
    if (static_cast<std::int64_t>(turn->nodes) * turn->per_node != p) {
      why += (why.empty() ? "" : "; ") + name + ": the schedule has " + std::to_string(p) +
             " of the topology's ranks";
      continue;
    }
    std::unordered_set<std::uint64_t> pairs;
    std::string differs = check_programs(schedule, *turn, pairs);
    if (differs.empty()) differs = check_routes(schedule, topology, *turn, pairs);
    if (!differs.empty()) {
      why += (why.empty() ? "" : "; ") + name + ": " + differs;
      continue;
    }
    plan.turn = t;
    plan.note = name + ", " + std::to_string(turn->order()) + " ranks per orbit, " +
                std::to_string(p / turn->order()) + " simulated";
    return plan;
  }
  plan.note = "none: " + why;
  return plan;
}

}  // namespace collkit::sim_detail
