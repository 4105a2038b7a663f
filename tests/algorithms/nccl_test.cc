// The nccl family (algorithms/nccl.cc): every variant verified by the
// reference executor over the project sweep with 1..32 channels, its step and
// byte counts against its closed form, and its one-channel schedules equal,
// op for op, to the classic algorithms they are.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "core/error.h"
#include "tests/algorithms/test_support.h"

namespace collkit {
namespace {

using testing_support::AlgoId;
using testing_support::make_spec;
using testing_support::roots;

std::vector<AlgoId> nccl_variants() {
  std::vector<AlgoId> out;
  for (const AlgorithmDef& d : algorithm_registry())
    if (d.name == "nccl")
      for (const std::string& v : buildable_variants(d)) out.push_back({d.collective, d.name, v});
  return out;
}

// Runs the numeric (and, small, symbolic) checks and compares steps and
// bytes with the closed form; "" or what failed.
std::string check(const ScheduleSpec& spec, bool symbolic) {
  try {
    const auto s = make_schedule(spec);
    const ExecutionStats num = verify_numeric(*s, DType::int32, ReduceOp::sum, 7 + spec.count);
    if (symbolic) verify_symbolic(*s);
    const CostEstimate cost = closed_form_cost(spec, spec.model);
    if (cost.steps != num.max_comm_steps)
      return "closed-form steps " + std::to_string(cost.steps) + ", schedule " +
             std::to_string(num.max_comm_steps);
    const double bytes = static_cast<double>(num.max_elems_sent) * spec.elem_size;
    if (std::abs(cost.bytes_sent - bytes) > 1e-9 * std::max(1.0, bytes))
      return "closed-form bytes " + std::to_string(cost.bytes_sent) + ", schedule " +
             std::to_string(bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

class NcclSweep : public ::testing::TestWithParam<AlgoId> {};

TEST_P(NcclSweep, VerifiesForEveryRankCountChannelCountRootAndCount) {
  const AlgoId& a = GetParam();
  int failures = 0, configs = 0;
  std::string first;
  for (int p : testing_support::sweep_ranks()) {
    for (int channels : {1, 2, 3, 5, 8, 16, 32}) {
      // Counts 0, 1, p-1, p, p+1, a count not divisible by the channels, and
      // a large one on the smaller rank counts.
      std::vector<std::int64_t> counts{0, 1, p - 1, p, p + 1, 1000 + channels};
      if (p <= 17) counts.push_back(65537);
      for (std::int64_t n : counts) {
        if (n < 0) continue;
        for (int root : roots(a.collective, p)) {
          ScheduleSpec spec = make_spec(a, p, root, n);
          spec.channels = channels;
          // Small chunks so the pipelined variants run many of them.
          if (n > 0) spec.segment = std::max<std::int64_t>(1, n / 7);
          ++configs;
          const std::string why = check(spec, n <= 1000 && p <= 17);
          if (why.empty()) continue;
          if (++failures <= 5)
            first += "\n  p=" + std::to_string(p) + " channels=" + std::to_string(channels) +
                     " n=" + std::to_string(n) + " root=" + std::to_string(root) + ": " + why;
        }
      }
    }
  }
  EXPECT_EQ(failures, 0) << a.label() << ": " << failures << " of " << configs << " failed"
                         << first;
}

INSTANTIATE_TEST_SUITE_P(Family, NcclSweep, ::testing::ValuesIn(nccl_variants()),
                         [](const ::testing::TestParamInfo<AlgoId>& info) {
                           std::string s = info.param.label();
                           for (char& c : s)
                             if (c == '/' || c == ':') c = '_';
                           return s;
                         });

// With one channel in rank order the ring is the classic ring (all_reduce,
// all_gather, reduce_scatter) and the chain the classic pipelined chain.
std::vector<Step> steps_of(const ScheduleSpec& spec, int rank) {
  return make_schedule(spec)->steps(rank);
}

TEST(NcclRing, OneChannelIsTheClassicRingOpForOp) {
  for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter})
    for (int p : {1, 2, 3, 5, 8})
      for (std::int64_t n : {std::int64_t{0}, std::int64_t{3}, std::int64_t{1000}})
        for (int r = 0; r < p; ++r) {
          SCOPED_TRACE(std::string(to_string(c)) + " p=" + std::to_string(p) +
                       " n=" + std::to_string(n) + " rank " + std::to_string(r));
          ScheduleSpec ring = make_spec({c, "ring", ""}, p, 0, n);
          ScheduleSpec nccl = make_spec({c, "nccl", "ring"}, p, 0, n);
          nccl.channels = 1;
          const std::vector<Step> a = steps_of(ring, r), b = steps_of(nccl, r);
          ASSERT_EQ(a.size(), b.size());
          for (std::size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k].ops, b[k].ops) << "step " << k;
        }
}

TEST(NcclRing, OneChannelBroadcastAndReduceAreThePipelinedChain) {
  for (Collective c : {Collective::broadcast, Collective::reduce})
    for (int p : {2, 3, 6})
      for (int root : {0, p - 1})
        for (int r = 0; r < p; ++r) {
          ScheduleSpec chain = make_spec({c, "pipelined_chain", ""}, p, root, 1000, 4, 64);
          ScheduleSpec nccl = make_spec({c, "nccl", "ring"}, p, root, 1000, 4, 64);
          const std::vector<Step> a = steps_of(chain, r), b = steps_of(nccl, r);
          ASSERT_EQ(a.size(), b.size()) << to_string(c) << " p=" << p << " rank " << r;
          for (std::size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k].ops, b[k].ops);
        }
}

// Channels split the data: with 4 channels every ring step moves a quarter
// of the one-channel message per channel, and the rings differ.
TEST(NcclRing, ChannelsSplitTheDataAndUseTheirOwnOrders) {
  ScheduleSpec spec = make_spec({Collective::all_reduce, "nccl", "ring"}, 4, 0, 4000);
  spec.channels = 4;
  const std::vector<Step> s = steps_of(spec, 0);
  ASSERT_EQ(s.size(), 1u + 6u);
  ASSERT_EQ(s[1].ops.size(), 8u);  // a send and a receive per channel
  std::vector<int> peers;
  for (const Op& op : s[1].ops) {
    EXPECT_EQ(op.kind == OpKind::send ? op.src.count : op.dst.count, 250);
    if (op.kind == OpKind::send) peers.push_back(op.peer);
  }
  // Default orders: even channels go up (0 -> 1), odd ones down (0 -> 3).
  EXPECT_EQ(peers, (std::vector<int>{1, 3, 1, 3}));
}

TEST(NcclRing, LanesMakeOneTransferOfTheirChannels) {
  auto plan = std::make_shared<ChannelPlan>();
  ChannelPlan::Ring ring;
  ring.order = {0, 1, 2};
  ring.lanes = 3;
  plan->rings.push_back(ring);
  ScheduleSpec spec = make_spec({Collective::all_reduce, "nccl", "ring"}, 3, 0, 3000);
  spec.plan = plan;
  const std::vector<Step> s = steps_of(spec, 0);
  ASSERT_EQ(s[1].ops.size(), 2u);
  EXPECT_EQ(s[1].ops[0].lanes, 3);
  EXPECT_EQ(s[1].ops[0].src.count, 1000);
  EXPECT_EQ(check(spec, true), "");
}

TEST(NcclNvls, ReduceScatterFansInAndAllGatherFansOut) {
  ScheduleSpec spec = make_spec({Collective::all_reduce, "nccl", "nvls"}, 4, 0, 4000);
  spec.segment = 4000;  // one chunk
  const std::vector<Step> s = steps_of(spec, 0);
  // The copy, three reduce-scatter rounds (one peer each: staggered so that
  // every receive reduces into the shard alone), then the all-gather.
  ASSERT_EQ(s.size(), 5u);
  for (int round = 1; round <= 3; ++round) {
    int fan_in_recv = 0;
    for (const Op& op : s[round].ops)
      fan_in_recv += op.kind == OpKind::recv && op.fan_in == 3 && op.combine == Combine::reduce;
    EXPECT_EQ(fan_in_recv, 1) << "round " << round;
  }
  int fan_in_send = 0, fan_out = 0;
  for (int round = 1; round <= 3; ++round)
    for (const Op& op : s[round].ops) fan_in_send += op.kind == OpKind::send && op.fan_in == 3;
  for (const Op& op : s[4].ops) fan_out += op.fan_out == 3 && op.kind == OpKind::send;
  EXPECT_EQ(fan_in_send, 3);  // shard q of the chunk to each of the three peers
  EXPECT_EQ(fan_out, 3);      // the finished shard multicast to the three peers
}

TEST(NcclP2p, EveryTransferInOneStep) {
  const std::vector<Step> s =
      steps_of(make_spec({Collective::all_to_all, "nccl", "p2p"}, 5, 0, 50), 2);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].ops.size(), 8u);
}

TEST(Nccl, TheAutoChoiceNeedsATopology) {
  try {
    make_schedule(make_spec({Collective::all_reduce, "nccl", ""}, 4, 0, 100));
    FAIL() << "nccl without a variant built without a topology";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("per size on a topology"), std::string::npos) << e.what();
  }
  // Not in "all" where there is no topology; in it where there is.
  const auto no_topo = expand_algorithms(Collective::all_reduce, "all", false);
  EXPECT_EQ(std::count(no_topo.begin(), no_topo.end(), "nccl"), 0);
  EXPECT_EQ(std::count(no_topo.begin(), no_topo.end(), "nccl:ring"), 1);
  const auto with = expand_algorithms(Collective::all_reduce, "all");
  EXPECT_EQ(std::count(with.begin(), with.end(), "nccl"), 1);
}

TEST(Nccl, InvalidPlansAreRejectedWithTheRankThatBreaksThem) {
  const auto expect_bad = [](ChannelPlan plan, const std::string& want) {
    ScheduleSpec spec = make_spec({Collective::all_reduce, "nccl", "ring"}, 3, 0, 30);
    spec.plan = std::make_shared<ChannelPlan>(std::move(plan));
    try {
      make_schedule(spec);
      FAIL() << "accepted a plan that should fail with: " << want;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  ChannelPlan twice;
  twice.rings.push_back({{0, 1, 1}, 1, {}});
  expect_bad(twice, "ring 0: rank 1 appears twice");
  ChannelPlan short_ring;
  short_ring.rings.push_back({{0, 1}, 1, {}});
  expect_bad(short_ring, "ring 0: has 2 ranks, not 3");
  ChannelPlan cycle;
  ChannelPlan::Tree t;
  t.parent = {-1, 2, 1};
  t.child = {-1, -1, -1, 2, -1, -1, 1, -1, -1};
  cycle.trees.push_back(t);
  expect_bad(cycle, "tree 0: 2 rank(s) not below the root 0");
}

}  // namespace
}  // namespace collkit
