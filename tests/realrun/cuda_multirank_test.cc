// The cuda backend's single-process multi-rank execution on a real device:
// every registered (collective, algorithm, variant) with p = 2..8 ranks
// placed round-robin on the visible GPUs (all "virtual" on a one-GPU
// machine), the bench's check data and its on-device comparison, several
// back-to-back iterations (out of place) so one iteration's streams overlap
// the next. Skips without a device; tests/realrun/multirank_test.cc covers
// the same orchestration on host memory everywhere.
#include <gtest/gtest.h>

#ifdef COLLKIT_HAVE_CUDA

#include <memory>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "realrun/device/cuda_streams.h"
#include "realrun/device/cuda_util.h"
#include "realrun/device/device_rank.h"
#include "realrun/multirank.h"
#include "tests/realrun/oracle.h"

namespace collkit::realrun {
namespace {

using testing_oracle::Case;
using testing_oracle::registered_cases;

class CudaMultiRankTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const std::string problem = cuda_device_problem();
    if (!problem.empty()) GTEST_SKIP() << "GPU test skipped: " << problem;
  }
};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaMultiRankTest);

TEST_P(CudaMultiRankTest, ComputesTheCollectiveOnStreams) {
  const Case& tc = GetParam();
  const Collective c = tc.collective;
  const int devices = cuda_device_count();
  for (int p = 2; p <= 8; ++p) {
    const int root = is_rooted(c) ? p - 1 : 0;
    std::vector<std::int64_t> counts{1, p - 1, p + 1, 37 * p + 5};
    if (c == Collective::barrier) counts = {0};
    // Types and ops rotate with p so every one appears.
    const DataType type = kAllDataTypes[p % 10];
    const RedOp op = kAllRedOps[p % 5];
    for (std::int64_t n : counts) {
      for (bool in_place : {false, true}) {
        for (bool direct : {false, true}) {
          ScheduleSpec spec;
          spec.collective = c;
          spec.algorithm = tc.algorithm;
          spec.ranks = p;
          spec.root = root;
          spec.count = n;
          spec.elem_size = size_of(type);
          const auto s = make_schedule(spec);
          if (in_place) {
            bool ok = true;
            for (int r = 0; r < p && ok; ++r)
              ok = in_place_hazard(*s, r, in_place_layout(c, p, r, root, n)).empty();
            if (!ok) break;
          }
          std::vector<CompiledPlan> plans;
          for (int r = 0; r < p; ++r) plans.push_back(compile_plan(*s, r, type, op, in_place));
          std::vector<const CompiledPlan*> ptrs;
          std::vector<int> rank_device;
          std::vector<std::unique_ptr<DeviceRank>> ranks;
          std::vector<AreaBases> bases;
          for (int r = 0; r < p; ++r) {
            ptrs.push_back(&plans[r]);
            rank_device.push_back(r % devices);
            ranks.push_back(std::make_unique<DeviceRank>(plans[r], r % devices));
            bases.push_back(ranks.back()->bases());
          }
          CudaStreams engine(rank_device);
          const MultiRankProgram program =
              compile_multirank(ptrs, direct ? &CudaStreams::can_read : nullptr, &engine);
          engine.set_events(program.event_stream);
          for (int r = 0; r < p; ++r) ranks[r]->fill_check(5, true, engine.stream(r));
          const int iterations = in_place ? 1 : 3;
          for (int i = 0; i < iterations; ++i) replay(program, ptrs, bases, engine);
          std::int64_t wrong = 0;
          for (int r = 0; r < p; ++r) {
            ranks[r]->reset_wrong(engine.stream(r));
            ranks[r]->enqueue_check(5, root, n, engine.stream(r));
          }
          for (int r = 0; r < p; ++r) wrong += ranks[r]->wrong(engine.stream(r));
          ASSERT_EQ(wrong, 0) << to_string(c) << " " << tc.algorithm << " p=" << p << " n=" << n
                              << " " << to_string(type) << " " << to_string(op)
                              << (in_place ? " in place" : "") << (direct ? " direct" : "");
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, CudaMultiRankTest, ::testing::ValuesIn(registered_cases()),
                         [](const auto& info) {
                           std::string name = std::string(to_string(info.param.collective)) + "_" +
                                              info.param.algorithm;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace collkit::realrun

#else

TEST(CudaMultiRankTest, SkippedWithoutCuda) {
  GTEST_SKIP() << "GPU test skipped: this collkit was built without CUDA";
}

#endif
