// EndpointProps::dirty_factor (docs/SIMULATOR.md, "Cache model"): a message
// whose source its sender wrote during the call (received, reduced or
// copied into) costs dirty_factor times its bytes while both ends are
// within their cache; a copy of the input into the output is clean (the
// real executors send the input itself). Hand-worked times on two ranks
// joined by one link of bandwidth B and latency L, reductions and copies
// free, for hand-written schedules and the registered all_reduce
// algorithms at p = 2, whose measured difference motivated the term
// (docs/results/calibration.md, issue 22).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "algorithms/registry.h"
#include "sim/engine.h"
#include "tests/sim/sim_test_util.h"

namespace collkit {
namespace {

using testing::FullyConnected;
using testing::HandSchedule;

constexpr double B = 1e9, L = 2e-6, D = 3;

EndpointProps dirty_endpoint(double factor = D) {
  EndpointProps ep;
  ep.dirty_factor = factor;
  return ep;
}

double run(const Schedule& s, const Topology& t, NetModel m) {
  SimOptions o;
  o.model = m;
  return simulate(s, t, o).time;
}

Region in(std::int64_t n) { return {Buf::input, 0, n}; }
Region out(std::int64_t n) { return {Buf::output, 0, n}; }
Region scr(std::int64_t n) { return {Buf::scratch, 0, n}; }

// Rank 1 sends 1000 bytes of its input to rank 0; then rank 0 sends the
// region back after `make` prepared it: a receive, a copy of the received
// data, a reduction into it, or a copy of its input (into the output, or
// into scratch).
double round_trip(const std::string& make, NetModel m, double factor = D) {
  FullyConnected topo(2, B, L, dirty_endpoint(factor));
  HandSchedule s(2);
  s.add(1, {send_op(0, in(1000))});
  if (make == "recv") {
    s.add(0, {recv_op(1, out(1000))});
    s.add(0, {send_op(1, out(1000))});
  } else if (make == "copy of received") {
    s.add(0, {recv_op(1, out(1000))});
    s.add(0, {copy_op(out(1000), scr(1000))});
    s.add(0, {send_op(1, scr(1000))});
  } else if (make == "reduce") {
    s.add(0, {recv_op(1, scr(1000))});
    s.add(0, {reduce_op(scr(1000), out(1000))});
    s.add(0, {send_op(1, out(1000))});
  } else if (make == "copy of input to scratch") {
    s.add(0, {recv_op(1, out(1000))});
    s.add(0, {copy_op(in(1000), scr(1000))});
    s.add(0, {send_op(1, scr(1000))});
  } else {  // "copy of input" into the output, over the received data
    s.add(0, {recv_op(1, out(1000))});
    s.add(0, {copy_op(in(1000), out(1000))});
    s.add(0, {send_op(1, out(1000))});
  }
  s.add(1, {recv_op(0, scr(1000))});
  return run(s, topo, m);
}

TEST(Dirty, WrittenDataCostsTheFactorAndACopyOfTheInputIsClean) {
  for (NetModel m : {NetModel::flow, NetModel::alpha_beta}) {
    const double clean = 2 * L + 2 * 1000 / B;
    const double dirty = 2 * L + 1000 / B + D * 1000 / B;
    EXPECT_DOUBLE_EQ(round_trip("recv", m), dirty);
    EXPECT_DOUBLE_EQ(round_trip("copy of received", m), dirty);
    EXPECT_DOUBLE_EQ(round_trip("reduce", m), dirty);
    EXPECT_DOUBLE_EQ(round_trip("copy of input", m), clean);
    // A copy of the input into scratch is sent from the scratch it wrote.
    EXPECT_DOUBLE_EQ(round_trip("copy of input to scratch", m), dirty);
    // Factor 1 (every topology that does not set it): no difference.
    EXPECT_DOUBLE_EQ(round_trip("recv", m, 1), clean);
  }
}

constexpr std::int64_t n = 1000;

// A registered algorithm of `c` on two ranks with n floats, under the flow model.
double two_ranks(Collective c, const std::string& algorithm) {
  FullyConnected topo(2, B, L, dirty_endpoint());
  ScheduleSpec spec;
  spec.collective = c;
  spec.algorithm = algorithm;
  spec.ranks = 2;
  spec.count = n;
  return run(*make_schedule(spec), topo, NetModel::flow);
}

// The registered all_reduce algorithms at p = 2 with n floats (4n bytes):
//   recursive_doubling: one exchange of the (clean) vector: L + 4n/B;
//   ring: the reduce-scatter half is clean, the all-gather half was just
//     reduced: 2L + 2n/B + D 2n/B;
//   linear: rank 1's vector to rank 0 (clean), the sum back (dirty):
//     2L + 4n/B + D 4n/B.
TEST(Dirty, AllReduceAtTwoRanksPaysItWhereItSendsWhatItReduced) {
  const auto time = [](const std::string& a) { return two_ranks(Collective::all_reduce, a); };
  EXPECT_DOUBLE_EQ(time("recursive_doubling"), L + 4.0 * n / B);
  EXPECT_DOUBLE_EQ(time("ring"), 2 * L + 2.0 * n / B + D * 2.0 * n / B);
  EXPECT_DOUBLE_EQ(time("linear"), 2 * L + 4.0 * n / B + D * 4.0 * n / B);
}

// reduce_scatter at p = 2 (n floats of input per rank): pairwise sends the
// peer's half straight from the input, L + 2n/B; the ring works on a
// scratch copy of its input and sends from it, L + D 2n/B.
TEST(Dirty, ReduceScatterFromTheInputOrFromAScratchCopy) {
  const auto time = [](const std::string& a) { return two_ranks(Collective::reduce_scatter, a); };
  EXPECT_DOUBLE_EQ(time("pairwise"), L + 2.0 * n / B);
  EXPECT_DOUBLE_EQ(time("ring"), L + D * 2.0 * n / B);
}

// Past the cache the cache model's factor applies to every byte and the
// dirty factor to none: the lines were written back to memory.
TEST(Dirty, PastTheCacheOnlyTheDramFactorApplies) {
  EndpointProps ep = dirty_endpoint();
  ep.cache_bytes = 1000;  // the 4000-byte working set of the ring is past it
  ep.dram_factor = 2;
  FullyConnected topo(2, B, L, ep);
  ScheduleSpec spec;
  spec.collective = Collective::all_reduce;
  spec.algorithm = "ring";
  spec.ranks = 2;
  spec.count = 1000;
  EXPECT_DOUBLE_EQ(run(*make_schedule(spec), topo, NetModel::flow), 2 * L + 2 * (2 * 2000.0 / B));
}

}  // namespace
}  // namespace collkit
