// The tree families: broadcast, reduce, scatter/gather, barrier and the tree
// all_reduces. Every algorithm runs every dtype and op, pipelines run with
// explicit segment sizes, and the closed-form time must equal an
// alpha-beta-gamma replay of the schedule wherever the cost formula claims
// exactness (a tight upper bound elsewhere); hand-worked cases check the
// steps themselves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/blocks.h"
#include "algorithms/costs.h"
#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "algorithms/tree_pipeline.h"
#include "tests/algorithms/test_support.h"

namespace collkit {
namespace {

using testing_support::AlgoId;
using testing_support::expect_every_dtype_and_op;
using testing_support::kModel;
using testing_support::make_spec;
using testing_support::replay;
using testing_support::roots;

struct Algo : AlgoId {
  // Closed-form time equals the replay for every p and n (not only for p a
  // power of two with evenly divided blocks and segments).
  bool exact_any = false;
};

// Per-configuration verification, steps, bytes and the lower bound over every
// p, root and count are in sweep_test.cc, for the whole registry.
const Algo kAlgos[] = {
    {{Collective::broadcast, "linear"}, true},
    {{Collective::broadcast, "binomial_tree"}, true},
    {{Collective::broadcast, "hypercube"}, true},
    {{Collective::broadcast, "pipelined_chain"}},
    {{Collective::broadcast, "pipelined_binary_tree"}},
    {{Collective::broadcast, "double_binary_tree"}},
    {{Collective::broadcast, "scatter_ring_allgather"}},
    {{Collective::broadcast, "scatter_rd_allgather"}},
    {{Collective::reduce, "linear"}, true},
    {{Collective::reduce, "binomial_tree"}, true},
    {{Collective::reduce, "pipelined_chain"}},
    {{Collective::scatter, "linear"}, true},
    {{Collective::scatter, "binomial_tree"}},
    {{Collective::gather, "linear"}, true},
    {{Collective::gather, "binomial_tree"}},
    {{Collective::barrier, "dissemination"}, true},
    {{Collective::barrier, "binomial_tree"}, true},
    {{Collective::all_reduce, "linear"}, true},
    {{Collective::all_reduce, "binomial_tree"}, true},
    {{Collective::all_reduce, "double_binary_tree"}},
};

// Explicit segment sizes: steps and bytes stay exact, results stay right.
TEST(Trees, PipelinesWithExplicitSegments) {
  for (const Algo& a : kAlgos) {
    const std::string& name = a.name;
    if (name.find("pipelined") == std::string::npos && name != "double_binary_tree") continue;
    for (int p : {2, 3, 4, 5, 7, 8, 12, 17})
      for (std::int64_t n : {1, 9, 100})
        for (std::int64_t seg : {1, 3, 7, 64})
          for (int root : roots(a.collective, p)) {
            SCOPED_TRACE(a.label() + " p " + std::to_string(p) + " n " + std::to_string(n) +
                         " seg " + std::to_string(seg) + " root " + std::to_string(root));
            const auto s = make_schedule(make_spec(a, p, root, n, 4, seg));
            ExecutionStats st;
            ASSERT_NO_THROW(st = verify_numeric(*s, DType::int64, ReduceOp::sum, 5));
            ASSERT_NO_THROW(verify_symbolic(*s));
            const CostEstimate cost = closed_form_cost(s->spec(), kModel);
            EXPECT_EQ(cost.steps, st.max_comm_steps);
            EXPECT_DOUBLE_EQ(cost.bytes_sent, static_cast<double>(st.max_elems_sent) * 4);
          }
  }
}

// ---- every dtype and op on a few cases ----

TEST(Trees, EveryDtypeAndOp) {
  for (const Algo& a : kAlgos)
    for (int p : {1, 3, 4, 6, 13})
      for (std::int64_t n : {std::int64_t{2}, std::int64_t{p + 3}, std::int64_t{97}})
        expect_every_dtype_and_op(a, p, n);
}

// ---- closed-form time equals the replay where it is claimed exact ----

TEST(Trees, TimeExactForPowersOfTwoWithEvenSegments) {
  for (const Algo& a : kAlgos)
    for (int p : {1, 2, 4, 8, 16, 32})
      for (std::int64_t k : {1, 5, 16})
        for (std::int64_t seg : {0, 4}) {
          // p | n, and segments of 4 divide n and n/2.
          const std::int64_t n = 8 * p * k;
          for (int root : roots(a.collective, p)) {
            SCOPED_TRACE(a.label() + " p " + std::to_string(p) + " n " + std::to_string(n) +
                         " seg " + std::to_string(seg) + " root " + std::to_string(root));
            const auto s = make_schedule(make_spec(a, p, root, n, 4, seg));
            // Default segments need not divide the vector.
            const std::string& name = a.name;
            const bool pipelined =
                name.find("pipelined") != std::string::npos || name == "double_binary_tree";
            if (seg == 0 && pipelined) continue;
            const double want = replay(*s, 4, kModel);
            const double got = closed_form_cost(s->spec(), kModel).time;
            EXPECT_NEAR(got, want, 1e-9 * want + 1e-15);
          }
        }
}

TEST(Trees, TimeMatchesReplayForAnyPWhereExact) {
  for (const Algo& a : kAlgos) {
    if (!a.exact_any) continue;
    for (int p : {3, 5, 6, 7, 12, 13, 24, 33})
      for (std::int64_t n : {1, 17, 1000}) {
        SCOPED_TRACE(a.label() + " p " + std::to_string(p) + " n " + std::to_string(n));
        const auto s = make_schedule(make_spec(a, p, p / 2, n));
        const double want = replay(*s, 4, kModel);
        const double got = closed_form_cost(s->spec(), kModel).time;
        EXPECT_NEAR(got, want, 1e-9 * want);
      }
  }
}

// Elsewhere the closed form charges a short last segment or block as a full
// one: never below the replay, and close to it.
TEST(Trees, TimeIsATightUpperBoundOtherwise) {
  for (const Algo& a : kAlgos) {
    if (a.exact_any) continue;
    for (int p : {3, 5, 6, 12, 13})
      for (std::int64_t n : {17, 1000, 4099}) {
        SCOPED_TRACE(a.label() + " p " + std::to_string(p) + " n " + std::to_string(n));
        const auto s = make_schedule(make_spec(a, p, p / 2, n));
        const double want = replay(*s, 4, kModel);
        const double got = closed_form_cost(s->spec(), kModel).time;
        EXPECT_NEAR(got, want, 0.1 * want);
      }
  }
}

// The COSTS.md closed forms, written out for p a power of two.
TEST(Trees, ClosedFormsMatchCostsTable) {
  const double al = kModel.alpha, be = kModel.beta, ga = kModel.gamma;
  for (int p : {2, 4, 8, 16, 64}) {
    const std::int64_t n = 1024 * p;
    const double nb = n * 4.0, f = (p - 1.0) / p, L = std::log2(p);
    const auto time = [&](Collective c, const char* name, std::int64_t seg = 0) {
      return closed_form_cost(make_spec({c, name}, p, 0, n, 4, seg), kModel).time;
    };
    EXPECT_NEAR(time(Collective::broadcast, "linear"), (p - 1) * (al + nb * be), 1e-12);
    EXPECT_NEAR(time(Collective::broadcast, "binomial_tree"), L * (al + nb * be), 1e-12);
    EXPECT_NEAR(time(Collective::broadcast, "hypercube"), L * (al + nb * be), 1e-12);
    const double k = n / 64.0;
    EXPECT_NEAR(time(Collective::broadcast, "pipelined_chain", 64),
                (p + k - 2) * (al + nb / k * be), 1e-12);
    EXPECT_NEAR(time(Collective::broadcast, "scatter_ring_allgather"),
                (L + p - 1) * al + 2 * f * nb * be, 1e-12);
    EXPECT_NEAR(time(Collective::broadcast, "scatter_rd_allgather"), 2 * L * al + 2 * f * nb * be,
                1e-12);
    EXPECT_NEAR(time(Collective::reduce, "linear"), (p - 1) * (al + nb * (be + ga)), 1e-12);
    EXPECT_NEAR(time(Collective::reduce, "binomial_tree"), L * (al + nb * (be + ga)), 1e-12);
    EXPECT_NEAR(time(Collective::reduce, "pipelined_chain", 64),
                (p + k - 2) * (al + nb / k * (be + ga)), 1e-12);
    EXPECT_NEAR(time(Collective::scatter, "linear"), (p - 1) * al + f * nb * be, 1e-12);
    EXPECT_NEAR(time(Collective::scatter, "binomial_tree"), L * al + f * nb * be, 1e-12);
    EXPECT_NEAR(time(Collective::gather, "binomial_tree"), L * al + f * nb * be, 1e-12);
    EXPECT_NEAR(time(Collective::barrier, "dissemination"), L * al, 1e-12);
    EXPECT_NEAR(time(Collective::barrier, "binomial_tree"), 2 * L * al, 1e-12);
    EXPECT_NEAR(time(Collective::all_reduce, "linear"), (p - 1) * (2 * al + nb * (2 * be + ga)),
                1e-12);
    EXPECT_NEAR(time(Collective::all_reduce, "binomial_tree"), L * (2 * al + nb * (2 * be + ga)),
                1e-12);
    // Pipelined binary tree: at most 2(h + k - 1) rounds, h = log2 p.
    const double h = L;
    EXPECT_LE(time(Collective::broadcast, "pipelined_binary_tree", 64),
              2 * (h + k - 1) * (al + nb / k * be) + 1e-12);
  }
}

// ---- hand-worked cases ----

struct Want {
  OpKind kind;
  int peer;
};

void expect_peers(const Schedule& s, int rank, const std::vector<std::vector<Want>>& want) {
  std::vector<Step> comm;
  for (Step& st : s.steps(rank))
    if (st.has_communication()) comm.push_back(std::move(st));
  ASSERT_EQ(comm.size(), want.size()) << "rank " << rank;
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(comm[i].ops.size(), want[i].size()) << "rank " << rank << " step " << i;
    for (std::size_t j = 0; j < want[i].size(); ++j) {
      EXPECT_EQ(comm[i].ops[j].kind, want[i][j].kind) << "rank " << rank << " step " << i;
      EXPECT_EQ(comm[i].ops[j].peer, want[i][j].peer) << "rank " << rank << " step " << i;
    }
  }
}

const OpKind S = OpKind::send, R = OpKind::recv;

// p = 4, root 1: virtual ranks v = rank - 1 mod 4. Binomial: v0 serves v2
// then v1, v2 serves v3. Hypercube (dimension 0 first): v0 serves v1 then v2,
// v1 serves v3.
TEST(Trees, BinomialAndHypercubeBroadcastPeers) {
  const auto b = make_schedule(make_spec({Collective::broadcast, "binomial_tree"}, 4, 1, 10));
  expect_peers(*b, 1, {{{S, 3}}, {{S, 2}}});
  expect_peers(*b, 2, {{{R, 1}}});
  expect_peers(*b, 3, {{{R, 1}}, {{S, 0}}});
  expect_peers(*b, 0, {{{R, 3}}});
  const std::vector<Step> root = b->steps(1);
  ASSERT_EQ(root.front().ops.size(), 1u);
  EXPECT_EQ(root.front().ops[0].kind, OpKind::copy);
  EXPECT_EQ(root.front().ops[0].src, (Region{Buf::input, 0, 10}));
  EXPECT_EQ(root.front().ops[0].dst, (Region{Buf::output, 0, 10}));

  const auto h = make_schedule(make_spec({Collective::broadcast, "hypercube"}, 4, 1, 10));
  expect_peers(*h, 1, {{{S, 2}}, {{S, 3}}});
  expect_peers(*h, 2, {{{R, 1}}, {{S, 0}}});
  expect_peers(*h, 3, {{{R, 1}}});
  expect_peers(*h, 0, {{{R, 2}}});
  // Non-power-of-two: p = 6, root 0. In dimension 2 ranks 0 and 1 send to 4
  // and 5; ranks 2 and 3 have no partner (6, 7) and skip it.
  const auto h6 = make_schedule(make_spec({Collective::broadcast, "hypercube"}, 6, 0, 3));
  expect_peers(*h6, 0, {{{S, 1}}, {{S, 2}}, {{S, 4}}});
  expect_peers(*h6, 1, {{{R, 0}}, {{S, 3}}, {{S, 5}}});
  expect_peers(*h6, 2, {{{R, 0}}});
  expect_peers(*h6, 5, {{{R, 1}}});
}

// Reduce binomial, p = 4, root 0: rank 0 combines 1 then 2; rank 2 combines 3.
TEST(Trees, BinomialReducePeers) {
  const auto s = make_schedule(make_spec({Collective::reduce, "binomial_tree"}, 4, 0, 5));
  expect_peers(*s, 0, {{{R, 1}}, {{R, 2}}});
  expect_peers(*s, 2, {{{R, 3}}, {{S, 0}}});
  expect_peers(*s, 1, {{{S, 0}}});
  for (const Step& st : s->steps(0))
    for (const Op& op : st.ops)
      if (op.kind == OpKind::recv) {
        EXPECT_EQ(op.combine, Combine::reduce);
      }
}

// Scatter with root != 0 puts block r of Partition{n, p} on real rank r:
// p = 3, root 1, n = 7 gives blocks of 3, 2, 2.
TEST(Trees, ScatterBlocksLandOnRealRanks) {
  for (const char* name : {"linear", "binomial_tree"}) {
    const auto s = make_schedule(make_spec({Collective::scatter, name}, 3, 1, 7));
    EXPECT_EQ(s->buffer_sizes(0).output, 3);
    EXPECT_EQ(s->buffer_sizes(1).output, 2);
    EXPECT_EQ(s->buffer_sizes(2).output, 2);
    EXPECT_NO_THROW(verify_numeric(*s, DType::int32, ReduceOp::sum));
    EXPECT_NO_THROW(verify_symbolic(*s));
  }
}

// Working sets, worked by hand from the schedules (collkit schedule --rank):
// the linear reduce's root copies its input (8) to its output (8) and
// receives one full vector per step to reduce (temp 8): 24; the other ranks
// hold only their input. Ring all_reduce: input 8, output 8 and one block of
// 2 received to reduce per step: 18. Ring all_gather reduces nothing: input
// 2 plus output 8.
TEST(Trees, WorkingSetCountsTheTempAreaOfReducingReceives) {
  const auto reduce = make_schedule(make_spec({Collective::reduce, "linear"}, 4, 0, 8));
  EXPECT_EQ(reduce->working_set(0), 24);
  for (int r = 1; r < 4; ++r) EXPECT_EQ(reduce->working_set(r), 8) << r;
  const auto ar = make_schedule(make_spec({Collective::all_reduce, "ring"}, 4, 0, 8));
  for (int r = 0; r < 4; ++r) EXPECT_EQ(ar->working_set(r), 18) << r;
  const auto ag = make_schedule(make_spec({Collective::all_gather, "ring"}, 4, 0, 8));
  for (int r = 0; r < 4; ++r) EXPECT_EQ(ag->working_set(r), 10) << r;
}

// Pipelined chain broadcast, p = 4, n = 8, segments of 2: k = 4; inner ranks
// receive segment i and forward segment i-1 in one step (k + 1 steps).
TEST(Trees, PipelinedChainSteps) {
  const auto s =
      make_schedule(make_spec({Collective::broadcast, "pipelined_chain"}, 4, 2, 8, 4, 2));
  expect_peers(*s, 2, {{{S, 3}}, {{S, 3}}, {{S, 3}}, {{S, 3}}});
  expect_peers(*s, 3, {{{R, 2}}, {{R, 2}, {S, 0}}, {{R, 2}, {S, 0}}, {{R, 2}, {S, 0}}, {{S, 0}}});
  expect_peers(*s, 1, {{{R, 0}}, {{R, 0}}, {{R, 0}}, {{R, 0}}});
  const ExecutionStats st = verify_numeric(*s, DType::float32, ReduceOp::sum);
  EXPECT_EQ(st.max_comm_steps, 5);
  EXPECT_EQ(st.max_elems_sent, 8);
}

// NCCL's trees for 8 ranks: tree 0 is 0 -> 4, 4 -> {2, 6}, 2 -> {1, 3},
// 6 -> {5, 7}; tree 1 is its mirror.
TEST(Trees, NcclDoubleBinaryTreeShape) {
  const auto node = [](int tree, int r) { return nccl_dbt_node(8, tree, r); };
  EXPECT_EQ(node(0, 0).child[0], 4);
  EXPECT_EQ(node(0, 4).child, (std::array<int, 2>{2, 6}));
  EXPECT_EQ(node(0, 2).child, (std::array<int, 2>{1, 3}));
  EXPECT_EQ(node(0, 6).child, (std::array<int, 2>{5, 7}));
  EXPECT_EQ(node(0, 7).parent, 6);
  EXPECT_EQ(node(1, 7).child[0], 3);
  EXPECT_EQ(node(1, 3).child, (std::array<int, 2>{5, 1}));
  EXPECT_EQ(node(1, 0).parent, 1);
  // Odd m shifts: tree 1's root is rank 1.
  EXPECT_EQ(nccl_dbt_node(5, 1, 1).parent, -1);
  // Parents and children agree, every rank is reached, and no rank is inner
  // in both trees.
  for (int m = 1; m <= 100; ++m) {
    std::vector<int> inner(m, 0);
    for (int tree = 0; tree < 2; ++tree) {
      int roots_seen = 0, max_arrival = -1;
      for (int r = 0; r < m; ++r) {
        const PipeNode nd = nccl_dbt_node(m, tree, r);
        if (nd.parent < 0) {
          ++roots_seen;
        } else {
          const PipeNode up = nccl_dbt_node(m, tree, nd.parent);
          const int j = up.child[0] == r ? 0 : 1;
          ASSERT_EQ(up.child[j], r) << "m " << m << " tree " << tree << " rank " << r;
          EXPECT_EQ(nd.arrival, up.arrival + 1 + j);
        }
        max_arrival = std::max(max_arrival, nd.arrival);
        if (nd.parent >= 0 && nd.children() > 0) ++inner[r];
      }
      EXPECT_EQ(roots_seen, 1) << "m " << m;
      EXPECT_EQ(max_arrival, nccl_btree_max_arrival(m)) << "m " << m;
    }
    for (int r = 0; r < m; ++r) EXPECT_LE(inner[r], 1) << "m " << m << " rank " << r;
  }
}

// Each tree carries half: the double binary tree broadcast sends at most n
// from any rank, the all_reduce at most n up plus n down.
TEST(Trees, DoubleBinaryTreeSendsHalfPerTree) {
  for (int p : {4, 8, 9, 16, 33}) {
    const std::int64_t n = 4096;
    const auto b = make_schedule(make_spec({Collective::broadcast, "double_binary_tree"}, p, 0, n));
    EXPECT_EQ(verify_numeric(*b, DType::int32, ReduceOp::sum).max_elems_sent, n);
    const auto a =
        make_schedule(make_spec({Collective::all_reduce, "double_binary_tree"}, p, 0, n));
    EXPECT_LE(verify_numeric(*a, DType::int32, ReduceOp::sum).max_elems_sent, 2 * n);
  }
}

TEST(Trees, BarrierSteps) {
  for (int p : {1, 2, 5, 8, 100}) {
    const auto d = make_schedule(make_spec({Collective::barrier, "dissemination"}, p, 0, 0));
    EXPECT_EQ(check_structure(*d).max_comm_steps, ceil_log2(p));
    const auto b = make_schedule(make_spec({Collective::barrier, "binomial_tree"}, p, 0, 0));
    const ExecutionStats st = check_structure(*b);
    EXPECT_EQ(st.max_comm_steps, 2 * ceil_log2(p));
    EXPECT_EQ(st.total_messages, 2 * (p - 1));
  }
}

// The blocks of blocks.h with a shift, on their own: binomial_scatter then
// binomial_gather returns every block to virtual rank 0, in ceil(log2 p)
// steps each.
TEST(Trees, BinomialScatterGatherBlocks) {
  for (int p : {1, 2, 3, 5, 8, 13})
    for (int shift : {0, p / 2}) {
      const Partition part{3 * p + 1, p};
      for (int rank = 0; rank < p; ++rank) {
        const BlockLayout layout{p, rank, shift, part, Buf::output, 0};
        int sc = 0, ga = 0;
        for (Step& s : binomial_scatter(layout)) sc += s.has_communication();
        for (Step& s : binomial_gather(layout)) ga += s.has_communication();
        EXPECT_LE(sc, ceil_log2(p));
        EXPECT_EQ(sc, ga);
        if (layout.vrank() == 0) {
          EXPECT_EQ(sc, ceil_log2(p));
        }
      }
    }
}

}  // namespace
}  // namespace collkit
