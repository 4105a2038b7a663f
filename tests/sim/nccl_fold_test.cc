// Folded channels of the nccl family (algorithms/nccl_sharded.cc, nvls_work): NVLS
// and NVLSTree channels that follow the same node tree run as one transfer
// per chunk carrying all their lanes. On the shipped GPU topologies, for
// channel counts 1..16 and sizes that split evenly and unevenly, the
// folded schedule must take the time of the channel-by-channel one (within
// the one-element rounding of slices and chunks; exactly where sizes split
// evenly), with fewer messages where channels fold.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "algorithms/registry.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "sim/sweep.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

struct Run {
  double time = 0;
  std::int64_t messages = 0;
};

Run run(const Topology& topo, const NcclContext& ctx, NcclVariant variant, int channels,
        std::int64_t bytes, bool fold) {
  ScheduleSpec base;
  base.collective = Collective::all_reduce;
  base.algorithm = "nccl";
  base.ranks = topo.num_ranks();
  base.elem_size = 4;
  base.count = bytes / 4;
  NcclChoice choice =
      nccl_choose(ctx, Collective::all_reduce, bytes, DataType::float32, RedOp::sum, variant);
  choice.channels = channels;
  ScheduleSpec spec = nccl_schedule_spec(base, ctx, choice, topo);
  spec.fold_channels = fold;
  const SimResult r = simulate(*make_schedule(spec), topo);
  // The closed-form estimate (catalogue, planner's filter) is the schedule's
  // cost, not the simulator's way of running it: folding leaves it as is.
  ScheduleSpec other = spec;
  other.fold_channels = !fold;
  const CostParams params = cost_params_of(topo, spec.ranks);
  EXPECT_EQ(closed_form_cost(spec, params).time, closed_form_cost(other, params).time);
  return {r.time, r.messages};
}

void check_topology(const std::string& file, NcclVariant variant, std::int64_t max_bytes) {
  const auto topo = load_topology(std::string(COLLKIT_SOURCE_DIR) + "/topologies/" + file);
  const NcclContext ctx = nccl_context(*topo, topo->num_ranks());
  for (int channels : {1, 2, 3, 4, 5, 7, 8, 12, 16}) {
    for (std::int64_t bytes : {std::int64_t{4096}, std::int64_t{1} << 20, std::int64_t{1000004},
                               std::int64_t{64} << 20}) {
      if (bytes > max_bytes) continue;
      SCOPED_TRACE(file + " " + std::string(to_string(variant)) + " " + std::to_string(channels) +
                   " channels, " + std::to_string(bytes) + " B");
      const Run apart = run(*topo, ctx, variant, channels, bytes, false);
      const Run folded = run(*topo, ctx, variant, channels, bytes, true);
      ASSERT_GT(apart.time, 0);
      // Slices and chunks differ by at most one element per channel.
      EXPECT_LE(std::abs(folded.time / apart.time - 1), 2e-5)
          << "folded " << folded.time << " apart " << apart.time;
      // Powers of two of channels and of bytes split evenly everywhere:
      // then the times are the same up to floating-point rounding.
      const bool even = (channels & (channels - 1)) == 0 && (bytes & (bytes - 1)) == 0;
      if (even) {
        EXPECT_LE(std::abs(folded.time / apart.time - 1), 1e-12)
            << "folded " << folded.time << " apart " << apart.time;
      }
      EXPECT_LE(folded.messages, apart.messages);
      // 16 channels: 8 trees of 2 lanes fold into one transfer per node
      // tree (two across nodes, one in a node).
      if (channels == 16) {
        EXPECT_GE(apart.messages, 4 * folded.messages);
      }
    }
  }
}

TEST(NcclFold, NvlsInOneNodeTakesTheTimeOfItsChannels) {
  check_topology("dgx-h100.json", NcclVariant::nvls, std::int64_t{64} << 20);
}

TEST(NcclFold, NvlsTreeAcrossNodesTakesTheTimeOfItsChannels) {
  check_topology("h100-cluster-2x8.json", NcclVariant::nvls_tree, std::int64_t{64} << 20);
  check_topology("h100-cluster-4x8.json", NcclVariant::nvls_tree, std::int64_t{1} << 20);
}

}  // namespace
}  // namespace collkit
