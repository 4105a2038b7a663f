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
#include "core/nccl_version.h"
#include "core/protocol.h"
#include "sim/nccl_versions.h"
#include "topologies/channels.h"
#include "topologies/topology.h"

namespace collkit {

// What NCCL knows of the machine, read off the topology once, and the
// release whose cost model decides (sim/nccl_versions.h).
struct NcclContext {
  NcclVersion version = kDefaultNcclVersion;
  const NcclTuning* tuning = nullptr;  // nccl_tuning(version)
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
  // NVLS graph: heads, and the per-head bandwidth NCCL's search gives its
  // NVLink side (intra) and its network side (inter). One node: the file's
  // figure, and inter the search's pass 2 raises to twice intra or the top
  // of the speeds it tries (src/graph/search.cc, 2.22+); across nodes both
  // are the NIC's per-channel figure, the search's starting speed.
  int nvls_heads = 0;
  double nvls_bw = 0;
  double nvls_bw_inter = 0;
  // NVLS channels (src/transport/nvls.cc): 16 on sm90, on sm100 by release
  // and by whether the call crosses NVLink domains (sim/nccl_versions.h).
  int nvls_channels = 16;
  // CollNet (SHARP): the NICs of a node reach a network switch that reduces
  // (0 = none), each at collnet_bw GB/s (the NIC or the switch's in-network
  // rate per port, whichever is lower).
  int collnet_heads = 0;
  double collnet_bw = 0;
  int runtime_channels = 1;
  // The ring graph's channels all take the same path through a node
  // (NCCL's sameChannels): inside one node, yes; across nodes each channel
  // enters a node through its own NIC, so no. Broadcast and reduce
  // latencies follow it (tuning.cc).
  bool ring_same_channels = true;
  bool nvlink = true;  // devices of a node joined by NVLink-class links (else PCIe)
  // The devices of a node meet in a switch (NVSwitch), not a mesh: NCCL runs
  // CollNet Direct only there (tuning.cc, ncclTopoGetNvsCount).
  bool nvswitch = false;
  // The GPU (the topology's nccl.gpu) and NCCL's row for it: 0 Ampere
  // (sm80), 1 Hopper (sm90), 2 Blackwell (sm100; sim/nccl_versions.h).
  NcclGpu gpu = NcclGpu::h100;
  int arch = 1;
  // The library is AMD's RCCL (an AMD nccl.gpu): RCCL's own cost model
  // chooses (sim/rccl.h), not the NCCL release's.
  bool rccl = false;
  bool x86_host = true;  // GB200's host is Arm (Grace)
  // The network plugin's latency (nccl.net_latency_us; NCCL's graph
  // latencyInter), us: added to every network hop, twice for Simple.
  double net_latency = 0;
};

// NCCL's view of `topology` for its first `ranks` ranks, with the cost model
// of `version`; none: the topology file's nccl.version, else
// kDefaultNcclVersion. Throws UsageError for an unsupported version.
NcclContext nccl_context(const Topology& topology, int ranks,
                         std::optional<NcclVersion> version = std::nullopt);

// One (algorithm, protocol, channels) NCCL would run, with its model's time.
struct NcclChoice {
  NcclVariant variant = NcclVariant::ring;
  Protocol protocol = Protocol::simple;
  int channels = 1;
  double model_us = 0;  // NCCL's own estimate (its cost model)
};

// One entry of NCCL's tuning table (what NCCL_DEBUG_SUBSYS=TUNING prints
// as latency/bandwidth): the latency (us) and algorithm bandwidth (GB/s)
// NCCL's model gives `variant` with `protocol` for the collective, before
// the per-size corrections; none where NCCL would not run that pair here
// (p2p has no entry).
struct NcclModelEntry {
  double latency_us = 0;
  double bandwidth_gbps = 0;
};
std::optional<NcclModelEntry> nccl_model_entry(const NcclContext& ctx, Collective c,
                                               NcclVariant variant, Protocol protocol,
                                               DataType type, RedOp op);

// NCCL's time estimate (us) for `variant` with `protocol` for a call of
// `bytes` (NCCL's nBytes: the whole buffer, as nccl-tests' size); none when
// NCCL would not run that pair (disabled, or not supported for the op/type).
std::optional<double> nccl_model_time(const NcclContext& ctx, Collective c, NcclVariant variant,
                                      Protocol protocol, std::int64_t bytes, DataType type,
                                      RedOp op);

// Every (algorithm, protocol) NCCL weighs at `bytes`, restricted to
// `variant` when given, in NCCL's order (algorithm, then protocol), each
// with its estimate and the channels NCCL would run it on.
std::vector<NcclChoice> nccl_candidates(const NcclContext& ctx, Collective c, std::int64_t bytes,
                                        DataType type, RedOp op,
                                        std::optional<NcclVariant> variant);

// NCCL's choice at `bytes`: the fastest pair by its model (the first of
// equal ones, in NCCL's order), restricted to `variant` when given
// (nccl:ring picks only the protocol; nullopt: NCCL's own choice among
// all); then the channel count NCCL uses for that size. Throws UsageError
// when nothing applies.
NcclChoice nccl_choose(const NcclContext& ctx, Collective c, std::int64_t bytes, DataType type,
                       RedOp op, std::optional<NcclVariant> variant);

// Whether collkit has a schedule of `variant` for collective `c` (the
// variants the nccl algorithm defines for it, algorithms/nccl.cc). NCCL
// weighs NVLS for all_gather and reduce_scatter on one node (2.19+), which
// collkit has no schedule for.
bool nccl_has_schedule(Collective c, NcclVariant variant);

// NCCL's choice as the simulator runs it: nccl_choose, unless collkit has
// no schedule for it; then the fastest by NCCL's model of the candidates it
// has (the first of equal ones), and `instead` (when given) is set to
// NCCL's own choice. Throws UsageError as nccl_choose does.
NcclChoice nccl_runnable_choice(const NcclContext& ctx, Collective c, std::int64_t bytes,
                                DataType type, RedOp op, std::optional<NcclVariant> variant,
                                std::optional<NcclChoice>* instead = nullptr);

// The note the nccl family's rows carry ("ring/LL/24ch"; with a
// substitution "ring/LL128/24ch (NCCL: nvls/Simple/16ch, no collkit
// schedule)").
std::string describe_run(const NcclChoice& ran, const std::optional<NcclChoice>& instead);

// The channel count NCCL runs `variant` with `protocol` on for a call of
// `bytes` (src/enqueue.cc: topoGetAlgoInfo's rule, then from 2.22 the
// planner's spread by traffic): what nccl_choose sets for its choice, and
// what the tuner (tuner/) simulates every (variant, protocol) pair with.
int nccl_channels(const NcclContext& ctx, Collective c, std::int64_t bytes, NcclVariant variant,
                  Protocol protocol);

// The most data one rank of `choice` moves per second, all its sends on
// the choice's channels together, from NCCL's per-channel limits of the
// protocol (src/graph/tuning.cc of the context's release, docs/NCCL.md
// "Per-channel limits"): ring LL NCCL's llMaxBw; ring LL128 the release's
// perChMaxRingLL128Bw; tree Simple perChMaxTreeBw; tree LL that / 3.8, at
// most llMaxBw; tree LL128 min(perChMaxTreeBw x 7/9 (one node) or 120/128,
// perChMaxTreeLL128Bw). NCCL gives its figures per graph channel, each of
// which runs as runtime_channels / graph channels channels: a call on
// `choice.channels` of them gets that share of the graph's total. Bytes per
// second; 0 where NCCL has no such limit (NVLS, NVLSTree, CollNet, PAT,
// p2p, the ring with Simple, RCCL).
double nccl_rank_rate(const NcclContext& ctx, const NcclChoice& choice);

// The spec the simulator runs for the choice: the base spec (collective,
// sizes, root) with the variant, protocol, the plan restricted to the chosen
// channels, the protocol's chunk from the topology as segment, and the
// rank's rate limit (nccl_rank_rate).
ScheduleSpec nccl_schedule_spec(ScheduleSpec base, const NcclContext& ctx, const NcclChoice& choice,
                                const Topology& topology);

// "ring/LL/24ch" for tables and reports.
std::string describe(const NcclChoice& choice);

// True for "nccl" and "nccl:<variant>", and for RCCL's spelling of the
// same family, "rccl" and "rccl:<variant>" (docs/NCCL.md, "RCCL"): "nccl"
// is the machine's collective library, NCCL or RCCL by its nccl.gpu;
// "rccl" says RCCL and is refused on an NVIDIA machine (check_library).
bool is_nccl_algorithm(const std::string& name);
bool is_rccl_algorithm(const std::string& name);
// Throws UsageError when `algorithm` names RCCL on a machine whose library
// is NCCL.
void check_library(const NcclContext& ctx, const std::string& algorithm);
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
