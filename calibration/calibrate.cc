#include "calibration/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "algorithms/registry.h"
#include "core/error.h"
#include "reports/compare.h"
#include "reports/nccl_tests.h"
#include "sim/nccl.h"
#include "sim/sweep.h"

namespace collkit {
namespace {

// The base network with every link's props replaced by its class's trial
// values and every endpoint's by one trial pair. Routes stay the base's, so
// the fit never changes which links a transfer crosses.
//
// A class's protocol latencies (GPU networks) follow its fitted latency: the
// one latency parameter scales them all by fitted / base.
class TrialTopology : public Topology {
 public:
  explicit TrialTopology(const Topology& base) : base_(base) {
    name = base.name;
    devices_per_node = base.devices_per_node;
    rank_node = base.rank_node;
    for (int i = 0; i < 3; ++i) protocols[i] = base.protocols[i];
    default_protocol = base.default_protocol;
    nccl = base.nccl;
  }
  int num_ranks() const override { return base_.num_ranks(); }
  std::int64_t num_links() const override { return base_.num_links(); }
  // One fitted endpoint for all, each on its own host (the base's: ranks
  // of a host share its cores).
  EndpointProps endpoint(int rank) const override {
    EndpointProps e = endpoint_;
    e.host = base_.endpoint(rank).host;
    return e;
  }
  LinkProps link(LinkId id) const override {
    const auto c = static_cast<std::size_t>(base_.link_class(id));
    LinkProps l = classes_[c];
    const LinkProps& b = base_classes_[c];
    if (b.has_protocol_latency() && b.latency > 0)
      for (int i = 0; i < 3; ++i)
        if (b.protocol_latency[i] >= 0)
          l.protocol_latency[i] = b.protocol_latency[i] * l.latency / b.latency;
    return l;
  }
  int in_network_side(LinkId id, double& bandwidth) const override {
    return base_.in_network_side(id, bandwidth);
  }
  std::string link_name(LinkId id) const override { return base_.link_name(id); }
  void route(int src, int dst, std::vector<LinkId>& out) const override {
    base_.route(src, dst, out);
  }
  int num_link_classes() const override { return base_.num_link_classes(); }
  int link_class(LinkId id) const override { return base_.link_class(id); }
  int num_endpoints() const override { return base_.num_endpoints(); }
  std::int64_t num_nodes() const override { return base_.num_nodes(); }

  std::vector<LinkProps> classes_;
  std::vector<LinkProps> base_classes_;
  EndpointProps endpoint_;

 private:
  const Topology& base_;
};

// The algorithm whose schedule a measured row is simulated as: its own, or
// --match's for rows of a library's own collective ("nccl", "native");
// nullopt for rows left out ("native" without --match).
bool registered(Collective c, const std::string& name) {
  for (const AlgorithmDef* def : algorithms_for(c))
    if (def->name == name) return true;
  return false;
}

bool is_library_own(const std::string& algorithm) {
  return algorithm == "native" || algorithm == kNcclTestsAlgorithm;
}

std::optional<std::string> fitted_algorithm(const ResultRow& row, const CalibrateOptions& options) {
  if (!is_library_own(row.algorithm)) return row.algorithm;
  if (!options.match.empty()) return options.match;
  if (row.algorithm == "native") return std::nullopt;
  return row.algorithm;  // "nccl": the registered algorithm of that name, if any
}

struct Point {
  std::string file;
  std::size_t row = 0;
  const ResultRow* result = nullptr;
  std::string algorithm;  // the schedule's (fitted_algorithm)
  std::unique_ptr<Schedule> schedule;
  // The first point with the same collective, algorithm, size, type, op and
  // root: repeats (the in-place and out-of-place columns, several logs of
  // one sweep) are simulated once per evaluation.
  std::size_t same_as = 0;
};

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

// Where a fitted parameter lives: its link class's latency or bandwidth, or
// one of the endpoint's properties.
double& param_slot(const FittedParam& p, std::vector<LinkProps>& classes, EndpointProps& e) {
  switch (p.kind) {
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

bool per_rank_count(Collective c) {
  return c == Collective::all_gather || c == Collective::reduce_scatter ||
         c == Collective::all_to_all || c == Collective::scatter || c == Collective::gather;
}

// Latency and overhead of 0 cannot be fitted in log space; a picosecond is
// far below anything measurable, so starting there loses nothing.
constexpr double kMinSeconds = 1e-12;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Solves the symmetric positive definite system a x = b in place (Cholesky);
// false when a is not positive definite.
bool solve_spd(std::vector<std::vector<double>> a, std::vector<double>& b) {
  const std::size_t n = b.size();
  for (std::size_t j = 0; j < n; ++j) {
    double d = a[j][j];
    for (std::size_t k = 0; k < j; ++k) d -= a[j][k] * a[j][k];
    if (!(d > 0)) return false;
    a[j][j] = std::sqrt(d);
    for (std::size_t i = j + 1; i < n; ++i) {
      double s = a[i][j];
      for (std::size_t k = 0; k < j; ++k) s -= a[i][k] * a[j][k];
      a[i][j] = s / a[j][j];
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < i; ++k) b[i] -= a[i][k] * b[k];
    b[i] /= a[i][i];
  }
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t k = i + 1; k < n; ++k) b[i] -= a[k][i] * b[k];
    b[i] /= a[i][i];
  }
  return true;
}

// Factors and core counts, printed as they are.
bool unitless(ParamKind kind) {
  return kind == ParamKind::dram_factor || kind == ParamKind::host_cores ||
         kind == ParamKind::dirty_factor;
}

// "[0, 100000 us]" in the units format_calibration prints.
double display_scale(ParamKind kind) {
  return kind == ParamKind::latency || kind == ParamKind::overhead ? 1e6
         : unitless(kind)                                          ? 1.0
                                                                   : 1e-9;
}

std::string range_text(const FittedParam& fp) {
  const double s = display_scale(fp.kind);
  const char* unit = fp.kind == ParamKind::latency || fp.kind == ParamKind::overhead ? " us"
                     : unitless(fp.kind)                                             ? ""
                                                                                     : " GB/s";
  return fmt("%g", fp.lower * s) + ".." + fmt("%g", fp.upper * s) + unit;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

}  // namespace

namespace {

// Element s (s >= 1) of the van der Corput sequence in base `prime`: points
// in (0, 1) that fill it evenly, the same every run. One prime per
// parameter makes the starts a Halton sequence.
double halton(int s, int prime) {
  double f = 1, out = 0;
  for (int i = s; i > 0; i /= prime) {
    f /= prime;
    out += f * (i % prime);
  }
  return out;
}
constexpr int kHaltonPrimes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53};

// What a fit determines (ParamSpread): one parameter, or a group of
// proportional ones as their combination.
struct Quantity {
  std::string name;
  std::vector<std::size_t> members;
  bool series = false;  // bandwidths: 1 / sum(1 / b); else a sum
  double value(const std::vector<double>& theta) const {
    double sum = 0;
    for (std::size_t k : members) sum += series ? std::exp(-theta[k]) : std::exp(theta[k]);
    return series ? 1 / sum : sum;
  }
};

bool is_time(ParamKind kind) { return kind == ParamKind::latency || kind == ParamKind::overhead; }
bool is_rate(ParamKind kind) {
  return kind == ParamKind::bandwidth || kind == ParamKind::reduce_bw || kind == ParamKind::copy_bw;
}

// The parameters some point depends on (not `frozen`), grouped by `group`
// (the root of each parameter's group of proportional ones); a group that
// mixes times with rates or factors has no combination to compare. Times
// (latencies, the overhead) are compared as what one message pays on each
// kind of route, `routes`: the overhead plus the latencies of the route's
// links (members listed with repeats). Only those sums reach a prediction,
// and a base whose routes share links can move latency between its
// classes without changing any of them: a route through a core that costs
// 5 + 3.4 + 0 us in one fit and 0 + 8.8 + 0 in another costs the same.
std::vector<Quantity> determined_quantities(const std::vector<FittedParam>& params,
                                            const std::vector<std::size_t>& group,
                                            const std::vector<bool>& frozen,
                                            const std::vector<Quantity>& routes) {
  std::vector<Quantity> out;
  for (const Quantity& route : routes) {
    const bool depended = std::any_of(route.members.begin(), route.members.end(),
                                      [&](std::size_t k) { return !frozen[k]; });
    if (depended) out.push_back(route);
  }
  for (std::size_t root = 0; root < params.size(); ++root) {
    Quantity q;
    for (std::size_t k = 0; k < params.size(); ++k)
      if (group[k] == root && !frozen[k] && !is_time(params[k].kind)) q.members.push_back(k);
    if (q.members.empty()) continue;
    // A group that also holds a time mixes times with rates or factors.
    bool mixed = false;
    for (std::size_t k = 0; k < params.size(); ++k)
      mixed = mixed || (group[k] == root && !frozen[k] && is_time(params[k].kind));
    if (mixed) continue;
    if (q.members.size() == 1) {
      q.name = params[q.members.front()].name;
      out.push_back(std::move(q));
      continue;
    }
    if (!std::all_of(q.members.begin(), q.members.end(),
                     [&](std::size_t k) { return is_rate(params[k].kind); }))
      continue;
    q.series = true;
    std::string list;
    for (std::size_t k : q.members) {
      const std::string& name = params[k].name;
      list += (list.empty() ? "" : " + ") + name.substr(0, name.find(" ("));
    }
    q.name = "series bandwidth of " + list;
    out.push_back(std::move(q));
  }
  return out;
}

// How calibrate_fixed searches: `final` runs the extra starts and the
// repeat fits (the cache-size candidates are compared without them);
// `warm`, when it has one value per parameter, replaces the base as the
// first start (the candidate's own fit, log space).
struct SearchPlan {
  bool final = true;
  std::vector<double> warm;
  // --repeats fastest: leave out the k-th file that measured each row (of
  // rows measured in two or more), for the stability check; -1 = none.
  int leave_out = -1;
};

// One fit with the base's cache size held fixed.
// host_cores' upper bound (CalibrateOptions::host_cores_limit), and in
// `source` where it came from.
int host_cores_bound(const std::vector<CalibrationInput>& inputs, const CalibrateOptions& options,
                     std::string& source) {
  if (options.host_cores_limit > 0) {
    source = "given";
    return options.host_cores_limit;
  }
  int fewest = 0;
  for (const CalibrationInput& in : inputs) {
    const Json& extra = in.report.extra;
    if (!extra.is_object() || !extra.contains("devices") || !extra["devices"].is_array()) continue;
    for (const Json& d : extra["devices"])
      if (d.is_object() && d.contains("host_cpus") && d["host_cpus"].is_number_integer() &&
          d["host_cpus"].get<int>() > 0)
        fewest =
            fewest == 0 ? d["host_cpus"].get<int>() : std::min(fewest, d["host_cpus"].get<int>());
  }
  if (fewest > 0) {
    source = "the measured hosts' online CPUs (devices[].host_cpus)";
    return fewest;
  }
  source =
      "this machine's CPUs: the reports do not say how many the measured host had "
      "(devices[].host_cpus)";
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

CalibrationResult calibrate_fixed(const std::vector<CalibrationInput>& inputs, const Topology& base,
                                  const CalibrateOptions& options, const SearchPlan& search,
                                  std::vector<double>* theta_out = nullptr) {
  if (options.starts < 1)
    throw UsageError("calibrate: --starts must be >= 1, got " + std::to_string(options.starts));
  if (inputs.empty()) throw UsageError("calibrate: no measured report given");
  const int p = base.num_ranks();
  // Segment sizes follow the base network, as `collkit simulate` chooses
  // them, and stay fixed so the objective does not jump as parameters move.
  const CostParams model = cost_params_of(base, p);

  if (options.min_bytes < 0)
    throw UsageError("calibrate: --min-bytes must be >= 0, got " +
                     std::to_string(options.min_bytes));
  CalibrationResult result;
  result.min_bytes = options.min_bytes;
  result.match = options.match;
  std::vector<Point> points;
  std::map<std::tuple<int, std::string, std::int64_t, int, int, int>, std::size_t> distinct;
  bool any_reduction = false;
  bool any_copy = false;
  std::optional<NcclContext> nccl_ctx;
  // --repeats fastest: each measured row's least time over the inputs, and
  // whether a row of that key has been taken (ties keep the first). Rows
  // are keyed as compare keys them (row_key).
  std::map<RowKey, std::pair<double, bool>> fastest;
  // The files that measured each row, in input order: the k-th is repeat k.
  std::map<RowKey, std::vector<const CalibrationInput*>> files_of_row;
  const auto left_out = [&](const CalibrationInput& in, const RowKey& key) {
    if (search.leave_out < 0) return false;
    const std::vector<const CalibrationInput*>& f = files_of_row.at(key);
    return f.size() >= 2 && static_cast<std::size_t>(search.leave_out) < f.size() &&
           f[static_cast<std::size_t>(search.leave_out)] == &in;
  };
  if (options.fastest_repeat) {
    for (const CalibrationInput& in : inputs)
      for (const ResultRow& row : in.report.results) {
        std::vector<const CalibrationInput*>& f = files_of_row[row_key(in.report, row)];
        if (f.empty() || f.back() != &in) f.push_back(&in);
      }
    for (const CalibrationInput& in : inputs)
      for (const ResultRow& row : in.report.results) {
        const RowKey key = row_key(in.report, row);
        if (!(row.time_us > 0) || row.wrong > 0 || left_out(in, key)) continue;
        const auto [it, fresh] = fastest.try_emplace(key, row.time_us, false);
        if (!fresh) it->second.first = std::min(it->second.first, row.time_us);
      }
  }
  for (const CalibrationInput& in : inputs) {
    const Report& r = in.report;
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
    const std::optional<CostParams> run_model = segment_model_of(r, in.file);
    for (std::size_t i = 0; i < r.results.size(); ++i) {
      const ResultRow& row = r.results[i];
      // "FILE: results[i].key" for collkit reports, "FILE:LINE: key" where
      // the reader knows the row's line (nccl-tests logs).
      const bool named = in.row_names.size() == r.results.size();
      const auto at = [&](const std::string& key) {
        return named ? in.row_names[i] + ": " + key
                     : in.file + ": results[" + std::to_string(i) + "]." + key;
      };
      const std::optional<std::string> algorithm = fitted_algorithm(row, options);
      if (!algorithm) {
        ++result.skipped_native;
        continue;
      }
      if (row.algorithm == kNcclTestsAlgorithm && options.match.empty() &&
          !registered(row.collective, kNcclTestsAlgorithm))
        throw FileError(at("algorithm") +
                        ": 'nccl' (NCCL's own choice, as nccl-tests measured it) has no collkit "
                        "schedule to simulate: give --match ALGO, the collkit algorithm whose "
                        "schedule stands for these rows (e.g. --match ring)");
      if (row.bytes < options.min_bytes) {
        ++result.skipped_small;
        continue;
      }
      if (row.wrong > 0) {
        // A row whose check failed measured something else: never fitted.
        const std::string key =
            named ? in.row_names[i] : in.file + ": results[" + std::to_string(i) + "]";
        result.failed_check.push_back(key + " (" + std::string(to_string(row.collective)) + " " +
                                      row.algorithm + " " + std::to_string(row.bytes) + " bytes" +
                                      (row.in_place ? " in place" : "") + ", " +
                                      std::to_string(row.wrong) + " wrong)");
        continue;
      }
      if (!(row.time_us > 0) || !std::isfinite(row.time_us))
        throw FileError(at("time_us") + ": must be > 0 to be fitted, got " +
                        fmt("%g", row.time_us));
      if (row.count < 0) throw FileError(at("count") + ": must be >= 0");
      if (options.fastest_repeat) {
        const RowKey key = row_key(r, row);
        if (left_out(in, key)) continue;
        std::pair<double, bool>& best = fastest.at(key);
        if (best.second || row.time_us > best.first) {
          ++result.skipped_slower;
          continue;
        }
        best.second = true;
      }
      const DataType dtype = row.dtype.value_or(r.dtype);
      ScheduleSpec spec;
      spec.collective = row.collective;
      spec.algorithm = *algorithm;
      spec.ranks = p;
      spec.root = row.root.value_or(r.root);
      spec.elem_size = size_of(dtype);
      spec.count = row.collective == Collective::barrier ? 0
                   : per_rank_count(row.collective)      ? row.count * p
                                                         : row.count;
      if (r.extra.contains("segment_bytes") && r.extra["segment_bytes"].is_number_integer())
        spec.segment = std::max<std::int64_t>(
            1, r.extra["segment_bytes"].get<std::int64_t>() / spec.elem_size);
      if (r.extra.contains("group_size") && r.extra["group_size"].is_number_integer())
        spec.group_size = r.extra["group_size"].get<int>();
      // The schedule that ran: segments chosen as the run chose them.
      spec.model = run_model.value_or(model);
      Point pt;
      pt.file = in.file;
      pt.row = i;
      pt.result = &row;
      pt.algorithm = *algorithm;
      try {
        if (is_nccl_algorithm(*algorithm) && is_library_own(row.algorithm)) {
          // Rows of NCCL's own collective (nccl-tests; --match names what
          // stands for them): NCCL's choice, made on the base as the
          // simulator makes it: plan, protocol, channels. A row of a named
          // nccl variant measured by collkit bench is the schedule that ran,
          // built below as bench builds it (the default channel plan: bench
          // knows no topology).
          if (!nccl_ctx) nccl_ctx = nccl_context(base, p);
          const auto variant = nccl_variant(*algorithm);
          const NcclChoice choice =
              nccl_choose(*nccl_ctx, spec.collective, spec.count * spec.elem_size, dtype,
                          row.op.value_or(r.op), variant);
          pt.schedule = make_schedule(nccl_schedule_spec(spec, *nccl_ctx, choice, base));
        } else {
          pt.schedule = make_schedule(spec);
        }
      } catch (const UsageError& e) {
        if (*algorithm != row.algorithm)
          throw UsageError("--match " + *algorithm + ": " + e.what() + " (for the '" +
                           row.algorithm + "' rows of " + in.file + ")");
        throw FileError(at("algorithm") + ": '" + row.algorithm + "': " + e.what());
      }
      any_reduction = any_reduction || is_reduction(row.collective);
      any_copy = any_copy || has_local_copy(*pt.schedule);
      pt.same_as = distinct
                       .emplace(std::make_tuple(static_cast<int>(row.collective), *algorithm,
                                                row.bytes, static_cast<int>(dtype),
                                                static_cast<int>(row.op.value_or(r.op)), spec.root),
                                points.size())
                       .first->second;
      if (pt.same_as != points.size()) pt.schedule.reset();
      points.push_back(std::move(pt));
    }
  }
  result.distinct_points = distinct.size();

  // The classes transfers between ranks can cross: only those are fitted.
  std::vector<std::int64_t> class_links(static_cast<std::size_t>(base.num_link_classes()), 0);
  std::vector<std::string> class_example(class_links.size());
  TrialTopology trial(base);
  trial.classes_.resize(class_links.size());
  for (LinkId id = 0; id < base.num_links(); ++id) {
    const auto c = static_cast<std::size_t>(base.link_class(id));
    if (class_links[c]++ > 0) continue;
    class_example[c] = base.link_name(id);
    trial.classes_[c] = base.link(id);
  }
  trial.base_classes_ = trial.classes_;
  std::vector<bool> class_used(class_links.size(), false);
  std::vector<LinkId> route;
  // The kinds of route between ranks, by the classes they cross (with
  // repeats), and the first pair of each: what a message pays in latency.
  std::map<std::vector<int>, std::pair<int, int>> route_kinds;
  for (int s = 0; s < p; ++s)
    for (int d = 0; d < p; ++d) {
      if (s == d) continue;
      base.route(s, d, route);
      std::vector<int> classes;
      for (LinkId id : route) {
        class_used[static_cast<std::size_t>(base.link_class(id))] = true;
        classes.push_back(base.link_class(id));
      }
      std::sort(classes.begin(), classes.end());
      route_kinds.emplace(std::move(classes), std::make_pair(s, d));
    }

  trial.endpoint_ = p > 0 ? base.endpoint(0) : EndpointProps{};

  auto& params = result.params;
  for (std::size_t c = 0; c < class_used.size(); ++c) {
    if (!class_used[c]) continue;
    const std::string where =
        " (" + class_example[c] + ", " + std::to_string(class_links[c]) + " links)";
    params.push_back({ParamKind::latency, static_cast<int>(c),
                      "class " + std::to_string(c) + " latency_us" + where,
                      trial.classes_[c].latency, 0, true});
    params.push_back({ParamKind::bandwidth, static_cast<int>(c),
                      "class " + std::to_string(c) + " bandwidth_gbps" + where,
                      trial.classes_[c].bandwidth, 0, true});
  }
  params.push_back(
      {ParamKind::overhead, -1, "endpoint overhead_us", trial.endpoint_.overhead, 0, true});
  if (any_reduction)
    params.push_back(
        {ParamKind::reduce_bw, -1, "endpoint reduce_gbps", trial.endpoint_.reduce_bw, 0, true});
  // Opt-in: only a base that prices copies (copy_gbps, its value the start)
  // gets them fitted. Free copies are the boundary of the log-space search,
  // which a fit started from a finite value does not reach: it would trade
  // a spurious copy cost against the link bandwidths instead.
  // The cache model's factor, when the base has one and some row is past
  // the cache (else no point could tell it).
  if (trial.endpoint_.cache_bytes > 0) {
    bool past = false;
    for (const Point& pt : points)
      past = past || (pt.schedule && past_cache(*pt.schedule, trial.endpoint_));
    if (past)
      params.push_back({ParamKind::dram_factor, -1, "endpoint dram_factor",
                        trial.endpoint_.dram_factor, 0, true});
  }
  // A shared host's cores, when the base has them (flow model only: under
  // alpha-beta no point depends on them and they are kept).
  if (trial.endpoint_.host_cores > 0)
    params.push_back(
        {ParamKind::host_cores, -1, "endpoint host_cores", trial.endpoint_.host_cores, 0, true});
  // Written data's factor, opt-in like copies: a base that sets it (its
  // value the start), and some point that sends what it wrote.
  if (trial.endpoint_.dirty_factor > 1) {
    bool writes = false;
    for (const Point& pt : points) writes = writes || (pt.schedule && sends_written(*pt.schedule));
    if (writes)
      params.push_back({ParamKind::dirty_factor, -1, "endpoint dirty_factor",
                        trial.endpoint_.dirty_factor, 0, true});
  }
  if (any_copy && trial.endpoint_.copy_bw > 0)
    params.push_back(
        {ParamKind::copy_bw, -1, "endpoint copy_gbps", trial.endpoint_.copy_bw, 0, true});

  // What a message pays in latency on each kind of route (compared between
  // fits: determined_quantities).
  std::vector<Quantity> route_latencies;
  {
    std::vector<std::size_t> latency_of(class_links.size(), params.size());
    std::size_t overhead = params.size();
    for (std::size_t k = 0; k < params.size(); ++k) {
      if (params[k].kind == ParamKind::latency)
        latency_of[static_cast<std::size_t>(params[k].link_class)] = k;
      if (params[k].kind == ParamKind::overhead) overhead = k;
    }
    for (const auto& [classes, pair] : route_kinds) {
      Quantity q;
      q.members.push_back(overhead);
      q.name = "message latency rank " + std::to_string(pair.first) + " -> " +
               std::to_string(pair.second) + ": endpoint overhead_us";
      for (int c : classes) {
        q.members.push_back(latency_of[static_cast<std::size_t>(c)]);
        q.name += " + class " + std::to_string(c) + " latency_us";
      }
      route_latencies.push_back(std::move(q));
    }
  }

  const std::size_t n = params.size();
  if (distinct.size() < n + 1)
    throw UsageError("calibrate: " + std::to_string(distinct.size()) +
                     " distinct measured points for " + std::to_string(n) +
                     " parameters; a fit needs at least " + std::to_string(n + 1) + ": add " +
                     std::to_string(n + 1 - distinct.size()) + " more (other sizes or algorithms)");

  // Parameters live in log space: they stay positive and a step is a
  // relative change, which suits values from picoseconds to TB/s. Each stays
  // inside its physical range (param_range): steps are clipped to it.
  std::vector<double> theta(n), theta_lo(n), theta_hi(n);
  std::string cores_source;
  const int cores = host_cores_bound(inputs, options, cores_source);
  for (const FittedParam& fp : params)
    if (fp.kind == ParamKind::host_cores) {
      result.host_cores_limit = cores;
      result.host_cores_source = cores_source;
    }
  for (std::size_t k = 0; k < n; ++k) {
    const auto [lower, upper] = param_range(params[k].kind, cores);
    params[k].lower = lower;
    params[k].upper = upper;
    theta_lo[k] = std::log(std::max(lower, kMinSeconds));
    theta_hi[k] = std::log(upper);
    double v = params[k].base;
    if (params[k].kind == ParamKind::reduce_bw && !(v > 0)) v = 1e12;  // free -> 1 TB/s to start
    if (params[k].kind == ParamKind::latency || params[k].kind == ParamKind::overhead)
      v = std::max(v, kMinSeconds);
    theta[k] = std::clamp(std::log(v), theta_lo[k], theta_hi[k]);
  }
  const std::vector<double> theta_start = theta;
  const auto apply = [&](const std::vector<double>& t) {
    for (std::size_t k = 0; k < n; ++k) {
      param_slot(params[k], trial.classes_, trial.endpoint_) = std::exp(t[k]);
    }
  };
  SimOptions sim_options;
  sim_options.model = options.model;
  sim_options.launch_devices = options.launch_devices;
  // Relative residuals: every point weighs the same whatever its size.
  // While `subset` is set (one flag per point: the fit of one repeat of the
  // measurements), the other points' residuals are 0.
  const std::vector<char>* subset = nullptr;
  const auto raw_residuals = [&](const std::vector<double>& t) {
    apply(t);
    std::vector<double> r(points.size(), 0.0);
    std::vector<double> us(points.size(), 0.0);
    std::vector<char> done(points.size(), 0);
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (subset != nullptr && (*subset)[i] == 0) continue;
      const std::size_t first = points[i].same_as;
      if (done[first] == 0) {
        us[first] = simulate(*points[first].schedule, trial, sim_options).time * 1e6;
        done[first] = 1;
      }
      r[i] = us[first] / points[i].result->time_us - 1.0;
    }
    return r;
  };
  // Huber's loss (CalibrateOptions::huber = k): a residual beyond k counts
  // k * (2|r| - k) instead of r^2, so points the model cannot express pull
  // the fit linearly, not quadratically. Written as a residual of the same
  // sign whose square is that loss (smooth at k), so Levenberg-Marquardt
  // runs unchanged on it.
  const double k = options.huber;
  const auto residuals = [&](const std::vector<double>& t) {
    std::vector<double> r = raw_residuals(t);
    if (k > 0)
      for (double& x : r)
        if (std::abs(x) > k) x = std::copysign(std::sqrt(k * (2 * std::abs(x) - k)), x);
    return r;
  };
  const auto cost_of = [](const std::vector<double>& r) {
    double s = 0;
    for (double x : r) s += x * x;
    return s;
  };

  // Levenberg-Marquardt with central-difference derivatives from
  // re-simulating: exact for the piecewise-linear alpha-beta model away from
  // kinks, and the only way to follow the flow model's sharing.
  constexpr double kStep = 1e-5;
  std::vector<bool> frozen(n, false);
  // A parameter that mattered once keeps its fitted value even if the fit
  // later drives it where no point feels it (e.g. a reduction bandwidth so
  // high that reductions become free); only one that never mattered keeps
  // the base value. The fits of single repeats do not count.
  std::vector<bool> ever_mattered(n, false);
  bool track_mattered = true;
  // Columns are d(residual)/d(log parameter); sets `frozen`.
  const auto jacobian = [&](const std::vector<double>& at) {
    std::vector<std::vector<double>> jac(n);
    for (std::size_t k = 0; k < n; ++k) {
      std::vector<double> t = at;
      t[k] += kStep;
      const std::vector<double> up = residuals(t);
      t[k] -= 2 * kStep;
      const std::vector<double> down = residuals(t);
      jac[k].resize(points.size());
      double norm = 0;
      for (std::size_t i = 0; i < points.size(); ++i) {
        jac[k][i] = (up[i] - down[i]) / (2 * kStep);
        norm = std::max(norm, std::abs(jac[k][i]));
      }
      // A parameter no point depends on keeps its base value.
      frozen[k] = norm < 1e-12;
      if (!frozen[k] && track_mattered) ever_mattered[k] = true;
    }
    return jac;
  };
  // One descent from `from` to the nearest minimum.
  struct Descent {
    std::vector<double> theta, r;
    double cost = 0;
    int iterations = 0;
  };
  const auto descend = [&](const std::vector<double>& from) {
    Descent d;
    d.theta = from;
    d.r = residuals(d.theta);
    d.cost = cost_of(d.r);
    double lambda = 1e-3;
    for (int it = 0; it < options.max_iterations && d.cost > 1e-26; ++it) {
      d.iterations = it + 1;
      const std::vector<std::vector<double>> jac = jacobian(d.theta);
      std::vector<std::vector<double>> jtj(n, std::vector<double>(n, 0));
      std::vector<double> jtr(n, 0);
      for (std::size_t a = 0; a < n; ++a) {
        for (std::size_t i = 0; i < points.size(); ++i) jtr[a] += jac[a][i] * d.r[i];
        for (std::size_t b = 0; b <= a; ++b) {
          double s = 0;
          for (std::size_t i = 0; i < points.size(); ++i) s += jac[a][i] * jac[b][i];
          jtj[a][b] = jtj[b][a] = s;
        }
      }
      bool improved = false;
      for (int tries = 0; tries < 30 && !improved; ++tries) {
        std::vector<std::vector<double>> m = jtj;
        std::vector<double> delta(n);
        for (std::size_t k = 0; k < n; ++k) {
          // Marquardt's scaling plus a floor, so parameters the points cannot
          // tell apart (latency vs overhead on one-hop routes) stay put
          // rather than make the system singular.
          m[k][k] += lambda * jtj[k][k] + 1e-12 + (frozen[k] ? 1.0 : 0.0);
          delta[k] = frozen[k] ? 0.0 : -jtr[k];
        }
        if (!solve_spd(m, delta)) {
          lambda *= 10;
          continue;
        }
        std::vector<double> next = d.theta;
        for (std::size_t k = 0; k < n; ++k)
          next[k] = std::clamp(next[k] + std::clamp(delta[k], -5.0, 5.0), theta_lo[k], theta_hi[k]);
        const std::vector<double> r_next = residuals(next);
        const double c_next = cost_of(r_next);
        if (c_next < d.cost) {
          const double gain = d.cost - c_next;
          d.theta = next;
          d.r = r_next;
          d.cost = c_next;
          lambda = std::max(lambda / 10, 1e-12);
          improved = true;
          if (gain <= 1e-15 * d.cost) it = options.max_iterations;  // converged
        } else {
          lambda *= 10;
        }
      }
      if (!improved) break;
    }
    return d;
  };

  // The base's prediction, for "error before and after".
  {
    const std::vector<double> base_r = raw_residuals(theta_start);
    std::vector<double> abs_base(base_r.size());
    std::transform(base_r.begin(), base_r.end(), abs_base.begin(),
                   [](double x) { return std::abs(x); });
    result.base_median_abs_error = quantile(abs_base, 0.5);
    result.base_p90_abs_error = quantile(abs_base, 0.9);
    result.base_loss = cost_of(residuals(theta_start));
  }

  // The search: one descent from the base (or from `search.warm`, the best
  // fit of an earlier pass), then, for the final fit, from search.starts - 1
  // more points spread over each parameter's plausible range (a Halton
  // sequence: the same points every run). The lowest loss wins, the first
  // on ties, so more starts never give a worse fit.
  std::vector<std::vector<double>> starts{search.warm.size() == n ? search.warm : theta_start};
  // A parameter the earlier pass moved mattered there: it keeps its fitted
  // value even if no point of this pass depends on it (a link that stopped
  // limiting), as within one pass.
  for (std::size_t k = 0; k < n; ++k)
    if (starts.front()[k] != theta_start[k]) ever_mattered[k] = true;
  for (int s = 1; search.final && s < options.starts; ++s) {
    std::vector<double> t(n);
    for (std::size_t k = 0; k < n; ++k) {
      const double u = halton(s, kHaltonPrimes[k % std::size(kHaltonPrimes)]);
      // Bandwidths, latencies and overheads: within a factor of 8 of the
      // base; dram_factor and dirty_factor 1..4; host_cores over its whole range.
      double lo = theta_start[k] - std::log(8.0);
      double hi = theta_start[k] + std::log(8.0);
      if (params[k].kind == ParamKind::host_cores) {
        lo = theta_lo[k];
        hi = theta_hi[k];
      } else if (params[k].kind == ParamKind::dram_factor ||
                 params[k].kind == ParamKind::dirty_factor) {
        lo = 0;
        hi = std::log(4.0);
      }
      t[k] = std::clamp(lo + u * (hi - lo), theta_lo[k], theta_hi[k]);
    }
    starts.push_back(std::move(t));
  }
  std::vector<Descent> ends;
  ends.reserve(starts.size());
  std::size_t best = 0;
  for (const std::vector<double>& from : starts) {
    ends.push_back(descend(from));
    if (ends.back().cost < ends[best].cost) best = ends.size() - 1;
  }
  theta = ends[best].theta;
  std::vector<double> r = ends[best].r;
  double cost = ends[best].cost;
  result.iterations = ends[best].iterations;
  result.starts = static_cast<int>(starts.size());
  result.best_start = static_cast<int>(best);
  // Parameters whose effects on every point are proportional (latency and
  // overhead when every route has the same hop count) cannot be fitted apart:
  // only their combination is determined, so say so rather than let a user
  // trust the split. Proportionality is transitive, so the pairs form groups;
  // one warning names each group.
  std::vector<std::size_t> group(n);
  std::vector<bool> frozen_at_fit(n, false);  // no point depends on it at the fit
  {
    const std::vector<std::vector<double>> jac = jacobian(theta);
    for (std::size_t k = 0; k < n; ++k) group[k] = k;
    const auto find = [&](std::size_t k) {
      while (group[k] != k) k = group[k] = group[group[k]];
      return k;
    };
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a + 1; b < n; ++b) {
        if (frozen[a] || frozen[b]) continue;
        double ab = 0, aa = 0, bb = 0;
        for (std::size_t i = 0; i < points.size(); ++i) {
          ab += jac[a][i] * jac[b][i];
          aa += jac[a][i] * jac[a][i];
          bb += jac[b][i] * jac[b][i];
        }
        if (std::abs(ab) >= (1 - 1e-7) * std::sqrt(aa * bb)) group[find(b)] = find(a);
      }
    for (std::size_t k = 0; k < n; ++k) group[k] = find(k);
    frozen_at_fit = frozen;
    for (std::size_t root = 0; root < n; ++root) {
      std::vector<std::string> names;
      for (std::size_t k = 0; k < n; ++k)
        if (group[k] == root) names.push_back(params[k].name);
      if (names.size() < 2) continue;
      std::string list;
      for (std::size_t i = 0; i < names.size(); ++i)
        list += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
      result.warnings.push_back(list +
                                " affect every point in proportion: only their combination is "
                                "fitted (the split between them stays near the base); add points "
                                "that tell them apart (e.g. routes of other hop counts)");
    }
  }

  // What a fit determines, compared between fits: each parameter some
  // point depends on, and each group of proportional ones as its
  // combination (bandwidths in series add up as 1 / bandwidth); latencies
  // and the overhead as what a message pays on each kind of route. A group
  // that mixes rates with times or factors is not compared.
  const std::vector<Quantity> quantities =
      determined_quantities(params, group, frozen, route_latencies);
  const auto spread_of = [&](const std::vector<const Descent*>& fits) {
    std::vector<ParamSpread> out;
    for (const Quantity& q : quantities) {
      ParamSpread s;
      s.name = q.name;
      s.scale = display_scale(params[q.members.front()].kind);
      s.fitted = q.value(theta);
      s.lowest = s.highest = s.fitted;
      for (const Descent* fit : fits) {
        const double v = q.value(fit->theta);
        s.values.push_back(v);
        s.lowest = std::min(s.lowest, v);
        s.highest = std::max(s.highest, v);
      }
      s.spread = s.lowest > 0 ? s.highest / s.lowest - 1 : 0;
      out.push_back(std::move(s));
    }
    return out;
  };
  const auto disagreements = [](const std::vector<ParamSpread>& spreads) {
    std::string list;
    for (const ParamSpread& s : spreads)
      if (s.spread > kStabilityTolerance)
        list += (list.empty() ? "" : "; ") + s.name + " " + fmt("%.4g", s.lowest * s.scale) + ".." +
                fmt("%.4g", s.highest * s.scale) + " (" + fmt("%.0f", 100 * s.spread) + "%)";
    return list;
  };
  // The repeats' fits (each repeat alone, or each left out): what they
  // determined, and a warning naming what moved past the tolerance.
  const auto record_repeats = [&](const std::vector<Descent>& fits, const std::string& who,
                                  const std::string& remedy) {
    result.repeats = static_cast<int>(fits.size());
    std::vector<const Descent*> all;
    all.reserve(fits.size());
    for (const Descent& d : fits) all.push_back(&d);
    result.repeat_spread = spread_of(all);
    const std::string list = disagreements(result.repeat_spread);
    if (!list.empty())
      result.warnings.push_back("the " + std::to_string(fits.size()) + who +
                                " disagree by more than " + fmt("%g", 100 * kStabilityTolerance) +
                                "% on " + list + ": a fresh run would fit elsewhere; " + remedy +
                                " narrow it");
  };
  // Starts that ended as low as the best (within kLossTie) but elsewhere:
  // the measurements do not pin what they disagree on.
  {
    std::vector<const Descent*> near;
    for (std::size_t e = 0; e < ends.size(); ++e)
      if (e != best && ends[e].cost <= cost * (1 + kLossTie) + 1e-26) near.push_back(&ends[e]);
    result.starts_at_best = static_cast<int>(near.size()) + 1;
    if (!near.empty()) {
      result.start_spread = spread_of(near);
      const std::string list = disagreements(result.start_spread);
      if (!list.empty())
        result.warnings.push_back(std::to_string(near.size() + 1) + " of the " +
                                  std::to_string(ends.size()) + " starts end within " +
                                  fmt("%g", 100 * kLossTie) +
                                  "% of the lowest loss but disagree by more than " +
                                  fmt("%g", 100 * kStabilityTolerance) + "% on " + list +
                                  ": the measurements do not pin it; the lowest is kept");
    }
  }
  // The repeats: a point's repeat is the rank of its file among the files
  // that measured the same distinct point (m.json, m.2.json, m.3.json: three
  // repeats of every row). Each repeat alone is fitted from the joint fit;
  // how far their parameters move is how far a fresh run's would.
  // With only the fastest repeat of each row fitted there are no repeats to
  // fit alone (a row's points, in place and out of place, can come from
  // different files). Each repeat is left out in turn instead: the fastest
  // of the others, fitted from the joint fit, is what a run without that
  // repeat would have fitted.
  if (search.final && options.fastest_repeat) {
    std::size_t repeats = 0;
    for (const auto& [key, files] : files_of_row) repeats = std::max(repeats, files.size());
    if (repeats >= 2) {
      std::vector<Descent> fits;
      for (std::size_t rep = 0; rep < repeats; ++rep) {
        Descent d;
        SearchPlan plan{false, theta, static_cast<int>(rep)};
        const CalibrationResult one = calibrate_fixed(inputs, base, options, plan, &d.theta);
        if (d.theta.size() != theta.size()) continue;  // another parameter set: not comparable
        result.repeat_median_abs_error.push_back(one.median_abs_error);
        fits.push_back(std::move(d));
      }
      if (fits.size() == repeats) {
        result.repeats_left_out = true;
        record_repeats(fits, " fits that each leave one repeat out", "more repeats");
      }
    }
  }
  if (search.final && !options.fastest_repeat) {
    std::map<std::size_t, std::vector<std::string>> files_of;
    for (const Point& pt : points) {
      std::vector<std::string>& f = files_of[pt.same_as];
      if (std::find(f.begin(), f.end(), pt.file) == f.end()) f.push_back(pt.file);
    }
    std::size_t repeats = 0;
    for (const auto& [first, files] : files_of) repeats = std::max(repeats, files.size());
    if (repeats >= 2) {
      std::vector<Descent> fits;
      track_mattered = false;
      for (std::size_t rep = 0; rep < repeats; ++rep) {
        std::vector<char> in(points.size(), 0);
        for (std::size_t i = 0; i < points.size(); ++i) {
          const std::vector<std::string>& f = files_of[points[i].same_as];
          const auto at =
              static_cast<std::size_t>(std::find(f.begin(), f.end(), points[i].file) - f.begin());
          in[i] = at == rep % f.size() ? 1 : 0;
        }
        subset = &in;
        fits.push_back(descend(theta));
        const std::vector<double> own = raw_residuals(fits.back().theta);
        std::vector<double> abs_own;
        for (std::size_t i = 0; i < points.size(); ++i)
          if (in[i] != 0) abs_own.push_back(std::abs(own[i]));
        result.repeat_median_abs_error.push_back(quantile(abs_own, 0.5));
        subset = nullptr;
      }
      track_mattered = true;
      record_repeats(fits, " repeats, each fitted alone,", "more repeats or iterations (-n)");
    }
  }
  r = raw_residuals(theta);  // leaves `trial` at the fitted values

  for (std::size_t k = 0; k < n; ++k) {
    params[k].constrained = ever_mattered[k];
    params[k].fitted = ever_mattered[k] ? std::exp(theta[k]) : params[k].base;
    // On a bound: the data pushed it out of its physical range. A latency or
    // overhead of 0 is physical (below anything measurable), not suspect.
    const bool zero_ok =
        params[k].kind == ParamKind::latency || params[k].kind == ParamKind::overhead;
    const double tol = 1e-6;
    // host_cores at either end is physical: the host's core count is the
    // host itself, and 1 is local work that never runs faster together than
    // one rank alone (memory-bound; below 1 would only rescale the
    // reduction and copy bandwidths).
    const bool ends_ok = params[k].kind == ParamKind::host_cores;
    // A bandwidth the fit drove to its top where no point depends on it any
    // more is a link that never limits: not suspect either.
    params[k].at_bound =
        ever_mattered[k] && !ends_ok && !frozen_at_fit[k] &&
        (theta[k] >= theta_hi[k] - tol || (!zero_ok && theta[k] <= theta_lo[k] + tol));
  }
  result.classes = trial.classes_;
  result.endpoint = trial.endpoint_;
  // Below 10 ps a latency or overhead is zero within any measurement; writing
  // 0 keeps a base's 0 (the log-space start) from turning into noise digits.
  for (FittedParam& fp : params)
    if ((fp.kind == ParamKind::latency || fp.kind == ParamKind::overhead) && fp.fitted < 1e-11)
      fp.fitted = 0;
  for (LinkProps& c : result.classes)
    if (c.latency < 1e-11) c.latency = 0;
  if (result.endpoint.overhead < 1e-11) result.endpoint.overhead = 0;
  // Frozen parameters go back to the base value exactly.
  for (const FittedParam& fp : params) {
    if (fp.constrained) continue;
    param_slot(fp, result.classes, result.endpoint) = fp.base;
  }

  std::vector<double> abs_err;
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
  result.loss = cost_of(residuals(theta));
  for (const FittedParam& fp : params) {
    if (!fp.at_bound) continue;
    const bool upper = std::abs(std::log(fp.fitted) - std::log(fp.upper)) < 1e-5;
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
  if (theta_out != nullptr) *theta_out = theta;
  return result;
}

// The base with every endpoint's cache size replaced.
class CacheSized : public Topology {
 public:
  CacheSized(const Topology& base, double cache_bytes) : base_(base), cache_bytes_(cache_bytes) {
    name = base.name;
  }
  int num_ranks() const override { return base_.num_ranks(); }
  std::int64_t num_links() const override { return base_.num_links(); }
  EndpointProps endpoint(int rank) const override {
    EndpointProps e = base_.endpoint(rank);
    e.cache_bytes = cache_bytes_;
    return e;
  }
  LinkProps link(LinkId id) const override { return base_.link(id); }
  std::string link_name(LinkId id) const override { return base_.link_name(id); }
  void route(int src, int dst, std::vector<LinkId>& out) const override {
    base_.route(src, dst, out);
  }
  int num_link_classes() const override { return base_.num_link_classes(); }
  int link_class(LinkId id) const override { return base_.link_class(id); }
  int num_endpoints() const override { return base_.num_endpoints(); }
  std::int64_t num_nodes() const override { return base_.num_nodes(); }

 private:
  const Topology& base_;
  double cache_bytes_;
};

}  // namespace

std::pair<double, double> param_range(ParamKind kind, int host_cores_limit) {
  switch (kind) {
    case ParamKind::latency:
    case ParamKind::overhead:
      return {0.0, 0.1};  // a tenth of a second per message is no network
    case ParamKind::bandwidth:
    case ParamKind::reduce_bw:
    case ParamKind::copy_bw:
      return {1e6, 1e13};  // 1 MB/s .. 10 TB/s
    case ParamKind::dram_factor:
      return {1.0, 1000.0};  // DRAM is never faster than the cache
    case ParamKind::host_cores:
      return {1.0, static_cast<double>(std::max(1, host_cores_limit))};
    case ParamKind::dirty_factor:
      return {1.0, 100.0};  // written data is never cheaper to read than clean
  }
  return {0.0, 0.0};
}

CalibrationResult calibrate(const std::vector<CalibrationInput>& inputs, const Topology& base,
                            const CalibrateOptions& options) {
  const double base_cache = base.num_ranks() > 0 ? base.endpoint(0).cache_bytes : 0;
  if (!(base_cache > 0) || !options.search_cache)
    return calibrate_fixed(inputs, base, options, SearchPlan{});
  // The cache size is a threshold: the loss is a step function of it, with
  // no gradient to follow. So every power of two (MiB) between the smallest
  // and the largest buffer footprint measured is tried, plus the base's own
  // value, each with a full fit; the lowest loss wins (the first on ties).
  double lo = 0, hi = 0;
  for (const CalibrationInput& in : inputs)
    for (const ResultRow& row : in.report.results) {
      if (!fitted_algorithm(row, options) || row.bytes < options.min_bytes || row.bytes <= 0)
        continue;
      // A rank's working set is at least bytes / p (the bytes of a per-rank
      // collective are its total) and at most about (p + 2) x bytes: input
      // and output, and a temp area of up to p - 1 reducing receives (a
      // linear reduce's root) or a scratch copy.
      const double small = static_cast<double>(row.bytes) / std::max(1, base.num_ranks());
      const double big = (2.0 + std::max(1, base.num_ranks())) * static_cast<double>(row.bytes);
      lo = lo == 0 ? small : std::min(lo, small);
      hi = std::max(hi, big);
    }
  std::vector<double> candidates{base_cache};
  for (double c = 1048576.0; c <= hi && c <= 1e9 * 1048576.0; c *= 2)
    if (c >= lo && c != base_cache) candidates.push_back(c);
  // Each candidate is fitted from the base; the final search (more starts,
  // the repeats) runs on the best one only, from its fit.
  std::vector<std::pair<double, double>> tried;
  std::size_t best = 0;
  double best_loss = 0;
  int best_iterations = 0;
  std::vector<double> best_theta;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const CacheSized sized(base, candidates[i]);
    std::vector<double> theta;
    const CalibrationResult r =
        calibrate_fixed(inputs, sized, options, SearchPlan{false, {}}, &theta);
    tried.emplace_back(candidates[i], r.loss);
    if (i == 0 || r.loss < best_loss) {
      best = i;
      best_loss = r.loss;
      best_iterations = r.iterations;
      best_theta = std::move(theta);
    }
  }
  const CacheSized sized(base, candidates[best]);
  CalibrationResult result = calibrate_fixed(inputs, sized, options, SearchPlan{true, best_theta});
  result.cache_candidates = std::move(tried);
  // Start 0 went on from the candidate's fit: count that fit's iterations.
  if (result.best_start == 0) result.iterations += best_iterations;
  return result;
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
    // Protocol latencies scale with the fitted latency (TrialTopology).
    if (obj.contains("protocol_latency_us") && obj["protocol_latency_us"].is_object() &&
        base_classes[c].latency > 0)
      for (auto& [key, value] : obj["protocol_latency_us"].items())
        if (value.is_number())
          value = value.get<double>() * fitted[c].latency / base_classes[c].latency;
    return;
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

  // The file must give exactly the fitted network: same class per link.
  const std::unique_ptr<Topology> check = parse_topology(text, base_file, base.num_ranks());
  bool same = check->num_links() == base.num_links() && check->num_ranks() == base.num_ranks();
  for (LinkId id = 0; same && id < base.num_links(); ++id) {
    const LinkProps want = fitted[static_cast<std::size_t>(base.link_class(id))];
    const LinkProps got = check->link(id);
    same = close(want.bandwidth, got.bandwidth) &&
           std::abs(want.latency - got.latency) <= 1e-9 * std::max(want.latency, 1e-12);
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
  return text;
}

std::string format_calibration(const CalibrationResult& result) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-56s %14s %14s\n", "# parameter", "base", "fitted");
  out += line;
  for (const FittedParam& fp : result.params) {
    const double scale = fp.kind == ParamKind::latency || fp.kind == ParamKind::overhead ? 1e6
                         : unitless(fp.kind)                                             ? 1.0
                                                                                         : 1e-9;
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
  if (result.repeats >= 2) {
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
  }
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
