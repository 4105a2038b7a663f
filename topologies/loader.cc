// The JSON topology loader: parses, validates every field (errors name the
// file, the field as a path like links[3].bandwidth_gbps, and the value) and
// builds the implicit or graph topology the file describes.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json.h"
#include "core/protocol.h"
#include "topologies/astra.h"
#include "topologies/builders.h"
#include "topologies/reshape.h"
#include "topologies/sha256.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxRanks = std::int64_t{1} << 30;
// Latencies are compared in whole picoseconds with 16 bits left for hops
// (graph routing); one second per link keeps path sums far from overflow.
constexpr double kMaxLatencyUs = 1e6;
constexpr double kMinBandwidthGbps = 1e-6;
constexpr double kMaxCacheMb = 1e9;
constexpr int kMaxFatTreeK = 128;
// Generators that build an explicit graph (torus with shortest routing,
// hierarchical) store every node and directed link; beyond 2^22 of either the
// graph takes gigabytes and minutes to build, so the file is rejected up
// front (the implicit forms, dims and dimension-order tori, have no limit but
// kMaxRanks). A k = 128 fat tree, the largest allowed, has 3.1M links.
constexpr double kMaxGraphElements = 4194304;  // 2^22

const std::vector<std::string> kTopKeys = {"name",
                                           "description",
                                           "endpoint",
                                           "generator",
                                           "dims",
                                           "nodes",
                                           "links",
                                           "ranks",
                                           "protocols",
                                           "nccl",
                                           "devices_per_node",
                                           "endpoints_forward",
                                           "device"};
const std::vector<std::string> kEndpointKeys = {
    "overhead_us",  "reduce_gbps", "copy_gbps",       "cache_mb",  "dram_factor",
    "dirty_factor", "host_cores",  "receiver_copies", "pipelined", "launch_us"};
const std::vector<std::string> kProtocolNames = {"LL", "LL128", "Simple"};
const std::vector<std::string> kGeneratorKinds = {
    "ring", "fully_connected", "switch", "torus", "hypercube", "fat_tree", "hierarchical"};
const std::vector<std::string> kDimKinds = {"ring", "switch", "fully_connected"};

std::string join_list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string field(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string at(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string show(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// Validating accessors: every failure throws FileError "file: field: problem".
class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    throw FileError(file_ + ": " + (path.empty() ? "(top level)" : path) + ": " + msg);
  }

  void object(const json& v, const std::string& path) const {
    if (!v.is_object()) fail(path, "expected an object, got " + show(v));
  }

  const json& array(const json& v, const std::string& path) const {
    if (!v.is_array()) fail(path, "expected an array, got " + show(v));
    return v;
  }

  void keys(const json& obj, const std::string& path, const std::vector<std::string>& valid) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::find(valid.begin(), valid.end(), it.key()) == valid.end()) {
        fail(field(path, it.key()), "unknown key; valid keys here: " + join_list(valid));
      }
    }
  }

  const json* find(const json& obj, const std::string& key) const {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  double number(const json& obj, const std::string& path, const std::string& key,
                std::optional<double> def, const std::string& what) const {
    const json* v = find(obj, key);
    if (!v) {
      if (!def) fail(field(path, key), "missing (" + what + ")");
      return *def;
    }
    if (!v->is_number()) fail(field(path, key), "expected a number, got " + show(*v));
    return v->get<double>();
  }

  // GB/s in the file, bytes per second returned.
  double bandwidth(const json& obj, const std::string& path,
                   const std::string& key = "bandwidth_gbps",
                   std::optional<double> def_gbps = std::nullopt) const {
    double gbps = number(obj, path, key, def_gbps, "bandwidth in GB/s, > 0");
    if (!(gbps > 0)) fail(field(path, key), "must be > 0 (GB/s), got " + show(obj.at(key)));
    // Below 1 kB/s a message of a few MB takes longer than any run, and
    // 1e-300 prints a time of 300 digits: not a link.
    if (gbps < kMinBandwidthGbps)
      fail(field(path, key), "must be at least 1e-06 GB/s (1 kB/s), got " + show(obj.at(key)));
    // 1e300 GB/s would overflow to an infinite bandwidth in bytes per second.
    if (!std::isfinite(gbps * 1e9)) {
      fail(field(path, key), "must be finite in bytes per second, got " + show(obj.at(key)));
    }
    return gbps * 1e9;
  }

  // The optional line rate of a link whose model bandwidth is `bandwidth`
  // (bytes per second): GB/s in the file, bytes per second returned, 0
  // when absent; never below the bandwidth.
  double line_rate(const json& obj, const std::string& path, const std::string& key,
                   double bandwidth_bps) const {
    if (!find(obj, key)) return 0;
    const double rate = bandwidth(obj, path, key);
    if (rate < bandwidth_bps * (1 - 1e-12)) {
      char bw[32];
      std::snprintf(bw, sizeof bw, "%g", bandwidth_bps / 1e9);
      fail(field(path, key), show(obj.at(key)) + " GB/s is below the bandwidth of " + bw +
                                 " GB/s: a link never carries more than its line rate");
    }
    return rate;
  }

  // Microseconds in the file, seconds returned.
  double latency(const json& obj, const std::string& path,
                 const std::string& key = "latency_us") const {
    double us = number(obj, path, key, 0.0, "");
    if (!(us >= 0)) fail(field(path, key), "must be >= 0 (microseconds), got " + show(obj.at(key)));
    if (us > kMaxLatencyUs) {
      fail(field(path, key), "must be at most 1e6 (one second), got " + show(obj.at(key)));
    }
    return us * 1e-6;
  }

  // bandwidth_gbps, latency_us and the optional protocol_latency_us
  // ({"LL": us, "LL128": us, "Simple": us}, any subset).
  LinkProps link(const json& obj, const std::string& path) const {
    LinkProps l;
    l.bandwidth = bandwidth(obj, path);
    l.latency = latency(obj, path);
    l.line_rate = line_rate(obj, path, "line_rate_gbps", l.bandwidth);
    if (const json* v = find(obj, "protocol_latency_us")) {
      const std::string pp = field(path, "protocol_latency_us");
      object(*v, pp);
      keys(*v, pp, kProtocolNames);
      for (int i = 0; i < 3; ++i)
        if (find(*v, kProtocolNames[i])) l.protocol_latency[i] = latency(*v, pp, kProtocolNames[i]);
    }
    return l;
  }

  // "in_network": {"bandwidth_gbps": X}: the switch multicasts and reduces.
  double in_network(const json& obj, const std::string& path) const {
    const json* v = find(obj, "in_network");
    if (!v) return 0;
    const std::string ip = field(path, "in_network");
    object(*v, ip);
    keys(*v, ip, {"bandwidth_gbps"});
    return bandwidth(*v, ip);
  }

  std::int64_t integer(const json& obj, const std::string& path, const std::string& key,
                       std::int64_t lo, std::int64_t hi,
                       std::optional<std::int64_t> def = std::nullopt) const {
    const json* v = find(obj, key);
    if (!v) {
      if (!def) fail(field(path, key), "missing (an integer)");
      return *def;
    }
    return integer_value(*v, field(path, key), lo, hi);
  }

  std::int64_t integer_value(const json& v, const std::string& path, std::int64_t lo,
                             std::int64_t hi) const {
    if (!v.is_number_integer()) fail(path, "expected an integer, got " + show(v));
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
      fail(path, "must be at most " + std::to_string(hi) + ", got " + show(v));
    }
    std::int64_t x = v.get<std::int64_t>();
    if (x < lo) fail(path, "must be at least " + std::to_string(lo) + ", got " + show(v));
    if (x > hi) fail(path, "must be at most " + std::to_string(hi) + ", got " + show(v));
    return x;
  }

  bool boolean(const json& obj, const std::string& path, const std::string& key, bool def) const {
    const json* v = find(obj, key);
    if (!v) return def;
    if (!v->is_boolean()) fail(field(path, key), "expected true or false, got " + show(*v));
    return v->get<bool>();
  }

  std::string string(const json& obj, const std::string& path, const std::string& key,
                     std::optional<std::string> def = std::nullopt) const {
    const json* v = find(obj, key);
    if (!v) {
      if (!def) fail(field(path, key), "missing (a string)");
      return *def;
    }
    return string_value(*v, field(path, key));
  }

  std::string string_value(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a string, got " + show(v));
    return v.get<std::string>();
  }

  // A string that must be one of `valid`.
  std::string choice(const json& obj, const std::string& path, const std::string& key,
                     const std::vector<std::string>& valid,
                     std::optional<std::string> def = std::nullopt) const {
    std::string s = string(obj, path, key, def);
    if (std::find(valid.begin(), valid.end(), s) == valid.end()) {
      fail(field(path, key), "unknown " + key + " \"" + s + "\"; valid: " + join_list(valid));
    }
    return s;
  }

  EndpointProps endpoint(const json& obj, const std::string& path, EndpointProps base) const {
    if (const json* v = find(obj, "overhead_us")) {
      double us = number(obj, path, "overhead_us", std::nullopt, "");
      if (!(us >= 0)) {
        fail(field(path, "overhead_us"), "must be >= 0 (microseconds), got " + show(*v));
      }
      if (us > kMaxLatencyUs) {
        fail(field(path, "overhead_us"), "must be at most 1e6 (one second), got " + show(*v));
      }
      base.overhead = us * 1e-6;
    }
    if (find(obj, "reduce_gbps")) base.reduce_bw = bandwidth(obj, path, "reduce_gbps");
    base.pipelined = boolean(obj, path, "pipelined", base.pipelined);
    if (find(obj, "launch_us")) base.launch = latency(obj, path, "launch_us");
    if (find(obj, "copy_gbps")) base.copy_bw = bandwidth(obj, path, "copy_gbps");
    if (const json* v = find(obj, "host_cores")) {
      const double cores = number(obj, path, "host_cores", std::nullopt, "");
      if (!(cores > 0) || cores > 1e6)
        fail(field(path, "host_cores"), "must be > 0 and at most 1e6, got " + show(*v));
      base.host_cores = cores;
    }
    if (const json* v = find(obj, "cache_mb")) {
      const double mb = number(obj, path, "cache_mb", std::nullopt, "");
      if (!(mb > 0) || mb > kMaxCacheMb)
        fail(field(path, "cache_mb"), "must be > 0 and at most 1e9 (MiB), got " + show(*v));
      base.cache_bytes = mb * 1048576.0;
    }
    if (const json* v = find(obj, "dram_factor")) {
      const double f = number(obj, path, "dram_factor", std::nullopt, "");
      if (!(f > 0) || f > 1e6)
        fail(field(path, "dram_factor"), "must be > 0 and at most 1e6, got " + show(*v));
      if (!(base.cache_bytes > 0))
        fail(field(path, "dram_factor"),
             "needs cache_mb (the buffer size beyond which it applies), here or in endpoint");
      base.dram_factor = f;
    }
    if (const json* v = find(obj, "dirty_factor")) {
      const double f = number(obj, path, "dirty_factor", std::nullopt, "");
      if (!(f >= 1) || f > 1e6)
        fail(field(path, "dirty_factor"), "must be >= 1 and at most 1e6, got " + show(*v));
      base.dirty_factor = f;
    }
    if (find(obj, "receiver_copies")) {
      base.receiver_copies = boolean(obj, path, "receiver_copies", false);
      if (base.receiver_copies && !(base.host_cores > 0))
        fail(field(path, "receiver_copies"),
             "needs host_cores (the host whose cores do the copies), here or in endpoint");
    }
    return base;
  }

 private:
  const std::string& file_;
};

DimKind dim_kind(const std::string& s) {
  if (s == "ring") return DimKind::kRing;
  if (s == "switch") return DimKind::kSwitch;
  return DimKind::kFullyConnected;
}

std::unique_ptr<Topology> product(std::vector<Dim> dims, EndpointProps ep) {
  return std::make_unique<ProductTopology>(std::move(dims), ep);
}

// Fails at `path` when a graph generator would build more than
// kMaxGraphElements nodes or directed links (computed in double: no overflow).
void check_graph_size(const Reader& rd, const std::string& path, double nodes, double links) {
  if (nodes <= kMaxGraphElements && links <= kMaxGraphElements) return;
  auto n = [](double v) { return std::to_string(static_cast<long long>(std::min(v, 9e18))); };
  rd.fail(path, "the network would be built as a graph of " + n(nodes) + " nodes and " + n(links) +
                    " directed links; at most 4194304 (2^22) of each (the dims form and "
                    "dimension_order tori have no such limit)");
}

// Directed links of one group of `size` members joined as `kind`.
double group_links(DimKind kind, double size) {
  if (size <= 1) return 0;
  switch (kind) {
    case DimKind::kSwitch:
      return 2 * size;
    case DimKind::kFullyConnected:
      return size * (size - 1);
    case DimKind::kRing:
      return size == 2 ? 2 : 2 * size;
  }
  return 0;
}

// Multiplies sizes, failing at `path` once the total passes kMaxRanks.
void grow(const Reader& rd, std::int64_t& total, std::int64_t size, const std::string& path) {
  total *= size;
  if (total > kMaxRanks) rd.fail(path, "more than 2^30 ranks in total");
}

// ring, fully_connected, switch: one dimension of `ranks`.
std::unique_ptr<Topology> one_dim_generator(const Reader& rd, const json& gen,
                                            const std::string& kind, EndpointProps ep) {
  const std::string p = "generator";
  if (kind == "switch")
    rd.keys(gen, p,
            {"kind", "ranks", "bandwidth_gbps", "latency_us", "protocol_latency_us",
             "line_rate_gbps", "in_network"});
  else
    rd.keys(
        gen, p,
        {"kind", "ranks", "bandwidth_gbps", "latency_us", "protocol_latency_us", "line_rate_gbps"});
  Dim d{dim_kind(kind), static_cast<int>(rd.integer(gen, p, "ranks", 1, kMaxRanks)),
        rd.link(gen, p)};
  if (kind == "switch") d.in_network_bw = rd.in_network(gen, p);
  return product({d}, ep);
}

// torus: rings of the shape's sizes, dimension-order or shortest routes.
std::unique_ptr<Topology> torus_generator(const Reader& rd, const json& gen, EndpointProps ep) {
  const std::string p = "generator";
  rd.keys(gen, p,
          {"kind", "shape", "routing", "bandwidth_gbps", "latency_us", "protocol_latency_us",
           "line_rate_gbps"});
  const json* shape = rd.find(gen, "shape");
  if (!shape) rd.fail(field(p, "shape"), "missing (sizes of the dimensions, e.g. [4, 4])");
  rd.array(*shape, field(p, "shape"));
  if (shape->empty()) rd.fail(field(p, "shape"), "needs at least one dimension");
  LinkProps link = rd.link(gen, p);
  std::vector<Dim> dims;
  std::int64_t total = 1;
  for (std::size_t i = 0; i < shape->size(); ++i) {
    std::string ip = at(field(p, "shape"), i);
    std::int64_t s = rd.integer_value((*shape)[i], ip, 1, kMaxRanks);
    grow(rd, total, s, ip);
    dims.push_back({DimKind::kRing, static_cast<int>(s), link});
  }
  std::string routing =
      rd.choice(gen, p, "routing", {"dimension_order", "shortest"}, "dimension_order");
  if (routing == "shortest") {
    double links = 0;
    for (const Dim& d : dims)
      links += static_cast<double>(total) / d.size * group_links(d.kind, d.size);
    check_graph_size(rd, field(p, "shape"), static_cast<double>(total), links);
    return build_product_graph(dims, ep);
  }
  return product(dims, ep);
}

// hypercube: `dimension` (or `ranks`, a power of two) two-rank dimensions.
std::unique_ptr<Topology> hypercube_generator(const Reader& rd, const json& gen, EndpointProps ep) {
  const std::string p = "generator";
  rd.keys(gen, p,
          {"kind", "dimension", "ranks", "bandwidth_gbps", "latency_us", "protocol_latency_us",
           "line_rate_gbps"});
  const json* dim = rd.find(gen, "dimension");
  const json* ranks = rd.find(gen, "ranks");
  if (!dim && !ranks) rd.fail(field(p, "dimension"), "missing (give dimension or ranks)");
  std::int64_t d = dim ? rd.integer(gen, p, "dimension", 0, 30) : 0;
  if (ranks) {
    std::int64_t r = rd.integer(gen, p, "ranks", 1, kMaxRanks);
    if ((r & (r - 1)) != 0) {
      rd.fail(field(p, "ranks"), "a hypercube needs a power of two, got " + show(*ranks));
    }
    std::int64_t log = 0;
    while ((std::int64_t{1} << log) < r) ++log;
    if (dim && log != d) {
      rd.fail(field(p, "ranks"), "disagrees with dimension " + std::to_string(d) + " (2^" +
                                     std::to_string(d) + " ranks), got " + show(*ranks));
    }
    d = log;
  }
  // A hypercube is the product of d two-rank dimensions.
  return product(std::vector<Dim>(d, Dim{DimKind::kFullyConnected, 2, rd.link(gen, p)}), ep);
}

// fat_tree: k-ary, with the edge's uplinks oversubscribed.
std::unique_ptr<Topology> fat_tree_generator(const Reader& rd, const json& gen, EndpointProps ep) {
  const std::string p = "generator";
  rd.keys(gen, p,
          {"kind", "k", "oversubscription", "bandwidth_gbps", "latency_us", "protocol_latency_us",
           "line_rate_gbps"});
  std::int64_t k = rd.integer(gen, p, "k", 2, kMaxFatTreeK);
  if (k % 2 != 0) rd.fail(field(p, "k"), "must be even, got " + show(gen.at("k")));
  double os = rd.number(gen, p, "oversubscription", 1.0, "");
  if (!(os >= 1)) {
    rd.fail(field(p, "oversubscription"),
            "must be >= 1 (2 = edge uplinks at half bandwidth), got " +
                show(gen.at("oversubscription")));
  }
  return build_fat_tree(static_cast<int>(k), os, rd.link(gen, p), ep);
}

// The hierarchical generator's fabric between nodes (`inter`, the NICs),
// required when there are several nodes.
void read_inter(const Reader& rd, const json& gen, HierarchicalSpec& spec) {
  const std::string p = "generator";
  const json* inter = rd.find(gen, "inter");
  if (!inter && spec.nodes > 1) {
    rd.fail(field(p, "inter"),
            "missing (the fabric between nodes: {kind, bandwidth_gbps, latency_us})");
  }
  if (inter) {
    const std::string ip = field(p, "inter");
    rd.object(*inter, ip);
    rd.keys(*inter, ip,
            {"kind", "bandwidth_gbps", "latency_us", "protocol_latency_us", "line_rate_gbps", "k",
             "oversubscription", "in_network"});
    std::string ik = rd.choice(*inter, ip, "kind", {"switch", "fat_tree"}, "switch");
    spec.inter = rd.link(*inter, ip);
    spec.inter_in_network = rd.in_network(*inter, ip);
    if (spec.inter_in_network > 0 && ik != "switch")
      rd.fail(field(ip, "in_network"), "only for kind switch (a switch multicasts and reduces)");
    spec.nic_link.bandwidth =
        rd.bandwidth(gen, p, "nic_bandwidth_gbps", spec.inter.bandwidth / 1e9);
    spec.nic_link.latency = rd.latency(gen, p, "nic_latency_us");
    // A NIC's line rate: given, else the fabric's (the other end of its cable).
    spec.nic_link.line_rate = rd.line_rate(gen, p, "nic_line_rate_gbps", spec.nic_link.bandwidth);
    if (spec.nic_link.line_rate == 0 && spec.inter.line_rate >= spec.nic_link.bandwidth)
      spec.nic_link.line_rate = spec.inter.line_rate;
    if (ik == "fat_tree") {
      spec.inter_kind = InterKind::kFatTree;
      std::int64_t nics = static_cast<std::int64_t>(spec.nodes) * spec.nics_per_node;
      spec.k = static_cast<int>(rd.integer(*inter, ip, "k", 2, kMaxFatTreeK, 0));
      if (spec.k % 2 != 0) rd.fail(field(ip, "k"), "must be even, got " + show(inter->at("k")));
      std::int64_t k = spec.k > 0 ? spec.k : kMaxFatTreeK;
      if (k * k * k / 4 < nics) {
        rd.fail(field(ip, "k"), "k = " + std::to_string(k) + " gives " +
                                    std::to_string(k * k * k / 4) + " host ports, fewer than the " +
                                    std::to_string(nics) + " NICs");
      }
      spec.oversubscription = rd.number(*inter, ip, "oversubscription", 1.0, "");
      if (!(spec.oversubscription >= 1)) {
        rd.fail(field(ip, "oversubscription"),
                "must be >= 1, got " + show(inter->at("oversubscription")));
      }
    } else {
      for (const char* key : {"k", "oversubscription"}) {
        if (rd.find(*inter, key)) rd.fail(field(ip, key), "only for kind fat_tree");
      }
    }
  } else {
    for (const char* key : {"nic_bandwidth_gbps", "nic_line_rate_gbps", "nic_latency_us"}) {
      if (rd.find(gen, key)) rd.fail(field(p, key), "needs an inter fabric (nodes > 1)");
    }
  }
}

// The graph the hierarchical spec builds must stay within the size the
// loader accepts (check_graph_size), counted before it is built.
void check_hierarchical_size(const Reader& rd, const HierarchicalSpec& spec) {
  const std::string p = "generator";
  const double n = spec.nodes, d = spec.devices_per_node, c = spec.nics_per_node;
  double nodes = n * d + (spec.intra_kind == DimKind::kSwitch && d > 1 ? n : 0);
  double links = n * group_links(spec.intra_kind, d);
  if (spec.nodes > 1) {
    nodes += 2 * n * c;
    links += 2 * n * d;
    if (spec.inter_kind == InterKind::kSwitch) {
      nodes += spec.rail_optimized ? c : 1;
      links += 2 * n * c;
    } else {
      const double k = spec.k > 0 ? spec.k : fat_tree_k_for(static_cast<int>(n * c));
      nodes += 5 * k * k / 4;
      links += 2 * n * c + 2 * k * k * k / 2;
    }
  }
  check_graph_size(rd, p, nodes, links);
}

// hierarchical: nodes of devices on an intra fabric, NICs on an inter one.
std::unique_ptr<Topology> hierarchical_generator(const Reader& rd, const json& gen,
                                                 EndpointProps ep) {
  const std::string p = "generator";
  rd.keys(gen, p,
          {"kind", "nodes", "devices_per_node", "intra", "nics_per_node", "nic_bandwidth_gbps",
           "nic_line_rate_gbps", "nic_latency_us", "inter", "rail_optimized"});
  HierarchicalSpec spec;
  spec.endpoint = ep;
  spec.nodes = static_cast<int>(rd.integer(gen, p, "nodes", 1, kMaxRanks));
  spec.devices_per_node = static_cast<int>(rd.integer(gen, p, "devices_per_node", 1, kMaxRanks));
  std::int64_t total = spec.nodes;
  grow(rd, total, spec.devices_per_node, field(p, "devices_per_node"));
  // The fabrics are validated whenever given, and required where used.
  const json* intra = rd.find(gen, "intra");
  if (!intra && spec.devices_per_node > 1) {
    rd.fail(field(p, "intra"),
            "missing (the fabric inside a node: {kind, bandwidth_gbps, latency_us})");
  }
  if (intra) {
    const std::string ip = field(p, "intra");
    rd.object(*intra, ip);
    rd.keys(*intra, ip,
            {"kind", "bandwidth_gbps", "latency_us", "protocol_latency_us", "line_rate_gbps",
             "in_network"});
    spec.intra_kind = dim_kind(rd.choice(*intra, ip, "kind", kDimKinds, "switch"));
    spec.intra = rd.link(*intra, ip);
    spec.intra_in_network = rd.in_network(*intra, ip);
    if (spec.intra_in_network > 0 && spec.intra_kind != DimKind::kSwitch)
      rd.fail(field(ip, "in_network"), "only for kind switch (a switch multicasts and reduces)");
  }
  spec.nics_per_node =
      static_cast<int>(rd.integer(gen, p, "nics_per_node", 1, spec.devices_per_node, 1));
  spec.rail_optimized = rd.boolean(gen, p, "rail_optimized", false);
  read_inter(rd, gen, spec);
  check_hierarchical_size(rd, spec);
  std::unique_ptr<GraphTopology> g = build_hierarchical(spec);
  g->devices_per_node = spec.devices_per_node;
  return g;
}

std::unique_ptr<Topology> generator(const Reader& rd, const json& gen, EndpointProps ep) {
  const std::string p = "generator";
  rd.object(gen, p);
  std::string kind = rd.string(gen, p, "kind");
  if (std::find(kGeneratorKinds.begin(), kGeneratorKinds.end(), kind) == kGeneratorKinds.end()) {
    rd.fail(field(p, "kind"),
            "unknown generator kind \"" + kind + "\"; valid kinds: " + join_list(kGeneratorKinds));
  }
  if (kind == "ring" || kind == "fully_connected" || kind == "switch")
    return one_dim_generator(rd, gen, kind, ep);
  if (kind == "torus") return torus_generator(rd, gen, ep);
  if (kind == "hypercube") return hypercube_generator(rd, gen, ep);
  if (kind == "fat_tree") return fat_tree_generator(rd, gen, ep);
  return hierarchical_generator(rd, gen, ep);
}

std::unique_ptr<Topology> dims_form(const Reader& rd, const json& dims, EndpointProps ep) {
  rd.array(dims, "dims");
  if (dims.empty()) rd.fail("dims", "needs at least one dimension");
  std::vector<Dim> out;
  std::int64_t total = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::string p = at("dims", i);
    rd.object(dims[i], p);
    rd.keys(dims[i], p,
            {"kind", "size", "bandwidth_gbps", "latency_us", "protocol_latency_us",
             "line_rate_gbps", "in_network"});
    Dim d;
    d.kind = dim_kind(rd.choice(dims[i], p, "kind", kDimKinds));
    d.in_network_bw = rd.in_network(dims[i], p);
    if (d.in_network_bw > 0 && d.kind != DimKind::kSwitch)
      rd.fail(field(p, "in_network"), "only for kind switch (a switch multicasts and reduces)");
    std::int64_t s = rd.integer(dims[i], p, "size", 1, kMaxRanks);
    grow(rd, total, s, field(p, "size"));
    d.size = static_cast<int>(s);
    d.link = rd.link(dims[i], p);
    out.push_back(d);
  }
  return product(std::move(out), ep);
}

std::unique_ptr<Topology> explicit_form(const Reader& rd, const json& top, EndpointProps ep) {
  const json* nodes = rd.find(top, "nodes");
  const json* links = rd.find(top, "links");
  if (!nodes) rd.fail("nodes", "missing (the explicit form needs nodes and links)");
  if (!links) rd.fail("links", "missing (the explicit form needs nodes and links)");
  rd.array(*nodes, "nodes");
  rd.array(*links, "links");
  if (nodes->empty()) rd.fail("nodes", "empty");
  auto g = std::make_unique<GraphTopology>();
  std::unordered_map<std::string, std::pair<int, std::size_t>> ids;  // id -> (node, index)
  std::unordered_map<std::string, std::int32_t> hosts;               // "host" -> id
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    const std::string p = at("nodes", i);
    const json& n = (*nodes)[i];
    rd.object(n, p);
    std::vector<std::string> node_keys = {"id", "switch", "host", "in_network"};
    node_keys.insert(node_keys.end(), kEndpointKeys.begin(), kEndpointKeys.end());
    rd.keys(n, p, node_keys);
    std::string id = rd.string(n, p, "id");
    if (id.empty()) rd.fail(field(p, "id"), "must not be empty");
    bool sw = rd.boolean(n, p, "switch", false);
    const double in_network = rd.in_network(n, p);
    if (in_network > 0 && !sw)
      rd.fail(field(p, "in_network"), "only on a switch (\"switch\": true)");
    EndpointProps node_ep = rd.endpoint(n, p, ep);
    if (rd.find(n, "host")) {
      // Hosts are numbered in order of first mention; nodes without "host"
      // are on host 0, the one the first name gets too.
      const std::string h = rd.string(n, p, "host");
      if (h.empty()) rd.fail(field(p, "host"), "must not be empty");
      node_ep.host = static_cast<std::int32_t>(
          hosts.try_emplace(h, static_cast<std::int32_t>(hosts.size())).first->second);
    }
    auto [it, added] = ids.try_emplace(id, static_cast<int>(i), i);
    if (!added) {
      rd.fail(field(p, "id"),
              "duplicate node id \"" + id + "\" (first at " + at("nodes", it->second.second) + ")");
    }
    const int node = g->add_node(id, sw, node_ep);
    if (in_network > 0) g->set_in_network(node, in_network);
  }
  auto node_of = [&](const json& v, const std::string& path) {
    std::string id = rd.string_value(v, path);
    auto it = ids.find(id);
    if (it == ids.end()) rd.fail(path, "unknown node \"" + id + "\"");
    return it->second.first;
  };
  for (std::size_t i = 0; i < links->size(); ++i) {
    const std::string p = at("links", i);
    const json& l = (*links)[i];
    rd.object(l, p);
    rd.keys(l, p,
            {"a", "b", "bandwidth_gbps", "latency_us", "protocol_latency_us", "line_rate_gbps",
             "directed"});
    for (const char* end : {"a", "b"}) {
      if (!rd.find(l, end)) rd.fail(field(p, end), "missing (a node id)");
    }
    int a = node_of(l.at("a"), field(p, "a"));
    int b = node_of(l.at("b"), field(p, "b"));
    if (a == b) rd.fail(field(p, "b"), "links node \"" + g->node_name(a) + "\" to itself");
    // A directed link carries a -> b only (an asymmetric or one-way path,
    // e.g. a shared bus every transfer must cross in one direction).
    if (rd.boolean(l, p, "directed", false))
      g->add_link(a, b, rd.link(l, p));
    else
      g->add_cable(a, b, rd.link(l, p));
  }
  if (const json* ranks = rd.find(top, "ranks")) {
    rd.array(*ranks, "ranks");
    if (ranks->empty()) rd.fail("ranks", "empty (list the node ids that carry ranks)");
    std::vector<int> eps;
    std::vector<std::size_t> first(nodes->size(), ranks->size());
    for (std::size_t i = 0; i < ranks->size(); ++i) {
      const std::string p = at("ranks", i);
      int v = node_of((*ranks)[i], p);
      if (g->is_switch(v))
        rd.fail(p, "node \"" + g->node_name(v) + "\" is a switch, not an endpoint");
      if (first[v] != ranks->size()) {
        rd.fail(p, "node \"" + g->node_name(v) + "\" listed twice (first at " +
                       at("ranks", first[v]) + ")");
      }
      first[v] = i;
      eps.push_back(v);
    }
    g->set_endpoints(std::move(eps));
  }
  // "endpoints_forward": false: routes cross switches only, never another
  // endpoint (docs/TOPOLOGY.md).
  g->set_endpoints_forward(rd.boolean(top, "", "endpoints_forward", true));
  int lost = g->finalize();
  if (g->num_endpoints() == 0) rd.fail("nodes", "no endpoints (every node is a switch)");
  if (lost >= 0) {
    const std::string r =
        "rank " + std::to_string(lost) + " (node \"" + g->node_name(g->endpoint_node(lost)) + "\")";
    if (g->lost_peer() >= 0) {
      const int q = g->lost_peer();
      rd.fail("links", "the graph is disconnected: " + r + " cannot reach rank " +
                           std::to_string(q) + " (node \"" + g->node_name(g->endpoint_node(q)) +
                           "\") without passing through another endpoint (endpoints_forward is "
                           "false)");
    }
    const std::string zero = "rank 0 (node \"" + g->node_name(g->endpoint_node(0)) + "\")";
    rd.fail("links", "the graph is disconnected: " + (g->lost_cannot_reach()
                                                          ? r + " cannot reach " + zero
                                                          : r + " cannot be reached from " + zero));
  }
  return g;
}

void gpu_completeness(const json& top, Topology& t);

// The keys every form may have: node structure, protocols, NCCL's graph.
void read_extras(const Reader& rd, const json& top, Topology& t) {
  if (auto* g = dynamic_cast<GraphTopology*>(&t)) {
    // Explicit files: the "host" of each endpoint is its node.
    if (rd.find(top, "nodes") && !rd.find(top, "devices_per_node")) {
      bool any = false;
      for (const json& n : top.at("nodes")) any = any || n.contains("host");
      if (any) {
        t.rank_node.resize(static_cast<std::size_t>(g->num_endpoints()));
        for (int r = 0; r < g->num_endpoints(); ++r) t.rank_node[r] = g->endpoint(r).host;
      }
    }
  }
  if (const json* d = rd.find(top, "devices_per_node")) {
    if (!t.rank_node.empty() || t.devices_per_node > 0)
      rd.fail("devices_per_node",
              "the network already has nodes (hierarchical generator, or \"host\" on nodes)");
    const std::int64_t n = rd.integer_value(*d, "devices_per_node", 1, kMaxRanks);
    if (t.num_endpoints() % n != 0)
      rd.fail("devices_per_node", "must divide the " + std::to_string(t.num_endpoints()) +
                                      " endpoints, got " + show(*d));
    t.devices_per_node = static_cast<int>(n);
  }
  if (const json* pr = rd.find(top, "protocols")) {
    rd.object(*pr, "protocols");
    std::vector<std::string> protocol_keys = kProtocolNames;
    protocol_keys.emplace_back("default");
    rd.keys(*pr, "protocols", protocol_keys);
    if (rd.find(*pr, "default")) {
      t.default_protocol = parse_protocol(rd.choice(*pr, "protocols", "default", kProtocolNames));
      if (!rd.find(*pr, rd.string(*pr, "protocols", "default")))
        rd.fail("protocols.default", "names " + rd.string(*pr, "protocols", "default") +
                                         ", which the table does not describe");
    }
    for (int i = 0; i < 3; ++i) {
      const json* v = rd.find(*pr, kProtocolNames[i]);
      if (!v) continue;
      const std::string pp = field("protocols", kProtocolNames[i]);
      rd.object(*v, pp);
      rd.keys(*v, pp, {"efficiency", "base_latency_us", "chunk_kib"});
      ProtocolProps& p = t.protocols[i];
      p.set = true;
      p.efficiency = rd.number(*v, pp, "efficiency", 1.0, "");
      if (!(p.efficiency > 0) || p.efficiency > 1)
        rd.fail(field(pp, "efficiency"),
                "must be in (0, 1] (data bytes per byte on the wire), got " +
                    show(v->at("efficiency")));
      p.base_latency = rd.latency(*v, pp, "base_latency_us");
      if (rd.find(*v, "chunk_kib")) {
        const double kib = rd.number(*v, pp, "chunk_kib", std::nullopt, "");
        if (!(kib > 0) || kib > 1048576)
          rd.fail(field(pp, "chunk_kib"),
                  "must be > 0 and at most 1048576 (KiB), got " + show(v->at("chunk_kib")));
        p.chunk_bytes = kib * 1024.0;
      }
    }
  }
  if (const json* nc = rd.find(top, "nccl")) {
    rd.object(*nc, "nccl");
    rd.keys(*nc, "nccl",
            {"gpu", "ring", "tree", "nvls", "runtime_channels", "version", "net_latency_us"});
    if (rd.find(*nc, "gpu")) {
      std::vector<std::string> names;
      for (NcclGpu g : kNcclGpus) names.emplace_back(to_string(g));
      const std::string name = rd.choice(*nc, "nccl", "gpu", names);
      for (NcclGpu g : kNcclGpus)
        if (name == to_string(g)) t.nccl.gpu = g;
    }
    if (rd.find(*nc, "net_latency_us"))
      t.nccl.net_latency_us = rd.latency(*nc, "nccl", "net_latency_us") * 1e6;
    if (const json* v = rd.find(*nc, "version")) {
      const std::string field_name = field("nccl", "version");
      if (!v->is_string())
        rd.fail(field_name, "must be an NCCL version string such as \"2.26.2\", got " + show(*v));
      const std::optional<NcclVersion> version = parse_nccl_version(v->get<std::string>());
      if (!version)
        rd.fail(field_name, "'" + v->get<std::string>() +
                                "': expected an NCCL version MAJOR.MINOR.PATCH (2.26.2)");
      if (!nccl_version_supported(*version))
        rd.fail(field_name, "'" + v->get<std::string>() + "': NCCL " + to_string(*version) +
                                " is outside the versions collkit has NCCL's cost model for (" +
                                nccl_supported_range() + ")");
      t.nccl.version = version;
    }
    const auto graph = [&](const char* key, const char* count, int& channels, double& bw) {
      const json* g = rd.find(*nc, key);
      if (!g) return;
      const std::string gp = field("nccl", key);
      rd.object(*g, gp);
      rd.keys(*g, gp, {count, "bandwidth_gbps"});
      channels = static_cast<int>(rd.integer(*g, gp, count, 1, 64));
      bw = rd.bandwidth(*g, gp);
    };
    graph("ring", "channels", t.nccl.ring_channels, t.nccl.ring_bw);
    graph("tree", "channels", t.nccl.tree_channels, t.nccl.tree_bw);
    graph("nvls", "heads", t.nccl.nvls_heads, t.nccl.nvls_bw);
    if (rd.find(*nc, "runtime_channels"))
      t.nccl.runtime_channels =
          static_cast<int>(rd.integer(*nc, "nccl", "runtime_channels", 1, 64));
  }
  gpu_completeness(top, t);
}

// A file that describes a GPU machine (it has any of the keys only GPU
// networks have: nccl, protocols, endpoint.pipelined, endpoint.launch_us)
// but not all of them models NCCL only in part: without protocols every
// protocol costs the same, without pipelined endpoints NCCL's FIFOs become
// rendezvous, without launch_us no call has a host floor, without nccl.gpu
// NCCL's H100 constants decide. Each missing key is a warning naming the
// file and the key (docs/TOPOLOGY.md, "GPU networks").
void gpu_completeness(const json& top, Topology& t) {
  const json* ep = top.contains("endpoint") ? &top.at("endpoint") : nullptr;
  const json* nc = top.contains("nccl") ? &top.at("nccl") : nullptr;
  const json* pr = top.contains("protocols") ? &top.at("protocols") : nullptr;
  const bool pipelined = ep && ep->contains("pipelined");
  const bool launch = ep && ep->contains("launch_us");
  if (!nc && !pr && !pipelined && !launch) return;
  std::vector<std::string> have;
  if (nc) have.emplace_back("nccl");
  if (pr) have.emplace_back("protocols");
  if (pipelined) have.emplace_back("endpoint.pipelined");
  if (launch) have.emplace_back("endpoint.launch_us");
  const std::string why = "the file describes a GPU machine (it has " + join_list(have) + ")";
  const auto lacks = [&](const std::string& field, const std::string& effect) {
    t.warnings.push_back(field + ": missing: " + why + " but not this, so " + effect);
  };
  if (!pr) {
    lacks("protocols",
          "LL, LL128 and Simple cost the same (no wire efficiency, base latency or chunk)");
  } else {
    for (const char* p : {"LL", "LL128", "Simple"})
      if (!pr->contains(p))
        lacks(std::string("protocols.") + p,
              std::string("NCCL's ") + p + " runs with no wire efficiency, base latency or chunk");
  }
  if (!pipelined || !ep->at("pipelined").is_boolean() || !ep->at("pipelined").get<bool>())
    lacks("endpoint.pipelined",
          "sends wait for their receiver (rendezvous) instead of NCCL's eager FIFOs");
  if (!launch) lacks("endpoint.launch_us", "no call pays a host launch floor");
  if (!nc || !nc->contains("gpu")) lacks("nccl.gpu", "NCCL's H100 constants choose what NCCL runs");
}

std::string stem(const std::string& file) {
  std::string s = file.substr(file.find_last_of('/') + 1);
  auto dot = s.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? s : s.substr(0, dot);
}

// Places `ranks` ranks (0 = all endpoints) and records where the file came from.
std::unique_ptr<Topology> finish(std::unique_ptr<Topology> t, const std::string& file, int ranks) {
  if (ranks < 0) {
    throw FileError(file + ": --ranks: must be >= 0 (0 = every endpoint), got " +
                    std::to_string(ranks));
  }
  if (ranks > t->num_endpoints()) {
    throw FileError(file + ": --ranks: asks for " + std::to_string(ranks) +
                    " ranks but the topology has " + std::to_string(t->num_endpoints()) +
                    " endpoints");
  }
  if (ranks > 0) {
    if (auto* g = dynamic_cast<GraphTopology*>(t.get())) g->set_num_ranks(ranks);
    if (auto* p = dynamic_cast<ProductTopology*>(t.get())) p->set_num_ranks(ranks);
  }
  t->file = file;
  return t;
}

std::string read_file(const std::string& path) { return read_input_file(path, "topology file"); }

}  // namespace

std::unique_ptr<Topology> parse_topology(const std::string& text, const std::string& file,
                                         int ranks) {
  json top;
  try {
    top = parse_json_unique<json>(text);
  } catch (const DuplicateJsonKey& e) {
    throw FileError(file + ": " + e.what() + ": JSON keeps one of the two silently; give it once");
  } catch (const json::parse_error& e) {
    // e.byte is the 1-based offset of the character that failed to parse.
    std::size_t pos = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    std::size_t line = 1 + std::count(text.begin(), text.begin() + pos, '\n');
    std::size_t nl = text.rfind('\n', pos == 0 ? 0 : pos - 1);
    std::size_t col = (nl == std::string::npos || pos == 0 || nl >= pos) ? pos + 1 : pos - nl;
    std::string what = e.what();
    // Keep nlohmann's explanation, not its own position prefix.
    auto colon = what.find(": ", what.find("parse error"));
    if (colon != std::string::npos) what = what.substr(colon + 2);
    // An ASTRA-sim network YAML given without its prefix is not broken JSON.
    const std::string stem_ext = file.size() >= 5 ? file.substr(file.size() - 5) : file;
    if (stem_ext == ".yaml" || (file.size() >= 4 && file.substr(file.size() - 4) == ".yml"))
      throw FileError(file +
                      ": not JSON, and the name says YAML: an ASTRA-sim network YAML is "
                      "read as --topology astra:" +
                      file);
    throw FileError(file + ":" + std::to_string(line) + ":" + std::to_string(col) +
                    ": malformed JSON: " + what);
  } catch (const json::exception& e) {
    // Not a syntax error but a value JSON cannot hold, e.g. a number that
    // overflows a double (1e999): nlohmann throws out_of_range.
    throw FileError(file + ": malformed JSON: " + e.what());
  }
  Reader rd(file);
  rd.object(top, "");
  // Another of collkit's files given as a topology: name what it is.
  if (top.contains("layers") && !top.contains("generator") && !top.contains("dims") &&
      !top.contains("nodes"))
    throw FileError(file +
                    ": a model file (it has \"layers\"), not a topology; a model is "
                    "plan --model FILE");
  if (top.contains("collkit_version") || (top.contains("results") && top.contains("config")))
    throw FileError(file + ": a report (it has \"" +
                    (top.contains("collkit_version") ? "collkit_version" : "results") +
                    "\"), not a topology; a report is an input of report, compare and calibrate");
  rd.keys(top, "", kTopKeys);
  EndpointProps ep;
  if (const json* e = rd.find(top, "endpoint")) {
    rd.object(*e, "endpoint");
    rd.keys(*e, "endpoint", kEndpointKeys);
    ep = rd.endpoint(*e, "endpoint", ep);
  }
  const json* gen = rd.find(top, "generator");
  const json* dims = rd.find(top, "dims");
  bool expl = rd.find(top, "nodes") || rd.find(top, "links");
  if ((gen != nullptr) + (dims != nullptr) + expl != 1) {
    rd.fail("", gen || dims || expl
                    ? "give exactly one of generator, dims, or nodes + links"
                    : "missing the network: give generator, dims, or nodes + links");
  }
  if (!expl && rd.find(top, "ranks")) {
    rd.fail("ranks", "only in the explicit form (generators take their size inside)");
  }
  if (!expl && rd.find(top, "endpoints_forward")) {
    rd.fail("endpoints_forward",
            "only in the explicit form (generators route through switches already)");
  }
  std::unique_ptr<Topology> t = gen    ? generator(rd, *gen, ep)
                                : dims ? dims_form(rd, *dims, ep)
                                       : explicit_form(rd, top, ep);
  read_extras(rd, top, *t);
  t->name = rd.string(top, "", "name", stem(file));
  t->description = rd.string(top, "", "description", "");
  t->device = rd.string(top, "", "device", "");
  if (rd.find(top, "device") && t->device.empty())
    rd.fail("device", "expected the path of a device file (devices/*.json), got \"\"");
  t->sha256 = sha256_hex(text);
  return finish(std::move(t), file, ranks);
}

const char* to_string(NcclGpu g) {
  switch (g) {
    case NcclGpu::a100:
      return "A100";
    case NcclGpu::h100:
      return "H100";
    case NcclGpu::h200:
      return "H200";
    case NcclGpu::b200:
      return "B200";
    case NcclGpu::gb200:
      return "GB200";
    case NcclGpu::mi300x:
      return "MI300X";
    case NcclGpu::mi325x:
      return "MI325X";
  }
  return "?";
}

std::unique_ptr<Topology> load_topology(const std::string& spec, int ranks) {
  static const std::string kAstra = "astra:";
  if (spec.rfind(kAstra, 0) == 0) {
    std::string path = spec.substr(kAstra.size());
    std::string text = read_file(path);
    std::vector<Dim> dims = parse_astra_dims(text, spec);
    std::string desc;
    for (const Dim& d : dims) {
      desc += (desc.empty() ? "" : " x ") + std::string(dim_kind_name(d.kind)) + "(" +
              std::to_string(d.size) + ")";
    }
    desc = "ASTRA-sim analytical network " + desc;
    auto t = std::make_unique<ProductTopology>(std::move(dims), EndpointProps{});
    t->name = stem(path);
    t->description = desc;
    t->sha256 = sha256_hex(text);
    return finish(std::move(t), spec, ranks);
  }
  // FILE@NODESxGPUS: the cluster file at another scale (reshape.h), unless
  // a file of that very name exists.
  const std::size_t at = spec.rfind('@');
  if (at != std::string::npos && at > 0 && at + 1 < spec.size() &&
      std::isdigit(static_cast<unsigned char>(spec[at + 1])) &&
      spec.find('x', at) != std::string::npos && !std::filesystem::exists(spec)) {
    const std::string path = spec.substr(0, at);
    const ClusterShape shape = parse_cluster_shape(spec.substr(at + 1), "topology " + spec);
    return parse_topology(reshape_topology_text(read_file(path), path, shape), spec, ranks);
  }
  std::unique_ptr<Topology> t = parse_topology(read_file(spec), spec, ranks);
  // What the file leaves out of a GPU machine: one line each, on stderr.
  for (const std::string& w : t->warnings)
    std::fprintf(stderr, "collkit: warning: %s: %s\n", spec.c_str(), w.c_str());
  return t;
}

}  // namespace collkit
