#include "reports/report_extra.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "sim/engine.h"

namespace collkit {
namespace {

const Json* member(const Report& r, const std::string& key) {
  if (!r.extra.is_object()) return nullptr;
  const auto it = r.extra.find(key);
  return it == r.extra.end() ? nullptr : &*it;
}

// An integer JSON value as int64 (unsigned ones above int64's range are not).
std::optional<std::int64_t> integer_of(const Json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

std::optional<int> int_of(const Json& v) {
  const std::optional<std::int64_t> i = integer_of(v);
  if (!i || *i < std::numeric_limits<int>::min() || *i > std::numeric_limits<int>::max())
    return std::nullopt;
  return static_cast<int>(*i);
}

}  // namespace

std::optional<std::int64_t> extra_integer(const Report& r, const std::string& key) {
  const Json* v = member(r, key);
  return v ? integer_of(*v) : std::nullopt;
}

std::optional<std::string> extra_string(const Report& r, const std::string& key) {
  const Json* v = member(r, key);
  if (!v || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::optional<std::int64_t> extra_segment_bytes(const Report& r) {
  return extra_integer(r, "segment_bytes");
}

std::optional<int> extra_group_size(const Report& r) {
  const Json* v = member(r, "group_size");
  return v ? int_of(*v) : std::nullopt;
}

std::string LaunchOf::flag() const {
  return devices == 1 ? "proc" : "group:" + std::to_string(devices);
}

std::string LaunchOf::described() const {
  const std::string f = "--launch " + flag();
  return from.rfind("--launch ", 0) == 0 ? f : f + " (" + from + ")";
}

std::optional<LaunchOf> extra_launch(const Report& r) {
  if (const std::optional<std::string> text = extra_string(r, "launch")) {
    try {
      return LaunchOf{parse_launch_mode(*text), "--launch " + *text};
    } catch (const UsageError&) {
      return std::nullopt;
    }
  }
  if (r.mode != ReportMode::measure) return std::nullopt;
  const Json* v = member(r, "ngpus");
  const std::optional<int> n = v ? int_of(*v) : std::nullopt;
  if (!n || *n < 1) return std::nullopt;
  const bool json = extra_string(r, "source_format") == "nccl-tests JSON";
  return LaunchOf{*n, std::string(json ? "config.ngpus " : "nGpus ") + std::to_string(*n)};
}

const Json* extra_devices(const Report& r) {
  const Json* v = member(r, "devices");
  return v && v->is_array() ? v : nullptr;
}

std::vector<int> extra_host_cpus(const Report& r) {
  std::vector<int> cpus;
  const Json* devices = extra_devices(r);
  if (!devices) return cpus;
  for (const Json& d : *devices) {
    if (!d.is_object()) continue;
    const auto it = d.find("host_cpus");
    if (it == d.end()) continue;
    const std::optional<int> n = int_of(*it);
    if (n && *n > 0) cpus.push_back(*n);
  }
  return cpus;
}

std::optional<int> extra_fewest_host_cpus(const Report& r) {
  const std::vector<int> cpus = extra_host_cpus(r);
  if (cpus.empty()) return std::nullopt;
  return *std::min_element(cpus.begin(), cpus.end());
}

std::optional<NcclVersion> extra_nccl_version(const Report& r) {
  const std::optional<std::string> s = extra_string(r, "nccl_version");
  return s ? parse_nccl_version(*s) : std::nullopt;
}

std::optional<NcclVersion> extra_nccl_model_version(const Report& r) {
  const std::optional<std::string> s = extra_string(r, "nccl_model_version");
  return s ? parse_nccl_version(*s) : std::nullopt;
}

}  // namespace collkit
