// A network the simulator runs schedules on: endpoints (one per rank), switches
// and directed links, with routes between ranks. Loaded from the topology files
// documented in docs/TOPOLOGY.md. SI units inside: seconds, bytes per second.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/nccl_version.h"
#include "core/protocol.h"

namespace collkit {

// Directed links are numbered 0..num_links()-1; the two directions of a cable
// are two links (full duplex: they do not share bandwidth).
using LinkId = std::int64_t;

struct LinkProps {
  double bandwidth = 0;  // bytes per second, per direction (> 0)
  double latency = 0;    // seconds (>= 0)
  // The most the link's hardware carries, bytes per second per direction
  // (a NIC's or NVLink's line rate; >= bandwidth, the rate the model uses);
  // 0 = not given. Calibration never fits a bandwidth above it.
  double line_rate = 0;
  // Per protocol (LL, LL128, Simple; core/protocol.h): the latency a message
  // of that protocol pays on this link, in seconds; < 0 = `latency`.
  double protocol_latency[3] = {-1, -1, -1};
  double latency_for(Protocol p) const {
    const int i = protocol_index(p);
    return i >= 0 && protocol_latency[i] >= 0 ? protocol_latency[i] : latency;
  }
  bool has_protocol_latency() const {
    return protocol_latency[0] >= 0 || protocol_latency[1] >= 0 || protocol_latency[2] >= 0;
  }
};

struct EndpointProps {
  double overhead = 0;   // seconds per message at the sending endpoint
  double reduce_bw = 0;  // bytes reduced per second; 0 = reductions are free
  double copy_bw = 0;    // bytes copied locally per second; 0 = local copies are free
  // First-order cache model: a rank whose working set (Schedule::working_set:
  // input, output, scratch and the temp area of its reducing receives)
  // exceeds cache_bytes moves and computes every byte
  // dram_factor times slower (transfers it sends or receives, reductions,
  // copies). cache_bytes 0 = no cache model.
  double cache_bytes = 0;
  double dram_factor = 1;
  // Data a rank wrote during the call: a message whose source it received,
  // reduced or copied into (not a copy of its input into its output, which
  // the real executors send from the input itself) costs dirty_factor times
  // its bytes while neither end is past its cache: the receiving core reads
  // lines still modified in the sender's cache (docs/SIMULATOR.md, "Written
  // data"). 1 = no such cost (GPUs, and every topology that does not set it).
  double dirty_factor = 1;
  // Shared host (flow model only): the local work (reductions, copies) of
  // the ranks of one host shares host_cores cores' worth of throughput; a
  // rank alone runs at its own reduce_bw / copy_bw. 0 = never shared.
  double host_cores = 0;
  std::int32_t host = 0;  // which host; ranks of equal `host` share its cores
  // Shared host (needs host_cores): the receiving rank's core copies each
  // message into place itself (Open MPI's single-copy CMA, XPMEM), so a
  // transfer also occupies that core and its host for as long as it runs,
  // shared with their local work and the other ranks' copies
  // (docs/SIMULATOR.md, "Copies on the receiving core"). false = the
  // network moves the data on its own.
  bool receiver_copies = false;
  // GPU-style collective kernels (NCCL's): a send is done for the sender
  // once its data has left (the receiver still sees the route's latency),
  // and a reducing receive reduces the data as it arrives, at most at
  // reduce_bw, instead of after it. false = CPU-style: a send waits for the
  // transfer, a reduction follows it (docs/SIMULATOR.md).
  bool pipelined = false;
  // Host seconds to enqueue one collective on one device (kernel launch and
  // the library's planning); sets the floor of a call's time by launch mode
  // (SimOptions::launch_devices). 0 = free.
  double launch = 0;
};

// What a protocol costs on this network, beyond its per-link latencies
// (LinkProps::protocol_latency). Unset protocols (set = false) cost nothing
// extra, as in a topology without protocols.
struct ProtocolProps {
  bool set = false;
  double efficiency = 1;    // data bytes per byte on the wire (LL: 0.5)
  double base_latency = 0;  // seconds, paid once per collective by every rank
  double chunk_bytes = 0;   // data bytes of one pipeline chunk (0 = not given)
};

// The GPU of a machine as its collective library sees it (the `nccl.gpu`
// key, docs/TOPOLOGY.md): which of NCCL's per-architecture constants apply
// (A100 sm80; H100 and H200 sm90; B200 and GB200 sm100, GB200 on an Arm
// host), or that the library is AMD's RCCL (MI300X and MI325X, gfx942).
enum class NcclGpu : std::uint8_t { a100, h100, h200, b200, gb200, mi300x, mi325x };
// "A100", "H100", ...: the spelling of the `nccl.gpu` key.
const char* to_string(NcclGpu g);
// Every value, in the order the loader lists them.
inline constexpr NcclGpu kNcclGpus[] = {NcclGpu::a100,  NcclGpu::h100,  NcclGpu::h200,
                                        NcclGpu::b200,  NcclGpu::gb200, NcclGpu::mi300x,
                                        NcclGpu::mi325x};
// AMD GPUs, whose library is RCCL (sim/rccl.h).
inline bool is_amd(NcclGpu g) { return g == NcclGpu::mi300x || g == NcclGpu::mi325x; }

// NCCL's own view of the network, as its topology search reports it (NCCL's
// INFO log, docs/NCCL.md): the channels of each graph and the bandwidth it
// assigns each, which NCCL's cost model (sim/nccl.h) uses to choose an
// algorithm. 0 = not declared (derived, see docs/TOPOLOGY.md).
struct NcclGraphInfo {
  int ring_channels = 0;
  double ring_bw = 0;  // bytes per second per channel
  int tree_channels = 0;
  double tree_bw = 0;
  int nvls_heads = 0;
  double nvls_bw = 0;
  int runtime_channels = 0;     // channels at run time (NCCL doubles the graph's)
  NcclGpu gpu = NcclGpu::h100;  // "gpu": whose constants NCCL's (or RCCL's) cost model uses
  // "net_latency_us": the latency the network plugin reports to NCCL
  // (ncclNet properties, NCCL's graph latencyInter), microseconds; NCCL
  // adds it to every network hop of its model, twice for Simple. 0 = none
  // (NCCL's own IB and socket transports report none).
  double net_latency_us = 0;
  // "version": the NCCL release the machine runs, whose cost model decides
  // (sim/nccl_versions.h); none: the command's --nccl-version or collkit's
  // default.
  std::optional<NcclVersion> version;
};

// What a topology carries besides its network: node structure, protocol
// figures, NCCL's graph and where it came from. One struct, so a topology
// that wraps another (TopologyView) carries all of it by one copy, and a
// field added here reaches every wrapper without touching it.
struct TopologyMetadata {
  // Node structure: every `devices_per_node` consecutive ranks form a node,
  // or, when given, the node of each endpoint.
  int devices_per_node = 0;
  std::vector<int> rank_node;
  // Protocol figures (index protocol_index(p)) and NCCL's graph.
  ProtocolProps protocols[3];
  // The protocol of schedules that name none (the classic algorithms on a
  // GPU network move their data as NCCL's kernels would); none = plain.
  Protocol default_protocol = Protocol::none;
  const ProtocolProps& protocol(Protocol p) const {
    static const ProtocolProps kNone;
    const int i = protocol_index(p);
    return i >= 0 ? protocols[i] : kNone;
  }
  NcclGraphInfo nccl;

  // Metadata from the file.
  std::string name;
  std::string description;
  std::string file;    // path as given ("" for generated in memory)
  std::string sha256;  // of the file's bytes ("" for generated in memory)
  // The GPU of every endpoint: a device file (docs/DEVICES.md), as the
  // file's "device" gives it, relative to the topology file's folder ("" =
  // not said). The planner's compute model reads it.
  std::string device;
  // What the loader found missing but not wrong ("FIELD: missing: ..."):
  // a GPU machine's file without some of the keys NCCL's model needs.
  // load_topology prints each to stderr.
  std::vector<std::string> warnings;
};

// A symmetry of the network that moves ranks (the engine's orbit reduction,
// docs/SIMULATOR.md "Orbits"): ranks numbered node by node, `nodes` nodes
// of `per_node` ranks, and the turn either of every node's local index at
// once (rank (n, j) to (n, j + 1 mod per_node): the rails of a
// rail-optimised cluster) or of the nodes (rank (n, j) to (n + 1 mod nodes,
// j)). A topology offers a turn only where it has proven that the turn maps
// the network onto itself: nodes to nodes of the same kind and figures,
// links to links of the same class, rank r's endpoint to rank turn(r)'s.
// `links` is the link permutation it induces, as cycles. Routes are not
// part of the proof (their tie-break may not commute): the engine checks
// those it uses.
enum class TurnKind : std::uint8_t { local, node };
std::string_view to_string(TurnKind kind);  // "rail turn" | "node turn"

// A permutation of links by its cycles: cycle[start[l] .. start[l] + len[l])
// is l's cycle in turn order, l at position pos[l].
struct LinkCycles {
  std::vector<LinkId> cycle;
  std::vector<std::int64_t> start;
  std::vector<std::int32_t> len;
  std::vector<std::int32_t> pos;
};

struct RankTurn {
  TurnKind kind = TurnKind::local;
  int nodes = 0;
  int per_node = 0;
  // The node turn taken `stride` nodes at a time (a divisor of nodes): the
  // subgroup of its powers, for schedules that repeat every `stride` nodes
  // (NCCL's rings alternate the order of GPUs from node to node). 1 for
  // the turn a topology offers.
  int stride = 1;
  // The permutation one step of the turn (stride 1) induces on links.
  std::shared_ptr<const LinkCycles> links;

  // Elements of the group the turn generates (its powers).
  int order() const { return kind == TurnKind::local ? per_node : nodes / stride; }
  // The turn applied k times (0 <= k < order()) to a rank.
  int apply(int rank, int k) const {
    const int n = rank / per_node, j = rank % per_node;
    return kind == TurnKind::local ? n * per_node + (j + k) % per_node
                                   : ((n + k * stride) % nodes) * per_node + j;
  }
  // The representative of a rank's orbit (local index 0, or a node below
  // stride) and the power that takes it to the rank:
  // rank == apply(rep(rank), power(rank)).
  int rep(int rank) const {
    if (kind == TurnKind::local) return rank - rank % per_node;
    return (rank / per_node) % stride * per_node + rank % per_node;
  }
  int power(int rank) const {
    return kind == TurnKind::local ? rank % per_node : rank / per_node / stride;
  }
  // A link's image under the turn applied k times, its orbit's
  // representative and the orbit's size.
  LinkId apply_link(LinkId l, int k) const {
    const auto i = static_cast<std::size_t>(l);
    const std::int64_t step = kind == TurnKind::local ? k : std::int64_t{k} * stride;
    return links
        ->cycle[static_cast<std::size_t>(links->start[i] + (links->pos[i] + step) % links->len[i])];
  }
  LinkId rep_link(LinkId l) const {
    const auto i = static_cast<std::size_t>(l);
    return links->cycle[static_cast<std::size_t>(links->start[i] + links->pos[i] % gcd_len(i))];
  }
  int orbit_size(LinkId l) const {
    const auto i = static_cast<std::size_t>(l);
    return links->len[i] / gcd_len(i);
  }

 private:
  // gcd(cycle length, the turn's step on links): the powers of the turn
  // split a cycle into that many orbits.
  int gcd_len(std::size_t i) const {
    int a = links->len[i], b = kind == TurnKind::local ? 1 : stride;
    while (b != 0) {
      const int t = a % b;
      a = b;
      b = t;
    }
    return a;
  }
};

class Topology : public TopologyMetadata {
 public:
  virtual ~Topology() = default;

  virtual int num_ranks() const = 0;
  virtual std::int64_t num_links() const = 0;
  virtual EndpointProps endpoint(int rank) const = 0;
  virtual LinkProps link(LinkId id) const = 0;
  // Human-readable name of a directed link, e.g. "g0->sw".
  virtual std::string link_name(LinkId id) const = 0;
  // The directed links from rank src to rank dst (src != dst), in order;
  // shortest by latency with a deterministic tie-break; computed once per pair
  // and cached. `out` is cleared first.
  virtual void route(int src, int dst, std::vector<LinkId>& out) const = 0;
  // Links of equal (bandwidth, latency) form one class, which calibration fits
  // as one parameter pair. Class ids are 0..num_link_classes()-1.
  virtual int num_link_classes() const = 0;
  virtual int link_class(LinkId id) const = 0;

  // In-network collectives (NVSwitch NVLS, InfiniBand SHARP): +1 when the
  // link enters a switch that multicasts and reduces, -1 when it leaves one,
  // 0 otherwise; for +1/-1 `bandwidth` receives the switch's rate for such
  // traffic per port and direction (bytes per second).
  virtual int in_network_side(LinkId id, double& bandwidth) const {
    (void)id;
    bandwidth = 0;
    return 0;
  }

  // The node (server) of a rank, or -1 when the topology has no node
  // structure. Ranks of one node are consecutive.
  int node_of(int rank) const {
    if (!rank_node.empty()) return rank_node[static_cast<std::size_t>(rank)];
    return devices_per_node > 0 ? rank / devices_per_node : -1;
  }
  bool has_nodes() const { return !rank_node.empty() || devices_per_node > 0; }
  // Ranks per node among the first `ranks` ranks: 0 when the topology has no
  // node structure or those ranks' nodes differ in size (a node cut short by
  // --ranks, hosts of different sizes). One node holding them all gives
  // `ranks`.
  int ranks_per_node(int ranks) const {
    if (!has_nodes() || ranks < 1) return 0;
    int size = 0;
    int run = 0;
    for (int r = 0; r < ranks; ++r) {
      ++run;
      if (r + 1 == ranks || node_of(r + 1) != node_of(r)) {
        if (size != 0 && run != size) return 0;
        size = run;
        run = 0;
      }
    }
    return size;
  }

  // The turn of that kind when this topology has proven it (RankTurn),
  // else null. Views and wrappers do not forward it: a degraded or
  // reshaped network is not proven symmetric.
  virtual const RankTurn* turn(TurnKind kind) const {
    (void)kind;
    return nullptr;
  }

  // Endpoints the file describes (>= num_ranks(): --ranks may use fewer).
  // The defaults fit a topology whose every node is a rank.
  virtual int num_endpoints() const { return num_ranks(); }
  // Every node: endpoints plus switches (and NICs) that only forward.
  virtual std::int64_t num_nodes() const { return num_endpoints(); }
};

// Loads a topology file. `spec` is a path to a JSON topology file, or
// "astra:FILE.yml" for an ASTRA-sim analytical network YAML, or
// "FILE.json@NODESxGPUS" for a cluster file at another scale (reshape.h;
// docs/TOPOLOGY.md, "Other scales"). `ranks` (0 = all
// endpoints) places that many ranks on the first endpoints; asking for more
// ranks than endpoints is an error. Throws FileError naming the file and field.
std::unique_ptr<Topology> load_topology(const std::string& spec, int ranks = 0);

// Same, from JSON text already in memory (`file` names it in errors).
std::unique_ptr<Topology> parse_topology(const std::string& text, const std::string& file,
                                         int ranks = 0);

}  // namespace collkit
