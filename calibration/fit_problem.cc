#include "calibration/fit_problem.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "algorithms/registry.h"
#include "calibration/format.h"
#include "core/error.h"
#include "core/nccl_sizes.h"
#include "core/parallel.h"
#include "reports/compare.h"
#include "reports/nccl_tests.h"
#include "reports/report_extra.h"
#include "sim/nccl.h"
#include "sim/sweep.h"

namespace collkit {

TrialTopology::TrialTopology(const Topology& base) : TopologyView(base) {
  classes.resize(static_cast<std::size_t>(base.num_link_classes()));
  std::vector<bool> seen(classes.size(), false);
  for (LinkId id = 0; id < base.num_links(); ++id) {
    const auto c = static_cast<std::size_t>(base.link_class(id));
    if (seen[c]) continue;
    seen[c] = true;
    classes[c] = base.link(id);
  }
  base_classes = classes;
  in_network.assign(classes.size(), 0.0);
  for (LinkId id = 0; id < base.num_links(); ++id) {
    double rate = 0;
    if (base.in_network_side(id, rate) != 0)
      in_network[static_cast<std::size_t>(base.link_class(id))] = rate;
  }
  trial_endpoint = base.num_ranks() > 0 ? base.endpoint(0) : EndpointProps{};
}

int TrialTopology::in_network_side(LinkId id, double& bandwidth) const {
  const int side = base().in_network_side(id, bandwidth);
  if (side != 0) bandwidth = in_network[static_cast<std::size_t>(base().link_class(id))];
  return side;
}

EndpointProps TrialTopology::endpoint(int rank) const {
  EndpointProps e = trial_endpoint;
  e.host = base().endpoint(rank).host;
  return e;
}

LinkProps TrialTopology::class_link(std::size_t c) const {
  LinkProps l = classes[c];
  const LinkProps& b = base_classes[c];
  for (int i = 0; i < 3; ++i) {
    l.protocol_latency[i] = b.protocol_latency[i];
    if (b.protocol_latency[i] >= 0 && b.latency > 0 && scale_protocol[i])
      l.protocol_latency[i] = b.protocol_latency[i] * l.latency / b.latency;
  }
  return l;
}

LinkProps TrialTopology::link(LinkId id) const {
  return class_link(static_cast<std::size_t>(base().link_class(id)));
}

namespace {

// A parameter the fit does not have (latency_of, the overhead).
constexpr std::size_t kNoParam = static_cast<std::size_t>(-1);

bool registered(Collective c, const std::string& name) {
  for (const AlgorithmDef* def : algorithms_for(c))
    if (def->name == name) return true;
  return false;
}

bool is_library_own(const std::string& algorithm) {
  return algorithm == "native" || algorithm == kNcclTestsAlgorithm;
}

// Whether some rank of the schedule copies data locally (a `copy` op of at
// least one element): only then can the points tell the copy bandwidth.
bool has_local_copy(const Schedule& s) {
  for (int r = 0; r < s.ranks(); ++r) {
    Generator<Step> program = s.program(r);
    while (program.next())
      for (const Op& op : program.value().ops)
        if (op.kind == OpKind::copy && op.src.count > 0) return true;
  }
  return false;
}

// Whether some rank's working set exceeds the endpoint's cache.
bool past_cache(const Schedule& s, const EndpointProps& e) {
  const ScheduleSpec& spec = s.spec();
  for (int r = 0; r < s.ranks(); ++r)
    if (static_cast<double>(s.working_set(r)) * spec.elem_size > e.cache_bytes) return true;
  return false;
}

// Whether some rank sends data it wrote during the call (a region it
// received, reduced or copied into, other than a copy of its input into its
// output), which EndpointProps::dirty_factor prices. A superset: it ignores
// a later copy of the input over a written region.
bool sends_written(const Schedule& s) {
  for (int r = 0; r < s.ranks(); ++r) {
    std::vector<Region> written;
    for (const Step& st : s.steps(r)) {
      for (const Op& op : st.ops)
        if (op.kind == OpKind::send && op.src.buf != Buf::input && op.src.count > 0)
          for (const Region& w : written)
            if (w.buf == op.src.buf && w.offset < op.src.offset + op.src.count &&
                op.src.offset < w.offset + w.count)
              return true;
      for (const Op& op : st.ops)
        if (op.kind != OpKind::send && op.dst.count > 0 &&
            !(op.kind == OpKind::copy && op.src.buf == Buf::input && op.dst.buf == Buf::output))
          written.push_back(op.dst);
    }
  }
  return false;
}

// Whether some op of the schedule multicasts or reduces through an
// in-network switch where the route has one (fan_out / fan_in).
bool in_network_ops(const Schedule& s) {
  for (int r = 0; r < s.ranks(); ++r) {
    Generator<Step> program = s.program(r);
    while (program.next())
      for (const Op& op : program.value().ops)
        if (op.fan_out >= 2 || op.fan_in >= 2) return true;
  }
  return false;
}

// Where a fitted parameter lives: its link class's latency, bandwidth or
// in-network rate, a protocol's base latency, or one of the endpoint's
// properties.
double& param_slot(const FittedParam& p, std::vector<LinkProps>& classes, EndpointProps& e,
                   std::vector<double>& in_network, ProtocolProps (&protocols)[3]) {
  switch (p.kind) {
    case ParamKind::in_network:
      return in_network[static_cast<std::size_t>(p.link_class)];
    case ParamKind::base_latency:
      return protocols[p.protocol].base_latency;
    case ParamKind::latency:
      return classes[static_cast<std::size_t>(p.link_class)].latency;
    case ParamKind::bandwidth:
      return classes[static_cast<std::size_t>(p.link_class)].bandwidth;
    case ParamKind::overhead:
      return e.overhead;
    case ParamKind::reduce_bw:
      return e.reduce_bw;
    case ParamKind::copy_bw:
      return e.copy_bw;
    case ParamKind::dram_factor:
      return e.dram_factor;
    case ParamKind::host_cores:
      return e.host_cores;
    case ParamKind::dirty_factor:
      return e.dirty_factor;
  }
  throw std::logic_error("unknown parameter kind");
}

// Latency and overhead of 0 cannot be fitted in log space; a picosecond is
// far below anything measurable, so starting there loses nothing.
constexpr double kMinSeconds = 1e-12;

// The schedule a row ran: NCCL's choice made on the base for rows of NCCL's
// own collective (nccl-tests; --match names what stands for them), else
// the spec's schedule. A row of a named nccl variant measured by collkit
// bench is the schedule that ran, built as bench builds it (the default
// channel plan: bench knows no topology).
std::unique_ptr<Schedule> row_schedule(const ScheduleSpec& spec, const ResultRow& row,
                                       const Report& r, DataType dtype, const Topology& base,
                                       NcclVersion version, std::optional<NcclContext>& nccl_ctx) {
  if (!is_nccl_algorithm(spec.algorithm) || !is_library_own(row.algorithm))
    return make_schedule(spec);
  if (!nccl_ctx || nccl_ctx->version != version) nccl_ctx = nccl_context(base, spec.ranks, version);
  const auto variant = nccl_variant(spec.algorithm);
  const NcclChoice choice =
      nccl_runnable_choice(*nccl_ctx, spec.collective, spec.count * spec.elem_size, dtype,
                           row.op.value_or(r.op), variant);
  return make_schedule(nccl_schedule_spec(spec, *nccl_ctx, choice, base));
}

// Where a row is named in errors: "FILE: results[i].key" for collkit
// reports, "FILE:LINE: key" where the reader knows the row's line
// (nccl-tests logs).
struct RowName {
  const CalibrationInput& in;
  std::size_t i;
  bool named() const { return in.row_names.size() == in.report.results.size(); }
  std::string row() const {
    return named() ? in.row_names[i] : in.file + ": results[" + std::to_string(i) + "]";
  }
  std::string at(const std::string& key) const {
    return named() ? in.row_names[i] + ": " + key
                   : in.file + ": results[" + std::to_string(i) + "]." + key;
  }
};

void check_input(const CalibrationInput& in, const Topology& base) {
  const Report& r = in.report;
  const int p = base.num_ranks();
  if (r.mode != ReportMode::measure)
    throw FileError(in.file + ": mode: is '" + std::string(to_string(r.mode)) +
                    "'; calibrate needs measured reports (mode 'measure')");
  if (r.ranks != p)
    throw FileError(
        in.file + ": ranks: " + std::to_string(r.ranks) + ", but the topology has " +
        std::to_string(p) + " ranks" +
        (r.ranks > 0 && r.ranks < base.num_endpoints()
             ? " (--ranks " + std::to_string(r.ranks) + " places them on its first endpoints)"
             : ""));
}

// The spec of the schedule that ran a row: segments chosen as the run chose
// them (its segment model, else the base network's, as `collkit simulate`
// chooses them, fixed so the objective does not jump as parameters move).
ScheduleSpec row_spec(const Report& r, const ResultRow& row, const std::string& algorithm, int p,
                      DataType dtype, const CostParams& model) {
  ScheduleSpec spec;
  spec.collective = row.collective;
  spec.algorithm = algorithm;
  spec.ranks = p;
  spec.root = row.root.value_or(r.root);
  spec.elem_size = size_of(dtype);
  spec.count = row.collective == Collective::barrier ? 0
               : per_rank_count(row.collective)      ? row.count * p
                                                     : row.count;
  if (const std::optional<std::int64_t> segment = extra_segment_bytes(r))
    spec.segment = std::max<std::int64_t>(1, *segment / spec.elem_size);
  if (const std::optional<int> group = extra_group_size(r)) spec.group_size = *group;
  spec.model = model;
  return spec;
}

// Whether a row is fitted; counts and names what is left out. Throws
// FileError for rows that cannot be fitted at all.
bool fittable(const RowName& name, const ResultRow& row, const std::optional<std::string>& algo,
              const CalibrateOptions& options, PointSet& set) {
  if (!algo) {
    ++set.skipped_native;
    return false;
  }
  if (row.algorithm == kNcclTestsAlgorithm && options.match.empty() &&
      !registered(row.collective, kNcclTestsAlgorithm))
    throw FileError(name.at("algorithm") +
                    ": 'nccl' (NCCL's own choice, as nccl-tests measured it) has no collkit "
                    "schedule to simulate: give --match ALGO, the collkit algorithm whose "
                    "schedule stands for these rows (e.g. --match ring)");
  if (row.bytes < options.min_bytes) {
    ++set.skipped_small;
    return false;
  }
  if (row.wrong > 0) {
    // A row whose check failed measured something else: never fitted.
    set.failed_check.push_back(name.row() + " (" + std::string(to_string(row.collective)) + " " +
                               row.algorithm + " " + std::to_string(row.bytes) + " bytes" +
                               (row.in_place ? " in place" : "") + ", " +
                               std::to_string(row.wrong) + " wrong)");
    return false;
  }
  if (!(row.time_us > 0) || !std::isfinite(row.time_us))
    throw FileError(name.at("time_us") + ": must be > 0 to be fitted, got " +
                    fmt("%g", row.time_us));
  if (row.count < 0) throw FileError(name.at("count") + ": must be >= 0");
  return true;
}

}  // namespace

NcclVersion calibration_nccl_version(const CalibrationInput& in, const CalibrateOptions& options,
                                     const Topology& base, std::string* from) {
  const auto said = [&](const char* where, NcclVersion v) {
    if (from) *from = where;
    return v;
  };
  if (options.nccl_version) return said("--nccl-version", *options.nccl_version);
  const std::optional<NcclVersion> logged = extra_nccl_version(in.report);
  if (logged && nccl_version_supported(*logged)) return said("the log", *logged);
  if (base.nccl.version) return said("the topology", *base.nccl.version);
  return said("the default", kDefaultNcclVersion);
}

std::optional<std::string> fitted_algorithm(const ResultRow& row, const CalibrateOptions& options) {
  if (!is_library_own(row.algorithm)) return row.algorithm;
  if (!options.match.empty()) return options.match;
  if (row.algorithm == "native") return std::nullopt;
  return row.algorithm;  // "nccl": the registered algorithm of that name, if any
}

PointSet collect_points(const std::vector<CalibrationInput>& inputs, const Topology& base,
                        const CalibrateOptions& options, RepeatSelection& selection) {
  PointSet set;
  set.networks.push_back(&base);
  set.network_names.emplace_back();
  std::map<std::tuple<std::size_t, int, std::string, std::int64_t, int, int, int>, std::size_t>
      distinct;
  std::vector<std::optional<NcclContext>> nccl_ctx(1);
  for (const CalibrationInput& in : inputs) {
    const Report& r = in.report;
    // The run's network: the base, or its own (each once).
    const Topology& net = in.network ? *in.network : base;
    std::size_t network = static_cast<std::size_t>(
        std::find(set.networks.begin(), set.networks.end(), &net) - set.networks.begin());
    if (network == set.networks.size()) {
      set.networks.push_back(&net);
      set.network_names.push_back(in.shape.empty() ? net.name : in.shape);
      nccl_ctx.emplace_back();
    }
    const int p = net.num_ranks();
    const CostParams model = cost_params_of(net, p);
    check_input(in, net);
    const std::optional<CostParams> run_model = segment_model_of(r, in.file);
    for (std::size_t i = 0; i < r.results.size(); ++i) {
      const ResultRow& row = r.results[i];
      const RowName name{in, i};
      const std::optional<std::string> algorithm = fitted_algorithm(row, options);
      if (!fittable(name, row, algorithm, options, set)) continue;
      const RepeatSelection::Verdict verdict = selection.take(in, row);
      if (verdict == RepeatSelection::Verdict::left_out) continue;
      if (verdict == RepeatSelection::Verdict::slower) {
        ++set.skipped_slower;
        continue;
      }
      const DataType dtype = row.dtype.value_or(r.dtype);
      const ScheduleSpec spec = row_spec(r, row, *algorithm, p, dtype, run_model.value_or(model));
      Point pt;
      pt.file = in.file;
      pt.row = i;
      pt.result = &row;
      pt.algorithm = *algorithm;
      try {
        pt.schedule = row_schedule(spec, row, r, dtype, net,
                                   calibration_nccl_version(in, options, base), nccl_ctx[network]);
      } catch (const UsageError& e) {
        if (*algorithm != row.algorithm)
          throw UsageError("--match " + *algorithm + ": " + e.what() + " (for the '" +
                           row.algorithm + "' rows of " + in.file + ")");
        throw FileError(name.at("algorithm") + ": '" + row.algorithm + "': " + e.what());
      }
      set.any_reduction = set.any_reduction || is_reduction(row.collective);
      set.any_copy = set.any_copy || has_local_copy(*pt.schedule);
      pt.network = network;
      pt.same_as = distinct
                       .emplace(std::make_tuple(network, static_cast<int>(row.collective),
                                                *algorithm, row.bytes, static_cast<int>(dtype),
                                                static_cast<int>(row.op.value_or(r.op)), spec.root),
                                set.points.size())
                       .first->second;
      if (pt.same_as != set.points.size()) pt.schedule.reset();
      set.points.push_back(std::move(pt));
    }
  }
  set.distinct = distinct.size();
  return set;
}

int host_cores_bound(const std::vector<CalibrationInput>& inputs, const CalibrateOptions& options,
                     std::string& source) {
  if (options.host_cores_limit > 0) {
    source = "given";
    return options.host_cores_limit;
  }
  int fewest = 0;
  for (const CalibrationInput& in : inputs)
    if (const std::optional<int> cpus = extra_fewest_host_cpus(in.report))
      fewest = fewest == 0 ? *cpus : std::min(fewest, *cpus);
  if (fewest > 0) {
    source = "the measured hosts' online CPUs (devices[].host_cpus)";
    return fewest;
  }
  source =
      "this machine's CPUs: the reports do not say how many the measured host had "
      "(devices[].host_cpus)";
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

FitProblem::FitProblem(const std::vector<CalibrationInput>& inputs, const Topology& base,
                       const CalibrateOptions& options, int leave_out)
    : trial_(base) {
  RepeatSelection selection(inputs, options.fastest_repeat, leave_out);
  points_ = collect_points(inputs, base, options, selection);
  if (points_.networks.size() > 1 && trial_.trial_endpoint.cache_bytes > 0 && options.search_cache)
    throw UsageError(
        "calibrate: runs measured at other scales (FILE@NODESxGPUS) need a base without a cache "
        "model (cache_mb): its cache-size search fits the base alone");
  map_networks();
  list_params(base);
  const std::size_t n = params_.size();
  if (points_.distinct < n + 1)
    throw UsageError(
        "calibrate: " + std::to_string(points_.distinct) + " distinct measured points for " +
        std::to_string(n) + " parameters; a fit needs at least " + std::to_string(n + 1) +
        ": add " + std::to_string(n + 1 - points_.distinct) + " more (other sizes or algorithms)");
  set_ranges(inputs, options);
  sim_.model = options.model;
  sim_.launch_devices = options.launch_devices;
  huber_ = options.huber;
  jobs_ = options.jobs;
}

// Each network's classes, by their figures, among the base's: a network
// at another scale has the base's kinds of link, so the fit is of the
// base's classes; one with a link the base has not cannot be fitted here.
void FitProblem::map_networks() {
  const auto same = [](const LinkProps& a, const LinkProps& b) {
    return a.bandwidth == b.bandwidth && a.latency == b.latency && a.line_rate == b.line_rate &&
           std::equal(std::begin(a.protocol_latency), std::end(a.protocol_latency),
                      std::begin(b.protocol_latency));
  };
  for (std::size_t n = 0; n < points_.networks.size(); ++n) {
    const Topology& net = *points_.networks[n];
    network_trials_.emplace_back(net);
    std::vector<int> map(static_cast<std::size_t>(net.num_link_classes()), -1);
    if (n == 0) {
      for (std::size_t c = 0; c < map.size(); ++c) map[c] = static_cast<int>(c);
    } else {
      for (LinkId id = 0; id < net.num_links(); ++id) {
        int& to = map[static_cast<std::size_t>(net.link_class(id))];
        if (to >= 0) continue;
        const LinkProps l = net.link(id);
        for (std::size_t c = 0; c < trial_.base_classes.size() && to < 0; ++c)
          if (same(l, trial_.base_classes[c])) to = static_cast<int>(c);
        if (to < 0)
          throw UsageError("calibrate: the runs at " + points_.network_names[n] + " cross " +
                           net.link_name(id) +
                           ", a kind of link the base does not have: fit on a base of the "
                           "largest shape (every kind of link), then resize it");
      }
    }
    base_class_of_.push_back(std::move(map));
  }
}

// The classes transfers between ranks can cross (only those are fitted),
// the endpoint's figures the points can tell, and the kinds of route
// between ranks of every network, by the base's classes they cross (with
// repeats): what a message pays in latency.
void FitProblem::list_params(const Topology& base) {
  std::vector<std::int64_t> class_links(trial_.classes.size(), 0);
  std::vector<std::string> class_example(class_links.size());
  for (LinkId id = 0; id < base.num_links(); ++id) {
    const auto c = static_cast<std::size_t>(base.link_class(id));
    if (class_links[c]++ == 0) class_example[c] = base.link_name(id);
  }
  std::vector<bool> class_used(class_links.size(), false);
  std::vector<LinkId> route;
  // The first pair of each kind, with its network.
  std::map<std::vector<int>, std::tuple<std::size_t, int, int>> route_kinds;
  for (std::size_t n = 0; n < points_.networks.size(); ++n) {
    const Topology& net = *points_.networks[n];
    const int p = net.num_ranks();
    for (int s = 0; s < p; ++s)
      for (int d = 0; d < p; ++d) {
        if (s == d) continue;
        net.route(s, d, route);
        std::vector<int> classes;
        for (LinkId id : route) {
          const int c = base_class_of_[n][static_cast<std::size_t>(net.link_class(id))];
          class_used[static_cast<std::size_t>(c)] = true;
          classes.push_back(c);
        }
        std::sort(classes.begin(), classes.end());
        route_kinds.emplace(std::move(classes), std::make_tuple(n, s, d));
      }
  }

  const EndpointProps& e = trial_.trial_endpoint;
  std::vector<std::size_t> latency_of(class_links.size(), kNoParam);
  const bool per_protocol_file =
      std::any_of(trial_.base_classes.begin(), trial_.base_classes.end(),
                  [](const LinkProps& l) { return l.has_protocol_latency(); });
  for (std::size_t c = 0; c < class_used.size(); ++c) {
    if (!class_used[c]) continue;
    const std::string where =
        " (" + class_example[c] + ", " + std::to_string(class_links[c]) + " links)";
    // Where the base gives NCCL's per-hop figures per protocol on some
    // links, a class with none and no latency has no per-hop cost in that
    // model (a GPU's PCIe path to its NIC): it keeps 0, and the fitted
    // latency goes to the classes that carry the figures.
    const bool per_protocol = per_protocol_file && !trial_.base_classes[c].has_protocol_latency() &&
                              trial_.base_classes[c].latency == 0;
    latency_of[c] = per_protocol ? kNoParam : params_.size();
    if (!per_protocol)
      params_.push_back({ParamKind::latency, static_cast<int>(c),
                         "class " + std::to_string(c) + " latency_us" + where,
                         trial_.classes[c].latency, 0, true});
    params_.push_back({ParamKind::bandwidth, static_cast<int>(c),
                       "class " + std::to_string(c) + " bandwidth_gbps" + where,
                       trial_.classes[c].bandwidth, 0, true});
  }
  // An in-network switch's rate, per class of link into or out of one,
  // where some schedule multicasts or reduces in the network.
  const bool in_switch =
      std::any_of(points_.points.begin(), points_.points.end(),
                  [](const Point& pt) { return pt.schedule && in_network_ops(*pt.schedule); });
  for (std::size_t c = 0; in_switch && c < class_used.size(); ++c) {
    if (!class_used[c] || !(trial_.in_network[c] > 0)) continue;
    FittedParam fp{ParamKind::in_network,
                   static_cast<int>(c),
                   "class " + std::to_string(c) + " in_network_gbps (" + class_example[c] + ", " +
                       std::to_string(class_links[c]) + " links)",
                   trial_.in_network[c],
                   0,
                   true};
    params_.push_back(fp);
  }
  // GPU kernels (pipelined endpoints) have no cost per message of their
  // own: what a chunk pays is its protocol's latency per hop, which the
  // links carry (NCCL's per-hop figures), so the overhead is kept, not
  // fitted; a per-message cost fitted beside it would be paid again by
  // every chunk of every protocol (docs/REPORTS.md, "Calibration").
  const std::size_t overhead = e.pipelined ? kNoParam : params_.size();
  if (!e.pipelined)
    params_.push_back({ParamKind::overhead, -1, "endpoint overhead_us", e.overhead, 0, true});
  // A protocol's base latency, where the base describes the protocol and
  // some schedule runs under it; its per-link latencies follow the fitted
  // link latencies only then (TrialTopology::scale_protocol).
  for (Protocol pr : kAllProtocols) {
    const int i = protocol_index(pr);
    const bool runs =
        std::any_of(points_.points.begin(), points_.points.end(), [&](const Point& pt) {
          if (!pt.schedule) return false;
          const Protocol used = pt.schedule->spec().protocol != Protocol::none
                                    ? pt.schedule->spec().protocol
                                    : points_.networks[pt.network]->default_protocol;
          return used == pr;
        });
    trial_.scale_protocol[i] = runs;
    if (!runs || !trial_.protocols[i].set) continue;
    FittedParam fp{ParamKind::base_latency,
                   -1,
                   "protocol " + std::string(to_string(pr)) + " base_latency_us",
                   trial_.protocols[i].base_latency,
                   0,
                   true};
    fp.protocol = i;
    params_.push_back(fp);
  }
  if (points_.any_reduction)
    params_.push_back({ParamKind::reduce_bw, -1, "endpoint reduce_gbps", e.reduce_bw, 0, true});
  // The cache model's factor, when the base has one and some row is past
  // the cache (else no point could tell it).
  if (e.cache_bytes > 0 &&
      std::any_of(points_.points.begin(), points_.points.end(),
                  [&](const Point& pt) { return pt.schedule && past_cache(*pt.schedule, e); }))
    params_.push_back({ParamKind::dram_factor, -1, "endpoint dram_factor", e.dram_factor, 0, true});
  // A shared host's cores, when the base has them (flow model only: under
  // alpha-beta no point depends on them and they are kept).
  if (e.host_cores > 0)
    params_.push_back({ParamKind::host_cores, -1, "endpoint host_cores", e.host_cores, 0, true});
  // Written data's factor and the copy bandwidth are opt-in: a base that
  // sets them (its value the start), and some point that sends what it
  // wrote, or copies. Free copies are the boundary of the log-space
  // search, which a fit started from a finite value does not reach: it
  // would trade a spurious copy cost against the link bandwidths instead.
  if (e.dirty_factor > 1 &&
      std::any_of(points_.points.begin(), points_.points.end(),
                  [](const Point& pt) { return pt.schedule && sends_written(*pt.schedule); }))
    params_.push_back(
        {ParamKind::dirty_factor, -1, "endpoint dirty_factor", e.dirty_factor, 0, true});
  if (points_.any_copy && e.copy_bw > 0)
    params_.push_back({ParamKind::copy_bw, -1, "endpoint copy_gbps", e.copy_bw, 0, true});

  for (const auto& [classes, where] : route_kinds) {
    const auto [network, src, dst] = where;
    Quantity q;
    q.name = "message latency rank " + std::to_string(src) + " -> " + std::to_string(dst) +
             (network > 0 ? " (" + points_.network_names[network] + ")" : "") + ":";
    const char* plus = " ";
    if (overhead != kNoParam) {
      q.members.push_back(overhead);
      q.name += " endpoint overhead_us";
      plus = " + ";
    }
    for (int c : classes) {
      if (latency_of[static_cast<std::size_t>(c)] == kNoParam) continue;
      q.members.push_back(latency_of[static_cast<std::size_t>(c)]);
      q.name += plus + std::string("class ") + std::to_string(c) + " latency_us";
      plus = " + ";
    }
    if (!q.members.empty()) route_latencies_.push_back(std::move(q));
  }
}

// Parameters live in log space: they stay positive and a step is a
// relative change, which suits values from picoseconds to TB/s. Each stays
// inside its physical range (param_range).
void FitProblem::set_ranges(const std::vector<CalibrationInput>& inputs,
                            const CalibrateOptions& options) {
  const std::size_t n = params_.size();
  theta_start_.resize(n);
  lower_.resize(n);
  upper_.resize(n);
  const int cores = host_cores_bound(inputs, options, host_cores_source_);
  for (const FittedParam& fp : params_)
    if (fp.kind == ParamKind::host_cores) host_cores_limit_ = cores;
  for (std::size_t k = 0; k < n; ++k) {
    FittedParam& fp = params_[k];
    auto [lo, hi] = param_range(fp.kind, cores);
    // A link never carries more than its line rate, where the base gives one.
    if (fp.kind == ParamKind::bandwidth) {
      const double rate = trial_.classes[static_cast<std::size_t>(fp.link_class)].line_rate;
      if (rate > 0) hi = std::min(hi, rate);
    }
    fp.lower = lo;
    fp.upper = hi;
    lower_[k] = std::log(std::max(lo, kMinSeconds));
    upper_[k] = std::log(hi);
    double v = fp.base;
    if (fp.kind == ParamKind::reduce_bw && !(v > 0)) v = 1e12;  // free -> 1 TB/s to start
    if (is_time(fp.kind)) v = std::max(v, kMinSeconds);
    theta_start_[k] = std::clamp(std::log(v), lower_[k], upper_[k]);
  }
}

TrialTopology FitProblem::trial_at(const LmVector& theta) const {
  TrialTopology trial = trial_;
  for (std::size_t k = 0; k < params_.size(); ++k)
    param_slot(params_[k], trial.classes, trial.trial_endpoint, trial.in_network, trial.protocols) =
        std::exp(theta[k]);
  return trial;
}

std::vector<TrialTopology> FitProblem::trials_at(const LmVector& theta) const {
  const TrialTopology base = trial_at(theta);
  std::vector<TrialTopology> trials = network_trials_;
  for (std::size_t n = 0; n < trials.size(); ++n) {
    TrialTopology& t = trials[n];
    for (std::size_t c = 0; c < t.classes.size(); ++c) {
      const int b = base_class_of_[n][c];
      if (b < 0) continue;  // a class no link of the network has
      t.classes[c] = base.classes[static_cast<std::size_t>(b)];
      t.base_classes[c] = base.base_classes[static_cast<std::size_t>(b)];
      if (t.in_network[c] > 0) t.in_network[c] = base.in_network[static_cast<std::size_t>(b)];
    }
    t.trial_endpoint = base.trial_endpoint;
    for (int i = 0; i < 3; ++i) {
      t.protocols[i].base_latency = base.protocols[i].base_latency;
      t.scale_protocol[i] = base.scale_protocol[i];
    }
  }
  return trials;
}

std::vector<LmVector> FitProblem::raw_residuals_many(const std::vector<LmVector>& thetas,
                                                     const std::vector<char>* subset) const {
  const std::vector<Point>& points = points_.points;
  // The distinct points these residuals need, each simulated once.
  std::vector<std::size_t> firsts;
  std::vector<char> needed(points.size(), 0);
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (subset != nullptr && (*subset)[i] == 0) continue;
    const std::size_t first = points[i].same_as;
    if (needed[first] == 0) firsts.push_back(first);
    needed[first] = 1;
  }
  // Largest first: a fit's points differ in cost by orders of magnitude
  // (an 8 GiB all_reduce is half of a 16-rank log's sweep), and threads
  // that take the big ones first finish together. Every (theta, point)
  // is one task, so a Jacobian's columns and points share the threads
  // evenly. Each result lands at its index: the order changes no figure.
  std::stable_sort(firsts.begin(), firsts.end(), [&](std::size_t a, std::size_t b) {
    return points[a].result->bytes > points[b].result->bytes;
  });
  std::vector<std::vector<TrialTopology>> trials;
  trials.reserve(thetas.size());
  for (const LmVector& theta : thetas) trials.push_back(trials_at(theta));
  std::vector<LmVector> us(thetas.size(), LmVector(points.size(), 0.0));
  const std::size_t n = firsts.size();
  parallel_for(n * thetas.size(), jobs_, [&](std::size_t task) {
    const std::size_t first = firsts[task / thetas.size()];
    const std::size_t t = task % thetas.size();
    us[t][first] =
        simulate(*points[first].schedule, trials[t][points[first].network], sim_).time * 1e6;
  });
  std::vector<LmVector> out(thetas.size(), LmVector(points.size(), 0.0));
  for (std::size_t t = 0; t < thetas.size(); ++t)
    for (std::size_t i = 0; i < points.size(); ++i)
      if (subset == nullptr || (*subset)[i] != 0)
        out[t][i] = us[t][points[i].same_as] / points[i].result->time_us - 1.0;
  return out;
}

LmVector FitProblem::raw_residuals(const LmVector& theta, const std::vector<char>* subset) const {
  return raw_residuals_many({theta}, subset).front();
}

// Huber's loss (CalibrateOptions::huber = k): a residual beyond k counts
// k * (2|r| - k) instead of r^2, so points the model cannot express pull
// the fit linearly, not quadratically. Written as a residual of the same
// sign whose square is that loss (smooth at k), so Levenberg-Marquardt
// runs unchanged on it.
LmVector FitProblem::residuals(const LmVector& theta, const std::vector<char>* subset) const {
  return residuals_many({theta}, subset).front();
}

std::vector<LmVector> FitProblem::residuals_many(const std::vector<LmVector>& thetas,
                                                 const std::vector<char>* subset) const {
  std::vector<LmVector> rs = raw_residuals_many(thetas, subset);
  const double k = huber_;
  if (k > 0)
    for (LmVector& r : rs)
      for (double& x : r)
        if (std::abs(x) > k) x = std::copysign(std::sqrt(k * (2 * std::abs(x) - k)), x);
  return rs;
}

LmProblem FitProblem::solver_problem(const std::vector<char>* subset) const {
  LmProblem p;
  p.residuals = [this, subset](const LmVector& t) { return residuals(t, subset); };
  p.lower = lower_;
  p.upper = upper_;
  p.residuals_many = [this, subset](const std::vector<LmVector>& ts) {
    return residuals_many(ts, subset);
  };
  return p;
}

std::vector<LmVector> FitProblem::spread_starts(int count) const {
  const std::size_t n = params_.size();
  std::vector<LmVector> starts;
  for (int s = 1; s <= count; ++s) {
    LmVector t(n);
    for (std::size_t k = 0; k < n; ++k) {
      const double u = halton(s, kHaltonPrimes[k % std::size(kHaltonPrimes)]);
      double lo = theta_start_[k] - std::log(8.0);
      double hi = theta_start_[k] + std::log(8.0);
      if (params_[k].kind == ParamKind::host_cores) {
        lo = lower_[k];
        hi = upper_[k];
      } else if (params_[k].kind == ParamKind::dram_factor ||
                 params_[k].kind == ParamKind::dirty_factor) {
        lo = 0;
        hi = std::log(4.0);
      }
      t[k] = std::clamp(lo + u * (hi - lo), lower_[k], upper_[k]);
    }
    starts.push_back(std::move(t));
  }
  return starts;
}

LmVector FitProblem::fastest_theta() const {
  LmVector theta(params_.size());
  for (std::size_t k = 0; k < params_.size(); ++k) {
    const ParamKind kind = params_[k].kind;
    theta[k] = is_rate(kind) || kind == ParamKind::host_cores ? upper_[k] : lower_[k];
  }
  return theta;
}

std::string FitProblem::faster_than_possible(double tolerance) const {
  const LmVector r = raw_residuals(fastest_theta());
  const std::vector<Point>& points = points_.points;
  std::vector<std::size_t> slow;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (r[i] > tolerance) slow.push_back(i);
  if (slow.empty()) return "";
  // The worst first, a few named.
  std::stable_sort(slow.begin(), slow.end(),
                   [&](std::size_t a, std::size_t b) { return r[a] > r[b]; });
  bool line_rates = false;
  for (const LinkProps& c : trial_.classes) line_rates = line_rates || c.line_rate > 0;
  std::string list;
  for (std::size_t j = 0; j < slow.size() && j < 3; ++j) {
    const ResultRow& row = *points[slow[j]].result;
    list += (j ? "; " : "") + std::string(to_string(row.collective)) + " " +
            std::to_string(row.bytes) + " B" + (row.in_place ? " in place" : "") + ": measured " +
            fmt("%.1f", row.time_us) + " us, at best " +
            fmt("%.1f", row.time_us * (1 + r[slow[j]])) + " us";
  }
  return std::to_string(slow.size()) + " of the " + std::to_string(points.size()) +
         " points are faster than this network can be with every link at " +
         (line_rates ? "its line rate (line_rate_gbps) or the top of its range"
                     : "the top of its range") +
         " and no latency (" + list +
         "): no fit reaches them. The model's schedule moves more over its slowest links than "
         "the run did: the run used another algorithm than the model chose (NCCL's choice "
         "depends on its version; was NCCL_ALGO set?), or the base's structure (NICs per node, "
         "links per GPU) is not the machine's";
}

CalibrationResult FitProblem::initial_result() const {
  CalibrationResult result;
  result.params = params_;
  result.distinct_points = points_.distinct;
  result.skipped_native = points_.skipped_native;
  result.skipped_small = points_.skipped_small;
  result.skipped_slower = points_.skipped_slower;
  result.failed_check = points_.failed_check;
  result.host_cores_limit = host_cores_limit_;
  if (host_cores_limit_ > 0) result.host_cores_source = host_cores_source_;
  return result;
}

void FitProblem::finish(const LmVector& theta, const std::vector<bool>& mattered,
                        const std::vector<bool>& unused_at_fit, CalibrationResult& result) {
  const LmVector r = raw_residuals(theta);
  const TrialTopology fitted = trial_at(theta);
  std::vector<FittedParam>& params = result.params;
  for (std::size_t k = 0; k < params.size(); ++k) {
    FittedParam& fp = params[k];
    fp.constrained = mattered[k];
    fp.fitted = mattered[k] ? std::exp(theta[k]) : fp.base;
    // On a bound: the data pushed it out of its physical range. A latency or
    // overhead of 0 is physical (below anything measurable), not suspect;
    // host_cores at either end is physical: the host's core count is the
    // host itself, and 1 is local work that never runs faster together than
    // one rank alone (memory-bound; below 1 would only rescale the
    // reduction and copy bandwidths). A bandwidth the fit drove to its top
    // where no point depends on it any more is a link that never limits:
    // not suspect either.
    const bool zero_ok = is_time(fp.kind);
    const bool ends_ok = fp.kind == ParamKind::host_cores;
    const double tol = 1e-6;
    fp.at_bound = mattered[k] && !ends_ok && !unused_at_fit[k] &&
                  (theta[k] >= upper_[k] - tol || (!zero_ok && theta[k] <= lower_[k] + tol));
  }
  result.classes = fitted.classes;
  for (std::size_t k = 0; k < result.classes.size(); ++k)
    for (int i = 0; i < 3; ++i)
      result.classes[k].protocol_latency[i] = fitted.class_link(k).protocol_latency[i];
  result.endpoint = fitted.trial_endpoint;
  result.in_network = fitted.in_network;
  for (int i = 0; i < 3; ++i) result.protocols[i] = fitted.protocols[i];
  // Below 10 ps a latency or overhead is zero within any measurement; writing
  // 0 keeps a base's 0 (the log-space start) from turning into noise digits.
  for (FittedParam& fp : params)
    if (is_time(fp.kind) && fp.fitted < 1e-11) fp.fitted = 0;
  for (LinkProps& c : result.classes)
    if (c.latency < 1e-11) c.latency = 0;
  if (result.endpoint.overhead < 1e-11) result.endpoint.overhead = 0;
  // Parameters no point depended on go back to the base value exactly.
  for (const FittedParam& fp : params)
    if (!fp.constrained)
      param_slot(fp, result.classes, result.endpoint, result.in_network, result.protocols) =
          fp.base;

  std::vector<double> abs_err;
  const std::vector<Point>& points = points_.points;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const ResultRow& row = *points[i].result;
    PointFit f;
    f.file = points[i].file;
    f.row = points[i].row;
    f.collective = row.collective;
    f.algorithm = points[i].algorithm == row.algorithm
                      ? row.algorithm
                      : row.algorithm + " as " + points[i].algorithm;
    f.bytes = row.bytes;
    f.in_place = row.in_place;
    f.measured_us = row.time_us;
    f.rel_error = r[i];
    f.fitted_us = (r[i] + 1.0) * row.time_us;
    abs_err.push_back(std::abs(r[i]));
    result.points.push_back(f);
  }
  result.loss = sum_of_squares(residuals(theta));
  for (const FittedParam& fp : params) {
    if (!fp.at_bound) continue;
    const bool upper = std::abs(std::log(fp.fitted) - std::log(fp.upper)) < 1e-5;
    const bool line_rate =
        upper && fp.kind == ParamKind::bandwidth &&
        trial_.classes[static_cast<std::size_t>(fp.link_class)].line_rate == fp.upper;
    if (line_rate)
      result.problems.push_back(fp.name + " ended on its line rate (" + fmt("%g", fp.upper / 1e9) +
                                " GB/s, the base's line_rate_gbps): the measurements ask for more "
                                "than these links carry");
    else
      result.problems.push_back(fp.name + " ended on the " + (upper ? "upper" : "lower") +
                                " bound of its physical range (" + range_text(fp) +
                                "): the measurements ask for a value no such network has");
  }
  if (result.loss > result.base_loss * (1 + 1e-9))
    result.problems.push_back("the fit predicts worse than the base (loss " +
                              fmt("%.4g", result.loss) + " > " + fmt("%.4g", result.base_loss) +
                              ")");
  result.median_abs_error = quantile(abs_err, 0.5);
  result.p90_abs_error = quantile(abs_err, 0.9);
  result.max_abs_error = abs_err.empty() ? 0 : *std::max_element(abs_err.begin(), abs_err.end());
}

}  // namespace collkit
