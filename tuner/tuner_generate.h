// What `collkit tuner` computes (docs/TUNER.md): the model file of the
// plugin, simulated on a topology with the nccl family, and the config file
// of NCCL's example tuner plugin with the fastest choice per size range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtypes.h"
#include "sim/engine.h"
#include "sim/sweep.h"
#include "topologies/topology.h"
#include "tuner/tuner_model.h"

namespace collkit {

struct TunerSpec {
  // Sizes as the user gave them (nccl-tests' -b -e -f loop); each becomes
  // NCCL's nBytes of the collective (map_size: the total buffer, for
  // allgather and reducescatter rounded down to whole per-rank elements).
  std::vector<std::int64_t> sizes;
  DataType dtype = DataType::float32;
  RedOp op = RedOp::sum;
  SimOptions options;  // as collkit simulate: --model, --launch
};

// The nccl family's collectives NCCL lets a tuner choose for, as collkit's
// collectives: broadcast, reduce, all_gather, reduce_scatter, all_reduce
// (ncclFunc_t 0..4, in that order).
Collective tuner_collective(int id);

// The tables of a communicator of the topology's first `ranks` ranks: for
// each collective, every (variant, protocol) of the nccl family NCCL's model
// runs there (nccl_model_time has a time), simulated at every size with the
// channels NCCL would use (nccl_channels): the time `collkit simulate
// --algorithm nccl:<variant>` reports where NCCL picks that protocol. Besides
// the grid, each table has the two sizes either side of every size (in the
// grid's range) where NCCL's channel rule changes the count, so an interval
// of the table never blends two channel counts.
// `progress` is called after every simulation.
TunerComm tuner_comm(const Topology& topology, int ranks, const TunerSpec& spec,
                     const ProgressFn& progress = {});

// How many simulations tuner_comm runs (for a progress bar).
std::size_t tuner_comm_points(const Topology& topology, int ranks, const TunerSpec& spec);

// One line of NCCL's example tuner config (NCCL_TUNER_CONFIG_FILE).
struct TunerConfigLine {
  int collective = 0;
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = 0;  // inclusive, as the example plugin compares
  int algorithm = 0;
  int protocol = 0;
  int channels = 0;
  int nodes = 0;
  int ranks = 0;
};

// For every communicator and collective of the model, size ranges covering
// 0..2^64-1 with the pair tuner_best picks and its channels: ranges split
// where the choice or the channel count changes (at a grid size, or where
// two interpolated times cross: found by bisection on whole bytes), so the
// plugin and the config choose alike at every size.
std::vector<TunerConfigLine> tuner_config_lines(const TunerModel& model);

// The config file: comment lines, then
// "collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks".
std::string tuner_config_text(const TunerModel& model, const std::vector<std::string>& comments);

}  // namespace collkit
