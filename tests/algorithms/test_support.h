// Shared by the algorithm tests (sweep_test, rings_test, trees_test): the
// parameter lists of the project sweep, schedule specs, and an
// alpha-beta-gamma replay of a schedule to compare closed-form times with.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/reference.h"
#include "algorithms/registry.h"

namespace collkit::testing_support {

// One algorithm with one of its variants ("" = none, or the default one).
struct AlgoId {
  Collective collective{};
  std::string name{};
  std::string variant{};

  std::string label() const {
    return std::string(to_string(collective)) + "/" + name + (variant.empty() ? "" : ":" + variant);
  }
};

// gtest prints parameters of failing tests with this instead of raw bytes.
inline void PrintTo(const AlgoId& a, std::ostream* os) { *os << a.label(); }

// The rank counts of the sweep.
inline constexpr int kRanks[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                 12, 13, 14, 15, 16, 17, 24, 32, 33, 64, 100};

// The rank counts a sweep runs: kRanks, or with COLLKIT_SWEEP_MAX_RANKS=N
// those up to N. The asan test preset sets 32 (docs/QUALITY.md): the
// sanitizers look for memory errors, which the code paths of 33, 64 and 100
// ranks share with the smaller counts (17 is 2^4 + 1 as 33 is 2^5 + 1), at
// several times their cost; the default preset sweeps every count.
inline std::vector<int> sweep_ranks() {
  int max = 1 << 30;
  if (const char* v = std::getenv("COLLKIT_SWEEP_MAX_RANKS")) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || n < 1 || n > (1 << 30))
      throw std::invalid_argument(std::string("COLLKIT_SWEEP_MAX_RANKS=") + v +
                                  ": expected a rank count >= 1");
    max = static_cast<int>(n);
  }
  std::vector<int> out;
  for (int p : kRanks)
    if (p <= max) out.push_back(p);
  return out;
}
inline constexpr std::int64_t kLargeCount = 65537;

// The counts of the sweep at p ranks, ascending and distinct: 0, 1, p-1, p,
// p+1, 1000 and kLargeCount; a barrier moves no data (0 only).
inline std::vector<std::int64_t> sweep_counts(Collective c, int p) {
  if (c == Collective::barrier) return {0};
  std::vector<std::int64_t> counts{0, 1, p - 1, p, p + 1, 1000, kLargeCount};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

// Roots 0, p/2 and p-1 (distinct) for a rooted collective, else 0.
inline std::vector<int> roots(Collective c, int p) {
  if (!is_rooted(c)) return {0};
  std::vector<int> r{0, p / 2, p - 1};
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

inline int elem_size(DType t) { return t == DType::int32 || t == DType::float32 ? 4 : 8; }

// A barrier's count is always 0, whatever n says.
inline ScheduleSpec make_spec(const AlgoId& a, int p, int root, std::int64_t n, int elem_size = 4,
                              std::int64_t segment = 0) {
  ScheduleSpec spec;
  spec.collective = a.collective;
  spec.algorithm = a.name;
  spec.variant = a.variant;
  spec.ranks = p;
  spec.root = root;
  spec.count = a.collective == Collective::barrier ? 0 : n;
  spec.elem_size = elem_size;
  spec.segment = segment;
  return spec;
}

// Every dtype and reduction op at every root: the schedule of `a` for p ranks
// and n elements (elem_size following the dtype) runs numerically.
inline void expect_every_dtype_and_op(const AlgoId& a, int p, std::int64_t n) {
  for (int root : roots(a.collective, p))
    for (DType t : kAllDTypes)
      for (ReduceOp op : kAllReduceOps) {
        SCOPED_TRACE(a.label() + " p " + std::to_string(p) + " n " + std::to_string(n) + " root " +
                     std::to_string(root) + " " + std::string(to_string(t)) + " " +
                     std::string(to_string(op)));
        const auto s = make_schedule(make_spec(a, p, root, n, elem_size(t)));
        EXPECT_NO_THROW(verify_numeric(*s, t, op, 3));
      }
}

// The cost model the family tests compare closed forms and replays under.
inline const CostParams kModel{2e-6, 1.0 / 50e9, 1.0 / 80e9};

// Alpha-beta-gamma replay of a schedule with the simulator's semantics (one
// full-duplex link per pair, no contention, no barrier between steps): a rank
// posts a step's sends and receives when its previous step ends; a matched
// pair (FIFO per ordered pair) transfers from the later of the two posts and
// both sides complete alpha + m beta later, the receiver m gamma later still
// when it reduces; a step's local reduces then cost m gamma each. Returns the
// time the last rank ends.
inline double replay(const Schedule& s, int elem, const CostParams& c) {
  const int p = s.ranks();
  std::vector<std::vector<Step>> steps(p);
  for (int r = 0; r < p; ++r) steps[r] = s.steps(r);
  std::vector<std::size_t> idx(p, 0);
  std::vector<double> now(p, 0.0);
  std::vector<bool> posted(p, false);
  // (from, to) -> post times of the sends and of the receives, in order.
  std::map<std::pair<int, int>, std::vector<double>> sends, recvs;
  std::vector<std::vector<std::size_t>> slot(p);  // per op of the current step: its FIFO index
  const auto bytes = [&](const Region& r) { return static_cast<double>(r.count) * elem; };
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; ++r) {
      while (idx[r] < steps[r].size()) {
        const Step& st = steps[r][idx[r]];
        if (!posted[r]) {
          slot[r].assign(st.ops.size(), 0);
          for (std::size_t j = 0; j < st.ops.size(); ++j) {
            const Op& op = st.ops[j];
            if (op.kind != OpKind::send && op.kind != OpKind::recv) continue;
            auto& v = op.kind == OpKind::send ? sends[{r, op.peer}] : recvs[{op.peer, r}];
            slot[r][j] = v.size();
            v.push_back(now[r]);
          }
          posted[r] = true;
        }
        bool ready = true;
        double end = now[r];
        for (std::size_t j = 0; j < st.ops.size() && ready; ++j) {
          const Op& op = st.ops[j];
          if (op.kind != OpKind::send && op.kind != OpKind::recv) continue;
          const bool is_send = op.kind == OpKind::send;
          const auto& other = is_send ? recvs[{r, op.peer}] : sends[{op.peer, r}];
          if (other.size() <= slot[r][j]) {
            ready = false;
            break;
          }
          const Region& reg = is_send ? op.src : op.dst;
          double done = std::max(now[r], other[slot[r][j]]) + c.alpha + bytes(reg) * c.beta;
          if (!is_send && op.combine == Combine::reduce) done += bytes(reg) * c.gamma;
          end = std::max(end, done);
        }
        if (!ready) break;
        for (const Op& op : st.ops)
          if (op.kind == OpKind::reduce) end += bytes(op.dst) * c.gamma;
        now[r] = end;
        ++idx[r];
        posted[r] = false;
        progress = true;
      }
    }
  }
  for (int r = 0; r < p; ++r) EXPECT_EQ(idx[r], steps[r].size()) << "replay deadlock at rank " << r;
  return *std::max_element(now.begin(), now.end());
}

}  // namespace collkit::testing_support
