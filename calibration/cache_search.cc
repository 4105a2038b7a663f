#include "calibration/cache_search.h"

#include <algorithm>
#include <utility>

#include "calibration/fit_problem.h"
#include "calibration/format.h"
#include "core/parallel.h"

namespace collkit {

std::vector<double> cache_candidates(const std::vector<CalibrationInput>& inputs,
                                     const Topology& base, const CalibrateOptions& options) {
  const double base_cache = base.num_ranks() > 0 ? base.endpoint(0).cache_bytes : 0;
  const int p = std::max(1, base.num_ranks());
  double lo = 0, hi = 0;
  for (const CalibrationInput& in : inputs)
    for (const ResultRow& row : in.report.results) {
      if (!fitted_algorithm(row, options) || row.bytes < options.min_bytes || row.bytes <= 0)
        continue;
      const double small = static_cast<double>(row.bytes) / p;
      const double big = (2.0 + p) * static_cast<double>(row.bytes);
      lo = lo == 0 ? small : std::min(lo, small);
      hi = std::max(hi, big);
    }
  std::vector<double> candidates{base_cache};
  for (double c = 1048576.0; c <= hi && c <= 1e9 * 1048576.0; c *= 2)
    if (c >= lo && c != base_cache) candidates.push_back(c);
  return candidates;
}

CalibrationResult search_cache(const std::vector<double>& candidates, const Topology& base,
                               const FixedCacheFit& fit, int jobs) {
  std::vector<double> losses(candidates.size());
  std::vector<int> iterations(candidates.size());
  std::vector<LmVector> thetas(candidates.size());
  parallel_for(candidates.size(), jobs, [&](std::size_t i) {
    const CacheSized sized(base, candidates[i]);
    SearchPlan plan{false, {}};
    plan.label = "cache " + fmt("%g", candidates[i] / 1048576.0) + " MiB (" +
                 std::to_string(i + 1) + "/" + std::to_string(candidates.size()) + ")";
    const CalibrationResult r = fit(sized, plan, &thetas[i]);
    losses[i] = r.loss;
    iterations[i] = r.iterations;
  });
  std::vector<std::pair<double, double>> tried;
  std::size_t best = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    tried.emplace_back(candidates[i], losses[i]);
    if (losses[i] < losses[best]) best = i;
  }
  const int best_iterations = iterations[best];
  const LmVector best_theta = std::move(thetas[best]);
  const CacheSized sized(base, candidates[best]);
  CalibrationResult result = fit(sized, SearchPlan{true, best_theta}, nullptr);
  result.cache_candidates = std::move(tried);
  // Start 0 went on from the candidate's fit: count that fit's iterations.
  if (result.best_start == 0) result.iterations += best_iterations;
  return result;
}

}  // namespace collkit
