#include "topologies/reshape.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"
#include "core/json.h"

namespace collkit {

ClusterShape parse_cluster_shape(const std::string& text, const std::string& what) {
  const std::size_t x = text.find('x');
  ClusterShape s;
  const auto number = [&](std::size_t from, std::size_t to, int& out) {
    const char* first = text.data() + from;
    const char* last = text.data() + to;
    const auto [end, ec] = std::from_chars(first, last, out);
    return ec == std::errc() && end == last && out >= 1 && first != last;
  };
  if (x == std::string::npos || !number(0, x, s.nodes) || !number(x + 1, text.size(), s.devices))
    throw UsageError(what + " '" + text +
                     "': expected NODESxGPUS, the run's nodes and GPUs a node (e.g. 10x2)");
  return s;
}

std::string reshape_topology_text(const std::string& text, const std::string& file,
                                  const ClusterShape& shape) {
  Json top;
  try {
    top = Json::parse(text);
  } catch (const Json::exception&) {
    throw FileError(file + ": other scales need a JSON topology file");
  }
  if (!top.is_object() || !top.contains("generator") || !top["generator"].is_object() ||
      top["generator"].value("kind", std::string()) != "hierarchical")
    throw FileError(file +
                    ": generator.kind: other scales need a cluster file (a hierarchical "
                    "generator of nodes), this one is not");
  Json& gen = top["generator"];
  const auto integer = [&](const char* key, int fallback) {
    return gen.contains(key) && gen[key].is_number_integer() ? gen[key].get<int>() : fallback;
  };
  const int devices = integer("devices_per_node", 1);
  const int nics = integer("nics_per_node", 1);
  if (shape.devices > devices)
    throw FileError(file + ": generator.devices_per_node: " + std::to_string(devices) +
                    ", fewer than the " + std::to_string(shape.devices) + " GPUs a node asked for");
  if (shape.nodes > 0) gen["nodes"] = shape.nodes;
  if (shape.devices > 0 && shape.devices != devices) {
    gen["devices_per_node"] = shape.devices;
    if (shape.devices < nics) gen["nics_per_node"] = shape.devices;
    if (top.contains("nccl") && top["nccl"].is_object())
      for (const char* key : {"ring", "tree", "nvls", "runtime_channels"}) top["nccl"].erase(key);
  }
  // A cluster of one node has no fabric between nodes.
  if (gen.contains("nodes") && gen["nodes"] == 1)
    for (const char* key : {"inter", "nic_bandwidth_gbps", "nic_line_rate_gbps", "nic_latency_us",
                            "nics_per_node", "rail_optimized"})
      gen.erase(key);
  return top.dump(2) + "\n";
}

}  // namespace collkit
