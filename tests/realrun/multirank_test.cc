// The single-process multi-rank driver (the cuda backend's orchestration)
// on host memory: every registered (collective, algorithm, variant) for
// p = 2..8, several roots and counts not divisible by p, out of place and in
// place, run by HostStreams in random orders that respect only the streams
// and events (so a missing wait shows up as a wrong result), against the
// collective's definition. Plus: every type and op through the check data,
// the fused receive-reduce-copy, deadlock and size-mismatch reports, and a
// mutation test proving that dropping the event waits is caught.
#include "realrun/multirank.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "core/error.h"
#include "realrun/check_data.h"
#include "realrun/executor.h"
#include "realrun/loopback.h"
#include "realrun/plan.h"
#include "tests/realrun/host_rank.h"
#include "tests/realrun/list_schedule.h"
#include "tests/realrun/oracle.h"

namespace collkit::realrun {
namespace {

using testing_oracle::Case;
using testing_oracle::HostRank;
using testing_oracle::naive_input;
using testing_oracle::naive_output;
using testing_oracle::registered_cases;
using testing_oracle::Values;

// Host memory: every rank can read every other's.
bool host_can_read(void*, int, int) { return true; }

// All ranks of one schedule in one process; `direct`: receives that reduce
// read the sender's buffer (no temp copy) where the compiler allows it.
struct World {
  World(const Schedule& s, DataType type, RedOp op, bool in_place, bool direct = false,
        bool release_at_step_end = false) {
    for (int r = 0; r < s.ranks(); ++r) plans.push_back(compile_plan(s, r, type, op, in_place));
    for (const CompiledPlan& p : plans) ptrs.push_back(&p);
    for (const CompiledPlan& p : plans) ranks.push_back(std::make_unique<HostRank>(p));
    for (const auto& r : ranks) bases.push_back(r->bases);
    program =
        compile_multirank(ptrs, direct ? &host_can_read : nullptr, nullptr, release_at_step_end);
  }
  void run(std::uint64_t seed, int iterations = 1) {
    HostStreams engine(static_cast<int>(plans.size()),
                       static_cast<int>(program.event_stream.size()));
    for (int i = 0; i < iterations; ++i) replay(program, ptrs, bases, engine);
    engine.run_all(seed);
  }
  std::vector<CompiledPlan> plans;
  std::vector<const CompiledPlan*> ptrs;
  std::vector<std::unique_ptr<HostRank>> ranks;
  std::vector<AreaBases> bases;
  MultiRankProgram program;
};

std::unique_ptr<Schedule> schedule(Collective c, const std::string& algorithm, int p, int root,
                                   std::int64_t n, int elem_size) {
  ScheduleSpec spec;
  spec.collective = c;
  spec.algorithm = algorithm;
  spec.ranks = p;
  spec.root = root;
  spec.count = n;
  spec.elem_size = elem_size;
  return make_schedule(spec);
}

std::vector<Values> run_world(const Schedule& s, const std::vector<Values>& in, RedOp op,
                              bool in_place, std::uint64_t seed, bool direct = false,
                              bool release_at_step_end = false) {
  World w(s, DataType::int64, op, in_place, direct, release_at_step_end);
  for (int r = 0; r < s.ranks(); ++r) {
    const CompiledPlan& p = w.plans[r];
    if (!in_place && p.output_bytes > 0)
      std::memset(w.ranks[r]->output(), 0x5A, static_cast<std::size_t>(p.output_bytes));
    if (p.input_bytes > 0)
      std::memcpy(w.ranks[r]->input(), in[r].data(), static_cast<std::size_t>(p.input_bytes));
  }
  w.run(seed);
  std::vector<Values> out(s.ranks());
  for (int r = 0; r < s.ranks(); ++r) {
    out[r].resize(static_cast<std::size_t>(w.plans[r].output_bytes / 8));
    if (!out[r].empty()) std::memcpy(out[r].data(), w.ranks[r]->output(), out[r].size() * 8);
  }
  return out;
}

class MultiRankScheduleTest : public ::testing::TestWithParam<Case> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MultiRankScheduleTest);

TEST_P(MultiRankScheduleTest, ComputesTheCollectiveOnSimulatedStreams) {
  const Case& tc = GetParam();
  const Collective c = tc.collective;
  for (int p = 2; p <= 8; ++p) {
    std::vector<int> roots{0};
    if (is_rooted(c)) roots = {0, p - 1, p / 2};
    std::vector<std::int64_t> counts{0, 1, p - 1, p, p + 1, 5 * p + 3};
    if (c == Collective::barrier) counts = {0};
    for (int root : roots) {
      for (std::int64_t n : counts) {
        const auto s = schedule(c, tc.algorithm, p, root, n, 8);
        std::vector<Values> in;
        for (int r = 0; r < p; ++r) in.push_back(naive_input(c, p, r, root, n));
        const RedOp op = is_reduction(c) ? (n % 2 ? RedOp::max : RedOp::sum) : RedOp::sum;
        const std::string where = std::string(to_string(c)) + " " + tc.algorithm +
                                  " p=" + std::to_string(p) + " root=" + std::to_string(root) +
                                  " n=" + std::to_string(n);
        bool in_place_ok = true;
        for (int r = 0; r < p && in_place_ok; ++r)
          in_place_ok = in_place_hazard(*s, r, in_place_layout(c, p, r, root, n)).empty();
        for (std::uint64_t seed : {1u, 2u}) {
          // Copies into temp with seed 1, reduces straight from the senders
          // with seed 2.
          const bool direct = seed == 2;
          const std::string how = direct ? " direct" : "";
          const auto out = run_world(*s, in, op, false, seed * 7919 + p, direct);
          for (int r = 0; r < p; ++r)
            ASSERT_EQ(out[r], naive_output(c, op, p, r, root, n, in))
                << where << how << " seed " << seed << " rank " << r;
          if (!in_place_ok) continue;
          const auto ip = run_world(*s, in, op, true, seed * 104729 + p, direct);
          for (int r = 0; r < p; ++r)
            ASSERT_EQ(ip[r], naive_output(c, op, p, r, root, n, in))
                << where << how << " in place, seed " << seed << " rank " << r;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, MultiRankScheduleTest, ::testing::ValuesIn(registered_cases()),
                         [](const auto& info) {
                           std::string name = std::string(to_string(info.param.collective)) + "_" +
                                              info.param.algorithm;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// Every type and op through the bench's own check data (the values and
// expected results the cuda backend uses), for the reducing collectives'
// first registered algorithms, p = 3 and 5, several iterations in a row (so
// one iteration's streams overlapping the next is exercised too).
TEST(MultiRankTest, EveryTypeAndOpMatchesTheCheckData) {
  for (Collective c : {Collective::all_reduce, Collective::reduce_scatter, Collective::reduce}) {
    for (const std::string& algorithm : expand_algorithms(c, "all", false)) {
      for (int p : {3, 5}) {
        for (DataType t : kAllDataTypes) {
          for (RedOp op : kAllRedOps) {
            const std::int64_t n = 4 * p + 3;
            const int root = p - 1;
            const auto s = schedule(c, algorithm, p, root, n, size_of(t));
            World w(*s, t, op, false, static_cast<int>(op) % 2 == 1);
            for (int r = 0; r < p; ++r) {
              fill_check_input(
                  c, t, op, p, r, 3,
                  {w.ranks[r]->input(), static_cast<std::size_t>(w.plans[r].input_bytes)});
              poison({w.ranks[r]->output(), static_cast<std::size_t>(w.plans[r].output_bytes)});
            }
            w.run(static_cast<std::uint64_t>(p) * 31 + static_cast<int>(t), 1);
            for (int r = 0; r < p; ++r) {
              std::vector<std::byte> expected(static_cast<std::size_t>(w.plans[r].output_bytes));
              expected_output(c, t, op, p, r, root, n, 3, expected);
              const std::span<const std::byte> got{w.ranks[r]->output(), expected.size()};
              EXPECT_EQ(count_wrong(t, got, expected), 0)
                  << to_string(c) << " " << algorithm << " p=" << p << " " << to_string(t) << " "
                  << to_string(op) << " rank " << r;
            }
          }
        }
      }
    }
  }
}

// Without its event waits, the program must be caught computing garbage:
// the random stream interleavings of HostStreams are a real test.
TEST(MultiRankTest, DroppingTheWaitsIsCaught) {
  for (bool direct : {false, true}) {
    const int p = 4;
    const std::int64_t n = 64;
    const auto s = schedule(Collective::all_reduce, "ring", p, 0, n, 8);
    std::vector<Values> in;
    for (int r = 0; r < p; ++r) in.push_back(naive_input(Collective::all_reduce, p, r, 0, n));
    int wrong_runs = 0;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      World w(*s, DataType::int64, RedOp::sum, false, direct);
      std::erase_if(w.program.cmds, [](const StreamCmd& c) { return c.kind == CmdKind::wait; });
      for (int r = 0; r < p; ++r)
        std::memcpy(w.ranks[r]->input(), in[r].data(), static_cast<std::size_t>(n * 8));
      w.run(seed);
      bool wrong = false;
      for (int r = 0; r < p; ++r) {
        Values out(n);
        std::memcpy(out.data(), w.ranks[r]->output(), static_cast<std::size_t>(n * 8));
        wrong |= out != naive_output(Collective::all_reduce, RedOp::sum, p, r, 0, n, in);
      }
      wrong_runs += wrong ? 1 : 0;
    }
    EXPECT_GT(wrong_runs, 0) << "no seed exposed the missing waits" << (direct ? " (direct)" : "");
  }
}

// A sender waits for its receivers only before it overwrites what they read:
// in ring all_reduce's reduce-scatter half no rank writes a block it sent,
// so each step has one wait (the sender's "ready") where waiting at the end
// of every step adds one per step. Both orders compute the collective.
TEST(MultiRankTest, SendersWaitForReadersOnlyBeforeOverwriting) {
  const int p = 8;
  const std::int64_t n = 8000;
  const auto s = schedule(Collective::all_reduce, "ring", p, 0, n, 8);
  for (bool direct : {false, true}) {
    std::int64_t waits[2] = {0, 0};  // [release_at_step_end] on stream 0 in the first half
    std::int64_t total[2] = {0, 0};
    for (bool step_end : {false, true}) {
      World w(*s, DataType::int64, RedOp::sum, false, direct, step_end);
      int reduces = 0;
      for (const StreamCmd& c : w.program.cmds) {
        total[step_end] += c.kind == CmdKind::wait;
        // Rank 0's first half: its input copy, then p - 1 reduces.
        if (c.stream != 0 || reduces == p) continue;
        reduces += c.kind == CmdKind::reduce_from || c.kind == CmdKind::local;
        waits[step_end] += c.kind == CmdKind::wait;
      }
    }
    EXPECT_EQ(waits[false], p - 1) << direct;
    // At the end of each step, a second wait: before the step's reduce where
    // it is a local one (copied into temp first), after it where it reads
    // the sender (so the last step's falls after the half).
    EXPECT_EQ(waits[true], 2 * (p - 1) - (direct ? 1 : 0)) << direct;
    EXPECT_LT(total[false], total[true]) << direct;
  }
  for (const char* algorithm : {"ring", "rabenseifner", "double_binary_tree", "linear"}) {
    for (int q = 2; q <= 8; ++q) {
      for (std::int64_t count : {std::int64_t{1}, std::int64_t{5} * q + 3}) {
        const auto t = schedule(Collective::all_reduce, algorithm, q, 0, count, 8);
        std::vector<Values> in;
        for (int r = 0; r < q; ++r)
          in.push_back(naive_input(Collective::all_reduce, q, r, 0, count));
        for (bool step_end : {false, true}) {
          const std::vector<Values> out =
              run_world(*t, in, RedOp::sum, false, 7, /*direct=*/true, step_end);
          for (int r = 0; r < q; ++r)
            EXPECT_EQ(out[r], naive_output(Collective::all_reduce, RedOp::sum, q, r, 0, count, in))
                << algorithm << " p=" << q << " n=" << count << " step_end=" << step_end;
        }
      }
    }
  }
}

// Ring all_reduce reduces every received block straight from the sender:
// no temp copies in the reduce-scatter half, only the all-gather's copies.
TEST(MultiRankTest, DirectReducesReplaceTempCopies) {
  const int p = 4;
  const std::int64_t n = 4000;
  const auto s = schedule(Collective::all_reduce, "ring", p, 0, n, 4);
  World copies(*s, DataType::float32, RedOp::sum, false, false);
  World direct(*s, DataType::float32, RedOp::sum, false, true);
  EXPECT_EQ(copies.program.direct_reduces, 0);
  EXPECT_EQ(copies.program.copies, 2 * p * (p - 1));
  EXPECT_EQ(direct.program.direct_reduces, p * (p - 1));
  EXPECT_EQ(direct.program.copies, p * (p - 1));
  EXPECT_EQ(direct.program.bytes_copied * 2, copies.program.bytes_copied);
}

TEST(MultiRankTest, CommandsFollowTheRendezvousContract) {
  // Every copy is preceded, on its stream, by a wait for the sender's ready
  // event (unless the stream already waited for a later one), and every
  // waited event was recorded earlier in the list.
  const auto s = schedule(Collective::all_gather, "ring", 5, 0, 23, 4);
  World w(*s, DataType::float32, RedOp::sum, false);
  std::vector<bool> recorded(w.program.event_stream.size(), false);
  std::int64_t copies = 0;
  for (const StreamCmd& c : w.program.cmds) {
    if (c.kind == CmdKind::record) recorded[c.event] = true;
    if (c.kind == CmdKind::wait) {
      ASSERT_TRUE(recorded[c.event]) << "wait before record of event " << c.event;
      ASSERT_NE(w.program.event_stream[c.event], c.stream) << "a stream waits for itself";
    }
    if (c.kind == CmdKind::copy) ++copies;
  }
  EXPECT_EQ(copies, w.program.copies);
  // Ring all_gather: p - 1 messages per rank.
  EXPECT_EQ(copies, 5 * 4);
}

// LL messages (for the interpreter): each is pushed by an ll_send on the
// sender's stream at the post of its step, where the "data ready" record
// would be, and read by a copy or reduce_from marked ll with no wait before
// it and no "pulled" record after it. Ring all_reduce with every message LL
// has no event at all; with a limit between its two message sizes only the
// small ones are LL. The streams engines cannot run LL: replay refuses it.
TEST(MultiRankTest, LlMessagesNeedNoEvents) {
  const int p = 4;
  const auto s = schedule(Collective::all_reduce, "ring", p, 0, 4 * p + 1, 8);
  for (bool direct : {false, true}) {
    World w(*s, DataType::int64, RedOp::sum, false, direct);
    const MultiRankProgram all =
        compile_multirank(w.ptrs, direct ? &host_can_read : nullptr, nullptr, false, 1 << 30);
    EXPECT_EQ(all.ll_messages, 2 * p * (p - 1));
    EXPECT_TRUE(all.event_stream.empty()) << all.event_stream.size() << " events";
    std::int64_t sends = 0, ll_reads = 0;
    for (const StreamCmd& c : all.cmds) {
      EXPECT_NE(c.kind, CmdKind::wait);
      EXPECT_NE(c.kind, CmdKind::record);
      if (c.kind == CmdKind::ll_send) {
        ++sends;
        EXPECT_EQ(c.peer, w.plans[c.stream].sends[c.send].peer);
      }
      if (c.kind == CmdKind::copy || c.kind == CmdKind::reduce_from) {
        EXPECT_TRUE(c.ll);
        ++ll_reads;
      }
    }
    EXPECT_EQ(sends, all.ll_messages);
    EXPECT_EQ(ll_reads, all.ll_messages);
    EXPECT_THROW(replay(all, w.ptrs, w.bases, *std::make_unique<HostStreams>(p, 0)), UsageError);
    // Blocks of 5 and 4 elements: a limit of 32 bytes takes the 4s only.
    const MultiRankProgram some =
        compile_multirank(w.ptrs, direct ? &host_can_read : nullptr, nullptr, false, 32);
    std::int64_t small = 0;
    for (int r = 0; r < p; ++r)
      for (const PlanMessage& m : w.plans[r].sends) small += m.ref.bytes <= 32 ? 1 : 0;
    EXPECT_GT(small, 0);
    EXPECT_LT(small, 2 * p * (p - 1));
    EXPECT_EQ(some.ll_messages, small);
    EXPECT_FALSE(some.event_stream.empty());
  }
}

using testing_oracle::ListSchedule;

ScheduleSpec spec_of(int p, std::int64_t n) {
  ScheduleSpec s;
  s.collective = Collective::all_reduce;
  s.algorithm = "hand";
  s.ranks = p;
  s.count = n;
  s.elem_size = 8;
  return s;
}

TEST(MultiRankTest, DeadlockIsReported) {
  std::vector<std::vector<Step>> steps(2);
  for (int r = 0; r < 2; ++r) {
    steps[r].push_back(Step{{recv_op(1 - r, {Buf::output, 0, 1})}});
    steps[r].push_back(Step{{send_op(1 - r, {Buf::input, 0, 1})}});
  }
  ListSchedule s(spec_of(2, 1), steps);
  try {
    World w(s, DataType::int64, RedOp::sum, false);
    FAIL() << "no error";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0 at step 0"), std::string::npos) << e.what();
  }
}

TEST(MultiRankTest, MismatchedMessageSizeIsAnError) {
  std::vector<std::vector<Step>> steps(2);
  steps[0].push_back(Step{{send_op(1, {Buf::input, 0, 2})}});
  steps[1].push_back(Step{{recv_op(0, {Buf::output, 0, 1})}});
  ListSchedule s(spec_of(2, 2), steps);
  try {
    World w(s, DataType::int64, RedOp::sum, false);
    FAIL() << "no error";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 expects 8 bytes from rank 0 but it sent 16"),
              std::string::npos)
        << e.what();
  }
}

// Reduce a received block, then copy the result elsewhere: the plan fuses
// the two (one pass on the GPU), and both executors still compute it.
TEST(MultiRankTest, ReduceThenCopyIsFused) {
  const std::int64_t n = 6;
  std::vector<std::vector<Step>> steps(2);
  for (int r = 0; r < 2; ++r) {
    steps[r].push_back(Step{{copy_op({Buf::input, 0, n}, {Buf::scratch, 0, n})}});
    steps[r].push_back(Step{{send_op(1 - r, {Buf::input, 0, n}),
                             recv_op(1 - r, {Buf::scratch, 0, n}, Combine::reduce),
                             copy_op({Buf::scratch, 0, n}, {Buf::output, 0, n})}});
  }
  ListSchedule s(spec_of(2, n), steps, n);
  const CompiledPlan plan = compile_plan(s, 0, DataType::int64, RedOp::sum, false);
  EXPECT_EQ(plan.fused_copies, 1);
  ASSERT_EQ(plan.locals.size(), 2u);  // the scratch copy, then reduce + copy
  EXPECT_TRUE(plan.locals[1].has_also);
  EXPECT_EQ(plan.locals[1].also.area, Area::output);

  std::vector<Values> in{naive_input(Collective::all_reduce, 2, 0, 0, n),
                         naive_input(Collective::all_reduce, 2, 1, 0, n)};
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto out = run_world(s, in, RedOp::sum, false, seed);
    for (int r = 0; r < 2; ++r)
      EXPECT_EQ(out[r], naive_output(Collective::all_reduce, RedOp::sum, 2, r, 0, n, in));
  }
  // The host executor runs the fused plan too.
  LoopbackWorld world(2);
  std::vector<Values> host(2);
  world.run([&](int rank, Transport& t) {
    Executor ex(s, rank, DataType::int64, RedOp::sum);
    std::memcpy(ex.input().data(), in[rank].data(), ex.input().size());
    ex.run(t);
    host[rank].resize(n);
    std::memcpy(host[rank].data(), ex.output().data(), ex.output().size());
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(host[r], naive_output(Collective::all_reduce, RedOp::sum, 2, r, 0, n, in));
}

// Each rank sends its output and reduces the peer's into it in the same
// step: the send must see the value from before the reduce, so this step
// may not reduce straight from the sender (it falls back to the temp copy).
TEST(MultiRankTest, ReduceIntoWhatTheStepSendsIsNotDirect) {
  const std::int64_t n = 5;
  std::vector<std::vector<Step>> steps(2);
  for (int r = 0; r < 2; ++r) {
    // Through scratch, so that copy propagation does not redirect the send
    // to the input.
    steps[r].push_back(Step{{copy_op({Buf::input, 0, n}, {Buf::scratch, 0, n})}});
    steps[r].push_back(Step{{copy_op({Buf::scratch, 0, n}, {Buf::output, 0, n})}});
    steps[r].push_back(Step{{send_op(1 - r, {Buf::output, 0, n}),
                             recv_op(1 - r, {Buf::output, 0, n}, Combine::reduce)}});
  }
  ListSchedule s(spec_of(2, n), steps, n);
  std::vector<Values> in{naive_input(Collective::all_reduce, 2, 0, 0, n),
                         naive_input(Collective::all_reduce, 2, 1, 0, n)};
  World w(s, DataType::int64, RedOp::sum, false, true);
  EXPECT_EQ(w.program.direct_reduces, 0);
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const auto out = run_world(s, in, RedOp::sum, false, seed, true);
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(out[r], naive_output(Collective::all_reduce, RedOp::sum, 2, r, 0, n, in)) << seed;
  }
}

TEST(MultiRankTest, CopyOverlappingTheReduceIsNotFused) {
  const std::int64_t n = 4;
  std::vector<std::vector<Step>> steps(1);
  steps[0].push_back(Step{{copy_op({Buf::input, 0, n}, {Buf::scratch, 0, n})}});
  steps[0].push_back(Step{{reduce_op({Buf::input, 0, n}, {Buf::scratch, 0, n}),
                           copy_op({Buf::scratch, 0, n}, {Buf::scratch, 2, n})}});
  ListSchedule s(spec_of(1, n), steps, 2 * n);
  const CompiledPlan plan = compile_plan(s, 0, DataType::int64, RedOp::sum, false);
  EXPECT_EQ(plan.fused_copies, 0);
}

}  // namespace
}  // namespace collkit::realrun
