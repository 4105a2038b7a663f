// The method of docs/REPORTS.md, "Calibration", in the order it is written
// there: the problem (fit_problem.h), descents from several starts
// (solver.h), what the points cannot tell apart, how far the starts and the
// repeats move what the fit determines (repeats.h), and the cache-size
// search around all of it (cache_search.h).
#include "calibration/calibrate.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "calibration/cache_search.h"
#include "calibration/fit_problem.h"
#include "calibration/format.h"
#include "calibration/repeats.h"
#include "calibration/solver.h"
#include "core/error.h"
#include "core/parallel.h"
#include "reports/compare.h"

namespace collkit {

std::pair<double, double> param_range(ParamKind kind, int host_cores_limit) {
  switch (kind) {
    case ParamKind::latency:
    case ParamKind::overhead:
    case ParamKind::base_latency:
      return {0.0, 0.1};  // a tenth of a second per message is no network
    case ParamKind::bandwidth:
    case ParamKind::reduce_bw:
    case ParamKind::copy_bw:
    case ParamKind::in_network:
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

namespace {

// Central differences on relative errors of log-space parameters: exact for
// the piecewise-linear alpha-beta model away from kinks, and the only way
// to follow the flow model's sharing.
constexpr double kStep = 1e-5;

// A descent stops when its last five iterations together lowered the loss
// by less than 0.1%: the rms relative error then moves in its fourth
// digit, while on a flow model's kinks the descent would crawl on for
// dozens of iterations of seconds each.
constexpr double kStallTolerance = 1e-3;

// What a descent costs is the simulations its Jacobians take, so: forward
// differences (one simulation of every point per parameter, not two; the
// simulated times are piecewise linear in the parameters, so nothing is
// lost away from kinks); a parameter no point depends on is looked at
// again only every fifth iteration (a link no transfer is limited by, a
// reduction bandwidth where nothing reduces); and of several starts, only
// those within 10% of the lowest loss after eight iterations go on. The
// fit's final Jacobian, which tells what the points cannot tell apart,
// stays central.
constexpr int kRecheckUnused = 5;

// A point the fastest network of the base's shape still simulates this
// much slower than measured is named (measurements repeat within a few
// percent; more is the model's shape, not noise).
constexpr double kFasterThanPossible = 0.05;
constexpr int kScreenIterations = 8;
constexpr double kScreenKeep = 0.1;

void check_options(const std::vector<CalibrationInput>& inputs, const CalibrateOptions& options) {
  if (options.starts < 1)
    throw UsageError("calibrate: --starts must be >= 1, got " + std::to_string(options.starts));
  if (inputs.empty()) throw UsageError("calibrate: no measured report given");
  if (options.min_bytes < 0)
    throw UsageError("calibrate: --min-bytes must be >= 0, got " +
                     std::to_string(options.min_bytes));
}

// The base's prediction, for "error before and after".
void record_base(FitProblem& problem, CalibrationResult& result) {
  const LmVector base_r = problem.raw_residuals(problem.theta_start());
  std::vector<double> abs_base(base_r.size());
  std::transform(base_r.begin(), base_r.end(), abs_base.begin(),
                 [](double x) { return std::abs(x); });
  result.base_median_abs_error = quantile(abs_base, 0.5);
  result.base_p90_abs_error = quantile(abs_base, 0.9);
  result.base_loss = sum_of_squares(problem.residuals(problem.theta_start()));
}

void mark(std::vector<bool>& mattered, const std::vector<bool>& used_by_fit) {
  for (std::size_t k = 0; k < mattered.size(); ++k)
    if (used_by_fit[k]) mattered[k] = true;
}

// Parameters whose effects on every point are proportional (latency and
// overhead when every route has the same hop count) cannot be fitted apart:
// only their combination is determined, so say so rather than let a user
// trust the split. One warning names each group.
void warn_proportional(const std::vector<FittedParam>& params,
                       const std::vector<std::size_t>& group, CalibrationResult& result) {
  for (std::size_t root = 0; root < params.size(); ++root) {
    std::vector<std::string> names;
    for (std::size_t k = 0; k < params.size(); ++k)
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

// Starts that ended as low as the best (within kLossTie) but elsewhere: the
// measurements do not pin what they disagree on.
void record_starts(const MultiStart& ms, const std::vector<Quantity>& quantities,
                   const std::vector<FittedParam>& params, CalibrationResult& result) {
  const Descent& best = ms.ends[ms.best];
  std::vector<const LmVector*> near;
  for (std::size_t e = 0; e < ms.ends.size(); ++e)
    if (e != ms.best && ms.ends[e].cost <= best.cost * (1 + kLossTie) + 1e-26)
      near.push_back(&ms.ends[e].theta);
  result.starts_at_best = static_cast<int>(near.size()) + 1;
  if (near.empty()) return;
  result.start_spread = spreads(quantities, params, best.theta, near);
  const std::string list = disagreements(result.start_spread);
  if (!list.empty())
    result.warnings.push_back(
        std::to_string(near.size() + 1) + " of the " + std::to_string(ms.ends.size()) +
        " starts end within " + fmt("%g", 100 * kLossTie) +
        "% of the lowest loss but disagree by more than " + fmt("%g", 100 * kStabilityTolerance) +
        "% on " + list + ": the measurements do not pin it; the lowest is kept");
}

// The repeats' fits (each repeat alone, or each left out): what they
// determined, and a warning naming what moved past the tolerance.
void record_repeats(const std::vector<LmVector>& fits, const std::vector<Quantity>& quantities,
                    const std::vector<FittedParam>& params, const LmVector& theta,
                    const std::string& who, const std::string& remedy, CalibrationResult& result) {
  result.repeats = static_cast<int>(fits.size());
  std::vector<const LmVector*> all;
  all.reserve(fits.size());
  for (const LmVector& t : fits) all.push_back(&t);
  result.repeat_spread = spreads(quantities, params, theta, all);
  const std::string list = disagreements(result.repeat_spread);
  if (!list.empty())
    result.warnings.push_back("the " + std::to_string(fits.size()) + who +
                              " disagree by more than " + fmt("%g", 100 * kStabilityTolerance) +
                              "% on " + list + ": a fresh run would fit elsewhere; " + remedy +
                              " narrow it");
}

CalibrationResult calibrate_fixed(const std::vector<CalibrationInput>& inputs, const Topology& base,
                                  const CalibrateOptions& options, const SearchPlan& search,
                                  LmVector* theta_out);

// Every row fitted: each repeat alone (a point's repeat is the rank of its
// file among the files that measured the same distinct point: m.json,
// m.2.json, m.3.json are three repeats of every row), from the joint fit;
// how far their parameters move is how far a fresh run's would.
void fit_each_repeat(FitProblem& problem, const LmOptions& lm, const LmVector& theta,
                     const std::vector<Quantity>& quantities, CalibrationResult& result) {
  const std::vector<Point>& points = problem.points().points;
  std::vector<std::size_t> same_as;
  std::vector<std::string> files;
  for (const Point& pt : points) {
    same_as.push_back(pt.same_as);
    files.push_back(pt.file);
  }
  const std::vector<std::vector<char>> members = repeat_members(same_as, files);
  if (members.empty()) return;
  std::vector<LmVector> fits(members.size());
  std::vector<double> medians(members.size());
  LmOptions quiet = lm;
  quiet.progress = {};
  parallel_for(members.size(), lm.jobs, [&](std::size_t k) {
    const std::vector<char>& in = members[k];
    fits[k] = descend(problem.solver_problem(&in), theta, quiet).theta;
    const LmVector own = problem.raw_residuals(fits[k], &in);
    std::vector<double> abs_own;
    for (std::size_t i = 0; i < points.size(); ++i)
      if (in[i] != 0) abs_own.push_back(std::abs(own[i]));
    medians[k] = quantile(abs_own, 0.5);
  });
  result.repeat_median_abs_error = medians;
  record_repeats(fits, quantities, problem.params(), theta, " repeats, each fitted alone,",
                 "more repeats or iterations (-n)", result);
}

// The fastest repeat of each row fitted: there are no repeats to fit alone
// (a row's points, in place and out of place, can come from different
// files). Each repeat is left out in turn instead: the fastest of the
// others, fitted from the joint fit, is what a run without that repeat
// would have fitted.
void fit_leaving_each_out(const std::vector<CalibrationInput>& inputs, const Topology& base,
                          const CalibrateOptions& options, const LmVector& theta,
                          const FitProblem& problem, const std::vector<Quantity>& quantities,
                          CalibrationResult& result) {
  const std::size_t repeats = RepeatSelection(inputs, true, -1).repeats();
  if (repeats < 2) return;
  std::vector<LmVector> each(repeats);
  std::vector<double> medians(repeats);
  parallel_for(repeats, options.jobs, [&](std::size_t rep) {
    SearchPlan plan{false, theta, static_cast<int>(rep)};
    plan.label = "without repeat " + std::to_string(rep + 1) + "/" + std::to_string(repeats);
    medians[rep] = calibrate_fixed(inputs, base, options, plan, &each[rep]).median_abs_error;
  });
  std::vector<LmVector> fits;
  for (std::size_t rep = 0; rep < repeats; ++rep) {
    if (each[rep].size() != theta.size()) continue;  // another parameter set: not comparable
    result.repeat_median_abs_error.push_back(medians[rep]);
    fits.push_back(std::move(each[rep]));
  }
  if (fits.size() != repeats) return;
  result.repeats_left_out = true;
  record_repeats(fits, quantities, problem.params(), theta, " fits that each leave one repeat out",
                 "more repeats", result);
}

// One fit with the network's cache size held fixed: descents from the base
// (or search.warm) and, for the final fit, from spread starts; the lowest
// loss wins. Then what the fit cannot tell apart, how far the starts that
// end as low disagree, and (final fit) how far the repeats move it.
CalibrationResult calibrate_fixed(const std::vector<CalibrationInput>& inputs, const Topology& base,
                                  const CalibrateOptions& options, const SearchPlan& search,
                                  LmVector* theta_out) {
  check_options(inputs, options);
  FitProblem problem(inputs, base, options, search.leave_out);
  CalibrationResult result = problem.initial_result();
  result.min_bytes = options.min_bytes;
  result.match = options.match;
  record_base(problem, result);
  if (search.final) {
    const std::string slow = problem.faster_than_possible(kFasterThanPossible);
    if (!slow.empty()) result.warnings.push_back(slow);
  }

  const std::size_t n = problem.size();
  LmOptions lm{options.max_iterations, kStep};
  lm.jobs = options.jobs;
  lm.stall_tolerance = kStallTolerance;
  lm.forward_differences = true;
  lm.recheck_unused = kRecheckUnused;
  lm.screen_iterations = kScreenIterations;
  lm.screen_keep = kScreenKeep;
  if (options.progress) {
    const auto points =
        static_cast<double>(std::max<std::size_t>(1, problem.points().points.size()));
    const int count = search.final ? options.starts : 1;
    lm.progress = [&options, label = search.label, points, count](std::size_t start, int it,
                                                                  double loss) {
      options.progress(label + ": start " + std::to_string(start + 1) + "/" +
                       std::to_string(count) + ", iteration " + std::to_string(it) +
                       ": rms error " + fmt("%.3g", 100 * std::sqrt(loss / points)) + "%");
    };
  }
  std::vector<LmVector> starts{search.warm.size() == n ? search.warm : problem.theta_start()};
  // A parameter the earlier pass moved mattered there: it keeps its fitted
  // value even if no point of this pass depends on it (a link that stopped
  // limiting), as within one pass.
  std::vector<bool> mattered(n, false);
  for (std::size_t k = 0; k < n; ++k)
    if (starts.front()[k] != problem.theta_start()[k]) mattered[k] = true;
  if (search.final)
    for (LmVector& s : problem.spread_starts(options.starts - 1)) starts.push_back(std::move(s));

  const LmProblem fit = problem.solver_problem();
  const MultiStart ms = descend_from_each(fit, starts, lm);
  for (const Descent& d : ms.ends) mark(mattered, d.mattered);
  const LmVector theta = ms.ends[ms.best].theta;
  result.iterations = ms.ends[ms.best].iterations;
  result.starts = static_cast<int>(starts.size());
  result.best_start = static_cast<int>(ms.best);

  const Jacobian at_fit = jacobian(fit, theta, kStep);
  std::vector<bool> used(n);
  for (std::size_t k = 0; k < n; ++k) used[k] = !at_fit.unused[k];
  mark(mattered, used);
  const std::vector<std::size_t> group = proportional_groups(at_fit);
  warn_proportional(problem.params(), group, result);
  const std::vector<Quantity> quantities =
      determined_quantities(problem.params(), group, at_fit.unused, problem.route_latencies());
  record_starts(ms, quantities, problem.params(), result);
  if (search.final && options.fastest_repeat)
    fit_leaving_each_out(inputs, base, options, theta, problem, quantities, result);
  if (search.final && !options.fastest_repeat)
    fit_each_repeat(problem, lm, theta, quantities, result);

  problem.finish(theta, mattered, at_fit.unused, result);
  if (theta_out != nullptr) *theta_out = theta;
  return result;
}

}  // namespace

CalibrationResult calibrate(const std::vector<CalibrationInput>& inputs, const Topology& base,
                            const CalibrateOptions& options) {
  const double base_cache = base.num_ranks() > 0 ? base.endpoint(0).cache_bytes : 0;
  if (!(base_cache > 0) || !options.search_cache)
    return calibrate_fixed(inputs, base, options, SearchPlan{}, nullptr);
  return search_cache(
      cache_candidates(inputs, base, options), base,
      [&](const Topology& network, const SearchPlan& search, LmVector* theta_out) {
        return calibrate_fixed(inputs, network, options, search, theta_out);
      },
      options.jobs);
}

}  // namespace collkit
