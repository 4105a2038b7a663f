#include "calibration/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "core/protocol.h"

namespace collkit {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

bool is_route_time(ParamKind kind) {
  return kind == ParamKind::latency || kind == ParamKind::overhead;
}

bool is_time(ParamKind kind) { return is_route_time(kind) || kind == ParamKind::base_latency; }

bool is_rate(ParamKind kind) {
  return kind == ParamKind::bandwidth || kind == ParamKind::reduce_bw ||
         kind == ParamKind::copy_bw || kind == ParamKind::in_network;
}

bool unitless(ParamKind kind) {
  return kind == ParamKind::dram_factor || kind == ParamKind::host_cores ||
         kind == ParamKind::dirty_factor;
}

double display_scale(ParamKind kind) { return is_time(kind) ? 1e6 : unitless(kind) ? 1.0 : 1e-9; }

std::string range_text(const FittedParam& fp) {
  const double s = display_scale(fp.kind);
  const char* unit = is_time(fp.kind) ? " us" : unitless(fp.kind) ? "" : " GB/s";
  return fmt("%g", fp.lower * s) + ".." + fmt("%g", fp.upper * s) + unit;
}

namespace {

bool close(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

// Writes bandwidth (GB/s) and latency (us) keys of one JSON object that
// describes links, replacing the base values by the fitted values of the class
// whose base props they give.
void replace_link_keys(Json& obj, const char* bw_key, const char* lat_key, double default_bw,
                       const std::vector<LinkProps>& base_classes,
                       const std::vector<LinkProps>& fitted) {
  if (!obj.is_object()) return;
  if (!obj.contains(bw_key) && default_bw <= 0) return;
  const double bw = obj.contains(bw_key) && obj[bw_key].is_number()
                        ? obj[bw_key].get<double>() * 1e9
                        : default_bw;
  const double lat =
      obj.contains(lat_key) && obj[lat_key].is_number() ? obj[lat_key].get<double>() * 1e-6 : 0.0;
  for (std::size_t c = 0; c < base_classes.size(); ++c) {
    if (!close(base_classes[c].bandwidth, bw) || !close(base_classes[c].latency, lat)) continue;
    obj[bw_key] = fitted[c].bandwidth / 1e9;
    obj[lat_key] = fitted[c].latency * 1e6;
    // Each protocol's latency as the fit has it (scaled with the fitted
    // latency where some row ran the protocol, else the base's:
    // TrialTopology::class_link).
    if (obj.contains("protocol_latency_us") && obj["protocol_latency_us"].is_object())
      for (auto& [key, value] : obj["protocol_latency_us"].items()) {
        const int i = protocol_index(parse_protocol(key));
        if (value.is_number() && i >= 0 && fitted[c].protocol_latency[i] >= 0)
          value = fitted[c].protocol_latency[i] * 1e6;
      }
    return;
  }
}

// The fitted in-network rates (NVLS, SHARP) and protocol base latencies in
// the base's form: each object's `in_network` takes the fitted rate of the
// class whose links had its rate, each described protocol its fitted
// `base_latency_us`.
void write_switches_and_protocols(Json& j, const Topology& base, const CalibrationResult& result) {
  std::vector<double> base_in(static_cast<std::size_t>(base.num_link_classes()), 0.0);
  for (LinkId id = 0; id < base.num_links(); ++id) {
    double rate = 0;
    if (base.in_network_side(id, rate) != 0)
      base_in[static_cast<std::size_t>(base.link_class(id))] = rate;
  }
  const auto rewrite = [&](Json& obj) {
    if (!obj.is_object() || !obj.contains("in_network") || !obj["in_network"].is_object()) return;
    Json& in = obj["in_network"];
    if (!in.contains("bandwidth_gbps") || !in["bandwidth_gbps"].is_number()) return;
    const double b = in["bandwidth_gbps"].get<double>() * 1e9;
    for (std::size_t c = 0; c < base_in.size() && c < result.in_network.size(); ++c)
      if (base_in[c] > 0 && close(base_in[c], b) && result.in_network[c] > 0) {
        in["bandwidth_gbps"] = result.in_network[c] / 1e9;
        return;
      }
  };
  if (j.contains("generator") && j["generator"].is_object()) {
    Json& g = j["generator"];
    rewrite(g);
    for (const char* part : {"intra", "inter"})
      if (g.contains(part)) rewrite(g[part]);
  }
  for (const char* list : {"dims", "nodes"})
    if (j.contains(list) && j[list].is_array())
      for (Json& e : j[list]) rewrite(e);
  if (j.contains("protocols") && j["protocols"].is_object())
    for (Protocol pr : kAllProtocols) {
      const int i = protocol_index(pr);
      const std::string name(to_string(pr));
      Json& ps = j["protocols"];
      if (result.protocols[i].set && ps.contains(name) && ps[name].is_object())
        ps[name]["base_latency_us"] = result.protocols[i].base_latency * 1e6;
    }
}

// The fitted file must give exactly the fitted network: the same class per
// link, the fitted endpoint on every rank, and the base's routes. Throws
// FileError naming `base_file` otherwise.
void check_expresses_fit(const std::string& text, const std::string& base_file,
                         const Topology& base, const CalibrationResult& result) {
  const auto& fitted = result.classes;
  const std::unique_ptr<Topology> check = parse_topology(text, base_file, base.num_ranks());
  bool same = check->num_links() == base.num_links() && check->num_ranks() == base.num_ranks();
  for (LinkId id = 0; same && id < base.num_links(); ++id) {
    const LinkProps want = fitted[static_cast<std::size_t>(base.link_class(id))];
    const LinkProps got = check->link(id);
    same = close(want.bandwidth, got.bandwidth) &&
           std::abs(want.latency - got.latency) <= 1e-9 * std::max(want.latency, 1e-12);
    for (int i = 0; same && i < 3; ++i)
      same = want.protocol_latency[i] < 0 ||
             std::abs(want.protocol_latency[i] - got.protocol_latency[i]) <=
                 1e-9 * std::max(want.protocol_latency[i], 1e-12);
  }
  for (int rank = 0; same && rank < base.num_ranks(); ++rank) {
    const EndpointProps e = check->endpoint(rank);
    same = std::abs(e.overhead - result.endpoint.overhead) <=
               1e-9 * std::max(result.endpoint.overhead, 1e-12) &&
           close(e.reduce_bw, result.endpoint.reduce_bw) &&
           close(e.copy_bw, result.endpoint.copy_bw) &&
           close(e.cache_bytes, result.endpoint.cache_bytes) &&
           close(e.dram_factor, result.endpoint.dram_factor) &&
           close(e.dirty_factor, result.endpoint.dirty_factor) &&
           close(e.host_cores, result.endpoint.host_cores);
  }
  for (LinkId id = 0; same && id < base.num_links(); ++id) {
    double want = 0, got = 0;
    const int side = base.in_network_side(id, want);
    if (side == 0) continue;
    const auto c = static_cast<std::size_t>(base.link_class(id));
    if (c < result.in_network.size() && result.in_network[c] > 0) want = result.in_network[c];
    same = check->in_network_side(id, got) == side && close(want, got);
  }
  for (int i = 0; same && i < 3; ++i)
    if (result.protocols[i].set)
      same = std::abs(check->protocols[i].base_latency - result.protocols[i].base_latency) <=
             1e-9 * std::max(result.protocols[i].base_latency, 1e-12);
  if (!same)
    throw FileError(base_file +
                    ": the base's form cannot express the fitted values (one key of the file "
                    "feeds link classes that were fitted apart); use an explicit base "
                    "(nodes/links) with one entry per link");
  // Routes follow latency (docs/TOPOLOGY.md): fitted latencies can make
  // another path the shortest, and the file would then predict other times
  // than the fit, which kept the base's routes.
  std::vector<LinkId> want_route, got_route;
  for (int src = 0; src < base.num_ranks(); ++src)
    for (int dst = 0; dst < base.num_ranks(); ++dst) {
      if (src == dst) continue;
      base.route(src, dst, want_route);
      check->route(src, dst, got_route);
      if (want_route != got_route)
        throw FileError(base_file + ": the fitted latencies route rank " + std::to_string(src) +
                        " -> " + std::to_string(dst) + " over " + std::to_string(got_route.size()) +
                        " links instead of the base's " + std::to_string(want_route.size()) +
                        " (routes take the lowest total latency), so the fitted file would not "
                        "give the fit's times; use a base where the fitted routes are the only "
                        "ones (no path through other endpoints)");
    }
}

}  // namespace

std::string fitted_topology_text(const std::string& base_text, const std::string& base_file,
                                 const Topology& base, const CalibrationResult& result,
                                 const std::string& description) {
  Json j;
  try {
    j = Json::parse(base_text);
  } catch (const Json::exception&) {
    throw FileError(base_file + ": the fitted file is written in the base's form, which needs a " +
                    "JSON topology file");
  }
  if (!j.is_object()) throw FileError(base_file + ": (top level): not a JSON object");
  std::vector<LinkProps> base_classes(static_cast<std::size_t>(base.num_link_classes()));
  for (LinkId id = 0; id < base.num_links(); ++id)
    base_classes[static_cast<std::size_t>(base.link_class(id))] = base.link(id);
  const auto& fitted = result.classes;

  if (j.contains("generator") && j["generator"].is_object()) {
    Json& g = j["generator"];
    if (g.value("kind", std::string()) == "hierarchical") {
      // The NIC links default to the inter fabric's bandwidth: read it before
      // the inter object is rewritten.
      double inter_bw = 0;
      if (g.contains("inter") && g["inter"].contains("bandwidth_gbps") &&
          g["inter"]["bandwidth_gbps"].is_number())
        inter_bw = g["inter"]["bandwidth_gbps"].get<double>() * 1e9;
      if (g.contains("inter"))
        replace_link_keys(g, "nic_bandwidth_gbps", "nic_latency_us", inter_bw, base_classes,
                          fitted);
      if (g.contains("intra"))
        replace_link_keys(g["intra"], "bandwidth_gbps", "latency_us", 0, base_classes, fitted);
      if (g.contains("inter"))
        replace_link_keys(g["inter"], "bandwidth_gbps", "latency_us", 0, base_classes, fitted);
    } else {
      replace_link_keys(g, "bandwidth_gbps", "latency_us", 0, base_classes, fitted);
    }
  }
  if (j.contains("dims") && j["dims"].is_array())
    for (Json& d : j["dims"])
      replace_link_keys(d, "bandwidth_gbps", "latency_us", 0, base_classes, fitted);
  write_switches_and_protocols(j, base, result);
  if (j.contains("links") && j["links"].is_array())
    for (Json& l : j["links"])
      replace_link_keys(l, "bandwidth_gbps", "latency_us", 0, base_classes, fitted);

  // One endpoint pair fits every endpoint: per-node overrides would
  // contradict it.
  Json endpoint =
      j.contains("endpoint") && j["endpoint"].is_object() ? j["endpoint"] : Json::object();
  endpoint["overhead_us"] = result.endpoint.overhead * 1e6;
  if (result.endpoint.reduce_bw > 0)
    endpoint["reduce_gbps"] = result.endpoint.reduce_bw / 1e9;
  else
    endpoint.erase("reduce_gbps");
  if (result.endpoint.copy_bw > 0)
    endpoint["copy_gbps"] = result.endpoint.copy_bw / 1e9;
  else
    endpoint.erase("copy_gbps");
  if (result.endpoint.host_cores > 0)
    endpoint["host_cores"] = result.endpoint.host_cores;
  else
    endpoint.erase("host_cores");
  if (result.endpoint.dirty_factor != 1)
    endpoint["dirty_factor"] = result.endpoint.dirty_factor;
  else
    endpoint.erase("dirty_factor");
  if (result.endpoint.cache_bytes > 0) {
    endpoint["cache_mb"] = result.endpoint.cache_bytes / 1048576.0;
    endpoint["dram_factor"] = result.endpoint.dram_factor;
  } else {
    endpoint.erase("cache_mb");
    endpoint.erase("dram_factor");
  }
  if (j.contains("nodes") && j["nodes"].is_array())
    for (Json& node : j["nodes"])
      if (node.is_object()) {
        node.erase("overhead_us");
        node.erase("reduce_gbps");
        node.erase("copy_gbps");
        node.erase("cache_mb");
        node.erase("dram_factor");
        node.erase("dirty_factor");
        node.erase("host_cores");
      }

  // Rebuilt in a fixed order: name, description, endpoint, then the form.
  Json out = Json::object();
  out["name"] = j.value("name", std::string("topology")) + "-fitted";
  out["description"] = description;
  out["endpoint"] = endpoint;
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "name" && it.key() != "description" && it.key() != "endpoint")
      out[it.key()] = it.value();
  std::string text = out.dump(2) + "\n";

  check_expresses_fit(text, base_file, base, result);
  return text;
}

namespace {

// The repeats' fits and what each determined (nothing below two repeats).
std::string repeats_text(const CalibrationResult& result) {
  if (result.repeats < 2) return "";
  std::string out;
  char line[512];
  out += "# repeats: " + std::to_string(result.repeats) +
         (result.repeats_left_out
              ? " (the k-th file that measured a row is repeat k), each left out in turn: the "
                "fastest of the others fitted from the joint fit; median |error| on its own "
                "rows:"
              : " (the k-th file that measured a row is repeat k), each fitted alone from the "
                "joint fit; median |error| on its own rows:");
  for (double e : result.repeat_median_abs_error) {
    std::snprintf(line, sizeof line, " %.3g%%", 100 * e);
    out += line;
  }
  out += "\n";
  std::snprintf(line, sizeof line, "%-56s %14s %s\n", "# determined by the fit", "joint",
                result.repeats_left_out
                    ? "each fit without one repeat, spread (highest / lowest - 1)"
                    : "each repeat's fit, spread (highest / lowest - 1)");
  out += line;
  for (const ParamSpread& sp : result.repeat_spread) {
    std::string values;
    for (double v : sp.values) values += fmt(" %.4g", v * sp.scale);
    std::snprintf(line, sizeof line, "# %-54s %14.6g %s, %.1f%%%s\n", sp.name.c_str(),
                  sp.fitted * sp.scale, values.c_str() + 1, 100 * sp.spread,
                  sp.spread > kStabilityTolerance ? "  (over the tolerance)" : "");
    out += line;
  }
  return out;
}

}  // namespace

std::string format_calibration(const CalibrationResult& result) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-56s %14s %14s\n", "# parameter", "base", "fitted");
  out += line;
  for (const FittedParam& fp : result.params) {
    const double scale = display_scale(fp.kind);
    std::snprintf(line, sizeof line, "%-56s %14.6g %14.6g%s\n", fp.name.c_str(), fp.base * scale,
                  fp.fitted * scale, fp.constrained ? "" : "  (no point depends on it: kept)");
    out += line;
  }
  std::snprintf(line, sizeof line,
                "# %zu points (%zu distinct), %d iterations; |relative error| median %.3g%%, "
                "p90 %.3g%%, max %.3g%%\n",
                result.points.size(), result.distinct_points, result.iterations,
                100 * result.median_abs_error, 100 * result.p90_abs_error,
                100 * result.max_abs_error);
  out += line;
  std::snprintf(line, sizeof line,
                "# error before (base): median %.3g%%, p90 %.3g%%; after (fitted): median %.3g%%, "
                "p90 %.3g%%\n",
                100 * result.base_median_abs_error, 100 * result.base_p90_abs_error,
                100 * result.median_abs_error, 100 * result.p90_abs_error);
  out += line;
  if (result.host_cores_limit > 0)
    out += "# host_cores bounded by " + std::to_string(result.host_cores_limit) + " (" +
           result.host_cores_source + ")\n";
  for (const std::string& p : result.problems) out += "# problem: " + p + "\n";
  if (!result.failed_check.empty()) {
    out += "# warning: left out " + std::to_string(result.failed_check.size()) +
           " row(s) whose check failed (#wrong > 0):";
    for (std::size_t i = 0; i < result.failed_check.size(); ++i)
      out += (i ? "; " : " ") + result.failed_check[i];
    out += "\n";
  }
  if (!result.cache_candidates.empty()) {
    std::snprintf(line, sizeof line, "# cache_mb %g chosen (lowest loss) of:",
                  result.endpoint.cache_bytes / 1048576.0);
    out += line;
    for (const auto& [bytes, loss] : result.cache_candidates) {
      std::snprintf(line, sizeof line, " %g (%.4g)", bytes / 1048576.0, loss);
      out += line;
    }
    out += "\n";
  }
  if (result.starts > 1) {
    std::snprintf(line, sizeof line,
                  "# search: %d starts (the base and %d spread over each parameter's range); %d "
                  "ended within %g%% of the lowest loss; the fit is start %d's\n",
                  result.starts, result.starts - 1, result.starts_at_best, 100 * kLossTie,
                  result.best_start + 1);
    out += line;
  }
  out += repeats_text(result);
  for (const std::string& w : result.warnings) out += "# warning: " + w + "\n";
  if (!result.match.empty())
    out += "# rows of algorithm nccl or native simulated as " + result.match + " (--match)\n";
  if (result.skipped_native > 0)
    out += "# skipped " + std::to_string(result.skipped_native) +
           " 'native' rows (no schedule to simulate)\n";
  if (result.skipped_small > 0)
    out += "# left out " + std::to_string(result.skipped_small) + " rows below " +
           std::to_string(result.min_bytes) + " bytes (--min-bytes)\n";
  if (result.skipped_slower > 0)
    out += "# fitted the fastest repeat of each row; left out " +
           std::to_string(result.skipped_slower) + " slower repeats (--repeats fastest)\n";
  std::snprintf(line, sizeof line, "%-14s %-24s %12s %8s %14s %14s %10s\n", "# collective",
                "algorithm", "bytes", "in_place", "measured_us", "fitted_us", "error%");
  out += line;
  for (const PointFit& f : result.points) {
    std::snprintf(line, sizeof line, "%-14s %-24s %12lld %8d %14.4f %14.4f %10.3f\n",
                  std::string(to_string(f.collective)).c_str(), f.algorithm.c_str(),
                  static_cast<long long>(f.bytes), f.in_place ? 1 : 0, f.measured_us, f.fitted_us,
                  100 * f.rel_error);
    out += line;
  }
  return out;
}

}  // namespace collkit
