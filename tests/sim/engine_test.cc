// Hand-worked timings of the simulator on tiny test-local topologies.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "algorithms/registry.h"
#include "core/error.h"
#include "tests/sim/sim_test_util.h"

namespace collkit {
namespace {

using testing::FullyConnected;
using testing::HandSchedule;
using testing::in;
using testing::SmallGraph;

constexpr NetModel kModels[] = {NetModel::flow, NetModel::alpha_beta};

SimResult run(const Schedule& s, const Topology& t, NetModel model) {
  SimOptions o;
  o.model = model;
  o.rank_times = true;
  return simulate(s, t, o);
}

void expect_rel(double actual, double expected, double tol = 1e-12) {
  EXPECT_LE(std::abs(actual - expected), tol * std::abs(expected))
      << "actual " << actual << " expected " << expected;
}

// A pair of ranks exchanging one message src -> dst of `bytes` (elem_size 1).
HandSchedule one_message(int p, int src, int dst, std::int64_t bytes,
                         Combine combine = Combine::copy) {
  HandSchedule s(p);
  s.add(src, {send_op(dst, in(bytes))});
  s.add(dst, {recv_op(src, in(bytes), combine)});
  return s;
}

TEST(SimEngine, OneTransferCostsOverheadPlusLatencyPlusBytesOverBandwidth) {
  const double bw = 1e9, lat = 2e-6, o = 0.5e-6;
  const FullyConnected topo(2, bw, lat, EndpointProps{o, 0});
  const HandSchedule s = one_message(2, 0, 1, 1000);
  for (NetModel m : kModels) {
    const SimResult r = run(s, topo, m);
    EXPECT_DOUBLE_EQ(r.time, o + lat + 1000 / bw);
    EXPECT_EQ(r.rank_times[0], r.rank_times[1]) << "a send completes when its data has arrived";
    EXPECT_EQ(r.messages, 1);
    EXPECT_EQ(r.bytes, 1000);
    EXPECT_EQ(r.max_link_flows, m == NetModel::flow ? 1 : 0);
  }
}

TEST(SimEngine, ZeroByteMessageCostsOverheadPlusLatency) {
  const FullyConnected topo(2, 1e9, 3e-6, EndpointProps{1e-6, 0});
  const HandSchedule s = one_message(2, 1, 0, 0);
  for (NetModel m : kModels) EXPECT_DOUBLE_EQ(run(s, topo, m).time, 1e-6 + 3e-6);
}

TEST(SimEngine, ElementSizeScalesBytes) {
  const FullyConnected topo(2, 1e9, 0);
  HandSchedule s(2, /*elem_size=*/8);
  s.add(0, {send_op(1, in(100))});
  s.add(1, {recv_op(0, in(100))});
  for (NetModel m : kModels) EXPECT_DOUBLE_EQ(run(s, topo, m).time, 800 / 1e9);
}

TEST(SimEngine, ReducingReceiveAndLocalReducePayGammaAtTheReceiver) {
  const double bw = 1e9, lat = 1e-6, rbw = 4e9, m = 2e6;
  const FullyConnected topo(2, bw, lat, EndpointProps{0, rbw});
  HandSchedule s(2);
  s.add(0, {send_op(1, in(2000000))});
  // The local reduce runs after the step's communication; the copy is free.
  s.add(1, {recv_op(0, {Buf::scratch, 0, 2000000}, Combine::reduce),
            reduce_op({Buf::scratch, 0, 1000000}, in(1000000)),
            copy_op({Buf::scratch, 0, 1000000}, {Buf::output, 0, 1000000})});
  for (NetModel model : kModels) {
    const SimResult r = run(s, topo, model);
    expect_rel(r.rank_times[0], lat + m / bw);
    expect_rel(r.rank_times[1], lat + m / bw + m / rbw + (m / 2) / rbw);
  }
}

TEST(SimEngine, LocalCopiesPayCopyBandwidthAfterTheCommunication) {
  const double bw = 1e9, lat = 1e-6, rbw = 4e9, cbw = 8e9;
  const FullyConnected topo(2, bw, lat, EndpointProps{0, rbw, cbw});
  HandSchedule s(2, /*elem_size=*/4);
  // Rank 0: a copy-only step (no event), then a send; rank 1: a receive with
  // a reduce and a copy after it, then a lone copy of 0 elements (free).
  s.add(0, {copy_op(in(250000), {Buf::output, 0, 250000})});
  s.add(0, {send_op(1, in(500000))});
  s.add(1, {recv_op(0, {Buf::scratch, 0, 500000}),
            reduce_op({Buf::scratch, 0, 500000}, {Buf::output, 0, 500000}),
            copy_op({Buf::output, 0, 500000}, {Buf::scratch, 0, 500000})});
  s.add(1, {copy_op(in(0), {Buf::output, 0, 0})});
  for (NetModel model : kModels) {
    const SimResult r = run(s, topo, model);
    const double copied0 = 1e6 / cbw;  // 250000 floats
    const double arrive = copied0 + lat + 2e6 / bw;
    expect_rel(r.rank_times[0], arrive);
    expect_rel(r.rank_times[1], arrive + 2e6 / rbw + 2e6 / cbw);
  }
  // Without copy_gbps the copies are free, as before.
  const FullyConnected free_copies(2, bw, lat, EndpointProps{0, rbw});
  for (NetModel model : kModels)
    expect_rel(run(s, free_copies, model).time, lat + 2e6 / bw + 2e6 / rbw);
}

// Ring all_gather on a fully connected network: (p - 1) steps of
// alpha + (n / p) beta, plus the first copy of the own block. Past the cache
// (input n/p plus output n per rank) every byte costs dram_factor times more;
// the latency does not.
TEST(SimEngine, CacheModelScalesBytesPastTheCacheOnly) {
  const int p = 4;
  const std::int64_t n = 1 << 20;  // elements of 4 bytes: 4 MiB of output
  const double bw = 10e9, lat = 3e-6, cbw = 20e9, f = 1.75;
  const double block = 4.0 * n / p;
  const double footprint = 4.0 * (n / p + n);  // 5 MiB
  ScheduleSpec spec;
  spec.collective = Collective::all_gather;
  spec.algorithm = "ring";
  spec.ranks = p;
  spec.count = n;
  const std::unique_ptr<Schedule> s = make_schedule(spec);
  for (NetModel model : kModels) {
    const auto time_with = [&](double cache_bytes, double factor) {
      EndpointProps ep{0, 0, cbw, cache_bytes, factor};
      return run(*s, FullyConnected(p, bw, lat, ep), model).time;
    };
    const double cached = (p - 1) * (lat + block / bw) + block / cbw;
    const double past = (p - 1) * (lat + f * block / bw) + f * block / cbw;
    expect_rel(time_with(0, 1), cached);              // no cache model
    expect_rel(time_with(footprint, f), cached);      // fits exactly: cached
    expect_rel(time_with(footprint - 1, f), past);    // one byte over
    expect_rel(time_with(footprint - 1, 1), cached);  // factor 1: no change
    EXPECT_EQ(run(*s, FullyConnected(p, bw, lat, EndpointProps{0, 0, cbw, 1, f}), model).bytes,
              run(*s, FullyConnected(p, bw, lat, EndpointProps{0, 0, cbw}), model).bytes)
        << "the bytes reported stay the bytes moved";
  }
}

// The cache model weighs the working set, not input + output alone: the
// linear reduce's root (input n, output n, and a temp area of n for each
// reducing receive) with a cache between 2n and 3n bytes' worth is past it,
// exactly as with a cache of one byte.
TEST(SimEngine, CacheModelCountsTheTempAreaOfReducingReceives) {
  const std::int64_t n = 1 << 18;
  ScheduleSpec spec;
  spec.collective = Collective::reduce;
  spec.algorithm = "linear";
  spec.ranks = 3;
  spec.count = n;
  const std::unique_ptr<Schedule> s = make_schedule(spec);
  for (NetModel model : kModels) {
    const auto time_with = [&](double cache_bytes) {
      EndpointProps ep{0, 2e9, 20e9, cache_bytes, 2.0};
      return run(*s, FullyConnected(3, 10e9, 1e-6, ep), model).time;
    };
    const double cached = time_with(0), past = time_with(1);
    EXPECT_GT(past, 1.5 * cached);
    expect_rel(time_with(4.0 * 2.5 * n), past);  // between input + output and the working set
    expect_rel(time_with(4.0 * 3 * n), cached);  // the working set fits
  }
}

// Shared host: four ranks each reduce 1 MB locally (1 ms alone at 1 GB/s).
// On a host of c cores they run at min(1, c / 4) each under the flow model;
// alpha-beta ignores the sharing. Ranks of another host do not slow them.
TEST(SimEngine, LocalWorkSharesTheHostsCores) {
  const double rbw = 1e9;
  HandSchedule s(4, /*elem_size=*/1);
  for (int r = 0; r < 4; ++r) s.add(r, {reduce_op(in(1000000), {Buf::output, 0, 1000000})});
  const auto time = [&](double cores, NetModel model) {
    EndpointProps ep{0, rbw};
    ep.host_cores = cores;
    return run(s, FullyConnected(4, 1e9, 0, ep), model).time;
  };
  expect_rel(time(0, NetModel::flow), 1e-3);
  expect_rel(time(4, NetModel::flow), 1e-3);
  expect_rel(time(2, NetModel::flow), 2e-3);
  expect_rel(time(1, NetModel::flow), 4e-3);
  expect_rel(time(1, NetModel::alpha_beta), 1e-3);

  // Two hosts of one core: ranks 0-1 on host 0, 2-3 on host 1. Rank 3 has
  // no work, so rank 2 has its host's core to itself.
  SmallGraph g(4, 5);
  for (int r = 0; r < 4; ++r) g.add_cable(r, 4, 1e9, 0);
  HandSchedule t(4, 1);
  for (int r = 0; r < 3; ++r) t.add(r, {reduce_op(in(1000000), {Buf::output, 0, 1000000})});
  for (int r = 0; r < 4; ++r) {
    EndpointProps ep{0, rbw};
    ep.host_cores = 1;
    ep.host = r < 2 ? 0 : 1;
    g.set_endpoint(r, ep);
  }
  const SimResult shared = run(t, g, NetModel::flow);
  expect_rel(shared.rank_times[0], 2e-3);
  expect_rel(shared.rank_times[1], 2e-3);
  expect_rel(shared.rank_times[2], 1e-3);
}

// A reducing receive on a shared host reduces after the step's
// communication, in the host's shared cores: two receivers of one core each
// get 1 MB (1 ms on the 1 GB/s links) and then reduce at half speed.
TEST(SimEngine, ReducingReceiveOnASharedHostIsLocalWork) {
  HandSchedule s(4, 1);
  s.add(0, {send_op(1, in(1000000))});
  s.add(2, {send_op(3, in(1000000))});
  s.add(1, {recv_op(0, {Buf::output, 0, 1000000}, Combine::reduce)});
  s.add(3, {recv_op(2, {Buf::output, 0, 1000000}, Combine::reduce)});
  EndpointProps ep{0, 1e9};
  ep.host_cores = 1;
  const SimResult r = run(s, FullyConnected(4, 1e9, 0, ep), NetModel::flow);
  expect_rel(r.rank_times[1], 1e-3 + 2e-3);
  expect_rel(r.rank_times[3], 1e-3 + 2e-3);
  expect_rel(r.rank_times[0], 1e-3);
}

// EndpointProps::receiver_copies: the receiving rank's core copies each
// message, so a transfer also takes its core and host for as long as it
// runs. Ranks 0-1 on host 0, 2-3 on host 1 (one core each), a star of
// 1 GB/s cables: 1 MB alone takes 1 ms whatever the flag.
TEST(SimEngine, ReceiverCopiesShareTheReceivingCore) {
  const auto star = [](bool copies) {
    auto g = std::make_unique<SmallGraph>(4, 5);
    for (int r = 0; r < 4; ++r) g->add_cable(r, 4, 1e9, 0);
    for (int r = 0; r < 4; ++r) {
      EndpointProps ep{0, 1e9};
      ep.host_cores = 1;
      ep.host = r < 2 ? 0 : 1;
      ep.receiver_copies = copies;
      g->set_endpoint(r, ep);
    }
    return g;
  };
  const int mb = 1000000;
  // Alone: the core is no narrower than the route.
  const HandSchedule one = one_message(4, 0, 2, mb);
  for (bool copies : {false, true}) expect_rel(run(one, *star(copies), NetModel::flow).time, 1e-3);

  // Two messages of mb bytes at once, a -> b and c -> d.
  const auto two = [&](int a, int b, int c, int d) {
    HandSchedule s(4, 1);
    for (const auto& [from, to] : {std::pair{a, b}, std::pair{c, d}}) {
      s.add(from, {send_op(to, in(mb))});
      s.add(to, {recv_op(from, {Buf::output, 0, mb})});
    }
    return s;
  };

  // Two receivers on host 1 (0->2, 1->3: disjoint cables) share its core.
  const HandSchedule same = two(0, 2, 1, 3);
  expect_rel(run(same, *star(false), NetModel::flow).time, 1e-3);
  const SimResult shared = run(same, *star(true), NetModel::flow);
  for (int r = 0; r < 4; ++r) expect_rel(shared.rank_times[r], 2e-3);
  // The alpha-beta model has no hosts: unchanged.
  expect_rel(run(same, *star(true), NetModel::alpha_beta).time, 1e-3);

  // Receivers on different hosts (0->2, 3->1) do not meet.
  expect_rel(run(two(0, 2, 3, 1), *star(true), NetModel::flow).time, 1e-3);

  // A copy into rank 2 and rank 3's 1 ms reduction share host 1's core:
  // both run at half speed and end together at 2 ms; rank 0, the sender,
  // waits for its transfer.
  HandSchedule mixed(4, 1);
  mixed.add(0, {send_op(2, in(mb))});
  mixed.add(2, {recv_op(0, {Buf::output, 0, mb})});
  mixed.add(3, {reduce_op(in(mb), {Buf::output, 0, mb})});
  const SimResult m = run(mixed, *star(true), NetModel::flow);
  expect_rel(m.rank_times[2], 2e-3);
  expect_rel(m.rank_times[3], 2e-3);
  expect_rel(m.rank_times[0], 2e-3);
  expect_rel(run(mixed, *star(false), NetModel::flow).time, 1e-3);

  // One rank receiving from three peers in one step has one core to copy
  // them with: 3 ms, where three links of their own deliver all three in
  // 1 ms (a host of 4 cores: only the receiver's own core limits).
  HandSchedule gather(4, 1);
  for (int r = 1; r < 4; ++r) gather.add(r, {send_op(0, in(mb))});
  gather.add(0, {recv_op(1, {Buf::output, 0, mb}), recv_op(2, {Buf::output, mb, mb}),
                 recv_op(3, {Buf::output, 2 * mb, mb})});
  EndpointProps four{0, 1e9};
  four.host_cores = 4;
  expect_rel(run(gather, FullyConnected(4, 1e9, 0, four), NetModel::flow).time, 1e-3);
  four.receiver_copies = true;
  const SimResult g = run(gather, FullyConnected(4, 1e9, 0, four), NetModel::flow);
  for (int r = 0; r < 4; ++r) expect_rel(g.rank_times[r], 3e-3);
}

TEST(SimEngine, FreeReductionsWhenReduceBandwidthIsZero) {
  const FullyConnected topo(2, 1e9, 1e-6);
  const HandSchedule s = one_message(2, 0, 1, 5000, Combine::reduce);
  for (NetModel m : kModels) EXPECT_DOUBLE_EQ(run(s, topo, m).time, 1e-6 + 5000 / 1e9);
}

TEST(SimEngine, TransferStartsWhenBothSidesHavePosted) {
  // Rank 1 is busy reducing for 3 s before it posts its receive.
  const FullyConnected topo(2, 10, 1, EndpointProps{0, 1});
  HandSchedule s(2);
  s.add(0, {send_op(1, in(20))});
  s.add(1, {reduce_op(in(3), {Buf::output, 0, 3})});
  s.add(1, {recv_op(0, {Buf::output, 0, 20})});
  for (NetModel m : kModels) {
    const SimResult r = run(s, topo, m);
    EXPECT_DOUBLE_EQ(r.rank_times[0], 3 + 1 + 2.0);
    EXPECT_DOUBLE_EQ(r.rank_times[1], 3 + 1 + 2.0);
  }
}

TEST(SimEngine, SendsAndReceivesMatchFifoPerPair) {
  // Two sends in two steps meet two receives posted in one step, in order; the
  // second transfer can only start when rank 0 posts it (after the first).
  const FullyConnected topo(2, 1, 0);
  HandSchedule s(2);
  s.add(0, {send_op(1, in(3))});
  s.add(0, {send_op(1, in(5))});
  s.add(1, {recv_op(0, {Buf::output, 0, 3}), recv_op(0, {Buf::output, 3, 5})});
  for (NetModel m : kModels) EXPECT_DOUBLE_EQ(run(s, topo, m).time, 8.0);
}

TEST(SimEngine, FifoHoldsWithSeveralPeersWaitingAtOneReceiver) {
  // Rank 2 posts four receives at t=0 (from 1, 1, 0, 1); the senders start
  // later (rank 0 after a 1 s reduction, rank 1 after 10 s), so rank 0's send
  // matches a receive in the middle of rank 2's waiting list, and rank 1's
  // three sends the others in order (counts differ: any other pairing would
  // be a size mismatch). Bandwidth 1 B/s, no latency.
  const FullyConnected topo(3, 1, 0, EndpointProps{0, 1});
  HandSchedule s(3);
  s.add(0, {reduce_op(in(1), {Buf::output, 0, 1})});
  s.add(0, {send_op(2, in(3))});
  s.add(1, {reduce_op(in(10), {Buf::output, 0, 10})});
  for (int bytes : {7, 2, 4}) s.add(1, {send_op(2, in(bytes))});
  s.add(2, {recv_op(1, {Buf::output, 0, 7}), recv_op(1, {Buf::output, 7, 2}),
            recv_op(0, {Buf::output, 9, 3}), recv_op(1, {Buf::output, 12, 4})});
  for (NetModel m : kModels) {
    const SimResult r = run(s, topo, m);
    EXPECT_DOUBLE_EQ(r.rank_times[0], 4.0);
    EXPECT_DOUBLE_EQ(r.rank_times[1], 23.0);
    EXPECT_DOUBLE_EQ(r.rank_times[2], 23.0);
  }
}

TEST(SimEngine, TwoFlowsOnOneLinkTakeTwiceAsLongUnderFlowOnly) {
  const double bw = 1e9, lat = 1e-6, m = 1e6;
  const FullyConnected topo(2, bw, lat);
  HandSchedule s(2);
  s.add(0, {send_op(1, in(1000000)), send_op(1, {Buf::input, 1000000, 1000000})});
  s.add(1, {recv_op(0, in(1000000)), recv_op(0, {Buf::output, 0, 1000000})});
  const SimResult flow = run(s, topo, NetModel::flow);
  expect_rel(flow.time, lat + 2 * m / bw);
  EXPECT_EQ(flow.max_link_flows, 2);
  expect_rel(run(s, topo, NetModel::alpha_beta).time, lat + m / bw);
}

TEST(SimEngine, TwoSendersShareTheSwitchDownlink) {
  // Ranks 0 and 1 both send to rank 2 through switch node 3.
  const double bw = 1e9, lat = 1e-6, m = 1e6;
  SmallGraph topo(3, 4);
  for (int r = 0; r < 3; ++r) topo.add_cable(r, 3, bw, lat);
  HandSchedule s(3);
  s.add(0, {send_op(2, in(1000000))});
  s.add(1, {send_op(2, in(1000000))});
  s.add(2, {recv_op(0, in(1000000)), recv_op(1, {Buf::output, 0, 1000000})});
  expect_rel(run(s, topo, NetModel::flow).time, 2 * lat + 2 * m / bw);
  expect_rel(run(s, topo, NetModel::alpha_beta).time, 2 * lat + m / bw);
}

TEST(SimEngine, MaxMinFairnessOnThreeFlows) {
  // Link A (10 B/s) carries flows 1 and 2; link B (4 B/s) carries flows 2 and 3.
  // B's fair share 2 < A's 5, so flows 2 and 3 get 2 and flow 1 takes A's
  // remaining 8. Flow 1 (40 B) ends at 5: flow 2 stays limited by B. Flow 3
  // (20 B) ends at 10; flow 2 has 40 - 20 = 20 B left and now gets B's 4 B/s:
  // it ends at 15.
  SmallGraph topo(6, 9);
  const LinkId a = topo.add_link(6, 7, 10, 0);
  const LinkId b = topo.add_link(7, 8, 4, 0);
  topo.set_route(0, 1, {a});
  topo.set_route(2, 3, {a, b});
  topo.set_route(4, 5, {b});
  HandSchedule s(6);
  for (auto [src, bytes] : {std::pair{0, 40}, std::pair{2, 40}, std::pair{4, 20}}) {
    s.add(src, {send_op(src + 1, in(bytes))});
    s.add(src + 1, {recv_op(src, in(bytes))});
  }
  const SimResult flow = run(s, topo, NetModel::flow);
  EXPECT_DOUBLE_EQ(flow.rank_times[1], 5.0);
  EXPECT_DOUBLE_EQ(flow.rank_times[5], 10.0);
  EXPECT_DOUBLE_EQ(flow.rank_times[3], 15.0);
  EXPECT_DOUBLE_EQ(flow.time, 15.0);
  const SimResult ab = run(s, topo, NetModel::alpha_beta);
  EXPECT_DOUBLE_EQ(ab.rank_times[1], 4.0);
  EXPECT_DOUBLE_EQ(ab.rank_times[3], 10.0);
  EXPECT_DOUBLE_EQ(ab.rank_times[5], 5.0);
}

TEST(SimEngine, LateFlowSlowsARunningOne) {
  // Ranks 0 and 1 send 10 B to rank 2 over a shared 1 B/s downlink; rank 1
  // first reduces for 4 s. Flow 1 has 6 B left at t=4, then both run at 0.5:
  // flow 1 ends at 16 with flow 2 at 6 B; flow 2 ends alone at 20.
  SmallGraph topo(3, 4, EndpointProps{0, 1});
  for (int r = 0; r < 3; ++r) topo.add_cable(r, 3, 1, 0);
  HandSchedule s(3);
  s.add(0, {send_op(2, in(10))});
  s.add(1, {reduce_op(in(4), {Buf::output, 0, 4})});
  s.add(1, {send_op(2, in(10))});
  s.add(2, {recv_op(0, in(10)), recv_op(1, {Buf::output, 0, 10})});
  const SimResult flow = run(s, topo, NetModel::flow);
  EXPECT_DOUBLE_EQ(flow.rank_times[0], 16.0);
  EXPECT_DOUBLE_EQ(flow.rank_times[1], 20.0);
  EXPECT_DOUBLE_EQ(flow.rank_times[2], 20.0);
  const SimResult ab = run(s, topo, NetModel::alpha_beta);
  EXPECT_DOUBLE_EQ(ab.rank_times[0], 10.0);
  EXPECT_DOUBLE_EQ(ab.rank_times[1], 14.0);
}

// Root 0 and ranks 1..3 hang off one switch (node 4); every cable has
// bandwidth B and latency L, the root pays overhead o per message.
SmallGraph star(double bw, double lat, double o) {
  SmallGraph topo(4, 5, EndpointProps{o, 0});
  for (int r = 0; r < 4; ++r) topo.add_cable(r, 4, bw, lat);
  return topo;
}

TEST(SimEngine, LinearBroadcastInOneStepSerialisesOnTheRootUplink) {
  // Messages of m, 2m, 3m leave together and share the root's uplink: all at
  // B/3 until the first ends at 3m/B, then two at B/2 (m left each) until
  // 5m/B, then the last alone: 6m/B. Each adds o + 2L (header first).
  const double bw = 1e9, lat = 1e-6, o = 2e-7, m = 1e6;
  const SmallGraph topo = star(bw, lat, o);
  HandSchedule s(4);
  s.add(0, {send_op(1, in(1000000)), send_op(2, in(2000000)), send_op(3, in(3000000))});
  for (int r = 1; r < 4; ++r) s.add(r, {recv_op(0, {Buf::output, 0, r * 1000000})});
  const SimResult flow = run(s, topo, NetModel::flow);
  expect_rel(flow.rank_times[1], o + 2 * lat + 3 * m / bw);
  expect_rel(flow.rank_times[2], o + 2 * lat + 5 * m / bw);
  expect_rel(flow.rank_times[3], o + 2 * lat + 6 * m / bw);
  expect_rel(flow.rank_times[0], flow.rank_times[3]);
  const SimResult ab = run(s, topo, NetModel::alpha_beta);
  for (int r = 1; r < 4; ++r) expect_rel(ab.rank_times[r], o + 2 * lat + r * m / bw);
}

TEST(SimEngine, LinearBroadcastInStepsMatchesTheLinearClosedForm) {
  // One send per step: (p-1)(o + 2L + m/B) at the root, no sharing.
  const double bw = 1e9, lat = 1e-6, o = 2e-7, m = 1e6;
  const SmallGraph topo = star(bw, lat, o);
  HandSchedule s(4);
  for (int r = 1; r < 4; ++r) {
    s.add(0, {send_op(r, in(1000000))});
    s.add(r, {recv_op(0, {Buf::output, 0, 1000000})});
  }
  for (NetModel model : kModels) {
    const SimResult res = run(s, topo, model);
    for (int r = 1; r < 4; ++r) expect_rel(res.rank_times[r], r * (o + 2 * lat + m / bw));
    EXPECT_EQ(res.messages, 3);
  }
}

TEST(SimEngine, LocalOnlyProgramsCostTheirReductions) {
  const FullyConnected topo(2, 1, 0, EndpointProps{0, 2});
  HandSchedule s(2);
  s.add(0, {reduce_op(in(4), {Buf::output, 0, 4}), copy_op(in(8), {Buf::output, 0, 8})});
  s.add(0, {reduce_op(in(6), {Buf::output, 0, 6})});
  for (NetModel m : kModels) {
    const SimResult r = run(s, topo, m);
    EXPECT_DOUBLE_EQ(r.rank_times[0], 5.0);
    EXPECT_DOUBLE_EQ(r.rank_times[1], 0.0);
    EXPECT_EQ(r.messages, 0);
  }
}

TEST(SimEngine, DeadlockNamesTheStuckRanks) {
  const FullyConnected topo(3, 1, 0);
  HandSchedule s(3);
  s.add(0, {recv_op(1, in(1))});
  s.add(0, {send_op(1, in(1))});
  s.add(1, {recv_op(0, in(1))});
  s.add(1, {send_op(0, in(1))});
  for (NetModel m : kModels) {
    try {
      run(s, topo, m);
      FAIL() << "expected a ScheduleError";
    } catch (const ScheduleError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
      EXPECT_NE(what.find("2 rank(s)"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 0 receives from 1"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 1 receives from 0"), std::string::npos) << what;
    }
  }
}

TEST(SimEngine, UnmatchedSendIsADeadlock) {
  const FullyConnected topo(2, 1, 0);
  HandSchedule s(2);
  s.add(0, {send_op(1, in(1))});
  for (NetModel m : kModels) EXPECT_THROW(run(s, topo, m), ScheduleError);
}

TEST(SimEngine, SizeMismatchIsAScheduleError) {
  const FullyConnected topo(2, 1, 0);
  const HandSchedule good = one_message(2, 0, 1, 4);
  HandSchedule s(2);
  s.add(0, {send_op(1, in(4))});
  s.add(1, {recv_op(0, in(5))});
  EXPECT_NO_THROW(run(good, topo, NetModel::flow));
  for (NetModel m : kModels) EXPECT_THROW(run(s, topo, m), ScheduleError);
}

TEST(SimEngine, BadPeerIsAScheduleError) {
  const FullyConnected topo(3, 1, 0);
  HandSchedule self(2), far(2);
  self.add(0, {send_op(0, in(1))});
  far.add(1, {recv_op(2, in(1))});
  for (NetModel m : kModels) {
    EXPECT_THROW(run(self, topo, m), ScheduleError);
    EXPECT_THROW(run(far, topo, m), ScheduleError);
  }
}

TEST(SimEngine, TopologyWithTooFewRanksIsAUsageError) {
  const FullyConnected topo(2, 1, 0);
  const HandSchedule s(4);
  try {
    simulate(s, topo);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("test-fc-2"), std::string::npos) << what;
    EXPECT_NE(what.find("has 2 ranks"), std::string::npos) << what;
    EXPECT_NE(what.find("needs 4"), std::string::npos) << what;
  }
}

TEST(SimEngine, FewerScheduleRanksThanTopologyRanksIsFine) {
  const FullyConnected topo(8, 1, 0);
  const HandSchedule s = one_message(2, 0, 1, 3);
  EXPECT_DOUBLE_EQ(simulate(s, topo).time, 3.0);
}

// A contended pattern with uneven sizes, several steps and staggered ranks:
// every rank sends to every other through one switch with uneven links.
HandSchedule contended_pattern(int p) {
  HandSchedule s(p);
  for (int k = 1; k < p; ++k) {
    for (int r = 0; r < p; ++r) {
      const int to = (r + k) % p, from = (r - k + p) % p;
      s.add(r, {send_op(to, in(1000 + 37 * r + 11 * k)),
                recv_op(from, {Buf::output, 0, 1000 + 37 * from + 11 * k}, Combine::reduce)});
      if ((r + k) % 3 == 0) s.add(r, {reduce_op(in(100 * k), {Buf::output, 0, 100 * k})});
    }
  }
  return s;
}

TEST(SimEngine, RunsAreBitIdentical) {
  const int p = 12;
  SmallGraph topo(p, p + 2, EndpointProps{1e-7, 5e9});
  for (int r = 0; r < p; ++r) topo.add_cable(r, p + r % 2, 1e9 * (1 + r % 3), 1e-6);
  topo.add_cable(p, p + 1, 2.5e9, 3e-6);
  const HandSchedule s = contended_pattern(p);
  for (NetModel m : kModels) {
    const SimResult a = run(s, topo, m);
    const SimResult b = run(s, topo, m);
    EXPECT_EQ(std::memcmp(&a.time, &b.time, sizeof(double)), 0);
    ASSERT_EQ(a.rank_times.size(), b.rank_times.size());
    EXPECT_EQ(
        std::memcmp(a.rank_times.data(), b.rank_times.data(), a.rank_times.size() * sizeof(double)),
        0);
    EXPECT_EQ(a.events, b.events);
    EXPECT_EQ(a.messages, p * (p - 1));
  }
  // Contention can only slow transfers down.
  EXPECT_GE(run(s, topo, NetModel::flow).time, run(s, topo, NetModel::alpha_beta).time);
}

// Many posts waiting at one receiver (more than the engine's short list
// holds, so it indexes them by pair): every pair must still match oldest
// first. Each message has its own count, so a match out of order would be a
// size mismatch. Both orders (receives waiting for sends; sends, eager or
// not, waiting for receives) and a second phase after the queue drained.
TEST(SimEngine, ManyWaitingPostsMatchInOrderPerPair) {
  constexpr int kSenders = 4;
  constexpr int kEach = 40;
  const auto count = [](int sender, int k) { return std::int64_t{sender} * 1000 + k + 1; };
  for (const bool pipelined : {false, true}) {
    EndpointProps ep;
    ep.pipelined = pipelined;
    const FullyConnected topo(kSenders + 1, 1, 1e-6, ep);
    // Receives first: rank 0 (advanced first) posts every receive in one
    // step, senders interleaved; senders 1..4 then send theirs.
    HandSchedule recv_first(kSenders + 1);
    std::vector<Op> receives;
    for (int k = 0; k < kEach; ++k)
      for (int s = 1; s <= kSenders; ++s) receives.push_back(recv_op(s, in(count(s, k))));
    recv_first.add(0, receives);
    for (int s = 1; s <= kSenders; ++s) {
      std::vector<Op> sends;
      for (int k = 0; k < kEach; ++k) sends.push_back(send_op(0, in(count(s, k))));
      recv_first.add(s, sends);
    }
    // Sends first: ranks 0..3 send to rank 4 in one step each; rank 4 then
    // receives sender by sender, last sender first, one receive a step;
    // then a second, short phase of one message per sender.
    HandSchedule send_first(kSenders + 1);
    for (int s = 0; s < kSenders; ++s) {
      std::vector<Op> sends;
      for (int k = 0; k < kEach; ++k) sends.push_back(send_op(kSenders, in(count(s + 1, k))));
      send_first.add(s, sends);
      send_first.add(s, {send_op(kSenders, in(7))});
    }
    for (int s = kSenders - 1; s >= 0; --s)
      for (int k = 0; k < kEach; ++k) send_first.add(kSenders, {recv_op(s, in(count(s + 1, k)))});
    for (int s = 0; s < kSenders; ++s) send_first.add(kSenders, {recv_op(s, in(7))});
    for (NetModel m : kModels) {
      EXPECT_GT(run(recv_first, topo, m).time, 0) << pipelined;
      EXPECT_GT(run(send_first, topo, m).time, 0) << pipelined;
    }
  }
}

// The deadlock report of a long queue names the stuck pair, the same as a
// short one.
TEST(SimEngine, DeadlockWithManyWaitingPostsNamesThePair) {
  const FullyConnected topo(3, 1, 0);
  HandSchedule s(3);
  std::vector<Op> receives;
  for (int k = 0; k < 30; ++k) receives.push_back(recv_op(1, in(k + 1)));
  receives.push_back(recv_op(2, in(5)));
  s.add(0, receives);
  std::vector<Op> sends;
  for (int k = 0; k < 29; ++k) sends.push_back(send_op(0, in(k + 1)));  // one short
  s.add(1, sends);
  s.add(2, {send_op(0, in(5))});
  for (NetModel m : kModels) {
    try {
      run(s, topo, m);
      FAIL() << "expected a ScheduleError";
    } catch (const ScheduleError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("1 rank(s) cannot finish"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 0 receives from 1 (30 elements, unmatched)"), std::string::npos)
          << what;
    }
  }
}

}  // namespace
}  // namespace collkit
