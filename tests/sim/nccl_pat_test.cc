// nccl:pat (algorithms/nccl_pat.*): the rounds worked by hand, the coverage
// property for every p of the sweep, the programs run by the reference
// executor with several channels, a simulation equal to the lock-step
// closed form written out here, and NCCL's model of PAT (latency and
// bandwidth formulas of tuning.cc, one GPU per node only). The registry
// sweep (sweep_test.cc) verifies nccl:pat like every other variant.
#include "algorithms/nccl_pat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "algorithms/reference.h"
#include "core/error.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

using V = std::vector<int>;
using VV = std::vector<std::vector<int>>;

TEST(Pat, RoundsByHand) {
  // p = 8: all_gather far first (4, 2, 1), the data doubling each round.
  EXPECT_EQ(pat_distances(8, true), (V{4, 2, 1}));
  EXPECT_EQ(pat_send_offsets(8, true), (VV{{0}, {0, 4}, {0, 2, 4, 6}}));
  // reduce_scatter near first (1, 2, 4), the data halving each round.
  EXPECT_EQ(pat_distances(8, false), (V{1, 2, 4}));
  EXPECT_EQ(pat_send_offsets(8, false), (VV{{1, 3, 5, 7}, {2, 6}, {4}}));
  // p = 5 (not a power of two): offsets past p - 1 are never sent.
  EXPECT_EQ(pat_distances(5, true), (V{4, 2, 1}));
  EXPECT_EQ(pat_send_offsets(5, true), (VV{{0}, {0}, {0, 2}}));
  EXPECT_EQ(pat_send_offsets(5, false), (VV{{1, 3}, {2}, {4}}));
  EXPECT_TRUE(pat_distances(1, true).empty());
  EXPECT_EQ(pat_send_offsets(2, true), (VV{{0}}));
  EXPECT_EQ(pat_send_offsets(2, false), (VV{{1}}));
}

// all_gather: every offset 1..p-1 arrives exactly once; reduce_scatter:
// every offset leaves exactly once, and what arrives at o - d is an offset
// still held (bits below log2(d) clear).
TEST(Pat, EveryBlockMovesOnceForEveryP) {
  for (int p = 1; p <= 100; ++p) {
    const V dg = pat_distances(p, true);
    const VV ag = pat_send_offsets(p, true);
    std::multiset<int> got = {0};
    for (std::size_t k = 0; k < ag.size(); ++k)
      for (int o : ag[k]) {
        ASSERT_EQ(got.count(o), 1u) << "p " << p << ": sends offset " << o << " not held";
        got.insert(o + dg[k]);
      }
    ASSERT_EQ(got.size(), static_cast<std::size_t>(p)) << p;
    for (int o = 0; o < p; ++o) ASSERT_EQ(got.count(o), 1u) << "p " << p << " offset " << o;

    const V dr = pat_distances(p, false);
    const VV rs = pat_send_offsets(p, false);
    std::set<int> held;
    for (int o = 0; o < p; ++o) held.insert(o);
    int moved = 0;
    for (std::size_t k = 0; k < rs.size(); ++k)
      for (int o : rs[k]) {
        ASSERT_EQ(held.count(o), 1u) << "p " << p;
        ASSERT_EQ(held.count(o - dr[k]), 1u) << "p " << p << ": lands on a block already sent";
        held.erase(o);
        ++moved;
      }
    EXPECT_EQ(held, std::set<int>{0}) << p;
    EXPECT_EQ(moved, p - 1) << p;
  }
}

// The programs under the reference executor with 1, 3 and 8 channels (the
// lanes of every transfer), every p of the sweep, counts 0, 1, p - 1, p,
// p + 1 and one that does not divide.
TEST(Pat, ProgramsVerifyWithChannels) {
  for (Collective c : {Collective::all_gather, Collective::reduce_scatter})
    for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 32, 33, 64, 100})
      for (int channels : {1, 3, 8})
        for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{p - 1},
                               std::int64_t{p}, std::int64_t{p + 1}, std::int64_t{7 * p + 3}}) {
          ScheduleSpec spec;
          spec.collective = c;
          spec.algorithm = "nccl";
          spec.variant = "pat";
          spec.ranks = p;
          spec.count = n;
          spec.elem_size = 4;
          spec.channels = channels;
          const auto s = make_schedule(spec);
          const ExecutionStats st = verify_numeric(*s, DType::int32, ReduceOp::sum, 7 + p);
          const int k = static_cast<int>(pat_distances(p, true).size());
          EXPECT_LE(st.max_comm_steps, k) << to_string(c) << " p " << p << " n " << n;
          if (n >= p && p > 1) {
            EXPECT_EQ(st.max_comm_steps, k) << to_string(c) << " p " << p;
          }
        }
}

// On a switch (every rank one link up, one down, no contention between
// rounds) the simulated time is the lock-step sum of rounds: per round the
// route's latency plus the round's bytes over the link.
TEST(Pat, SimulationIsTheLockStepSumOnASwitch) {
  const double bw = 25e9, lat = 1e-6;  // per link; a route crosses two links
  const std::unique_ptr<Topology> t = parse_topology(
      R"({"generator": {"kind": "switch", "ranks": 16, "bandwidth_gbps": 25, "latency_us": 1}})",
      "switch.json");
  for (Collective c : {Collective::all_gather, Collective::reduce_scatter}) {
    const std::int64_t n = 16 * 4096;  // elements, 4 bytes, blocks of 4096
    ScheduleSpec spec;
    spec.collective = c;
    spec.algorithm = "nccl";
    spec.variant = "pat";
    spec.ranks = 16;
    spec.count = n;
    spec.elem_size = 4;
    const double block = 4096.0 * 4;
    double want = 0;
    for (const V& round : pat_send_offsets(16, c == Collective::all_gather))
      want += 2 * lat + static_cast<double>(round.size()) * block / bw;
    const SimResult r = simulate(*make_schedule(spec), *t);
    EXPECT_NEAR(r.time, want, 1e-9 * want) << to_string(c);
  }
}

// One GPU per node: 16 nodes of one H100 and one 400G NIC each.
std::unique_ptr<Topology> one_gpu_per_node(int nodes) {
  return parse_topology(R"({"endpoint": {"pipelined": true},
    "generator": {"kind": "hierarchical", "nodes": )" +
                            std::to_string(nodes) + R"(, "devices_per_node": 1,
      "intra": {"kind": "switch", "bandwidth_gbps": 370.8, "latency_us": 0.3},
      "nics_per_node": 1, "inter": {"kind": "switch", "bandwidth_gbps": 48, "latency_us": 1.35}}})",
                        "one-gpu.json");
}

// NCCL's model of PAT (tuning.cc, 2.23+): latency 8 + log2(nodes) x 14 /
// 3.5 + 2.8 x ranks us (14 us: the tree's Simple network hop, which PAT
// uses at one GPU per node), bandwidth 0.75 x the graph's, not converted
// to algbw; all_gather / reduce_scatter only, Simple only, one GPU per node.
TEST(Pat, NcclModelFormulaAndWhereItApplies) {
  const std::unique_ptr<Topology> t = one_gpu_per_node(16);
  const NcclContext ctx = nccl_context(*t, 16);
  ASSERT_EQ(ctx.nodes, 16);
  ASSERT_GT(ctx.tree_channels * ctx.tree_bw, 0);
  const std::int64_t bytes = 1 << 22;
  const double want = 8 + 4 * 14 / 3.5 + 16 * 2.8 +
                      static_cast<double>(bytes) / (1000 * 0.75 * ctx.tree_channels * ctx.tree_bw);
  for (Collective c : {Collective::all_gather, Collective::reduce_scatter})
    EXPECT_NEAR(nccl_model_time(ctx, c, NcclVariant::pat, Protocol::simple, bytes,
                                DataType::float32, RedOp::sum)
                    .value(),
                want, 1e-9 * want);
  EXPECT_FALSE(nccl_model_time(ctx, Collective::all_gather, NcclVariant::pat, Protocol::ll, bytes,
                               DataType::float32, RedOp::sum));
  EXPECT_FALSE(nccl_model_time(ctx, Collective::all_reduce, NcclVariant::pat, Protocol::simple,
                               bytes, DataType::float32, RedOp::sum));
  // No scaled reduce-scatter (avg) with PAT.
  EXPECT_FALSE(nccl_model_time(ctx, Collective::reduce_scatter, NcclVariant::pat, Protocol::simple,
                               bytes, DataType::float32, RedOp::avg));
  // Eight GPUs per node: never PAT.
  const std::unique_ptr<Topology> dgx =
      load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/h100-cluster-2x8.json");
  const NcclContext ctx8 = nccl_context(*dgx, 16);
  EXPECT_FALSE(nccl_model_time(ctx8, Collective::all_gather, NcclVariant::pat, Protocol::simple,
                               bytes, DataType::float32, RedOp::sum));
  EXPECT_THROW(nccl_choose(ctx8, Collective::all_gather, bytes, DataType::float32, RedOp::sum,
                           NcclVariant::pat),
               UsageError);
}

// At 128 nodes of one GPU NCCL's model prefers PAT over the ring somewhere
// in the middle sizes (the ring's linear latency against PAT's 0.75
// bandwidth), and the choice runs.
TEST(Pat, NcclChoosesPatAtMidSizesOnManyNodes) {
  const std::unique_ptr<Topology> t = one_gpu_per_node(128);
  const NcclContext ctx = nccl_context(*t, 128);
  int pat = 0;
  for (std::int64_t b = 1 << 10; b <= (std::int64_t{1} << 30); b *= 2) {
    const NcclChoice ch =
        nccl_choose(ctx, Collective::all_gather, b, DataType::float32, RedOp::sum, std::nullopt);
    if (ch.variant == NcclVariant::pat) ++pat;
  }
  EXPECT_GT(pat, 0);
  ScheduleSpec spec;
  spec.collective = Collective::all_gather;
  spec.algorithm = "nccl";
  spec.ranks = 128;
  spec.count = 128 * 1024;
  spec.elem_size = 4;
  const NcclChoice ch = nccl_choose(ctx, Collective::all_gather, 1 << 19, DataType::float32,
                                    RedOp::sum, NcclVariant::pat);
  const SimResult r = simulate(*make_schedule(nccl_schedule_spec(spec, ctx, ch, *t)), *t);
  EXPECT_GT(r.time, 0);
  // Seven rounds of every rank's transfers.
  EXPECT_EQ(r.messages, 128 * 127);
}

}  // namespace
}  // namespace collkit
