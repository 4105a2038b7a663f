// The "fold" of COSTS.md that lets power-of-two algorithms (recursive doubling,
// recursive halving, Rabenseifner) run on any p, and the member-space blocks
// those algorithms share. With q = 2^floor(log2 p) and r = p - q, virtual
// ranks 2i and 2i+1 (i < r) pair up and 2i+1 sits out; the q members are
// virtual ranks 2i (i < r) and i + r (i >= r). Member 0 is always virtual rank
// 0, so a rooted collective that shifts by its root keeps the root active.
// Private to all_gather.cc, reduce_scatter.cc, all_reduce.cc and
// reduce_rabenseifner.cc.
#pragma once

#include <algorithm>
#include <cstdint>

#include "algorithms/blocks.h"
#include "algorithms/costs.h"
#include "algorithms/registry.h"
#include "algorithms/schedule.h"

namespace collkit {

struct FoldGroup {
  // How the work vector of part.n elements is split among the members.
  //   rank_blocks: part has p blocks; member i owns the blocks of its ranks
  //     (2i and 2i+1, or i + r), so results that must end in block j at rank j
  //     (all_gather, reduce_scatter) need no reshuffling.
  //   even: part has q blocks and member i owns block i; used where the whole
  //     vector ends at every rank (all_reduce) or at the root (reduce), so an
  //     even split over the members is free and halves the imbalance.
  enum class Split : std::uint8_t { rank_blocks, even };

  int p = 1;
  int shift = 0;
  int rank = 0;
  Split split = Split::rank_blocks;
  Partition part{};
  Buf buf = Buf::output;
  std::int64_t base = 0;
  // even split only: member i owns part blocks [i * stride, (i + 1) * stride),
  // so splits of groups of different sizes over one Partition nest.
  int stride = 1;

  int q() const { return 1 << floor_log2(p); }
  int r() const { return p - q(); }
  int vrank() const { return ((rank - shift) % p + p) % p; }
  int real(int v) const { return (v + shift) % p; }
  bool sits_out() const {
    const int v = vrank();
    return v < 2 * r() && v % 2 == 1;
  }
  // This rank's member index, or -1 when it sits out.
  int member() const {
    const int v = vrank(), rr = r();
    if (v < 2 * rr) return v % 2 == 0 ? v / 2 : -1;
    return v - rr;
  }
  int member_vrank(int i) const { return i < r() ? 2 * i : i + r(); }
  int member_real(int i) const { return real(member_vrank(i)); }
  // Element offset of member i's range; offset(q()) == part.n.
  std::int64_t offset(int i) const {
    if (split == Split::even) return part.offset(i * stride);
    return part.offset(i < r() ? 2 * i : i + r());
  }
  std::int64_t span(int i, int k) const { return offset(i + k) - offset(i); }
  std::int64_t size(int i) const { return span(i, 1); }
  Region range(int i, int k) const { return {buf, base + offset(i), span(i, k)}; }
  Region whole() const { return {buf, base, part.n}; }
};

// Before: member i holds range i. After: every member holds the whole work
// vector. Recursive doubling, log2 q steps; sitters get no steps.
Generator<Step> member_all_gather(FoldGroup g);
// Before: every member holds a full work vector. After: member i holds range i
// reduced over all members. Recursive halving, log2 q steps; sitters get none.
Generator<Step> member_reduce_scatter(FoldGroup g);

// The fold around a member block over the rank-blocks split of `layout`, for
// p not a power of two. All_gather (reduce = false): a sitter hands its block
// to its member first and takes the whole vector back at the end, around
// member_all_gather. Reduce_scatter (reduce = true): a sitter hands its whole
// vector to its member (reduced into the member's) first and takes its reduced
// block back at the end, around member_reduce_scatter. 2 extra steps.
Generator<Step> rank_blocks_fold(BlockLayout layout, bool reduce);

// Member range sizes never grow with the member index (Partition blocks shrink
// with their index, and a pair of blocks is at least one later block), which
// makes members 0.. the heaviest senders; the helpers below rely on it.

// Max over members of elements sent by member_all_gather: member 0's.
inline std::int64_t member_all_gather_max_sent(const FoldGroup& g) {
  std::int64_t sent = 0;
  for (int m = 1; m < g.q(); m <<= 1) sent += g.span(0, m);
  return sent;
}

// Max over members of (elements sent by member_reduce_scatter + extra(i)),
// where extra is non-increasing in i. A run of members with equal sizes and
// extras is solved in closed form, so only the few groups that straddle a
// change of size are split: O(log q).
template <typename Extra>
std::int64_t member_reduce_scatter_max_sent(const FoldGroup& g, const Extra& extra, int lo,
                                            int len) {
  if (len == 1) return extra(lo);
  const int hi = lo + len - 1;
  if (g.size(lo) == g.size(hi) && extra(lo) == extra(hi)) return (len - 1) * g.size(lo) + extra(lo);
  const int half = len / 2;
  return std::max(g.span(lo + half, half) + member_reduce_scatter_max_sent(g, extra, lo, half),
                  g.span(lo, half) + member_reduce_scatter_max_sent(g, extra, lo + half, half));
}

// The largest message of the recursive-halving level that exchanges halves of
// `half` members (also the largest of the recursive-doubling level that
// exchanges `half` members' ranges): member 0's.
inline std::int64_t member_level_max(const FoldGroup& g, int half) { return g.span(0, half); }

// Re-targets a block generated for a sub-communicator: peer w becomes
// w * stride + offset (groups of consecutive ranks, or ranks strided across
// groups).
Generator<Step> remap_peers(Generator<Step> steps, int stride, int offset);

// Time of one message of m elements under the alpha-beta(-gamma) model, the
// gamma term only where the receiver reduces it.
inline double message_time(const CostParams& c, int elem_size, std::int64_t m, bool reduce) {
  const double bytes = static_cast<double>(m) * elem_size;
  return c.alpha + bytes * c.beta + (reduce ? bytes * c.gamma : 0.0);
}

inline CostEstimate make_cost(double time, std::int64_t steps, std::int64_t elems_sent,
                              int elem_size) {
  return {time, steps, static_cast<double>(elems_sent) * elem_size};
}

inline int mod(std::int64_t a, int p) { return static_cast<int>(((a % p) + p) % p); }

}  // namespace collkit
