// The nccl family on a topology (docs/NCCL.md): the channels NCCL's search
// would lay out (topologies/channels.h), NCCL's own cost model that picks an
// algorithm, a protocol and a channel count per call (src/graph/tuning.cc,
// src/enqueue.cc), and the schedule spec the simulator then runs. NCCL's
// model only chooses; the time comes from simulating the chosen schedule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/nccl_variant.h"
#include "algorithms/schedule.h"
#include "core/dtypes.h"
#include "core/protocol.h"
#include "topologies/channels.h"
#include "topologies/topology.h"

namespace collkit {

// What NCCL knows of the machine, read off the topology once.
struct NcclContext {
  int ranks = 1;
  int nodes = 1;
  int ranks_per_node = 1;
  ChannelSearch search;
  // NCCL's graphs: ring and tree channels x per-channel bandwidth (GB/s),
  // NVLS heads x bandwidth (0 heads = no NVLS), and the channels at run time.
  int ring_channels = 1;
  double ring_bw = 0;
  int tree_channels = 1;
  double tree_bw = 0;
  int nvls_heads = 0;
  double nvls_bw = 0;
  // CollNet (SHARP): the NICs of a node reach a network switch that reduces
  // (0 = none), each at collnet_bw GB/s (the NIC or the switch's in-network
  // rate per port, whichever is lower).
  int collnet_heads = 0;
  double collnet_bw = 0;
  int runtime_channels = 1;
  bool nvlink = true;  // devices of a node joined by NVLink-class links (else PCIe)
  bool sm80 = false;   // NCCL's A100 constants instead of H100's
};

// NCCL's view of `topology` for its first `ranks` ranks.
NcclContext nccl_context(const Topology& topology, int ranks);

// One (algorithm, protocol, channels) NCCL would run, with its model's time.
struct NcclChoice {
  NcclVariant variant = NcclVariant::ring;
  Protocol protocol = Protocol::simple;
  int channels = 1;
  double model_us = 0;  // NCCL's own estimate (its cost model)
};

// NCCL's time estimate (us) for `variant` with `protocol` for a call of
// `bytes` (NCCL's nBytes: the whole buffer, as nccl-tests' size); none when
// NCCL would not run that pair (disabled, or not supported for the op/type).
std::optional<double> nccl_model_time(const NcclContext& ctx, Collective c, NcclVariant variant,
                                      Protocol protocol, std::int64_t bytes, DataType type,
                                      RedOp op);

// NCCL's choice at `bytes`: the fastest pair by its model, restricted to
// `variant` when given (nccl:ring picks only the protocol; nullopt: NCCL's
// own choice among all); then the channel count NCCL uses for that size.
// Throws UsageError when nothing applies.
NcclChoice nccl_choose(const NcclContext& ctx, Collective c, std::int64_t bytes, DataType type,
                       RedOp op, std::optional<NcclVariant> variant);

// The channel count NCCL runs `variant` with `protocol` on for a call of
// `bytes` (src/enqueue.cc): what nccl_choose sets for its choice, and what
// the tuner (tuner/) simulates every (variant, protocol) pair with.
int nccl_channels(const NcclContext& ctx, Collective c, std::int64_t bytes, NcclVariant variant,
                  Protocol protocol);

// The spec the simulator runs for the choice: the base spec (collective,
// sizes, root) with the variant, protocol, the plan restricted to the chosen
// channels, and the protocol's chunk from the topology as segment.
ScheduleSpec nccl_schedule_spec(ScheduleSpec base, const NcclContext& ctx, const NcclChoice& choice,
                                const Topology& topology);

// "ring/LL/24ch" for tables and reports.
std::string describe(const NcclChoice& choice);

// True for "nccl" and "nccl:<variant>".
bool is_nccl_algorithm(const std::string& name);
// The variant a nccl name pins ("nccl:ring" -> ring); nullopt for NCCL's
// own choice ("nccl", "nccl:auto"). Throws UsageError for a name after
// "nccl:" that is no variant.
std::optional<NcclVariant> nccl_variant(const std::string& name);

// Whether NCCL runs `algorithm` ("nccl" or "nccl:<variant>") for this
// collective, type and op on the context's machine at all (nccl:nvls needs
// an NVLS switch and one node, for instance).
bool nccl_applies(const NcclContext& ctx, Collective c, const std::string& algorithm, DataType type,
                  RedOp op);

}  // namespace collkit
