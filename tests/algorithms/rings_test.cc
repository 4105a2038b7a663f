// The ring / recursive / Bruck / pairwise families: all_gather,
// reduce_scatter, all_reduce, all_to_all and Rabenseifner reduce. Every
// algorithm runs every dtype and op, and its closed-form time must equal an
// alpha-beta-gamma replay of the schedule wherever docs claim exactness (p a
// power of two, p | n); hand-worked cases check the steps themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/blocks.h"
#include "algorithms/costs.h"
#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "core/error.h"
#include "tests/algorithms/test_support.h"

namespace collkit {
namespace {

using testing_support::AlgoId;
using testing_support::expect_every_dtype_and_op;
using testing_support::kModel;
using testing_support::make_spec;
using testing_support::replay;
using testing_support::roots;

// Per-configuration verification, steps, bytes and the lower bound over every
// p, count and root are in sweep_test.cc, for the whole registry.
const AlgoId kAlgos[] = {
    {Collective::all_gather, "ring"},
    {Collective::all_gather, "recursive_doubling"},
    {Collective::all_gather, "bruck"},
    {Collective::all_gather, "gather_broadcast"},
    {Collective::reduce_scatter, "ring"},
    {Collective::reduce_scatter, "recursive_halving"},
    {Collective::reduce_scatter, "pairwise"},
    {Collective::all_reduce, "ring"},
    {Collective::all_reduce, "recursive_doubling"},
    {Collective::all_reduce, "rabenseifner", "fold"},
    {Collective::all_reduce, "rabenseifner", "blocks"},
    {Collective::all_reduce, "hierarchical"},
    {Collective::all_to_all, "pairwise"},
    {Collective::all_to_all, "bruck"},
    {Collective::reduce, "rabenseifner"},
};

// ---- every dtype and op on a few cases ----

TEST(Rings, EveryDtypeAndOp) {
  for (const AlgoId& a : kAlgos)
    for (int p : {1, 3, 4, 6, 13})
      for (std::int64_t n :
           {std::int64_t{0}, std::int64_t{2}, std::int64_t{p + 3}, std::int64_t{97}})
        expect_every_dtype_and_op(a, p, n);
}

// ---- closed-form time equals the replay where it is claimed exact ----

TEST(Rings, TimeExactForPowersOfTwoWithDivisibleCounts) {
  for (const AlgoId& a : kAlgos)
    for (int p : {1, 2, 4, 8, 16, 32})
      for (std::int64_t k : {1, 5, 64}) {
        // all_to_all and hierarchical need p | n per block at every level.
        const std::int64_t n = p * p * k;
        for (int root : roots(a.collective, p)) {
          SCOPED_TRACE(a.label() + " p " + std::to_string(p) + " n " + std::to_string(n));
          const auto s = make_schedule(make_spec(a, p, root, n));
          const double want = replay(*s, 4, kModel);
          const double got = closed_form_cost(s->spec(), kModel).time;
          EXPECT_NEAR(got, want, 1e-9 * want + 1e-15);
        }
      }
}

// Beyond the exact cases the closed forms follow the critical path of the
// schedule (the largest block sets each step; member 0 is the busiest member
// of a fold; the binary-blocks chain is replayed per rank), so they match the
// replay for uneven blocks and any p too. Binary blocks bounds each step of
// the chain by its largest chunk, which only shows when chunks differ by one
// element.
TEST(Rings, TimeMatchesReplayForAnyPAndCount) {
  for (const AlgoId& a : kAlgos) {
    const bool bounded = a.variant == "blocks";
    for (int p : {3, 5, 6, 7, 12, 13, 24, 33})
      for (std::int64_t n : {1, 17, 1000, 65537}) {
        SCOPED_TRACE(a.label() + " p " + std::to_string(p) + " n " + std::to_string(n));
        const auto s = make_schedule(make_spec(a, p, p / 2, n));
        const double want = replay(*s, 4, kModel);
        const double got = closed_form_cost(s->spec(), kModel).time;
        EXPECT_NEAR(got, want, (bounded ? 1e-4 : 1e-9) * want);
        EXPECT_GE(got, want * (1 - 1e-9));
      }
  }
}

// The closed forms of COSTS.md, written out.
TEST(Rings, ClosedFormsMatchCostsTable) {
  const double al = kModel.alpha, be = kModel.beta, ga = kModel.gamma;
  for (int p : {2, 4, 8, 16, 64}) {
    const std::int64_t n = 1024 * p;
    const double nb = n * 4.0, f = (p - 1.0) / p, L = std::log2(p);
    auto time = [&](Collective c, const char* name, const char* variant = "") {
      return closed_form_cost(make_spec({c, name, variant}, p, 0, n), kModel).time;
    };
    EXPECT_NEAR(time(Collective::all_reduce, "ring"),
                2 * (p - 1) * al + 2 * f * nb * be + f * nb * ga, 1e-12);
    EXPECT_NEAR(time(Collective::all_reduce, "rabenseifner", "fold"),
                2 * L * al + 2 * f * nb * be + f * nb * ga, 1e-12);
    EXPECT_NEAR(time(Collective::all_reduce, "rabenseifner", "blocks"),
                2 * L * al + 2 * f * nb * be + f * nb * ga, 1e-12);
    EXPECT_NEAR(time(Collective::all_reduce, "recursive_doubling"), L * (al + nb * be + nb * ga),
                1e-12);
    EXPECT_NEAR(time(Collective::all_gather, "ring"), (p - 1) * al + f * nb * be, 1e-12);
    EXPECT_NEAR(time(Collective::all_gather, "recursive_doubling"), L * al + f * nb * be, 1e-12);
    EXPECT_NEAR(time(Collective::all_gather, "bruck"), L * al + f * nb * be, 1e-12);
    EXPECT_NEAR(time(Collective::all_gather, "gather_broadcast"), 2 * L * al + (L + f) * nb * be,
                1e-12);
    EXPECT_NEAR(time(Collective::reduce_scatter, "ring"), (p - 1) * al + f * nb * (be + ga), 1e-12);
    EXPECT_NEAR(time(Collective::reduce_scatter, "recursive_halving"), L * al + f * nb * (be + ga),
                1e-12);
    EXPECT_NEAR(time(Collective::reduce, "rabenseifner"),
                2 * L * al + 2 * f * nb * be + f * nb * ga, 1e-12);
    EXPECT_NEAR(time(Collective::all_to_all, "pairwise"), (p - 1) * al + f * nb * be, 1e-12);
  }
}

// ---- hand-worked cases ----

struct Expect {
  OpKind kind;
  int peer;
  std::int64_t offset;
  std::int64_t count;
  Combine combine;
};

void expect_step(const Step& s, const std::vector<Expect>& want, const std::string& where) {
  ASSERT_EQ(s.ops.size(), want.size()) << where;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Op& op = s.ops[i];
    const Region& r = op.kind == OpKind::send ? op.src : op.dst;
    EXPECT_EQ(op.kind, want[i].kind) << where << " op " << i;
    EXPECT_EQ(op.peer, want[i].peer) << where << " op " << i;
    EXPECT_EQ(r.buf, Buf::output) << where << " op " << i;
    EXPECT_EQ(r.offset, want[i].offset) << where << " op " << i;
    EXPECT_EQ(r.count, want[i].count) << where << " op " << i;
    if (op.kind == OpKind::recv) {
      EXPECT_EQ(op.combine, want[i].combine) << where << " op " << i;
    }
  }
}

// p = 3, n = 6: blocks of 2 at offsets 0, 2, 4. Reduce_scatter step k: rank r
// sends block r-k-1 to r+1 and reduces block r-k-2 from r-1; all_gather step
// k: sends block r-k, receives block r-k-1.
TEST(Rings, RingAllReduceThreeRanksStepByStep) {
  const auto s = make_schedule(make_spec({Collective::all_reduce, "ring", ""}, 3, 0, 6));
  const OpKind S = OpKind::send, R = OpKind::recv;
  const Combine C = Combine::copy, Rd = Combine::reduce;
  // want[rank][step] (after the initial local copy)
  const std::vector<std::vector<std::vector<Expect>>> want = {
      {{{S, 1, 4, 2, C}, {R, 2, 2, 2, Rd}},
       {{S, 1, 2, 2, C}, {R, 2, 0, 2, Rd}},
       {{S, 1, 0, 2, C}, {R, 2, 4, 2, C}},
       {{S, 1, 4, 2, C}, {R, 2, 2, 2, C}}},
      {{{S, 2, 0, 2, C}, {R, 0, 4, 2, Rd}},
       {{S, 2, 4, 2, C}, {R, 0, 2, 2, Rd}},
       {{S, 2, 2, 2, C}, {R, 0, 0, 2, C}},
       {{S, 2, 0, 2, C}, {R, 0, 4, 2, C}}},
      {{{S, 0, 2, 2, C}, {R, 1, 0, 2, Rd}},
       {{S, 0, 0, 2, C}, {R, 1, 4, 2, Rd}},
       {{S, 0, 4, 2, C}, {R, 1, 2, 2, C}},
       {{S, 0, 2, 2, C}, {R, 1, 0, 2, C}}},
  };
  for (int r = 0; r < 3; ++r) {
    const std::vector<Step> steps = s->steps(r);
    ASSERT_EQ(steps.size(), 5u);
    ASSERT_EQ(steps[0].ops.size(), 1u);
    EXPECT_EQ(steps[0].ops[0].kind, OpKind::copy);
    EXPECT_EQ(steps[0].ops[0].src, (Region{Buf::input, 0, 6}));
    EXPECT_EQ(steps[0].ops[0].dst, (Region{Buf::output, 0, 6}));
    for (int k = 0; k < 4; ++k)
      expect_step(steps[k + 1], want[r][k],
                  "rank " + std::to_string(r) + " step " + std::to_string(k));
  }
  const ExecutionStats st = verify_numeric(*s, DType::int32, ReduceOp::sum);
  EXPECT_EQ(st.max_comm_steps, 4);
  EXPECT_EQ(st.max_elems_sent, 8);
}

TEST(Rings, RingAllReduceSendsTwoPMinusOneOverPTimesN) {
  for (int p : {2, 3, 4, 5, 8, 12, 16})
    for (std::int64_t k : {1, 3, 100}) {
      const std::int64_t n = p * k;
      const auto s = make_schedule(make_spec({Collective::all_reduce, "ring", ""}, p, 0, n));
      const ExecutionStats st = verify_numeric(*s, DType::float32, ReduceOp::sum);
      EXPECT_EQ(st.max_elems_sent * p, 2 * (p - 1) * n) << p << " " << n;
      EXPECT_EQ(st.max_comm_steps, 2 * (p - 1));
      EXPECT_DOUBLE_EQ(closed_form_cost(s->spec(), kModel).bytes_sent, 2.0 * (p - 1) / p * n * 4);
    }
}

// Fold: p = 5 has 4 members and rank 1 sits out, so recursive doubling takes
// floor(log2 5) + 2 = 4 steps and Rabenseifner 2 * 2 + 2 = 6; reduce needs no
// unfold (2 * 2 + 1). Bruck takes ceil(log2 p) for any p.
TEST(Rings, FoldStepCounts) {
  const auto steps = [](Collective c, const char* name, int p, int root = 0) {
    const auto s = make_schedule(make_spec({c, name, ""}, p, root, 40));
    return verify_numeric(*s, DType::int64, ReduceOp::max).max_comm_steps;
  };
  EXPECT_EQ(steps(Collective::all_reduce, "recursive_doubling", 5), 4);
  EXPECT_EQ(steps(Collective::all_reduce, "rabenseifner", 5), 6);
  EXPECT_EQ(steps(Collective::all_gather, "recursive_doubling", 6), 4);
  EXPECT_EQ(steps(Collective::reduce_scatter, "recursive_halving", 7), 4);
  EXPECT_EQ(steps(Collective::reduce, "rabenseifner", 5, 3), 5);
  EXPECT_EQ(steps(Collective::all_gather, "bruck", 5), 3);
  EXPECT_EQ(steps(Collective::all_to_all, "bruck", 5), 3);
  EXPECT_EQ(steps(Collective::all_to_all, "pairwise", 5), 4);
  EXPECT_EQ(steps(Collective::all_reduce, "hierarchical", 12), 2 * 2 + 2 * 3);
}

// A block-level executor for the blocks of blocks.h with a shift: every
// element carries a bit mask of the ranks whose contribution it holds; a
// receive with reduce must add only new contributions. Messages match FIFO
// per pair; steps run as soon as their messages are there.
using Masks = std::vector<std::vector<std::uint64_t>>;
void run_blocks(const std::vector<std::vector<Step>>& steps, Masks& data) {
  const int p = static_cast<int>(steps.size());
  std::map<std::pair<int, int>, std::vector<std::vector<std::uint64_t>>> queue;
  std::map<std::pair<int, int>, std::size_t> taken;
  std::vector<std::size_t> idx(p, 0);
  std::vector<bool> posted(p, false);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < p; ++r)
      while (idx[r] < steps[r].size()) {
        const Step& st = steps[r][idx[r]];
        if (!posted[r]) {
          for (const Op& op : st.ops)
            if (op.kind == OpKind::send)
              queue[{r, op.peer}].emplace_back(data[r].begin() + op.src.offset,
                                               data[r].begin() + op.src.offset + op.src.count);
          posted[r] = true;
        }
        bool ready = true;
        for (const Op& op : st.ops)
          if (op.kind == OpKind::recv && queue[{op.peer, r}].size() <= taken[{op.peer, r}])
            ready = false;
        if (!ready) break;
        for (const Op& op : st.ops) {
          if (op.kind != OpKind::recv) continue;
          const auto& msg = queue[{op.peer, r}][taken[{op.peer, r}]++];
          ASSERT_EQ(static_cast<std::int64_t>(msg.size()), op.dst.count);
          for (std::int64_t e = 0; e < op.dst.count; ++e) {
            std::uint64_t& d = data[r][op.dst.offset + e];
            if (op.combine == Combine::reduce) {
              ASSERT_EQ(d & msg[e], 0u) << "contribution counted twice at rank " << r;
              d |= msg[e];
            } else {
              d = msg[e];
            }
          }
        }
        ++idx[r];
        posted[r] = false;
        progress = true;
      }
  }
  for (int r = 0; r < p; ++r) ASSERT_EQ(idx[r], steps[r].size()) << "deadlock at rank " << r;
}

std::vector<std::vector<Step>> block_steps(Generator<Step> (*gen)(BlockLayout), int p, int shift,
                                           const Partition& part) {
  std::vector<std::vector<Step>> steps(p);
  for (int r = 0; r < p; ++r)
    for (Step& s : gen(BlockLayout{p, r, shift, part, Buf::output, 0}))
      steps[r].push_back(std::move(s));
  return steps;
}

TEST(Rings, AllGatherBlocksWithShift) {
  for (int p : {1, 2, 3, 5, 6, 8, 11})
    for (int shift : {0, 1, p - 1})
      for (auto gen : {&ring_all_gather, &recursive_doubling_all_gather}) {
        SCOPED_TRACE("p " + std::to_string(p) + " shift " + std::to_string(shift));
        const Partition part{2 * p + 3, p};
        // Virtual rank w holds block w, marked with the bit of its real rank.
        Masks data(p, std::vector<std::uint64_t>(part.n, 0));
        for (int r = 0; r < p; ++r) {
          const int w = ((r - shift) % p + p) % p;
          for (std::int64_t e = part.offset(w); e < part.offset(w + 1); ++e) data[r][e] = 1u << r;
        }
        run_blocks(block_steps(gen, p, shift, part), data);
        for (int r = 0; r < p; ++r)
          for (int w = 0; w < p; ++w)
            for (std::int64_t e = part.offset(w); e < part.offset(w + 1); ++e)
              EXPECT_EQ(data[r][e], 1u << ((w + shift) % p)) << "rank " << r << " elem " << e;
      }
}

TEST(Rings, ReduceScatterBlocksWithShift) {
  for (int p : {1, 2, 3, 5, 6, 8, 11})
    for (int shift : {0, 1, p - 1})
      for (auto gen : {&ring_reduce_scatter, &recursive_halving_reduce_scatter}) {
        SCOPED_TRACE("p " + std::to_string(p) + " shift " + std::to_string(shift));
        const Partition part{2 * p + 3, p};
        Masks data(p, std::vector<std::uint64_t>(part.n, 0));
        for (int r = 0; r < p; ++r) std::fill(data[r].begin(), data[r].end(), 1u << r);
        run_blocks(block_steps(gen, p, shift, part), data);
        const std::uint64_t all = (std::uint64_t{1} << p) - 1;
        for (int r = 0; r < p; ++r) {
          const int w = ((r - shift) % p + p) % p;
          for (std::int64_t e = part.offset(w); e < part.offset(w + 1); ++e)
            EXPECT_EQ(data[r][e], all) << "rank " << r << " elem " << e;
        }
      }
}

}  // namespace
}  // namespace collkit
