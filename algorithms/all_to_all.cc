// All_to_all: pairwise exchange and Bruck.
//
// Rank i's input is split by Partition{n, p}; block j goes to rank j. Rank j's
// output holds p blocks of part.size(j) elements, the one from rank i at
// i * part.size(j). Every message is sent even when it carries no element.
#include <algorithm>
#include <vector>

#include "algorithms/costs.h"
#include "algorithms/fold.h"
#include "algorithms/registry.h"

namespace collkit {
namespace {

// ---- pairwise ----

// Step k sends block r + k to its owner and receives from r - k, so every pair
// meets exactly once and each rank sends and receives once per step.
Generator<Step> pairwise_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  const std::int64_t mine = part.size(rank);
  {
    Step s;
    s.ops.push_back(
        copy_op({Buf::input, part.offset(rank), mine}, {Buf::output, rank * mine, mine}));
    co_yield std::move(s);
  }
  for (int k = 1; k < p; ++k) {
    const int to = (rank + k) % p;
    const int from = mod(rank - k, p);
    Step s;
    s.ops.push_back(send_op(to, {Buf::input, part.offset(to), part.size(to)}));
    s.ops.push_back(recv_op(from, {Buf::output, from * mine, mine}));
    co_yield std::move(s);
  }
}

CostEstimate pairwise_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  const Partition part{spec.count, p};
  const double t = (p - 1) * message_time(c, spec.elem_size, part.size(0), false);
  return make_cost(t, p - 1, spec.count - spec.count / p, spec.elem_size);
}

// ---- Bruck ----
//
// Scratch holds p slots of ceil(n/p) elements, then a send and a receive
// packing area. Slot i of rank r first holds r's block for rank r + i. Step k
// sends every slot whose index has bit k set to rank r + 2^k, which puts it
// into the same slot there; before step k, slot i of rank r holds data for
// rank r + (i with bits below k cleared). After the last step slot i holds
// the block from rank r - i for rank r. The slots a step sends are not
// contiguous, so they are packed before and unpacked after it.
struct BruckLayout {
  int p = 1;
  int rank = 0;
  Partition part{};
  std::int64_t slot_cap() const { return part.size(0); }
  // Largest number of slots one step moves: slots below p with bit k set.
  int max_moved() const {
    int most = 0;
    for (int bit = 1; bit < p; bit <<= 1) most = std::max(most, moved(bit));
    return most;
  }
  int moved(int bit) const {
    int c = 0;
    for (int base = bit; base < p; base += 2 * bit) c += std::min(bit, p - base);
    return c;
  }
  std::int64_t send_pack() const { return p * slot_cap(); }
  std::int64_t recv_pack() const { return send_pack() + max_moved() * slot_cap(); }
  std::int64_t scratch() const { return recv_pack() + max_moved() * slot_cap(); }
  Region slot(int i, std::int64_t count) const { return {Buf::scratch, i * slot_cap(), count}; }
  // Size of slot i on rank `at` before the step of `bit`.
  std::int64_t held(int at, int i, int bit) const {
    return part.size(mod(at + (i & ~(bit - 1)), p));
  }
  // Copies the pack received in the step of `bit` into its slots, sized as
  // its sender (rank - bit) held them.
  void unpack(Step& local, int bit) const {
    const int src = mod(rank - bit, p);
    std::int64_t at = recv_pack();
    for (int base = bit; base < p; base += 2 * bit)
      for (int i = base; i < std::min(base + bit, p); ++i) {
        const std::int64_t c = held(src, i, bit);
        local.ops.push_back(copy_op({Buf::scratch, at, c}, slot(i, c)));
        at += c;
      }
  }
};

Generator<Step> bruck_program(ScheduleSpec spec, int rank) {
  const int p = spec.ranks;
  const BruckLayout bl{p, rank, Partition{spec.count, p}};
  const Partition& part = bl.part;
  Step local;
  for (int i = 0; i < p; ++i) {
    const int dest = (rank + i) % p;
    local.ops.push_back(
        copy_op({Buf::input, part.offset(dest), part.size(dest)}, bl.slot(i, part.size(dest))));
  }
  // The received pack of a step is unpacked in the local step that packs the
  // next one (a receive's region may not be read in its own step).
  int prev_bit = 0;
  for (int bit = 1; bit < p; bit <<= 1) {
    if (prev_bit) bl.unpack(local, prev_bit);
    std::int64_t out = 0, in = 0;
    const int src = mod(rank - bit, p);
    for (int base = bit; base < p; base += 2 * bit)
      for (int i = base; i < std::min(base + bit, p); ++i) {
        const std::int64_t c = bl.held(rank, i, bit);
        local.ops.push_back(copy_op(bl.slot(i, c), {Buf::scratch, bl.send_pack() + out, c}));
        out += c;
        in += bl.held(src, i, bit);
      }
    co_yield std::move(local);
    local = Step{};
    Step x;
    x.ops.push_back(send_op((rank + bit) % p, {Buf::scratch, bl.send_pack(), out}));
    x.ops.push_back(recv_op(src, {Buf::scratch, bl.recv_pack(), in}));
    co_yield std::move(x);
    prev_bit = bit;
  }
  if (prev_bit) bl.unpack(local, prev_bit);
  // Slot i now holds the block from rank - i, all of size part.size(rank).
  const std::int64_t mine = part.size(rank);
  for (int i = 0; i < p; ++i)
    local.ops.push_back(copy_op(bl.slot(i, mine), {Buf::output, mod(rank - i, p) * mine, mine}));
  co_yield std::move(local);
}

CostEstimate bruck_cost(const ScheduleSpec& spec, const CostParams& c) {
  const int p = spec.ranks;
  const std::int64_t a = spec.count / p;
  const int e = static_cast<int>(spec.count % p);
  // Rank r sends, at step `bit`, the slots [base, base + w) of every base with
  // that bit set, each holding a block for rank r + base: a elements, plus one
  // when (r + base) mod p < e. The extra elements of one step, as a function
  // of r, add up over cyclic intervals of r (a difference array); O(p log p).
  std::vector<std::int64_t> total(p, 0), diff(p + 1);
  double t = 0;
  std::int64_t steps = 0;
  for (int bit = 1; bit < p; bit <<= 1) {
    std::fill(diff.begin(), diff.end(), 0);
    std::int64_t slots = 0;
    for (int base = bit; base < p; base += 2 * bit) {
      const int w = std::min(bit, p - base);
      slots += w;
      if (e == 0) continue;
      // (r + base) mod p < e  <=>  r in [p - base, p - base + e) mod p
      const int lo = mod(-base, p);
      const int hi = lo + e;
      diff[lo] += w;
      if (hi <= p) {
        diff[hi] -= w;
      } else {
        diff[p] -= w;
        diff[0] += w;
        diff[hi - p] -= w;
      }
    }
    std::int64_t run = 0, largest = 0;
    for (int r = 0; r < p; ++r) {
      run += diff[r];
      total[r] += slots * a + run;
      largest = std::max(largest, slots * a + run);
    }
    t += message_time(c, spec.elem_size, largest, false);
    ++steps;
  }
  const std::int64_t sent = p > 0 ? *std::max_element(total.begin(), total.end()) : 0;
  return make_cost(t, steps, sent, spec.elem_size);
}

}  // namespace

void add_all_to_all(std::vector<AlgorithmDef>& defs) {
  defs.push_back({Collective::all_to_all,
                  "pairwise",
                  {},
                  "(p-1) a + (p-1)/p n b (uneven blocks: each step set by the largest block)",
                  kCostExact,
                  "any p",
                  pairwise_program,
                  [](const ScheduleSpec&, int) -> std::int64_t { return 0; },
                  pairwise_cost});
  defs.push_back(
      {Collective::all_to_all,
       "bruck",
       {},
       "ceil(log2 p) a + sum_k |{i < p: bit k of i}| n/p b (p a power of two: "
       "log2 p a + log2 p n/2 b; + local pack/unpack/rotation; uneven blocks: each "
       "step set by the largest block)",
       kCostExact,
       "any p",
       bruck_program,
       [](const ScheduleSpec& spec, int rank) {
         return BruckLayout{spec.ranks, rank, Partition{spec.count, spec.ranks}}.scratch();
       },
       bruck_cost});
}

}  // namespace collkit
