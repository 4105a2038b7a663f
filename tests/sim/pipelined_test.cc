// Hand-worked timings of what GPU collectives add to the simulator
// (docs/SIMULATOR.md, "Protocols, pipelined endpoints, in-network switches"):
// protocol figures, eager pipelined sends, overlapped reductions, lanes,
// multicast and in-switch reduction, and the launch floor.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "sim/engine.h"
#include "tests/sim/sim_test_util.h"

namespace collkit {
namespace {

using testing::HandSchedule;
using testing::in;
using testing::SmallGraph;

constexpr NetModel kModels[] = {NetModel::flow, NetModel::alpha_beta};

SimResult run(const Schedule& s, const Topology& t, NetModel model, int launch_devices = 1) {
  SimOptions o;
  o.model = model;
  o.rank_times = true;
  o.launch_devices = launch_devices;
  return simulate(s, t, o);
}

void expect_rel(double actual, double expected, double tol = 1e-12) {
  EXPECT_LE(std::abs(actual - expected), tol * std::abs(expected))
      << "actual " << actual << " expected " << expected;
}

Region out(std::int64_t count, std::int64_t offset = 0) {
  return Region{Buf::output, offset, count};
}

TEST(Protocols, LatencyEfficiencyAndBaseLatencyPerProtocol) {
  SmallGraph topo(2, 2);
  LinkProps l;
  l.bandwidth = 1e9;
  l.latency = 1e-6;
  l.protocol_latency[0] = 0.7e-6;  // LL
  l.protocol_latency[2] = 3e-6;    // Simple
  topo.add_cable(0, 1, l);
  topo.protocols[protocol_index(Protocol::ll)] = {true, 0.5, 2e-6, 0};
  topo.protocols[protocol_index(Protocol::simple)] = {true, 1.0, 5e-6, 0};
  const auto one = [&](Protocol p) {
    HandSchedule s(2, 1, p);
    s.add(0, {send_op(1, in(1000))});
    s.add(1, {recv_op(0, in(1000))});
    return s;
  };
  for (NetModel m : kModels) {
    // LL: base 2 us, 0.7 us on the link, 1000 data bytes are 2000 on the wire.
    expect_rel(run(one(Protocol::ll), topo, m).time, 2e-6 + 0.7e-6 + 2000 / 1e9);
    expect_rel(run(one(Protocol::simple), topo, m).time, 5e-6 + 3e-6 + 1000 / 1e9);
    // LL128 has no figures here: the link's plain latency, full efficiency.
    expect_rel(run(one(Protocol::ll128), topo, m).time, 1e-6 + 1000 / 1e9);
    expect_rel(run(one(Protocol::none), topo, m).time, 1e-6 + 1000 / 1e9);
  }
}

// ScheduleSpec::rank_rate (the nccl family's per-channel limits of a
// protocol): a rank's sends share a virtual link of that many data bytes per
// second, behind their routes' links, which carry bytes / efficiency.
TEST(RankRate, ASendTakesItsBytesOverTheRateWhereTheRateIsBelowTheWire) {
  SmallGraph topo(3, 3);
  topo.add_cable(0, 1, 1e9, 1e-6);
  topo.add_cable(0, 2, 1e9, 1e-6);
  topo.protocols[protocol_index(Protocol::ll)] = {true, 0.5, 2e-6, 0};
  const auto one = [&](double rate) {
    HandSchedule s(3, 1, Protocol::ll, rate);
    s.add(0, {send_op(1, in(1000))});
    s.add(1, {recv_op(0, in(1000))});
    return s;
  };
  for (NetModel m : kModels) {
    // The wire: 2000 bytes at 1 GB/s, 2 us. A rate of 0.2 GB/s of data: 1000
    // bytes take 5 us, whatever the wire.
    expect_rel(run(one(2e8), topo, m).time, 2e-6 + 1e-6 + 1000 / 2e8);
    // 1 GB/s of data is 2 GB/s of wire: the link's 2 us stay.
    expect_rel(run(one(1e9), topo, m).time, 2e-6 + 1e-6 + 2000 / 1e9);
    expect_rel(run(one(0), topo, m).time, 2e-6 + 1e-6 + 2000 / 1e9);
  }
  // Two sends of rank 0 on two links at once share its rate (flow model):
  // 2000 data bytes at 0.2 GB/s, 10 us, where each link alone would take 2.
  HandSchedule two(3, 1, Protocol::ll, 2e8);
  two.add(0, {send_op(1, in(1000)), send_op(2, in(1000))});
  two.add(1, {recv_op(0, in(1000))});
  two.add(2, {recv_op(0, in(1000))});
  expect_rel(run(two, topo, NetModel::flow).time, 2e-6 + 1e-6 + 2000 / 2e8);
  // A receiving rank's own rate is not charged: ranks 1 and 2 sending to
  // rank 0 at once each get their own 0.2 GB/s.
  HandSchedule in_two(3, 1, Protocol::ll, 2e8);
  in_two.add(1, {send_op(0, in(1000))});
  in_two.add(2, {send_op(0, in(1000))});
  in_two.add(0, {recv_op(1, out(1000)), recv_op(2, out(1000, 1000))});
  expect_rel(run(in_two, topo, NetModel::flow).time, 2e-6 + 1e-6 + 1000 / 2e8);
  // A transfer of 4 lanes (channels) is limited to the rank's rate in all,
  // not 4 times it.
  HandSchedule lanes(3, 1, Protocol::ll, 2e8);
  Op send = send_op(1, in(1000));
  Op recv = recv_op(0, in(1000));
  send.lanes = recv.lanes = 4;
  lanes.add(0, {send});
  lanes.add(1, {recv});
  for (NetModel m : kModels) expect_rel(run(lanes, topo, m).time, 2e-6 + 1e-6 + 1000 / 2e8);
}

TEST(Pipelined, SenderIsDoneWhenItsDataHasLeft) {
  for (bool pipelined : {false, true}) {
    EndpointProps ep;
    ep.pipelined = pipelined;
    SmallGraph topo(2, 2, ep);
    topo.add_cable(0, 1, 1e9, 5e-6);
    HandSchedule s(2);
    s.add(0, {send_op(1, in(1000))});
    s.add(1, {recv_op(0, in(1000))});
    for (NetModel m : kModels) {
      const SimResult r = run(s, topo, m);
      expect_rel(r.rank_times[1], 6e-6);
      expect_rel(r.rank_times[0], pipelined ? 1e-6 : 6e-6);
    }
  }
}

// A ring of three ranks, two steps, one slow hop (0 -> 1, 10 us; the others
// 1 us; 1 us of data per step). Rendezvous couples every step to the slow
// hop: 22 us. Eager pipelined sends (NCCL's FIFO) pay each hop's latency
// only on the data's own path: 0 -> 1 (1 + 10) then 1 -> 2 (1 + 1) = 13 us.
TEST(Pipelined, EagerSendsPayLatencyOnlyAlongTheDataPath) {
  for (bool pipelined : {false, true}) {
    EndpointProps ep;
    ep.pipelined = pipelined;
    SmallGraph topo(3, 3, ep);
    topo.add_link(0, 1, 1e9, 10e-6);
    topo.add_link(1, 2, 1e9, 1e-6);
    topo.add_link(2, 0, 1e9, 1e-6);
    HandSchedule s(3);
    for (int step = 0; step < 2; ++step)
      for (int r = 0; r < 3; ++r)
        s.add(r, {send_op((r + 1) % 3, in(1000)), recv_op((r + 2) % 3, out(1000, 1000 * step))});
    for (NetModel m : kModels) expect_rel(run(s, topo, m).time, pipelined ? 13e-6 : 22e-6);
  }
}

// An eager send whose receive comes late: the receive is done when it is
// posted, the data having waited for it.
TEST(Pipelined, DataWaitsForALateReceive) {
  EndpointProps ep;
  ep.pipelined = true;
  SmallGraph topo(3, 3, ep);
  topo.add_cable(0, 1, 1e9, 1e-6);
  topo.add_cable(1, 2, 1e9, 1e-6);
  HandSchedule s(3);
  s.add(0, {send_op(1, in(1000))});
  // Rank 1 first receives 5000 bytes from rank 2 (6 us), then rank 0's data.
  s.add(2, {send_op(1, in(5000))});
  s.add(1, {recv_op(2, out(5000))});
  s.add(1, {recv_op(0, out(1000, 5000))});
  for (NetModel m : kModels) {
    const SimResult r = run(s, topo, m);
    expect_rel(r.rank_times[0], 1e-6);
    expect_rel(r.rank_times[1], 6e-6);  // rank 0's data arrived at 2 us and waited
  }
}

TEST(Pipelined, ReductionOverlapsTheTransfer) {
  for (double reduce_gbps : {0.5, 2.0}) {
    for (bool pipelined : {false, true}) {
      EndpointProps ep;
      ep.pipelined = pipelined;
      ep.reduce_bw = reduce_gbps * 1e9;
      SmallGraph topo(2, 2, ep);
      topo.add_cable(0, 1, 1e9, 0);
      HandSchedule s(2);
      s.add(0, {send_op(1, in(1000))});
      s.add(1, {recv_op(0, in(1000), Combine::reduce)});
      const double transfer = 1000 / 1e9, reduce = 1000 / (reduce_gbps * 1e9);
      for (NetModel m : kModels)
        expect_rel(run(s, topo, m).time,
                   pipelined ? std::max(transfer, reduce) : transfer + reduce);
    }
  }
}

// A step's local reduction runs alongside its communication on a pipelined
// endpoint, after it otherwise.
TEST(Pipelined, LocalWorkOverlapsTheStepsCommunication) {
  for (bool pipelined : {false, true}) {
    EndpointProps ep;
    ep.pipelined = pipelined;
    ep.reduce_bw = 1e9;
    SmallGraph topo(2, 2, ep);
    topo.add_cable(0, 1, 1e9, 0);
    HandSchedule s(2);
    s.add(0, {send_op(1, in(1000))});
    s.add(1, {recv_op(0, out(1000)), reduce_op(Region{Buf::input, 0, 2000}, out(2000, 1000))});
    for (NetModel m : kModels) expect_rel(run(s, topo, m).time, pipelined ? 2e-6 : 3e-6);
  }
}

// One op with lanes = 4 is four equal flows: alone, and beside a fifth flow
// on the receiver's downlink (max-min gives every flow a fifth).
TEST(Lanes, AreIdenticalParallelFlows) {
  SmallGraph topo(3, 4);
  for (int r = 0; r < 3; ++r) topo.add_cable(r, 3, 1e9, 0);
  HandSchedule lanes(3), separate(3);
  Op send = send_op(1, in(4000));
  send.lanes = 4;
  Op recv = recv_op(0, out(4000));
  recv.lanes = 4;
  lanes.add(0, {send});
  lanes.add(2, {send_op(1, in(1000))});
  lanes.add(1, {recv, recv_op(2, out(1000, 4000))});
  std::vector<Op> sends, recvs;
  for (int k = 0; k < 4; ++k) {
    sends.push_back(send_op(1, Region{Buf::input, 1000 * k, 1000}));
    recvs.push_back(recv_op(0, out(1000, 1000 * k)));
  }
  recvs.push_back(recv_op(2, out(1000, 4000)));
  separate.add(0, sends);
  separate.add(2, {send_op(1, in(1000))});
  separate.add(1, recvs);
  const SimResult a = run(lanes, topo, NetModel::flow);
  const SimResult b = run(separate, topo, NetModel::flow);
  expect_rel(a.time, 5000 / 1e9);
  expect_rel(b.time, a.time);
  expect_rel(a.rank_times[2], b.rank_times[2]);
  // Without contention each lane sees the route alone: four lanes, four times the rate.
  expect_rel(run(lanes, topo, NetModel::alpha_beta).rank_times[0], 1000 / 1e9);
}

// Rank 0 sends the same 1000 bytes to ranks 1, 2 and 3 through switch 4.
HandSchedule multicast(int fan_out) {
  HandSchedule s(4);
  std::vector<Op> sends;
  for (int d = 1; d < 4; ++d) {
    Op op = send_op(d, in(1000));
    op.fan_out = static_cast<std::uint16_t>(fan_out);
    sends.push_back(op);
  }
  s.add(0, sends);
  for (int d = 1; d < 4; ++d) s.add(d, {recv_op(0, in(1000))});
  return s;
}

TEST(InNetwork, MulticastCrossesTheSendersLinkOnce) {
  for (double port_gbps : {0.0, 1000.0, 0.5}) {
    SmallGraph topo(4, 5);
    for (int r = 0; r < 4; ++r) topo.add_cable(r, 4, 1e9, 1e-6);
    if (port_gbps > 0) topo.set_in_network(4, port_gbps * 1e9);
    for (NetModel m : kModels) {
      SCOPED_TRACE(port_gbps);
      const double plain = run(multicast(0), topo, m).time;
      const double cast = run(multicast(3), topo, m).time;
      // Without a multicasting switch the uplink carries three copies.
      expect_rel(plain, 2e-6 + (m == NetModel::flow ? 3000 : 1000) / 1e9);
      if (port_gbps == 0) {
        expect_rel(cast, plain);
      } else {
        // One copy on the uplink, at most the switch's port rate.
        expect_rel(cast, 2e-6 + 1000 / std::min(1e9, port_gbps * 1e9));
      }
    }
  }
}

// The engine keeps what a fan needs of a route per pair (and grows that
// cache); a route longer than it caches takes the uncached way. Both must
// give the plain figures, step after step: rank 0 multicasts 1000 bytes to
// ranks 1..3 three times, once with a 2-hop route and once with rank 0
// behind a chain of 14 switches (16 hops).
TEST(InNetwork, RepeatedMulticastsOnShortAndLongRoutes) {
  for (int chain : {0, 14}) {
    SCOPED_TRACE(chain);
    SmallGraph topo(4, 5 + chain);
    int at = 0;
    for (int k = 0; k < chain; ++k) {
      topo.add_cable(at, 5 + k, 1e9, 1e-6);
      at = 5 + k;
    }
    topo.add_cable(at, 4, 1e9, 1e-6);
    for (int r = 1; r < 4; ++r) topo.add_cable(r, 4, 1e9, 1e-6);
    topo.set_in_network(4, 1e12);
    HandSchedule s(4);
    for (int step = 0; step < 3; ++step) {
      std::vector<Op> sends;
      for (int d = 1; d < 4; ++d) {
        Op op = send_op(d, in(1000));
        op.fan_out = 3;
        sends.push_back(op);
        s.add(d, {recv_op(0, in(1000))});
      }
      s.add(0, sends);
    }
    const double one = (chain + 2) * 1e-6 + 1000 / 1e9;
    for (NetModel m : kModels) expect_rel(run(s, topo, m).time, 3 * one);
  }
}

TEST(InNetwork, SwitchReducesSoTheReceiverGetsTheSumOnce) {
  EndpointProps ep;
  ep.reduce_bw = 0.1e9;  // slow: would cost 10 us per 1000 bytes at the receiver
  SmallGraph topo(4, 5, ep);
  for (int r = 0; r < 4; ++r) topo.add_cable(r, 4, 1e9, 1e-6);
  topo.set_in_network(4, 1e12);
  HandSchedule s(4);
  std::vector<Op> recvs;
  for (int src = 1; src < 4; ++src) {
    Op send = send_op(0, in(1000));
    send.fan_in = 3;
    s.add(src, {send});
    Op recv = recv_op(src, in(1000), Combine::reduce);
    recv.fan_in = 3;
    recvs.push_back(recv);
  }
  s.add(0, recvs);
  for (NetModel m : kModels) expect_rel(run(s, topo, m).time, 2e-6 + 1000 / 1e9);
}

TEST(Launch, CallsAreNeverFasterThanTheHostLaunchesThem) {
  EndpointProps ep;
  ep.launch = 5e-6;
  SmallGraph topo(2, 2, ep);
  topo.add_cable(0, 1, 1e9, 0);
  HandSchedule s(2);
  s.add(0, {send_op(1, in(1000))});
  s.add(1, {recv_op(0, in(1000))});
  for (NetModel m : kModels) {
    EXPECT_DOUBLE_EQ(run(s, topo, m, 1).time, 5e-6);
    EXPECT_DOUBLE_EQ(run(s, topo, m, 8).time, 40e-6);
    EXPECT_DOUBLE_EQ(run(s, topo, m, 8).launch_floor, 40e-6);
  }
  // Longer than the floor: the floor does not add.
  HandSchedule big(2);
  big.add(0, {send_op(1, in(100000))});
  big.add(1, {recv_op(0, in(100000))});
  EXPECT_DOUBLE_EQ(run(big, topo, NetModel::flow).time, 100e-6);
}

TEST(Pipelined, AnEagerSendNobodyReceivesIsAScheduleError) {
  EndpointProps ep;
  ep.pipelined = true;
  SmallGraph topo(2, 2, ep);
  topo.add_cable(0, 1, 1e9, 0);
  HandSchedule s(2);
  s.add(0, {send_op(1, in(1000))});
  for (NetModel m : kModels) EXPECT_THROW(run(s, topo, m), ScheduleError);
}

}  // namespace
}  // namespace collkit
