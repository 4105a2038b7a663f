// A network the simulator runs schedules on: endpoints (one per rank), switches
// and directed links, with routes between ranks. Loaded from the topology files
// documented in docs/TOPOLOGY.md. SI units inside: seconds, bytes per second.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace collkit {

// Directed links are numbered 0..num_links()-1; the two directions of a cable
// are two links (full duplex: they do not share bandwidth).
using LinkId = std::int64_t;

struct LinkProps {
  double bandwidth = 0;  // bytes per second, per direction (> 0)
  double latency = 0;    // seconds (>= 0)
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
  // Shared host (flow model only): the local work (reductions, copies) of
  // the ranks of one host shares host_cores cores' worth of throughput; a
  // rank alone runs at its own reduce_bw / copy_bw. 0 = never shared.
  double host_cores = 0;
  std::int32_t host = 0;  // which host; ranks of equal `host` share its cores
};

class Topology {
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

  // Endpoints the file describes (>= num_ranks(): --ranks may use fewer).
  // The defaults fit a topology whose every node is a rank.
  virtual int num_endpoints() const { return num_ranks(); }
  // Every node: endpoints plus switches (and NICs) that only forward.
  virtual std::int64_t num_nodes() const { return num_endpoints(); }

  // Metadata from the file.
  std::string name;
  std::string description;
  std::string file;    // path as given ("" for generated in memory)
  std::string sha256;  // of the file's bytes ("" for generated in memory)
};

// Loads a topology file. `spec` is a path to a JSON topology file, or
// "astra:FILE.yml" for an ASTRA-sim analytical network YAML. `ranks` (0 = all
// endpoints) places that many ranks on the first endpoints; asking for more
// ranks than endpoints is an error. Throws FileError naming the file and field.
std::unique_ptr<Topology> load_topology(const std::string& spec, int ranks = 0);

// Same, from JSON text already in memory (`file` names it in errors).
std::unique_ptr<Topology> parse_topology(const std::string& text, const std::string& file,
                                         int ranks = 0);

}  // namespace collkit
