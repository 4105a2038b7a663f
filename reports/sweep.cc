#include "reports/sweep.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "algorithms/error.h"
#include "algorithms/registry.h"

namespace collkit {

std::int64_t parse_size(const std::string& flag, const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return UsageError(flag + " '" + text + "': " + why);
  };
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) {
    if (!text.empty() && text[0] == '-') throw bad("sizes must be > 0 bytes");
    throw bad("expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, 1G)");
  }
  std::int64_t unit = 1;
  if (digits < text.size()) {
    switch (text[digits]) {
      case 'K':
      case 'k':
        unit = std::int64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        unit = std::int64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        unit = std::int64_t{1} << 30;
        break;
      default:
        throw bad("expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, 1G)");
    }
    if (digits + 1 != text.size())
      throw bad("expected a size in bytes with an optional K, M or G suffix (e.g. 8, 64K, 1G)");
  }
  std::int64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    if (value > (INT64_MAX - 9) / 10) throw bad("too large");
    value = value * 10 + (text[i] - '0');
  }
  if (value > INT64_MAX / unit) throw bad("too large");
  return value * unit;
}

std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes,
                                      std::int64_t factor, std::int64_t increment) {
  if (min_bytes <= 0)
    throw UsageError("-b " + std::to_string(min_bytes) + ": the minimum size must be > 0 bytes");
  if (max_bytes <= 0)
    throw UsageError("-e " + std::to_string(max_bytes) + ": the maximum size must be > 0 bytes");
  if (min_bytes > max_bytes)
    throw UsageError("-b " + std::to_string(min_bytes) + " is larger than -e " +
                     std::to_string(max_bytes));
  if (factor < 1)
    throw UsageError("-f " + std::to_string(factor) + ": the step factor must be >= 1");
  if (factor == 1 && increment <= 0 && min_bytes < max_bytes)
    throw UsageError("-i " + std::to_string(increment) + ": the step must be > 0 bytes");
  std::vector<std::int64_t> sizes;
  for (std::int64_t size = min_bytes;;) {
    if (sizes.size() == kMaxSweepSizes)
      throw UsageError(
          "-b " + std::to_string(min_bytes) + " -e " + std::to_string(max_bytes) +
          (factor > 1 ? " -f " + std::to_string(factor) : " -i " + std::to_string(increment)) +
          " gives more than " + std::to_string(kMaxSweepSizes) + " sizes");
    sizes.push_back(size);
    if (min_bytes == max_bytes) break;
    // Stop before the next size would overflow rather than wrap around.
    if (factor > 1) {
      if (size > max_bytes / factor) break;
      size *= factor;
    } else {
      if (size > max_bytes - increment) break;
      size += increment;
    }
  }
  return sizes;
}

std::vector<std::string> expand_algorithms(Collective c, const std::string& list) {
  std::vector<std::string> out;
  if (list == "all") {
    for (const AlgorithmDef* d : algorithms_for(c)) {
      out.push_back(d->name);
      for (size_t i = 1; i < d->variants.size(); ++i) out.push_back(d->name + ":" + d->variants[i]);
    }
    if (out.empty())
      throw UsageError("no algorithm is registered for " + std::string(to_string(c)));
    return out;
  }
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    const std::string name = list.substr(start, comma == std::string::npos ? comma : comma - start);
    if (name.empty())
      throw UsageError("--algorithm '" + list + "': empty algorithm name in the list");
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

ScheduleSpec schedule_spec(const SweepSpec& sweep, const std::string& algorithm,
                           const SizeMapping& size) {
  ScheduleSpec spec;
  spec.collective = sweep.collective;
  spec.algorithm = algorithm;
  spec.ranks = sweep.ranks;
  spec.root = sweep.root;
  spec.count = size.spec_count;
  spec.elem_size = size_of(sweep.dtype);
  if (sweep.segment_bytes > 0)
    spec.segment = std::max<std::int64_t>(1, sweep.segment_bytes / spec.elem_size);
  spec.group_size = sweep.group_size;
  spec.model = sweep.model;
  return spec;
}

Report run_sweep(const SweepSpec& sweep, const TimeFn& time_of, const ProgressFn& progress) {
  // Barrier moves no data: one row, whatever the sizes.
  const std::vector<std::int64_t> sizes =
      sweep.collective == Collective::barrier ? std::vector<std::int64_t>{0} : sweep.sizes;
  Report report;
  report.ranks = sweep.ranks;
  report.dtype = sweep.dtype;
  report.op = sweep.op;
  report.root = sweep.root;
  const std::size_t total = sweep.algorithms.size() * sizes.size();
  std::size_t done = 0;
  for (const std::string& algorithm : sweep.algorithms) {
    for (std::int64_t bytes : sizes) {
      const SizeMapping size = map_size(sweep.collective, bytes, size_of(sweep.dtype), sweep.ranks);
      const double seconds = time_of(schedule_spec(sweep, algorithm, size));
      report.results.push_back(
          make_row(sweep.collective, algorithm, size, sweep.ranks, seconds * 1e6));
      if (progress) progress(++done, total);
    }
  }
  report.best = compute_best(report.results);
  return report;
}

std::string_view to_string(NetModel m) { return m == NetModel::flow ? "flow" : "alpha-beta"; }

NetModel parse_net_model(std::string_view name) {
  if (name == "flow") return NetModel::flow;
  if (name == "alpha-beta") return NetModel::alpha_beta;
  throw UsageError("unknown network model '" + std::string(name) + "'; valid: flow, alpha-beta");
}

}  // namespace collkit
