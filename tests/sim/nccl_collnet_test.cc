// CollNet (SHARP) in the nccl family (algorithms/nccl_sharded.cc, "node-sharded
// all_reduce"; sim/nccl.cc): nccl:collnet_direct and nccl:nvls across nodes.
// Hand-worked times of the SHARP exchange through a switch that reduces and
// through one that does not, the schedules verified on the shipped SHARP
// cluster's own channels, NCCL's model of both written out, and the bounds
// the NICs and NVLink set on a large call.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "tests/sim/sim_test_util.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

using testing::SmallGraph;

std::unique_ptr<Topology> shipped(const std::string& name) {
  return load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/" + name + ".json");
}

// collnet_direct with the default plan: every rank a node of its own, so the
// whole call is the SHARP exchange; one chunk.
ScheduleSpec sharp_spec(int p, std::int64_t count) {
  ScheduleSpec spec;
  spec.collective = Collective::all_reduce;
  spec.algorithm = "nccl";
  spec.variant = "collnet_direct";
  spec.ranks = p;
  spec.count = count;
  spec.elem_size = 4;
  spec.segment = count;
  return spec;
}

// Four ranks on a star, CPU-style endpoints (a send waits for its transfer,
// a reduction follows it). Link bandwidth B, latency L per link, reductions
// at R; c = 4000 bytes per rank.
//   through a switch that reduces: the three shards reach rank 0 summed,
//   its downlink carrying c once (2L + c/B); the sums are the switch's
//   (free); the multicast crosses rank 0's uplink once (2L + c/B).
//   through a plain switch: rank 0's downlink carries 3c (2L + 3c/B), rank
//   0 adds three shards (3c/R), and sends three copies (2L + 3c/B); under
//   alpha_beta (no contention) each transfer takes c/B all the same.
TEST(CollnetSharp, TheSwitchSumsOnTheWayAndTheNicCarriesTheShardOnceEachWay) {
  constexpr double B = 1e9, L = 1e-6, R = 0.5e9, c = 4000;
  EndpointProps ep;
  ep.reduce_bw = R;
  for (bool sharp : {true, false}) {
    SmallGraph topo(4, 5, ep);
    for (int r = 0; r < 4; ++r) topo.add_cable(r, 4, B, L);
    if (sharp) topo.set_in_network(4, 1e12);
    const auto s = make_schedule(sharp_spec(4, 1000));
    for (NetModel m : {NetModel::flow, NetModel::alpha_beta}) {
      SimOptions o;
      o.model = m;
      const double t = simulate(*s, topo, o).time;
      // alpha_beta has no contention: every transfer at its route's rate.
      const double share = m == NetModel::flow && !sharp ? 3 : 1;
      const double want = 4 * L + 2 * share * c / B + (sharp ? 0 : 3 * c / R);
      EXPECT_NEAR(t, want, 1e-12 * want) << (sharp ? "SHARP" : "plain") << " switch";
    }
  }
}

// CollNet Chain inside a node of 3 (one channel, head = local 0): the
// chain runs local 1 -> 2 -> 0 (the head), which exchanges with the other
// node's head, and the result goes back 0 -> 2 -> 1. Two nodes, one chunk,
// unlagged.
TEST(CollnetChain, UpTheChainAcrossTheHeadsAndBackDown) {
  ScheduleSpec spec = sharp_spec(6, 12);
  spec.variant = "collnet_chain";
  auto plan = std::make_shared<ChannelPlan>(*make_schedule(spec)->spec().plan);
  plan->node_of = {0, 0, 0, 1, 1, 1};
  plan->finish(6);
  spec.plan = plan;
  const auto s = make_schedule(spec);
  const auto peers = [&](int rank) {
    std::vector<std::string> out;
    for (const Step& st : s->steps(rank)) {
      std::string line;
      for (const Op& op : st.ops) {
        if (op.kind == OpKind::send) line += "s" + std::to_string(op.peer) + " ";
        if (op.kind == OpKind::recv) line += "r" + std::to_string(op.peer) + " ";
        if (op.kind == OpKind::reduce) line += "+ ";
      }
      out.push_back(line);
    }
    return out;
  };
  // Rank 1 (tail): sends up to 2, later receives the result from 2.
  EXPECT_EQ(peers(1), (std::vector<std::string>{"", "s2 ", "r2 "}));
  // Rank 2: receives from 1 (reducing), sends to the head 0; result down.
  EXPECT_EQ(peers(2), (std::vector<std::string>{"", "r1 ", "s0 ", "r0 ", "s1 "}));
  // Rank 0 (head of node 0, where the heads meet): from 2, from rank 3 (the
  // other head), the sum, the result to 3 and down to 2.
  EXPECT_EQ(peers(0), (std::vector<std::string>{"", "r2 ", "r3 ", "+ ", "s3 ", "s2 "}));
  // Rank 3 (the other head): sends its node's sum to 0, gets the result.
  EXPECT_EQ(peers(3), (std::vector<std::string>{"", "r5 ", "s0 ", "r0 ", "s5 "}));
  for (DType t : {DType::int32, DType::float32})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::min})
      EXPECT_NO_THROW(verify_numeric(*s, t, op, 9));
}

// The schedule spells the switch's sums out as local reduces (fan_in, the
// sender as peer) so that every executor computes them; the reference
// executor proves the result.
TEST(CollnetSharp, NodeZeroReceivesApartSumsAndMulticasts) {
  const auto s = make_schedule(sharp_spec(4, 8));
  const std::vector<Step> root = s->steps(0);
  ASSERT_EQ(root.size(), 4u);  // copy, receive, sum, multicast
  for (int m = 0; m < 3; ++m) {
    const Op& r = root[1].ops[static_cast<std::size_t>(m)];
    EXPECT_EQ(r.kind, OpKind::recv);
    EXPECT_EQ(r.peer, m + 1);
    EXPECT_EQ(r.fan_in, 3);
    EXPECT_EQ(r.dst.buf, Buf::scratch);
    const Op& sum = root[2].ops[static_cast<std::size_t>(m)];
    EXPECT_EQ(sum.kind, OpKind::reduce);
    EXPECT_EQ(sum.fan_in, 3);
    EXPECT_EQ(sum.peer, m + 1);
    EXPECT_EQ(root[3].ops[static_cast<std::size_t>(m)].fan_out, 3);
  }
  const std::vector<Step> other = s->steps(2);
  ASSERT_EQ(other.size(), 3u);  // copy, send up, receive the sum
  EXPECT_EQ(other[1].ops.at(0).fan_in, 3);
  EXPECT_EQ(other[2].ops.at(0).peer, 0);
  for (DType t : {DType::int32, DType::float64})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::prod})
      EXPECT_NO_THROW(verify_numeric(*s, t, op, 5));
}

// On the SHARP cluster's own channels (8 GPUs a node, 1..4 nodes, 1 to 16
// channels, odd counts), collnet_direct, collnet_chain and NVLS across nodes compute the
// all_reduce, and their closed forms count the schedule's steps and bytes.
TEST(CollnetSharp, VerifiesOnTheShippedClusterChannels) {
  const auto topo = shipped("h100-cluster-16x8-sharp");
  for (int ranks : {8, 16, 24, 32}) {
    const NcclContext ctx = nccl_context(*topo, ranks);
    for (NcclVariant variant :
         {NcclVariant::collnet_direct, NcclVariant::collnet_chain, NcclVariant::nvls}) {
      if (variant != NcclVariant::nvls && ranks == 8) continue;  // one node: no CollNet
      for (int channels : {1, 3, 16}) {
        for (std::int64_t count : {std::int64_t{1}, std::int64_t{ranks + 1}, std::int64_t{4099}}) {
          SCOPED_TRACE(std::string(to_string(variant)) + " ranks " + std::to_string(ranks) +
                       " channels " + std::to_string(channels) + " count " + std::to_string(count));
          ScheduleSpec base;
          base.collective = Collective::all_reduce;
          base.ranks = ranks;
          base.count = count;
          base.segment = std::max<std::int64_t>(1, count / 5);
          NcclChoice choice = nccl_choose(ctx, Collective::all_reduce, 1 << 20, DataType::float32,
                                          RedOp::sum, variant);
          choice.channels = channels;
          ScheduleSpec spec = nccl_schedule_spec(base, ctx, choice, *topo);
          // The reference executor's rendezvous semantics: the plan unlagged
          // (tests/algorithms/nccl_eager_test.cc runs the lagged ones).
          auto plan = std::make_shared<ChannelPlan>(*spec.plan);
          plan->lag = 0;
          plan->finish(ranks);
          spec.plan = plan;
          const auto s = make_schedule(spec);
          const ExecutionStats st = verify_numeric(*s, DType::int32, ReduceOp::sum, 11);
          const CostEstimate cost = closed_form_cost(spec, spec.model);
          EXPECT_EQ(cost.steps, st.max_comm_steps);
          EXPECT_DOUBLE_EQ(cost.bytes_sent, static_cast<double>(st.max_elems_sent) * 4);
        }
      }
    }
  }
}

// NCCL's model (src/graph/tuning.cc) on 16 DGX H100 with SHARP, by hand:
//   CollNet Direct: 8 channels (one per NIC) x 48 GB/s, GPUs per NIC 1,
//   x 0.85 (Hopper), halved: 163.2 GB/s; 2 (3.7 + 7 x 0.4) + 31 = 44 us.
//   CollNet Chain: 8 x 48 GB/s halved, 192 GB/s; 2 x 7 x 2.8 + 30 = 69.2 us.
//   NVLS: 8 heads x min(48, 48) GB/s x 5/6 = 320 GB/s (across nodes NCCL's
//   NVLS graph has each head at the NIC's 48 GB/s on both sides, the speed
//   its search starts from and keeps); 25 + 18 = 43 us. (NCCL 2.26.2, the
//   default version.)
// NVLS wins at every size, as NCCL picks it on such clusters; without
// SHARP neither runs across nodes.
TEST(CollnetSharp, NcclModelOfCollnetAndNvlsAcrossNodes) {
  const auto topo = shipped("h100-cluster-16x8-sharp");
  const NcclContext ctx = nccl_context(*topo, topo->num_ranks());
  EXPECT_EQ(ctx.collnet_heads, 8);
  EXPECT_DOUBLE_EQ(ctx.collnet_bw, 48);
  for (std::int64_t bytes : {std::int64_t{8}, std::int64_t{1} << 20, std::int64_t{1} << 30}) {
    const double b = static_cast<double>(bytes);
    EXPECT_NEAR(nccl_model_time(ctx, Collective::all_reduce, NcclVariant::collnet_direct,
                                Protocol::simple, bytes, DataType::float32, RedOp::sum)
                    .value(),
                44.0 + b / (1000.0 * 0.5 * 8 * 48 * 0.85), 1e-9 * (44 + b / 1e5));
    EXPECT_NEAR(nccl_model_time(ctx, Collective::all_reduce, NcclVariant::collnet_chain,
                                Protocol::simple, bytes, DataType::float32, RedOp::sum)
                    .value(),
                2 * 7 * 2.8 + 30.0 + b / (1000.0 * 0.5 * 8 * 48), 1e-9 * (70 + b / 1e5));
    EXPECT_NEAR(nccl_model_time(ctx, Collective::all_reduce, NcclVariant::nvls, Protocol::simple,
                                bytes, DataType::float32, RedOp::sum)
                    .value(),
                43.0 + b / (1000.0 * 8 * 48 * 5.0 / 6.0), 1e-9 * (43 + b / 1e5));
    EXPECT_EQ(
        nccl_choose(ctx, Collective::all_reduce, bytes, DataType::float32, RedOp::sum, std::nullopt)
            .variant,
        NcclVariant::nvls);
  }
  EXPECT_FALSE(nccl_model_time(ctx, Collective::all_reduce, NcclVariant::collnet_direct,
                               Protocol::ll, 1024, DataType::float32, RedOp::sum));
  const auto plain = shipped("h100-cluster-16x8");
  const NcclContext no = nccl_context(*plain, plain->num_ranks());
  EXPECT_EQ(no.collnet_heads, 0);
  for (const char* v : {"nccl:collnet_direct", "nccl:collnet_chain", "nccl:nvls"})
    EXPECT_FALSE(nccl_applies(no, Collective::all_reduce, v, DataType::float32, RedOp::sum)) << v;
  // On one node there is no network to reduce in.
  const NcclContext one = nccl_context(*topo, 8);
  EXPECT_FALSE(nccl_applies(one, Collective::all_reduce, "nccl:collnet_direct", DataType::float32,
                            RedOp::sum));
}

// 128 MiB over 16 nodes: each GPU's NIC carries its eighth once each way
// (at 48 GB/s), and NVLink carries 7/8 of the buffer each way for the
// reduce-scatter and again for the all-gather (at 370.8 GB/s). The
// simulated call is never faster than the slower of the two, and within
// the pipeline's fill of it.
TEST(CollnetSharp, ALargeCallRunsAtTheNicOrNvlinkBound) {
  const auto topo = shipped("h100-cluster-16x8-sharp");
  const NcclContext ctx = nccl_context(*topo, topo->num_ranks());
  const std::int64_t bytes = std::int64_t{128} << 20;
  ScheduleSpec base;
  base.collective = Collective::all_reduce;
  base.ranks = topo->num_ranks();
  base.count = bytes / 4;
  const NcclChoice choice = nccl_choose(ctx, Collective::all_reduce, bytes, DataType::float32,
                                        RedOp::sum, NcclVariant::collnet_direct);
  const double t =
      simulate(*make_schedule(nccl_schedule_spec(base, ctx, choice, *topo)), *topo).time;
  const double nic = bytes / 8.0 / 48e9;
  const double nvlink = 2 * bytes * 7.0 / 8.0 / 370.8e9;
  const double bound = std::max(nic, nvlink);
  EXPECT_GE(t, bound);
  EXPECT_LE(t, 1.1 * bound) << "time " << t << " bound " << bound;
}

}  // namespace
}  // namespace collkit
