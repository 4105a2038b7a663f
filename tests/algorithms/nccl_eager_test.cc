// The nccl family's lagged schedules (ChannelPlan::lag > 0, what the
// simulator runs on pipelined GPU endpoints) under eager semantics: a send
// takes a copy of its source when its rank enters the step and completes at
// once (NCCL's FIFO); a receive completes when the matching message (the k-th
// from that peer) has been sent; the step's local ops run after its
// receives. The reference executor proves the same schedules with lag 0
// (rendezvous semantics, under which a lagged schedule would deadlock: a
// send would wait for a receive its peer posts rounds later). This test runs
// the lagged ones on integer data through a small eager executor written
// here and compares every rank's output with a naive computation, so a lag
// that made a rank forward data before it had arrived would fail.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.h"
#include "algorithms/schedule.h"
#include "core/channel_plan.h"

namespace collkit {
namespace {

using Data = std::vector<std::int64_t>;

std::int64_t input_value(int rank, std::int64_t i) { return (rank + 1) * 1000003 + i * 7; }

// Runs `s` eagerly; returns each rank's output, or fails the test.
std::vector<Data> run_eager(const Schedule& s) {
  const int p = s.ranks();
  struct Rank {
    Generator<Step> program;
    std::optional<Step> step;
    bool sent = false, done = false;
    Data buf[3];
  };
  std::vector<Rank> ranks(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    Rank& rk = ranks[static_cast<std::size_t>(r)];
    rk.program = s.program(r);
    const BufferSizes b = s.buffer_sizes(r);
    rk.buf[0].resize(static_cast<std::size_t>(b.input));
    for (std::int64_t i = 0; i < b.input; ++i) rk.buf[0][i] = input_value(r, i);
    rk.buf[1].assign(static_cast<std::size_t>(b.output), 0);
    rk.buf[2].assign(static_cast<std::size_t>(b.scratch), 0);
  }
  const auto at = [&](int r, const Region& g) {
    Data& d = ranks[static_cast<std::size_t>(r)].buf[static_cast<int>(g.buf)];
    EXPECT_LE(g.offset + g.count, static_cast<std::int64_t>(d.size())) << "rank " << r;
    return d.data() + g.offset;
  };
  std::map<std::pair<int, int>, std::deque<Data>> queues;
  int finished = 0;
  while (finished < p) {
    bool progress = false;
    for (int r = 0; r < p; ++r) {
      Rank& rk = ranks[static_cast<std::size_t>(r)];
      if (rk.done) continue;
      if (!rk.step) {
        if (!rk.program.next()) {
          rk.done = true;
          ++finished;
          progress = true;
          continue;
        }
        rk.step = rk.program.value();
        rk.sent = false;
      }
      if (!rk.sent) {
        for (const Op& op : rk.step->ops)
          if (op.kind == OpKind::send) {
            const std::int64_t* src = at(r, op.src);
            queues[{r, op.peer}].emplace_back(src, src + op.src.count);
          }
        rk.sent = true;
        progress = true;
      }
      std::map<int, std::size_t> need;
      for (const Op& op : rk.step->ops)
        if (op.kind == OpKind::recv) ++need[op.peer];
      bool ready = true;
      for (const auto& [peer, n] : need) ready = ready && queues[{peer, r}].size() >= n;
      if (!ready) continue;
      for (const Op& op : rk.step->ops) {
        if (op.kind != OpKind::recv) continue;
        std::deque<Data>& q = queues[{op.peer, r}];
        const Data msg = std::move(q.front());
        q.pop_front();
        EXPECT_EQ(static_cast<std::int64_t>(msg.size()), op.dst.count)
            << "rank " << r << " from " << op.peer;
        std::int64_t* dst = at(r, op.dst);
        for (std::size_t i = 0; i < msg.size(); ++i)
          dst[i] = op.combine == Combine::reduce ? dst[i] + msg[i] : msg[i];
      }
      for (const Op& op : rk.step->ops) {
        if (op.kind != OpKind::copy && op.kind != OpKind::reduce) continue;
        const Data src(at(r, op.src), at(r, op.src) + op.src.count);
        std::int64_t* dst = at(r, op.dst);
        for (std::size_t i = 0; i < src.size(); ++i)
          dst[i] = op.kind == OpKind::reduce ? dst[i] + src[i] : src[i];
      }
      rk.step.reset();
      progress = true;
    }
    if (!progress) {
      ADD_FAILURE() << "deadlock: " << p - finished << " ranks wait for a message never sent";
      return {};
    }
  }
  for (const auto& [pair, q] : queues)
    EXPECT_TRUE(q.empty()) << q.size() << " messages from " << pair.first << " to " << pair.second
                           << " never received";
  std::vector<Data> out;
  for (Rank& rk : ranks) out.push_back(rk.buf[1]);
  return out;
}

// What every rank's output must hold.
Data expected_output(Collective c, int p, int rank, std::int64_t n) {
  const Partition part{n, p};
  Data out;
  if (c == Collective::all_reduce) {
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t sum = 0;
      for (int j = 0; j < p; ++j) sum += input_value(j, i);
      out.push_back(sum);
    }
  } else if (c == Collective::all_gather) {
    for (int j = 0; j < p; ++j)
      for (std::int64_t i = 0; i < part.size(j); ++i) out.push_back(input_value(j, i));
  } else {  // reduce_scatter
    for (std::int64_t i = 0; i < part.size(rank); ++i) {
      std::int64_t sum = 0;
      for (int j = 0; j < p; ++j) sum += input_value(j, part.offset(rank) + i);
      out.push_back(sum);
    }
  }
  return out;
}

struct Case {
  Collective collective;
  const char* algorithm;
  int ranks_per_node;  // 0: one node
};

class NcclEager : public ::testing::TestWithParam<Case> {};

TEST_P(NcclEager, LaggedSchedulesComputeTheCollective) {
  const Case& c = GetParam();
  for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 32, 33}) {
    if (c.ranks_per_node > 0 && (p % c.ranks_per_node != 0 || p == c.ranks_per_node)) continue;
    for (int channels : {1, 2, 3}) {
      for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{p - 1}, std::int64_t{p},
                             std::int64_t{p + 1}, std::int64_t{97}, std::int64_t{300}}) {
        for (std::int64_t segment : {std::int64_t{0}, std::int64_t{1}, std::int64_t{5}}) {
          // One node of more than 17 ranks in one-element chunks is the
          // longest case (a round per element and shard) and adds nothing
          // that 5-element chunks and 17 ranks do not cover.
          if (c.ranks_per_node == 0 && p > 17 && segment == 1 &&
              std::string(c.algorithm).find("nvls") != std::string::npos)
            continue;
          SCOPED_TRACE(std::string(c.algorithm) + " p=" + std::to_string(p) +
                       " channels=" + std::to_string(channels) + " n=" + std::to_string(n) +
                       " segment=" + std::to_string(segment));
          ScheduleSpec spec;
          spec.collective = c.collective;
          spec.algorithm = c.algorithm;
          spec.ranks = p;
          spec.count = n;
          spec.channels = channels;
          spec.segment = segment;
          // The default plan, made multi-node (or one node) and lagged, as
          // the simulator's plan is on pipelined endpoints.
          auto plan = std::make_shared<ChannelPlan>(*make_schedule(spec)->spec().plan);
          plan->node_of.assign(static_cast<std::size_t>(p), 0);
          if (c.ranks_per_node > 0)
            for (int r = 0; r < p; ++r) plan->node_of[r] = r / c.ranks_per_node;
          plan->lag = 1;
          plan->finish(p);
          spec.plan = plan;
          // NVLS and CollNet channels fold by default (one transfer per node tree);
          // channel by channel too where there are several channels.
          const bool nvls = std::string(c.algorithm).find("nvls") != std::string::npos ||
                            std::string(c.algorithm).find("collnet") != std::string::npos;
          for (bool fold : {true, false}) {
            if (!fold && (!nvls || channels == 1)) continue;
            spec.fold_channels = fold;
            const auto schedule = make_schedule(spec);
            ASSERT_EQ(schedule->spec().plan->lag, 1);
            const std::vector<Data> out = run_eager(*schedule);
            ASSERT_EQ(static_cast<int>(out.size()), p);
            for (int r = 0; r < p; ++r)
              ASSERT_EQ(out[static_cast<std::size_t>(r)], expected_output(c.collective, p, r, n))
                  << "rank " << r << (fold ? "" : ", channel by channel");
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Family, NcclEager,
                         ::testing::Values(Case{Collective::all_reduce, "nccl:ring", 2},
                                           Case{Collective::all_reduce, "nccl:ring", 0},
                                           Case{Collective::all_gather, "nccl:ring", 2},
                                           Case{Collective::all_gather, "nccl:ring", 3},
                                           Case{Collective::reduce_scatter, "nccl:ring", 2},
                                           Case{Collective::reduce_scatter, "nccl:ring", 4},
                                           Case{Collective::all_reduce, "nccl:tree", 2},
                                           Case{Collective::all_reduce, "nccl:nvls", 0},
                                           Case{Collective::all_reduce, "nccl:nvls_tree", 2},
                                           Case{Collective::all_reduce, "nccl:nvls_tree", 4},
                                           Case{Collective::all_reduce, "nccl:nvls", 2},
                                           Case{Collective::all_reduce, "nccl:nvls", 4},
                                           Case{Collective::all_reduce, "nccl:collnet_direct", 1},
                                           Case{Collective::all_reduce, "nccl:collnet_direct", 3},
                                           Case{Collective::all_reduce, "nccl:collnet_chain", 1},
                                           Case{Collective::all_reduce, "nccl:collnet_chain", 2},
                                           Case{Collective::all_reduce, "nccl:collnet_chain", 3}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = std::string(to_string(info.param.collective)) + "_" +
                                              std::string(info.param.algorithm).substr(5) + "_" +
                                              std::to_string(info.param.ranks_per_node);
                           return name;
                         });

}  // namespace
}  // namespace collkit
