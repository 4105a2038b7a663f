// The interpreter engine on a real device: the persistent kernel runs every
// registered (collective, algorithm, variant) for p = 2..8 ranks placed
// round-robin on the visible GPUs (all "virtual" on a one-GPU machine, peer
// access between GPUs otherwise), with the bench's check data and its
// on-device comparison, several back-to-back launches (out of place) so the
// iteration counter and the flags carry over; every type and op once; and a
// program without one of its signals stops the kernel with an error instead
// of hanging. Skips without a device; tests/realrun/interpreter_test.cc runs
// the same programs on the host everywhere.
#include <gtest/gtest.h>

#ifdef COLLKIT_HAVE_CUDA

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "core/error.h"
#include "realrun/device/cuda_interpreter.h"
#include "realrun/device/cuda_util.h"
#include "realrun/device/device_rank.h"
#include "realrun/device_program.h"
#include "realrun/multirank.h"
#include "tests/realrun/oracle.h"

namespace collkit::realrun {
namespace {

using testing_oracle::Case;
using testing_oracle::registered_cases;

// One collective on the interpreter: plans, device buffers, the program.
struct DeviceWorld {
  // ll: compile_multirank's ll_max_bytes, used where every rank is on one
  // GPU (LL's slots are written once per launch; the bench does the same),
  // sent by `protocol`.
  DeviceWorld(const Schedule& s, DataType type, RedOp op, bool in_place, int lanes_wanted,
              std::int64_t ll = -1, LlProtocol protocol = LlProtocol::ll) {
    const int p = s.ranks();
    const int devices = cuda_device_count();
    for (int r = 0; r < p; ++r) plans.push_back(compile_plan(s, r, type, op, in_place));
    std::vector<int> rank_device;
    for (int r = 0; r < p; ++r) {
      ptrs.push_back(&plans[r]);
      rank_device.push_back(r % devices);
      ranks.push_back(std::make_unique<DeviceRank>(plans[r], r % devices));
      bases.push_back(ranks.back()->bases());
    }
    interpreter = std::make_unique<CudaInterpreter>(rank_device);
    problem = interpreter->problem(type);
    if (!problem.empty()) return;
    const MultiRankProgram multirank =
        compile_multirank(ptrs, &CudaInterpreter::can_read, interpreter.get(), false,
                          interpreter->devices().size() == 1 ? ll : -1);
    lanes = std::min(lanes_wanted, interpreter->max_lanes(type));
    program = compile_device_program(ptrs, multirank, lanes, true, protocol);
  }
  void load(double spin_limit_ms = CudaInterpreter::kDefaultSpinLimitMs) {
    interpreter->load(program, bases, spin_limit_ms);
  }
  cudaStream_t stream(int r) const { return interpreter->stream_of_device(interpreter->device(r)); }
  // Fills check iteration `iter`'s inputs, runs `runs` iterations, returns
  // the wrong elements (after check_errors(), which throws for a stop).
  std::int64_t run_checked(std::int64_t iter, int runs, int root, std::int64_t count) {
    const int p = static_cast<int>(plans.size());
    for (int r = 0; r < p; ++r) ranks[r]->fill_check(iter, true, stream(r));
    for (int i = 0; i < runs; ++i) interpreter->enqueue();
    for (int r = 0; r < p; ++r) {
      ranks[r]->reset_wrong(stream(r));
      ranks[r]->enqueue_check(iter, root, count, stream(r));
    }
    std::int64_t wrong = 0;
    for (int r = 0; r < p; ++r) wrong += ranks[r]->wrong(stream(r));
    interpreter->check_errors();
    return wrong;
  }
  std::vector<CompiledPlan> plans;
  std::vector<const CompiledPlan*> ptrs;
  std::vector<std::unique_ptr<DeviceRank>> ranks;
  std::vector<AreaBases> bases;
  std::unique_ptr<CudaInterpreter> interpreter;
  std::string problem;
  int lanes = 1;
  DeviceProgram program;
};

std::unique_ptr<Schedule> schedule(Collective c, const std::string& algorithm, int p, int root,
                                   std::int64_t n, DataType type) {
  ScheduleSpec spec;
  spec.collective = c;
  spec.algorithm = algorithm;
  spec.ranks = p;
  spec.root = root;
  spec.count = n;
  spec.elem_size = size_of(type);
  return make_schedule(spec);
}

class CudaInterpreterTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const std::string problem = cuda_device_problem();
    if (!problem.empty()) GTEST_SKIP() << "GPU test skipped: " << problem;
  }
};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaInterpreterTest);

TEST_P(CudaInterpreterTest, ComputesTheCollectiveInOneKernel) {
  const Case& tc = GetParam();
  const Collective c = tc.collective;
  for (int p = 2; p <= 8; ++p) {
    const int root = is_rooted(c) ? p - 1 : 0;
    std::vector<std::int64_t> counts{1, p - 1, p + 1, 37 * p + 5, 70000 + p};
    if (c == Collective::barrier) counts = {0};
    // Types and ops rotate with p so every one appears.
    const DataType type = kAllDataTypes[p % 10];
    const RedOp op = kAllRedOps[p % 5];
    for (std::int64_t n : counts) {
      for (bool in_place : {false, true}) {
        const auto s = schedule(c, tc.algorithm, p, root, n, type);
        if (in_place) {
          bool ok = true;
          for (int r = 0; r < p && ok; ++r)
            ok = in_place_hazard(*s, r, in_place_layout(c, p, r, root, n)).empty();
          if (!ok) break;
        }
        // Lanes: 1, 2, 3 and, for the large count, 8. Every message LL (odd
        // p: LL128), or none.
        const int lanes = n > 60000 ? 8 : 1 + static_cast<int>(n % 3);
        const LlProtocol protocol = p % 2 == 1 ? LlProtocol::ll128 : LlProtocol::ll;
        for (const std::int64_t ll : {std::int64_t{-1}, std::int64_t{1} << 30}) {
          DeviceWorld w(*s, type, op, in_place, lanes, ll, protocol);
          ASSERT_EQ(w.problem, "");
          ASSERT_EQ(w.program.unsupported, "");
          w.load();
          const std::int64_t wrong = w.run_checked(5, in_place ? 1 : 3, root, n);
          ASSERT_EQ(wrong, 0) << to_string(c) << " " << tc.algorithm << " p=" << p << " n=" << n
                              << " " << to_string(type) << " " << to_string(op) << " lanes "
                              << w.lanes << (in_place ? " in place" : "") << " ll " << ll << " "
                              << to_string(protocol);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, CudaInterpreterTest, ::testing::ValuesIn(registered_cases()),
                         [](const auto& info) {
                           std::string name = std::string(to_string(info.param.collective)) + "_" +
                                              info.param.algorithm;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

class CudaInterpreterDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string problem = cuda_device_problem();
    if (!problem.empty()) GTEST_SKIP() << "GPU test skipped: " << problem;
  }
};

// Every type and op, bit for bit with the host's expected values, on the
// reducing collectives' ring and tree algorithms, without LL, with LL and
// with LL128.
TEST_F(CudaInterpreterDeviceTest, EveryTypeAndOpMatchesTheCheckData) {
  for (DataType t : kAllDataTypes) {
    for (RedOp op : kAllRedOps) {
      for (const char* algorithm : {"ring", "double_binary_tree"}) {
        for (int kind = 0; kind < 3; ++kind) {
          const std::int64_t ll = kind == 0 ? -1 : std::int64_t{1} << 30;
          const LlProtocol protocol = kind == 2 ? LlProtocol::ll128 : LlProtocol::ll;
          const int p = 4;
          const std::int64_t n = 4099;
          const auto s = schedule(Collective::all_reduce, algorithm, p, 0, n, t);
          DeviceWorld w(*s, t, op, false, 2, ll, protocol);
          ASSERT_EQ(w.problem, "");
          w.load();
          EXPECT_EQ(w.run_checked(7, 2, 0, n), 0)
              << algorithm << " " << to_string(t) << " " << to_string(op) << " ll " << ll << " "
              << to_string(protocol);
        }
      }
    }
  }
}

// Ring all_reduce on 4 ranks and 2 lanes (ll: compile_multirank's
// ll_max_bytes) without rank 2's first operation of `kind`: the kernel's
// bounded spin stops it with an error whose text holds every one of
// `expected`, well before a hang would be noticed; afterwards the same
// interpreter runs the unchanged program. Skips where the program has no
// such operation (LL runs only with every rank on one GPU).
void expect_kernel_stop_without(DevOpKind kind, std::int64_t ll,
                                const std::vector<std::string>& expected,
                                LlProtocol protocol = LlProtocol::ll) {
  const int p = 4;
  const auto s = schedule(Collective::all_reduce, "ring", p, 0, 1000, DataType::float32);
  DeviceWorld w(*s, DataType::float32, RedOp::sum, false, 2, ll, protocol);
  ASSERT_EQ(w.problem, "");
  const auto ops = w.program.rank_ops(2);
  std::uint32_t i = 0;
  while (i < ops.size() && ops[i].kind != kind) ++i;
  if (i == ops.size()) GTEST_SKIP() << "no " << to_string(kind) << " on rank 2 here";
  const DeviceProgram good = w.program;
  w.program.ops.erase(w.program.ops.begin() + w.program.first_op[2] + i);
  for (int q = 3; q <= p; ++q) --w.program.first_op[q];
  w.load(300);
  const auto start = std::chrono::steady_clock::now();
  try {
    w.run_checked(1, 1, 0, 1000);
    FAIL() << "no error";
  } catch (const RuntimeFailure& e) {
    const std::string what = e.what();
    for (const std::string& part : expected) EXPECT_NE(what.find(part), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  w.program = good;
  w.load();
  EXPECT_EQ(w.run_checked(2, 2, 0, 1000), 0);
}

// Without one LL send its receiver's lines never get the flag.
TEST_F(CudaInterpreterDeviceTest, ALostLlSendStopsTheKernelWithAnError) {
  expect_kernel_stop_without(DevOpKind::ll_send, 1 << 30, {"waited longer than 300 ms"});
}
TEST_F(CudaInterpreterDeviceTest, ALostLl128SendStopsTheKernelWithAnError) {
  expect_kernel_stop_without(DevOpKind::ll_send, 1 << 30, {"waited longer than 300 ms"},
                             LlProtocol::ll128);
}

// A program without one of its signals: the error names a rank and a flag.
TEST_F(CudaInterpreterDeviceTest, ALostSignalStopsTheKernelWithAnError) {
  expect_kernel_stop_without(DevOpKind::signal, -1, {"waited longer than 300 ms", "deadlock"});
}

// COLLKIT_INTERPRETER_POLL_NS: a sleep between polls gives the same results;
// a value that is not nanoseconds in range is refused, naming it.
TEST_F(CudaInterpreterDeviceTest, PollSleepIsAKnobAndBadValuesAreRefused) {
  const auto s = schedule(Collective::all_reduce, "ring", 4, 0, 4099, DataType::float32);
  for (const char* bad : {"-1", "abc", "1000001", "5ns"}) {
    setenv("COLLKIT_INTERPRETER_POLL_NS", bad, 1);
    try {
      CudaInterpreter interpreter(std::vector<int>(4, 0));
      ADD_FAILURE() << bad << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("COLLKIT_INTERPRETER_POLL_NS=") + bad),
                std::string::npos)
          << e.what();
    }
  }
  for (const char* good : {"0", "100", "2000"}) {
    setenv("COLLKIT_INTERPRETER_POLL_NS", good, 1);
    DeviceWorld w(*s, DataType::float32, RedOp::sum, false, 2);
    ASSERT_EQ(w.problem, "");
    w.load();
    EXPECT_EQ(w.run_checked(3, 2, 0, 4099), 0) << good;
  }
  unsetenv("COLLKIT_INTERPRETER_POLL_NS");
}

}  // namespace
}  // namespace collkit::realrun

#else

TEST(CudaInterpreterTest, SkippedWithoutCuda) {
  GTEST_SKIP() << "GPU test skipped: this collkit was built without CUDA";
}

#endif
