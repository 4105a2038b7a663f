// The model file of collkit's NCCL tuner plugin (docs/TUNER.md): for each
// communicator size (ranks, nodes), per collective and per (algorithm,
// protocol) NCCL could run, collkit's predicted time and NCCL's channel count
// at a grid of sizes. `collkit tuner` writes it; the plugin
// (tuner/plugin/) reads it and interpolates between the sizes.
//
// This file and tuner_model.cc use the standard library and core/error.h
// only (no other collkit code), because they are compiled into the plugin's
// small shared library as well as into collkit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace collkit {

// NCCL's names and ids (tuner/nccl_tuner_v5.h): collectives as ncclFunc_t
// and NCCL's example tuner spell them, algorithms and protocols as indexes of
// NCCL's cost table.
inline constexpr int kTunerCollectives = 5;  // broadcast reduce allgather reducescatter allreduce
inline constexpr int kTunerAlgorithms =
    7;  // tree ring collnet_direct collnet_chain nvls nvls_tree pat
inline constexpr int kTunerProtocols = 3;     // ll ll128 simple
inline constexpr int kTunerMaxChannels = 64;  // NCCL's MAXCHANNELS
inline constexpr int kTunerMaxPoints = 4096;  // per table, so a bad file cannot ask for more

// "broadcast", ..., "allreduce" for 0..4; "tree", ..., "pat"; "ll", "ll128",
// "simple" (the example plugin's config spelling). Empty for an id out of range.
std::string_view tuner_collective_name(int id);
std::string_view tuner_algorithm_name(int id);
std::string_view tuner_protocol_name(int id);
// The id of a name above, -1 when unknown.
int tuner_collective_id(std::string_view name);
int tuner_algorithm_id(std::string_view name);
int tuner_protocol_id(std::string_view name);

// One size of a table: NCCL's nBytes, collkit's time, NCCL's channel count.
struct TunerPoint {
  std::uint64_t bytes = 0;
  double time_us = 0;
  int channels = 1;
};

// One (collective, algorithm, protocol): points by strictly increasing bytes.
struct TunerTable {
  int collective = 0;
  int algorithm = 0;
  int protocol = 0;
  std::vector<TunerPoint> points;

  // The time at `bytes`: a grid size's own time exactly; between two grid
  // sizes linear in log(bytes)-log(time) (a power law through both points;
  // linear in bytes where a time is 0); below the grid the first point's time
  // (latency-bound); above it the last point's time scaled by bytes (the
  // bandwidth-bound limit).
  double time_at(std::uint64_t bytes) const;
  // The channels at `bytes`: those of the largest grid size <= bytes (the
  // first point's below the grid). NCCL's rule only adds channels as the size
  // grows, so this never uses more channels than NCCL's rule at `bytes`.
  int channels_at(std::uint64_t bytes) const;
};

// The tables of one communicator size.
struct TunerComm {
  int ranks = 1;
  int nodes = 1;
  std::vector<TunerTable> tables;

  // The table of (collective, algorithm, protocol), null when absent.
  const TunerTable* find(int collective, int algorithm, int protocol) const;
};

struct TunerModel {
  // Free text kept as '#' lines at the top (what it was generated from).
  std::vector<std::string> comments;
  std::vector<TunerComm> comms;

  // The communicator of `ranks` ranks on `nodes` nodes, null when absent.
  const TunerComm* find(int ranks, int nodes) const;
};

// The pair NCCL would run if its cost table held the model's times at
// `bytes` for `collective`: the smallest time, compared as the floats NCCL's
// table holds, ties to the lowest (algorithm, protocol) ids as NCCL's own
// scan of the table; the channels from that table. `allowed`, when given,
// is indexed [algorithm * kTunerProtocols + protocol] and excludes the pairs
// that are false. algorithm -1 when no table applies.
struct TunerChoice {
  int algorithm = -1;
  int protocol = -1;
  int channels = 0;
  double time_us = -1;
};
TunerChoice tuner_best(const TunerComm& comm, int collective, std::uint64_t bytes,
                       const bool* allowed = nullptr);

// Reads a model file's text. Throws FileError "<name>:<line>: <field>: ..."
// naming the line, the field and the value for anything it does not accept.
TunerModel parse_tuner_model(std::string_view text, const std::string& name);

// The text parse_tuner_model reads back to the same model (times printed
// with 17 significant digits).
std::string tuner_model_text(const TunerModel& model);

// The first line of every model file.
inline constexpr std::string_view kTunerModelMagic = "collkit-nccl-tuner 1";

}  // namespace collkit
