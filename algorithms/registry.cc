#include "algorithms/registry.h"

#include <algorithm>
#include <mutex>
#include <string>

#include "core/error.h"
#include "core/names.h"

namespace collkit {
namespace {

std::vector<AlgorithmDef> build_registry() {
  std::vector<AlgorithmDef> defs;
  add_broadcast(defs);
  add_reduce(defs);
  add_reduce_rabenseifner(defs);
  add_scatter_gather(defs);
  add_all_gather(defs);
  add_reduce_scatter(defs);
  add_all_reduce(defs);
  add_all_reduce_trees(defs);
  add_all_to_all(defs);
  add_barrier(defs);
  add_nccl(defs);
  return defs;
}

class RegisteredSchedule final : public Schedule {
 public:
  RegisteredSchedule(ScheduleSpec spec, const AlgorithmDef& def)
      : Schedule(std::move(spec)), def_(def) {}
  Generator<Step> program(int rank) const override { return def_.program(spec(), rank); }

 protected:
  std::int64_t scratch_size(int rank) const override {
    return def_.scratch ? def_.scratch(spec(), rank) : 0;
  }

 private:
  const AlgorithmDef& def_;
};

}  // namespace

const std::vector<AlgorithmDef>& algorithm_registry() {
  static const std::vector<AlgorithmDef> defs = build_registry();
  return defs;
}

std::vector<const AlgorithmDef*> algorithms_for(Collective c) {
  std::vector<const AlgorithmDef*> out;
  for (const AlgorithmDef& d : algorithm_registry())
    if (d.collective == c) out.push_back(&d);
  return out;
}

const AlgorithmDef& find_algorithm(Collective c, const std::string& name) {
  std::string valid;
  // Names and name:variant (NCCL's "tree" is nccl:tree here).
  std::vector<std::string> names;
  for (const AlgorithmDef* d : algorithms_for(c)) {
    if (d->name == name) return *d;
    if (!valid.empty()) valid += ", ";
    valid += d->name;
    names.push_back(d->name);
  }
  for (const AlgorithmDef* d : algorithms_for(c))
    for (const std::string& v : d->variants) names.push_back(d->name + ":" + v);
  throw UsageError("unknown algorithm '" + name + "' for " + std::string(to_string(c)) +
                   did_you_mean(name, names) + " (valid: " + valid + ")");
}

std::vector<std::string> buildable_variants(const AlgorithmDef& def) {
  std::vector<std::string> out;
  if (def.variants.empty()) return {""};
  for (std::size_t i = 0; i < def.variants.size(); ++i)
    if (i > 0 || !def.default_needs_topology) out.push_back(def.variants[i]);
  return out;
}

std::pair<std::string, std::string> split_algorithm_name(const std::string& name) {
  const auto colon = name.find(':');
  if (colon == std::string::npos) return {name, ""};
  return {name.substr(0, colon), name.substr(colon + 1)};
}

namespace {

const AlgorithmDef& resolve(ScheduleSpec& spec) {
  auto [name, variant] = split_algorithm_name(spec.algorithm);
  if (!variant.empty()) {
    if (!spec.variant.empty() && spec.variant != variant)
      throw UsageError("algorithm '" + spec.algorithm + "' names variant '" + variant +
                       "' but variant '" + spec.variant + "' was also given");
    spec.variant = variant;
  }
  spec.algorithm = name;
  const AlgorithmDef& def = find_algorithm(spec.collective, spec.algorithm);
  if (spec.variant.empty()) {
    if (!def.variants.empty()) spec.variant = def.variants.front();
  } else if (std::find(def.variants.begin(), def.variants.end(), spec.variant) ==
             def.variants.end()) {
    std::string valid;
    for (const auto& v : def.variants) valid += (valid.empty() ? "" : ", ") + v;
    throw UsageError("unknown variant '" + spec.variant + "' of " +
                     std::string(to_string(spec.collective)) + " algorithm '" + def.name +
                     "'; valid: " + (valid.empty() ? "(none)" : valid));
  }
  return def;
}

void validate(const ScheduleSpec& spec, bool uses_group) {
  if (spec.ranks < 1)
    throw UsageError("ranks must be >= 1 (got " + std::to_string(spec.ranks) + ")");
  if (spec.root < 0 || spec.root >= spec.ranks)
    throw UsageError("root " + std::to_string(spec.root) + " is out of range for " +
                     std::to_string(spec.ranks) + " ranks (valid: 0.." +
                     std::to_string(spec.ranks - 1) + ")");
  if (spec.count < 0)
    throw UsageError("count must be >= 0 (got " + std::to_string(spec.count) + ")");
  if (spec.collective == Collective::barrier && spec.count != 0)
    throw UsageError("barrier moves no data: count must be 0 (got " + std::to_string(spec.count) +
                     ")");
  if (spec.elem_size < 1)
    throw UsageError("element size must be >= 1 byte (got " + std::to_string(spec.elem_size) + ")");
  if (spec.segment < 0)
    throw UsageError("segment must be >= 0 elements (got " + std::to_string(spec.segment) + ")");
  if (spec.group_size < 0)
    throw UsageError("group size " + std::to_string(spec.group_size) + " must be >= 0");
  if (spec.nccl_buffsize < 0)
    throw UsageError("NCCL buffer size must be >= 0 bytes (got " +
                     std::to_string(spec.nccl_buffsize) + ")");
  if (!uses_group) return;
  if (spec.group_size > spec.ranks)
    throw UsageError("group size " + std::to_string(spec.group_size) + " is out of range for " +
                     std::to_string(spec.ranks) + " ranks (0 = automatic)");
  if (spec.group_size > 0 && spec.ranks % spec.group_size != 0)
    throw UsageError("group size " + std::to_string(spec.group_size) + " does not divide " +
                     std::to_string(spec.ranks) + " ranks");
}

}  // namespace

namespace {

struct SourceTable {
  std::mutex mutex;
  std::vector<std::shared_ptr<const ScheduleSource>> sources;
};
SourceTable& source_table() {
  static SourceTable table;
  return table;
}

}  // namespace

void register_schedule_source(ScheduleSource source) {
  if (source.prefix.empty() || source.prefix.find(':') != std::string::npos || !source.make)
    throw UsageError("schedule source '" + source.prefix +
                     "': a prefix without ':' and a make function are required");
  SourceTable& t = source_table();
  const std::lock_guard<std::mutex> lock(t.mutex);
  auto entry = std::make_shared<const ScheduleSource>(std::move(source));
  for (auto& s : t.sources)
    if (s->prefix == entry->prefix) {
      s = std::move(entry);
      return;
    }
  t.sources.push_back(std::move(entry));
}

std::shared_ptr<const ScheduleSource> find_schedule_source(const std::string& name) {
  const auto colon = name.find(':');
  if (colon == std::string::npos) return nullptr;
  SourceTable& t = source_table();
  const std::lock_guard<std::mutex> lock(t.mutex);
  for (const auto& s : t.sources)
    if (name.compare(0, colon, s->prefix) == 0 && s->prefix.size() == colon) return s;
  return nullptr;
}

std::string outside_declaration(const ScheduleSpec& spec, bool in_place) {
  const auto source = find_schedule_source(spec.algorithm);
  return source && source->outside ? source->outside(spec, in_place) : std::string();
}

std::vector<std::shared_ptr<const ScheduleSource>> schedule_sources() {
  SourceTable& t = source_table();
  const std::lock_guard<std::mutex> lock(t.mutex);
  return t.sources;
}

std::string runtime_hang(const ScheduleSpec& spec) {
  const auto source = find_schedule_source(spec.algorithm);
  if (!source || !source->runtime_hang) return {};
  validate(spec, false);
  return source->runtime_hang(spec);
}

std::unique_ptr<Schedule> make_schedule(ScheduleSpec spec) {
  if (const auto source = find_schedule_source(spec.algorithm)) {
    validate(spec, false);
    return source->make(spec);
  }
  const AlgorithmDef& def = resolve(spec);
  validate(spec, def.uses_group);
  if (def.prepare) def.prepare(spec);
  return std::make_unique<RegisteredSchedule>(std::move(spec), def);
}

CostEstimate closed_form_cost(const ScheduleSpec& spec_in, const CostParams& params) {
  if (find_schedule_source(spec_in.algorithm))
    throw UsageError("'" + spec_in.algorithm + "' has no closed-form cost (a schedule source)");
  ScheduleSpec spec = spec_in;
  const AlgorithmDef& def = resolve(spec);
  validate(spec, def.uses_group);
  if (def.prepare) def.prepare(spec);
  return def.cost(spec, params);
}

std::vector<std::string> expand_algorithms(Collective c, const std::string& list,
                                           bool with_topology) {
  std::vector<std::string> out;
  if (list == "all") {
    for (const AlgorithmDef* d : algorithms_for(c)) {
      if (with_topology || !d->default_needs_topology) out.push_back(d->name);
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

}  // namespace collkit
