// The reference executor tested on hand-written schedules: a correct ring
// all_reduce and dissemination barrier pass in every mode, and each kind of
// malformed schedule is rejected with a message that says what is wrong.
#include "algorithms/reference.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace collkit {
namespace {

// A schedule given as explicit per-rank step lists.
class ListSchedule final : public Schedule {
 public:
  ListSchedule(ScheduleSpec spec, std::vector<std::vector<Step>> steps,
               std::vector<std::int64_t> scratch = {})
      : Schedule(std::move(spec)), steps_(std::move(steps)), scratch_(std::move(scratch)) {}

  Generator<Step> program(int rank) const override {
    return emit(steps_[static_cast<std::size_t>(rank)]);
  }

 protected:
  std::int64_t scratch_size(int rank) const override {
    return scratch_.empty() ? 0 : scratch_[static_cast<std::size_t>(rank)];
  }

 private:
  static Generator<Step> emit(std::vector<Step> steps) {
    for (Step& s : steps) co_yield std::move(s);
  }

  std::vector<std::vector<Step>> steps_;
  std::vector<std::int64_t> scratch_;
};

ScheduleSpec make_spec(Collective c, int p, std::int64_t n, int root = 0) {
  ScheduleSpec spec;
  spec.collective = c;
  spec.algorithm = "hand";
  spec.ranks = p;
  spec.root = root;
  spec.count = n;
  return spec;
}

Region in(std::int64_t off, std::int64_t cnt) { return {Buf::input, off, cnt}; }
Region out(std::int64_t off, std::int64_t cnt) { return {Buf::output, off, cnt}; }
Region scr(std::int64_t off, std::int64_t cnt) { return {Buf::scratch, off, cnt}; }

// Ring all_reduce (reduce-scatter then all-gather, both in the output buffer):
// rank r sends block r-k and receive-reduces block r-k-1 at reduce-scatter
// step k, ending with block r+1 complete; then it forwards complete blocks.
std::vector<Step> ring_all_reduce(int p, std::int64_t n, int r) {
  const Partition part{n, p};
  auto block = [&](int b) { return out(part.offset((b % p + p) % p), part.size((b % p + p) % p)); };
  std::vector<Step> steps;
  steps.push_back(Step{{copy_op(in(0, n), out(0, n))}});
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  for (int k = 0; k < p - 1; ++k)
    steps.push_back(
        Step{{send_op(next, block(r - k)), recv_op(prev, block(r - k - 1), Combine::reduce)}});
  for (int k = 0; k < p - 1; ++k)
    steps.push_back(Step{{send_op(next, block(r + 1 - k)), recv_op(prev, block(r - k))}});
  return steps;
}

ListSchedule ring_schedule(int p, std::int64_t n) {
  std::vector<std::vector<Step>> steps;
  for (int r = 0; r < p; ++r) steps.push_back(ring_all_reduce(p, n, r));
  return ListSchedule(make_spec(Collective::all_reduce, p, n), std::move(steps));
}

// Dissemination barrier: at round k rank r signals r + 2^k and waits for r - 2^k.
ListSchedule dissemination_barrier(int p) {
  std::vector<std::vector<Step>> steps(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r)
    for (int d = 1; d < p; d *= 2)
      steps[static_cast<std::size_t>(r)].push_back(
          Step{{send_op((r + d) % p, in(0, 0)), recv_op((r - d + p) % p, out(0, 0))}});
  return ListSchedule(make_spec(Collective::barrier, p, 0), std::move(steps));
}

// Runs `f` and returns the ScheduleError message, failing if none is thrown.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ScheduleError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ScheduleError";
  return {};
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

TEST(Reference, RingAllReduceP3PassesEveryModeDtypeAndOp) {
  for (std::int64_t n : {0, 1, 2, 3, 4, 7, 100}) {
    const ListSchedule s = ring_schedule(3, n);
    for (DType t : kAllDTypes)
      for (ReduceOp op : kAllReduceOps)
        for (std::uint64_t seed : {1, 2, 3}) EXPECT_NO_THROW(verify_numeric(s, t, op, seed));
    EXPECT_NO_THROW(verify_symbolic(s));
    EXPECT_NO_THROW(check_structure(s));
  }
}

TEST(Reference, RingAllReduceStats) {
  const ListSchedule s = ring_schedule(3, 7);  // blocks 3, 2, 2
  const ExecutionStats st = verify_numeric(s, DType::int32, ReduceOp::sum);
  EXPECT_EQ(st.max_comm_steps, 4);
  EXPECT_EQ(st.max_steps, 5);
  EXPECT_EQ(st.total_messages, 12);
  // Rank 0 sends blocks 0, 2 (reduce-scatter) then 1, 0 (all-gather).
  EXPECT_EQ(st.max_elems_sent, 3 + 2 + 2 + 3);
  const ExecutionStats sym = verify_symbolic(s);
  const ExecutionStats str = check_structure(s);
  EXPECT_EQ(sym.max_elems_sent, st.max_elems_sent);
  EXPECT_EQ(str.max_comm_steps, st.max_comm_steps);
  EXPECT_EQ(str.total_messages, st.total_messages);
}

TEST(Reference, RingAllReduceOtherRankCounts) {
  for (int p : {1, 2, 4, 5, 8, 13}) {
    const ListSchedule s = ring_schedule(p, 3 * p + 1);
    EXPECT_NO_THROW(verify_numeric(s, DType::float32, ReduceOp::sum)) << p;
    EXPECT_NO_THROW(verify_symbolic(s)) << p;
  }
}

TEST(Reference, SeedsChangeTheDataAndNeverGiveAllZeros) {
  // A schedule that outputs zeros would pass against all-zero data; the
  // all_reduce of rank inputs with one contribution missing must fail for sum.
  const std::vector<Step> steps{Step{{copy_op(in(0, 4), out(0, 4))}}};
  const ListSchedule s(make_spec(Collective::all_reduce, 2, 4), {steps, steps});
  for (std::uint64_t seed : {1, 2, 3, 4, 5})
    EXPECT_HAS(error_of([&] { verify_numeric(s, DType::int64, ReduceOp::sum, seed); }),
               "wrong result");
}

TEST(Reference, UnmatchedSendIsRejected) {
  const ListSchedule s(make_spec(Collective::all_gather, 2, 2),
                       {{Step{{send_op(1, in(0, 1))}}}, {}});
  const std::string msg = error_of([&] { check_structure(s); });
  EXPECT_HAS(msg, "unmatched");
  EXPECT_HAS(msg, "rank 0 at step 0");
  EXPECT_HAS(msg, "send to 1 from input[0,+1)");
}

TEST(Reference, UnmatchedRecvIsRejected) {
  const ListSchedule s(make_spec(Collective::all_gather, 2, 2),
                       {{Step{{recv_op(1, out(1, 1))}}}, {}});
  EXPECT_HAS(error_of([&] { verify_symbolic(s); }), "unmatched");
}

TEST(Reference, MisSizedPairIsRejected) {
  const ListSchedule s(make_spec(Collective::all_reduce, 2, 4),
                       {{Step{{send_op(1, in(0, 2))}}}, {Step{{recv_op(0, out(0, 3))}}}});
  const std::string msg = error_of([&] { check_structure(s); });
  EXPECT_HAS(msg, "rank 1, step 0, op 0");
  EXPECT_HAS(msg, "receives 3 elements");
  EXPECT_HAS(msg, "sends 2");
}

TEST(Reference, DeadlockWhenBothRanksReceiveFirst) {
  auto steps = [](int peer) {
    return std::vector<Step>{Step{{recv_op(peer, out(0, 1))}}, Step{{send_op(peer, in(0, 1))}}};
  };
  const ListSchedule s(make_spec(Collective::all_reduce, 2, 1), {steps(1), steps(0)});
  const std::string msg = error_of([&] { verify_numeric(s, DType::int32, ReduceOp::sum); });
  EXPECT_HAS(msg, "deadlock");
  EXPECT_HAS(msg, "rank 0 at step 0: op 0 recv from 1 into output[0,+1)");
  EXPECT_HAS(msg, "rank 1 at step 0: op 0 recv from 0 into output[0,+1)");
}

TEST(Reference, SendsAreRendezvousNotEager) {
  // Both ranks send first and receive in a later step: fine with buffered
  // sends, a deadlock under the contract's rendezvous semantics.
  auto steps = [](int peer) {
    return std::vector<Step>{Step{{send_op(peer, in(0, 1))}}, Step{{recv_op(peer, out(0, 1))}}};
  };
  const ListSchedule s(make_spec(Collective::all_reduce, 2, 1), {steps(1), steps(0)});
  EXPECT_HAS(error_of([&] { check_structure(s); }), "deadlock");
}

TEST(Reference, FifoMatchingPerPair) {
  // Two messages of different sizes in one step: the k-th send matches the
  // k-th recv, so swapping the recv order is a size mismatch.
  const ListSchedule ok(
      make_spec(Collective::broadcast, 2, 3),
      {{Step{{copy_op(in(0, 3), out(0, 3))}}, Step{{send_op(1, out(0, 1)), send_op(1, out(1, 2))}}},
       {Step{{recv_op(0, out(0, 1)), recv_op(0, out(1, 2))}}}});
  EXPECT_NO_THROW(verify_numeric(ok, DType::int32, ReduceOp::sum));
  EXPECT_NO_THROW(verify_symbolic(ok));
  const ListSchedule swapped(
      make_spec(Collective::broadcast, 2, 3),
      {{Step{{copy_op(in(0, 3), out(0, 3))}}, Step{{send_op(1, out(0, 1)), send_op(1, out(1, 2))}}},
       {Step{{recv_op(0, out(1, 2)), recv_op(0, out(0, 1))}}}});
  EXPECT_HAS(error_of([&] { check_structure(swapped); }), "receives 2 elements");
}

TEST(Reference, FullDuplexFifoInBothDirections) {
  // Both ranks exchange two messages each way in one step; each direction is
  // its own FIFO.
  auto steps = [](int r) {
    const int peer = 1 - r;
    return std::vector<Step>{Step{{copy_op(in(0, 3), out(0, 3))}},
                             Step{{send_op(peer, in(0, 1)), recv_op(peer, scr(0, 1)),
                                   send_op(peer, in(1, 2)), recv_op(peer, scr(1, 2))}},
                             Step{{reduce_op(scr(0, 3), out(0, 3))}}};
  };
  const ListSchedule s(make_spec(Collective::all_reduce, 2, 3), {steps(0), steps(1)}, {3, 3});
  for (ReduceOp op : kAllReduceOps) EXPECT_NO_THROW(verify_numeric(s, DType::float32, op));
  const ExecutionStats st = verify_symbolic(s);
  EXPECT_EQ(st.total_messages, 4);
  EXPECT_EQ(st.max_comm_steps, 1);
  EXPECT_EQ(st.max_steps, 3);
  EXPECT_EQ(st.max_elems_sent, 3);
}

TEST(Reference, ThreeRankCycleDeadlock) {
  // 0 waits for 2, 1 waits for 0, 2 waits for 1; every send comes later.
  std::vector<std::vector<Step>> steps(3);
  for (int r = 0; r < 3; ++r)
    steps[static_cast<std::size_t>(r)] = {Step{{recv_op((r + 2) % 3, out(0, 1))}},
                                          Step{{send_op((r + 1) % 3, in(0, 1))}}};
  const ListSchedule s(make_spec(Collective::all_reduce, 3, 1), std::move(steps));
  const std::string msg = error_of([&] { check_structure(s); });
  EXPECT_HAS(msg, "deadlock: 3 of 3 ranks cannot progress");
  EXPECT_HAS(msg, "rank 2 at step 0: op 0 recv from 1");
}

TEST(Reference, ReduceWithOverlappingOperandsIsRejected) {
  const ListSchedule s(
      make_spec(Collective::all_reduce, 1, 4),
      {{Step{{copy_op(in(0, 4), out(0, 4))}}, Step{{reduce_op(out(0, 3), out(1, 3))}}}});
  const std::string msg = error_of([&] { check_structure(s); });
  EXPECT_HAS(msg, "rank 0, step 1, op 0 (reduce output[0,+3) into output[1,+3))");
  EXPECT_HAS(msg, "source and destination overlap");
  const ListSchedule sizes(make_spec(Collective::all_reduce, 1, 4),
                           {{Step{{copy_op(in(0, 4), out(0, 3))}}}});
  EXPECT_HAS(error_of([&] { check_structure(sizes); }), "source has 4 elements but destination 3");
}

TEST(Reference, WrongResultInEveryDtype) {
  // Rank 1 forgets to add its own input: the sum differs at every element.
  auto steps = [](int r) {
    std::vector<Step> s{Step{{send_op(1 - r, in(0, 5)), recv_op(1 - r, out(0, 5))}}};
    if (r == 0) s.push_back(Step{{reduce_op(in(0, 5), out(0, 5))}});
    return s;
  };
  const ListSchedule s(make_spec(Collective::all_reduce, 2, 5), {steps(0), steps(1)});
  for (DType t : kAllDTypes) {
    const std::string msg = error_of([&] { verify_numeric(s, t, ReduceOp::sum); });
    EXPECT_HAS(msg, "wrong result (sum): rank 1 output[0]: expected ");
    EXPECT_HAS(msg, "(5 wrong elements)");
  }
  EXPECT_HAS(error_of([&] { verify_symbolic(s); }), "(missing 1)");
}

TEST(Reference, ManyRanksStructureOnly) {
  // A dissemination barrier at p = 4096: 12 rounds, causality tracked.
  const ListSchedule s = dissemination_barrier(4096);
  const ExecutionStats st = check_structure(s);
  EXPECT_EQ(st.max_comm_steps, 12);
  EXPECT_EQ(st.total_messages, 4096 * 12);
  EXPECT_TRUE(st.barrier_causality_checked);
}

TEST(Reference, OutOfBoundsRegionIsRejected) {
  const ListSchedule s(make_spec(Collective::all_reduce, 2, 3),
                       {{Step{{send_op(1, in(1, 3))}}}, {Step{{recv_op(0, out(0, 3))}}}});
  const std::string msg = error_of([&] { check_structure(s); });
  EXPECT_HAS(msg, "rank 0, step 0, op 0");
  EXPECT_HAS(msg, "input[1,+3) is out of bounds (input has 3 elements)");
  const ListSchedule neg(make_spec(Collective::all_reduce, 1, 3),
                         {{Step{{copy_op(in(0, 3), out(-1, 3))}}}});
  EXPECT_HAS(error_of([&] { check_structure(neg); }), "out of bounds");
  const ListSchedule scratch(make_spec(Collective::all_reduce, 1, 3),
                             {{Step{{copy_op(in(0, 3), scr(0, 3))}}}}, {2});
  EXPECT_HAS(error_of([&] { check_structure(scratch); }), "scratch has 2 elements");
}

TEST(Reference, BadPeerIsRejected) {
  const ListSchedule self(make_spec(Collective::all_reduce, 2, 1),
                          {{Step{{send_op(0, in(0, 1))}}}, {}});
  EXPECT_HAS(error_of([&] { check_structure(self); }), "peer is the rank itself");
  const ListSchedule range(make_spec(Collective::all_reduce, 2, 1),
                           {{Step{{recv_op(2, out(0, 1))}}}, {}});
  EXPECT_HAS(error_of([&] { check_structure(range); }), "peer 2 is out of range [0,2)");
}

TEST(Reference, ReadOfNeverWrittenScratchIsRejected) {
  const ListSchedule s(make_spec(Collective::all_reduce, 2, 2),
                       {{Step{{copy_op(in(0, 1), scr(0, 1))}}, Step{{send_op(1, scr(0, 2))}}},
                        {Step{{recv_op(0, out(0, 2))}}}},
                       {2, 0});
  const std::string msg = error_of([&] { verify_symbolic(s); });
  EXPECT_HAS(msg, "rank 0, step 1, op 0");
  EXPECT_HAS(msg, "reads uninitialised element scratch[1]");
}

TEST(Reference, ReadOfNeverWrittenOutputIsRejected) {
  // Local copy from output, recv-reduce into output and local reduce into
  // output all read it.
  const ListSchedule copy(make_spec(Collective::all_reduce, 1, 2),
                          {{Step{{copy_op(out(0, 1), out(1, 1))}}}});
  EXPECT_HAS(error_of([&] { check_structure(copy); }), "reads uninitialised element output[0]");
  const ListSchedule recv_reduce(
      make_spec(Collective::all_reduce, 2, 1),
      {{Step{{send_op(1, in(0, 1))}}}, {Step{{recv_op(0, out(0, 1), Combine::reduce)}}}});
  EXPECT_HAS(error_of([&] { check_structure(recv_reduce); }), "recv-reduce destination");
  const ListSchedule local_reduce(make_spec(Collective::all_reduce, 1, 2),
                                  {{Step{{reduce_op(in(0, 2), out(0, 2))}}}});
  EXPECT_HAS(error_of([&] { check_structure(local_reduce); }),
             "reduce destination output[0,+2) reads uninitialised element output[0]");
}

TEST(Reference, LocalOpsRunInOrderAfterCommunication) {
  // The copy into scratch precedes the copy out of it in the same step.
  const ListSchedule s(make_spec(Collective::all_reduce, 1, 2),
                       {{Step{{copy_op(in(0, 2), scr(0, 2)), copy_op(scr(0, 2), out(0, 2))}}}},
                       {2});
  EXPECT_NO_THROW(verify_numeric(s, DType::float64, ReduceOp::max));
  EXPECT_NO_THROW(verify_symbolic(s));
}

TEST(Reference, OutputNeverWrittenIsRejected) {
  const ListSchedule s(make_spec(Collective::all_reduce, 1, 3),
                       {{Step{{copy_op(in(0, 2), out(0, 2))}}}});
  EXPECT_HAS(error_of([&] { verify_numeric(s, DType::int32, ReduceOp::sum); }),
             "rank 0 output[2] is never written");
}

// p=2 all_reduce: exchange inputs into output and reduce; `extra` appends a
// local reduce of the own input once more.
ListSchedule exchange_all_reduce(bool extra) {
  auto steps = [extra](int r) {
    std::vector<Step> s{
        Step{{copy_op(in(0, 2), out(0, 2))}},
        Step{{send_op(1 - r, in(0, 2)), recv_op(1 - r, out(0, 2), Combine::reduce)}}};
    if (extra) s.push_back(Step{{reduce_op(in(0, 2), out(0, 2))}});
    return s;
  };
  return ListSchedule(make_spec(Collective::all_reduce, 2, 2), {steps(0), steps(1)});
}

TEST(Reference, DoubleCountedContributionInSymbolicMode) {
  EXPECT_NO_THROW(verify_symbolic(exchange_all_reduce(false)));
  const std::string msg = error_of([&] { verify_symbolic(exchange_all_reduce(true)); });
  EXPECT_HAS(msg, "contribution counted twice");
  EXPECT_HAS(msg, "rank 0, step 2, op 0");
  EXPECT_HAS(msg, "already holds (rank 0, index 0)");
  // max is idempotent, so only the symbolic mode sees this bug.
  EXPECT_NO_THROW(verify_numeric(exchange_all_reduce(true), DType::int32, ReduceOp::max));
  EXPECT_HAS(
      error_of([&] { verify_numeric(exchange_all_reduce(true), DType::int32, ReduceOp::sum); }),
      "wrong result");
}

TEST(Reference, WrongResultIsReported) {
  // all_gather with the two blocks swapped at rank 1.
  auto gather = [](bool swap) {
    const int b0 = swap ? 1 : 0;
    const int b1 = 1 - b0;
    return ListSchedule(make_spec(Collective::all_gather, 2, 2),
                        {{Step{{copy_op(in(0, 1), out(0, 1))}},
                          Step{{send_op(1, in(0, 1)), recv_op(1, out(1, 1))}}},
                         {Step{{copy_op(in(0, 1), out(b1, 1))}},
                          Step{{send_op(0, in(0, 1)), recv_op(0, out(b0, 1))}}}});
  };
  EXPECT_NO_THROW(verify_numeric(gather(false), DType::int32, ReduceOp::sum));
  EXPECT_NO_THROW(verify_symbolic(gather(false)));
  // Values may coincide at one element, so numeric reports 1 or 2 wrong.
  EXPECT_HAS(error_of([&] { verify_numeric(gather(true), DType::int32, ReduceOp::sum, 7); }),
             "wrong result (sum): rank 1 output[");
  const std::string sym = error_of([&] { verify_symbolic(gather(true)); });
  EXPECT_HAS(sym, "rank 1 output[0]: expected {(rank 0, index 0)}, got index 0 from 1 ranks {1}");
  EXPECT_HAS(sym, "(2 wrong elements)");
  // A reduction that misses rank 2's contribution.
  const ListSchedule partial(
      make_spec(Collective::reduce, 3, 1),
      {{Step{{copy_op(in(0, 1), out(0, 1))}}, Step{{recv_op(1, out(0, 1), Combine::reduce)}}},
       {Step{{send_op(0, in(0, 1))}}},
       {}});
  EXPECT_HAS(error_of([&] { verify_symbolic(partial); }),
             "expected index 0 from all 3 ranks, got index 0 from 2 ranks {0,1} (missing 2)");
}

TEST(Reference, HazardInAStepIsRejected) {
  // The recv lands on part of what the same step sends.
  const ListSchedule s(make_spec(Collective::all_reduce, 2, 3),
                       {{Step{{copy_op(in(0, 3), out(0, 3))}},
                         Step{{send_op(1, out(1, 2)), recv_op(1, out(0, 2), Combine::reduce)}}},
                        {Step{{copy_op(in(0, 3), out(0, 3))}},
                         Step{{send_op(0, out(0, 2)), recv_op(0, scr(0, 2))}}}},
                       {0, 2});
  const std::string msg = error_of([&] { check_structure(s); });
  EXPECT_HAS(msg, "rank 0, step 1, op 1");
  EXPECT_HAS(msg, "hazard: recv destination output[0,+2) overlaps output[1,+2) of op 0");
  // Two recvs into overlapping regions.
  const ListSchedule two(make_spec(Collective::all_gather, 3, 3),
                         {{Step{{recv_op(1, out(0, 2)), recv_op(2, out(1, 1))}}}, {}, {}});
  EXPECT_HAS(error_of([&] { check_structure(two); }), "hazard");
  // A recv into the region a later local op of the step reads.
  const ListSchedule local(make_spec(Collective::all_reduce, 2, 1),
                           {{Step{{recv_op(1, scr(0, 1)), reduce_op(scr(0, 1), out(0, 1))}}}, {}},
                           {1, 0});
  EXPECT_HAS(error_of([&] { check_structure(local); }), "overlaps scratch[0,+1) of op 1");
  // Local copy onto itself.
  const ListSchedule self_copy(
      make_spec(Collective::all_reduce, 1, 4),
      {{Step{{copy_op(in(0, 4), out(0, 4))}}, Step{{copy_op(out(0, 2), out(1, 2))}}}});
  EXPECT_HAS(error_of([&] { check_structure(self_copy); }), "source and destination overlap");
}

TEST(Reference, DisjointRegionsInOneStepAreFine) {
  // Two sends reading the same region and a recv next to it.
  const ListSchedule s(
      make_spec(Collective::broadcast, 3, 4),
      {{Step{{copy_op(in(0, 4), out(0, 4))}}, Step{{send_op(1, out(0, 4)), send_op(2, out(0, 4))}}},
       {Step{{recv_op(0, out(0, 4))}}},
       {Step{{recv_op(0, out(0, 2)), recv_op(0, out(2, 2))}}}});
  EXPECT_HAS(error_of([&] { check_structure(s); }), "receives 2 elements");
  const ListSchedule fixed(
      make_spec(Collective::broadcast, 3, 4),
      {{Step{{copy_op(in(0, 4), out(0, 4))}},
        Step{{send_op(1, out(0, 4)), send_op(2, out(0, 2)), send_op(2, out(2, 2))}}},
       {Step{{recv_op(0, out(0, 4))}}},
       {Step{{recv_op(0, out(0, 2)), recv_op(0, out(2, 2))}}}});
  EXPECT_NO_THROW(verify_numeric(fixed, DType::int32, ReduceOp::sum));
  EXPECT_NO_THROW(verify_symbolic(fixed));
}

TEST(Reference, DisseminationBarrierPasses) {
  for (int p : {1, 2, 3, 5, 8, 17}) {
    const ListSchedule s = dissemination_barrier(p);
    const ExecutionStats st = check_structure(s);
    EXPECT_TRUE(st.barrier_causality_checked);
    EXPECT_NO_THROW(verify_numeric(s, DType::int32, ReduceOp::sum)) << p;
    EXPECT_NO_THROW(verify_symbolic(s)) << p;
  }
}

TEST(Reference, BarrierThatIsNotABarrierIsRejected) {
  // A chain 0 -> 1 -> 2: rank 2 hears from everyone, rank 0 from no one.
  const ListSchedule chain(make_spec(Collective::barrier, 3, 0),
                           {{Step{{send_op(1, in(0, 0))}}},
                            {Step{{recv_op(0, out(0, 0))}}, Step{{send_op(2, in(0, 0))}}},
                            {Step{{recv_op(1, out(0, 0))}}}});
  const std::string msg = error_of([&] { check_structure(chain); });
  EXPECT_HAS(msg, "not a barrier: rank 0 can complete before rank 1 starts");
  // A send and receive in the same step do not make the receiver's message
  // carry what it receives: a ring where each rank only forwards within one
  // step reaches a single neighbour.
  std::vector<std::vector<Step>> ring(4);
  for (int r = 0; r < 4; ++r)
    ring[static_cast<std::size_t>(r)].push_back(
        Step{{send_op((r + 1) % 4, in(0, 0)), recv_op((r + 3) % 4, out(0, 0))}});
  EXPECT_HAS(error_of([&] {
               verify_numeric(ListSchedule(make_spec(Collective::barrier, 4, 0), std::move(ring)),
                              DType::int32, ReduceOp::sum);
             }),
             "not a barrier");
}

TEST(Reference, EmptyStepsAndZeroRanksOfWork) {
  const ListSchedule s(make_spec(Collective::all_reduce, 2, 0), {{Step{}, Step{}}, {}});
  const ExecutionStats st = verify_symbolic(s);
  EXPECT_EQ(st.max_steps, 2);
  EXPECT_EQ(st.max_comm_steps, 0);
  EXPECT_EQ(st.total_messages, 0);
}

// A program that throws mid-way.
class ThrowingSchedule final : public Schedule {
 public:
  ThrowingSchedule() : Schedule(make_spec(Collective::all_reduce, 1, 1)) {}
  Generator<Step> program(int) const override { return gen(); }

 protected:
  std::int64_t scratch_size(int) const override { return 0; }

 private:
  static Generator<Step> gen() {
    // Built outside co_yield: GCC 12 miscompiles braced initializer lists
    // in a co_yield operand ("array used as initializer").
    Step step;
    step.ops.push_back(copy_op(in(0, 1), out(0, 1)));
    co_yield step;
    throw ScheduleError("generator bug");
  }
};

TEST(Reference, ErrorsFromGeneratorsPropagate) {
  EXPECT_HAS(error_of([] { check_structure(ThrowingSchedule()); }), "generator bug");
}

TEST(Reference, DtypeAndOpNames) {
  EXPECT_EQ(to_string(DType::float32), "float");
  EXPECT_EQ(to_string(DType::float64), "double");
  EXPECT_EQ(to_string(ReduceOp::prod), "prod");
}

}  // namespace
}  // namespace collkit
