#include "topologies/astra.h"

#include <yaml-cpp/yaml.h>

#include <cmath>

#include "core/error.h"

namespace collkit {
namespace {

constexpr double kMaxNpus = 1 << 30;

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& msg) {
  throw FileError(file + ": " + field + ": " + msg);
}

std::string show(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  YAML::Emitter out;
  out << YAML::Flow << n;
  return out.c_str();
}

// The list under `key`: ASTRA-sim files write `[a, b]`; a lone scalar is
// accepted as a one-element list, as ASTRA-sim's own parser does.
std::vector<YAML::Node> list(const YAML::Node& root, const std::string& key,
                             const std::string& file) {
  YAML::Node n = root[key];
  if (!n) fail(file, key, "missing (one value per dimension)");
  std::vector<YAML::Node> out;
  if (n.IsSequence()) {
    for (const auto& e : n) out.push_back(e);
  } else if (n.IsScalar()) {
    out.push_back(n);
  } else {
    fail(file, key, "expected a list, got " + show(n));
  }
  if (out.empty()) fail(file, key, "empty list");
  return out;
}

double number(const YAML::Node& n, const std::string& field, const std::string& file) {
  try {
    if (!n.IsScalar()) throw YAML::BadConversion(n.Mark());
    return n.as<double>();
  } catch (const YAML::BadConversion&) {
    fail(file, field, "expected a number, got " + show(n));
  }
}

}  // namespace

std::vector<Dim> parse_astra_dims(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // ParserException and its kin (DeepRecursion, ...) carry the position.
    throw FileError(file + ":" + std::to_string(e.mark.line + 1) + ":" +
                    std::to_string(e.mark.column + 1) + ": malformed YAML: " + e.msg);
  }
  if (!root.IsMap())
    fail(file, "(top level)", "expected a mapping with topology, npus_count, bandwidth, latency");
  for (const auto& kv : root) {
    // A key may itself be a list or mapping (`[a]: 1`, `? {a: 1}`).
    if (!kv.first.IsScalar())
      fail(file, show(kv.first),
           "unknown key; valid keys: topology, npus_count, bandwidth, latency");
    std::string key = kv.first.Scalar();
    if (key != "topology" && key != "npus_count" && key != "bandwidth" && key != "latency") {
      fail(file, key, "unknown key; valid keys: topology, npus_count, bandwidth, latency");
    }
  }
  auto kinds = list(root, "topology", file);
  auto sizes = list(root, "npus_count", file);
  auto bws = list(root, "bandwidth", file);
  auto lats = list(root, "latency", file);
  for (const auto* l : {&sizes, &bws, &lats}) {
    if (l->size() != kinds.size()) {
      const char* key = l == &sizes ? "npus_count" : l == &bws ? "bandwidth" : "latency";
      fail(file, key,
           "has " + std::to_string(l->size()) + " entries but topology has " +
               std::to_string(kinds.size()));
    }
  }
  std::vector<Dim> dims;
  std::int64_t total = 1;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    std::string at = "[";
    at += std::to_string(i);
    at += "]";
    Dim d;
    std::string kind = kinds[i].IsScalar() ? kinds[i].Scalar() : "";
    if (kind == "Ring") {
      d.kind = DimKind::kRing;
    } else if (kind == "FullyConnected") {
      d.kind = DimKind::kFullyConnected;
    } else if (kind == "Switch") {
      d.kind = DimKind::kSwitch;
    } else {
      fail(file, "topology" + at,
           "unknown topology " + show(kinds[i]) + "; valid: Ring, FullyConnected, Switch");
    }
    double size = number(sizes[i], "npus_count" + at, file);
    // Range first: converting NaN or a double beyond int64 to an integer is
    // undefined behaviour.
    if (!(size >= 1) || size != std::floor(size)) {
      fail(file, "npus_count" + at, "must be an integer >= 1, got " + show(sizes[i]));
    }
    if (size > kMaxNpus || static_cast<double>(total) * size > kMaxNpus) {
      fail(file, "npus_count" + at, "more than 2^30 NPUs in total");
    }
    total *= static_cast<std::int64_t>(size);
    d.size = static_cast<int>(size);
    double bw = number(bws[i], "bandwidth" + at, file);
    if (!(bw > 0) || !std::isfinite(bw * kAstraBytesPerGB))
      fail(file, "bandwidth" + at, "must be > 0 and finite (GB/s), got " + show(bws[i]));
    d.link.bandwidth = bw * kAstraBytesPerGB;
    double lat = number(lats[i], "latency" + at, file);
    if (!(lat >= 0)) fail(file, "latency" + at, "must be >= 0 (ns), got " + show(lats[i]));
    // As in JSON topologies: at most one second per link.
    if (lat > 1e9)
      fail(file, "latency" + at, "must be at most 1e9 (one second), got " + show(lats[i]));
    d.link.latency = lat * 1e-9;
    dims.push_back(d);
  }
  return dims;
}

}  // namespace collkit
