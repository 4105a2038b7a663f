// The real executor on the loopback transport: every registered (collective,
// algorithm, variant) at several p, roots and counts (including counts not
// divisible by p), out of place and in place, against a naive computation of
// the collective; plus hand-written schedules for the executor's own rules
// (reducing receives, step ordering, error reports).
#include "realrun/executor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "core/error.h"
#include "realrun/loopback.h"
#include "tests/realrun/list_schedule.h"
#include "tests/realrun/oracle.h"

namespace collkit::realrun {
namespace {

using testing_oracle::Case;
using testing_oracle::naive_input;
using testing_oracle::naive_output;
using testing_oracle::registered_cases;
using testing_oracle::Values;

// Runs `schedule` on every rank with the given int64 inputs; returns outputs.
std::vector<Values> run_all(const Schedule& schedule, const std::vector<Values>& inputs, RedOp op,
                            bool in_place) {
  const int p = schedule.ranks();
  std::vector<Values> outputs(p);
  LoopbackWorld world(p, std::chrono::seconds(20));
  world.run([&](int rank, Transport& t) {
    Executor ex(schedule, rank, DataType::int64, op, in_place);
    // Input first: in place, the output aliases (part of) it.
    if (!ex.input().empty()) std::memcpy(ex.input().data(), inputs[rank].data(), ex.input().size());
    // Make sure every output element not aliased to the input is written.
    if (!in_place && !ex.output().empty())
      std::memset(ex.output().data(), 0x5A, ex.output().size());
    ex.run(t);
    outputs[rank].resize(ex.output().size() / 8);
    if (!ex.output().empty())
      std::memcpy(outputs[rank].data(), ex.output().data(), ex.output().size());
  });
  return outputs;
}

class RegisteredScheduleTest : public ::testing::TestWithParam<Case> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RegisteredScheduleTest);

TEST_P(RegisteredScheduleTest, ComputesTheCollectiveOnLoopback) {
  const Case& tc = GetParam();
  const Collective c = tc.collective;
  for (int p : {1, 2, 3, 4, 5, 7, 8}) {
    std::vector<int> roots{0};
    if (is_rooted(c) && p > 1) roots = {0, p - 1, p / 2};
    std::vector<std::int64_t> counts{0, 1, p - 1, p + 1, 5 * p + 3};
    if (c == Collective::barrier) counts = {0};
    for (int root : roots) {
      for (std::int64_t n : counts) {
        ScheduleSpec spec;
        spec.collective = c;
        spec.algorithm = tc.algorithm;
        spec.ranks = p;
        spec.root = root;
        spec.count = n;
        spec.elem_size = 8;
        std::unique_ptr<Schedule> s = make_schedule(spec);
        std::vector<Values> in;
        for (int r = 0; r < p; ++r) in.push_back(naive_input(c, p, r, root, n));
        const RedOp op = is_reduction(c) ? (n % 2 ? RedOp::max : RedOp::sum) : RedOp::sum;
        const std::string where = std::string(to_string(c)) + " " + tc.algorithm +
                                  " p=" + std::to_string(p) + " root=" + std::to_string(root) +
                                  " n=" + std::to_string(n);
        // The simulator's cache model weighs Schedule::working_set; it must
        // be what the executor allocates (four areas of the compiled plan).
        for (int r = 0; r < p; ++r) {
          const CompiledPlan plan = compile_plan(*s, r, DataType::int64, op, false);
          EXPECT_EQ(s->working_set(r) * 8,
                    plan.input_bytes + plan.output_bytes + plan.scratch_bytes + plan.temp_bytes)
              << where << " rank " << r;
        }
        const auto outputs = run_all(*s, in, op, false);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(outputs[r], naive_output(c, op, p, r, root, n, in)) << where << " rank " << r;

        // In place wherever every rank's program allows it.
        bool in_place_ok = true;
        for (int r = 0; r < p && in_place_ok; ++r)
          in_place_ok = in_place_hazard(*s, r, in_place_layout(c, p, r, root, n)).empty();
        if (!in_place_ok) continue;
        const auto outputs_ip = run_all(*s, in, op, true);
        for (int r = 0; r < p; ++r)
          ASSERT_EQ(outputs_ip[r], naive_output(c, op, p, r, root, n, in))
              << where << " in place, rank " << r;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, RegisteredScheduleTest, ::testing::ValuesIn(registered_cases()),
                         [](const auto& info) {
                           std::string name = std::string(to_string(info.param.collective)) + "_" +
                                              info.param.algorithm;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

using testing_oracle::ListSchedule;

ScheduleSpec spec_of(Collective c, int p, std::int64_t n) {
  ScheduleSpec s;
  s.collective = c;
  s.algorithm = "hand";
  s.ranks = p;
  s.count = n;
  s.elem_size = 8;
  return s;
}

// Two-rank all_reduce: exchange halves with reducing receives, then exchange
// the reduced halves; the second step's sends read what the first step's
// reducing receives produced.
std::vector<std::vector<Step>> two_rank_all_reduce(std::int64_t n) {
  const std::int64_t h = n / 2;
  std::vector<std::vector<Step>> steps(2);
  for (int r = 0; r < 2; ++r) {
    const int peer = 1 - r;
    const Region mine{Buf::output, r == 0 ? 0 : h, r == 0 ? h : n - h};
    const Region theirs{Buf::output, r == 0 ? h : 0, r == 0 ? n - h : h};
    steps[r].push_back(Step{{copy_op({Buf::input, 0, n}, {Buf::output, 0, n})}});
    steps[r].push_back(Step{{send_op(peer, theirs), recv_op(peer, mine, Combine::reduce)}});
    steps[r].push_back(Step{{send_op(peer, mine), recv_op(peer, theirs)}});
  }
  return steps;
}

TEST(ExecutorTest, ReducingReceivesAndStepOrder) {
  for (std::int64_t n : {0, 1, 2, 9}) {
    ListSchedule s(spec_of(Collective::all_reduce, 2, n), two_rank_all_reduce(n));
    std::vector<Values> in{naive_input(Collective::all_reduce, 2, 0, 0, n),
                           naive_input(Collective::all_reduce, 2, 1, 0, n)};
    for (RedOp op : kAllRedOps) {
      const auto out = run_all(s, in, op, false);
      for (int r = 0; r < 2; ++r)
        EXPECT_EQ(out[r], naive_output(Collective::all_reduce, op, 2, r, 0, n, in)) << n;
      // The leading copy is input -> output at the same address: in place it
      // writes nothing, and nothing reads the input afterwards.
      EXPECT_EQ(in_place_hazard(s, 0, in_place_layout(Collective::all_reduce, 2, 0, 0, n)), "");
      const auto ip = run_all(s, in, op, true);
      EXPECT_EQ(ip, out);
    }
  }
}

// The executor sends an untouched copy of the input from the input itself
// (copy propagation); a send after any write to the copy must see the write.
// Rank 0 copies its input to the output, sends part of the untouched copy,
// doubles the output by a local reduce from scratch, then sends the doubled part; rank 1
// keeps what it receives in its output, half from each message.
TEST(ExecutorTest, SendsOfACopySeeLaterWrites) {
  const std::int64_t n = 6;
  std::vector<std::vector<Step>> steps(2);
  const Region whole_in{Buf::input, 0, n}, whole_out{Buf::output, 0, n};
  const Region first{Buf::output, 1, 3}, second{Buf::output, 2, 3};
  steps[0].push_back(Step{{copy_op(whole_in, whole_out)}});
  steps[0].push_back(Step{{send_op(1, first)}});
  steps[0].push_back(Step{{copy_op(whole_in, {Buf::scratch, 0, n})}});
  steps[0].push_back(Step{{reduce_op({Buf::scratch, 0, n}, whole_out)}});
  steps[0].push_back(Step{{send_op(1, second)}});
  steps[1].push_back(Step{{copy_op(whole_in, whole_out)}});
  steps[1].push_back(Step{{recv_op(0, {Buf::output, 0, 3})}});
  steps[1].push_back(Step{{recv_op(0, {Buf::output, 3, 3})}});
  ListSchedule s(spec_of(Collective::all_reduce, 2, n), steps, n);
  std::vector<Values> in{{10, 11, 12, 13, 14, 15}, {20, 21, 22, 23, 24, 25}};
  const auto out = run_all(s, in, RedOp::sum, false);
  EXPECT_EQ(out[0], (Values{20, 22, 24, 26, 28, 30}));
  EXPECT_EQ(out[1], (Values{11, 12, 13, 24, 26, 28}));
}

TEST(ExecutorTest, HalfAndBfloat16ReduceInFloat) {
  // 1 + 2048 is not a half; the sum of two halves rounds once, to even.
  ListSchedule s(spec_of(Collective::all_reduce, 2, 2), two_rank_all_reduce(2));
  ScheduleSpec spec = s.spec();
  spec.elem_size = 2;
  ListSchedule s2(spec, two_rank_all_reduce(2));
  LoopbackWorld world(2);
  std::vector<std::uint16_t> result(4);
  world.run([&](int rank, Transport& t) {
    Executor ex(s2, rank, DataType::half, RedOp::sum);
    const std::uint16_t v[2] = {static_cast<std::uint16_t>(rank == 0 ? 0x6800 : 0x3C00),
                                0x3C00};  // {2048 or 1, 1}
    std::memcpy(ex.input().data(), v, 4);
    ex.run(t);
    std::memcpy(&result[2 * rank], ex.output().data(), 4);
  });
  EXPECT_EQ(result[0], 0x6800);  // 2049 ties to even: 2048
  EXPECT_EQ(result[1], 0x4000);  // 2
  EXPECT_EQ(result[2], result[0]);
  EXPECT_EQ(result[3], result[1]);
}

TEST(ExecutorTest, InPlaceHazardIsDetected) {
  // Writes the whole output from the peer, then sends its input: in place the
  // input has been overwritten by then.
  const std::int64_t n = 4;
  std::vector<std::vector<Step>> steps(2);
  for (int r = 0; r < 2; ++r) {
    steps[r].push_back(
        Step{{recv_op(1 - r, {Buf::output, 0, n}), send_op(1 - r, {Buf::input, 0, n})}});
    steps[r].push_back(Step{{reduce_op({Buf::input, 0, n}, {Buf::output, 0, n})}});
  }
  ListSchedule s(spec_of(Collective::all_reduce, 2, n), steps);
  const std::string why =
      in_place_hazard(s, 0, in_place_layout(Collective::all_reduce, 2, 0, 0, n));
  EXPECT_NE(why.find("reads input"), std::string::npos) << why;
  std::vector<Values> in{naive_input(Collective::all_reduce, 2, 0, 0, n),
                         naive_input(Collective::all_reduce, 2, 1, 0, n)};
  const auto out = run_all(s, in, RedOp::sum, false);
  EXPECT_EQ(out[0], naive_output(Collective::all_reduce, RedOp::sum, 2, 0, 0, n, in));
  EXPECT_FALSE(in_place_layout(Collective::all_to_all, 2, 0, 0, n).defined);
}

TEST(ExecutorTest, RegionOutsideItsBufferNamesTheOp) {
  std::vector<std::vector<Step>> steps(1);
  steps[0].push_back(Step{{copy_op({Buf::input, 2, 3}, {Buf::output, 0, 3})}});
  ListSchedule s(spec_of(Collective::all_reduce, 1, 4), steps);
  try {
    Executor ex(s, 0, DataType::int64, RedOp::sum);
    FAIL() << "no error";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 step 0 op 0 (copy)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("input[2, +3)"), std::string::npos) << e.what();
  }
}

TEST(ExecutorTest, MismatchedElementSizeIsRejected) {
  ListSchedule s(spec_of(Collective::all_reduce, 2, 4), two_rank_all_reduce(4));
  EXPECT_THROW(Executor(s, 0, DataType::float32, RedOp::sum), UsageError);
}

TEST(ExecutorTest, DeadlockIsReportedNotHung) {
  // Both ranks receive first, in separate steps from their sends.
  std::vector<std::vector<Step>> steps(2);
  for (int r = 0; r < 2; ++r) {
    steps[r].push_back(Step{{recv_op(1 - r, {Buf::output, 0, 1})}});
    steps[r].push_back(Step{{send_op(1 - r, {Buf::input, 0, 1})}});
  }
  ListSchedule s(spec_of(Collective::all_reduce, 2, 1), steps);
  LoopbackWorld world(2, std::chrono::milliseconds(200));
  EXPECT_THROW(world.run([&](int rank, Transport& t) {
    Executor ex(s, rank, DataType::int64, RedOp::sum);
    ex.run(t);
  }),
               RuntimeFailure);
}

TEST(ExecutorTest, MismatchedMessageSizeIsAnError) {
  std::vector<std::vector<Step>> steps(2);
  steps[0].push_back(Step{{send_op(1, {Buf::input, 0, 2})}});
  steps[1].push_back(Step{{recv_op(0, {Buf::output, 0, 1})}});
  ListSchedule s(spec_of(Collective::all_reduce, 2, 2), steps);
  LoopbackWorld world(2, std::chrono::seconds(5));
  try {
    world.run([&](int rank, Transport& t) {
      Executor ex(s, rank, DataType::int64, RedOp::sum);
      ex.run(t);
    });
    FAIL() << "no error";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("expects 8 bytes from rank 0 but it sent 16"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace collkit::realrun
