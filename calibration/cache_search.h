// The cache size of a base with a cache model (cache_mb) is a threshold:
// the loss is a step function of it, with no gradient to follow. So every
// power of two (MiB) between the smallest and the largest buffer footprint
// measured is tried, plus the base's own value, each with a full fit; the
// lowest loss wins (the first on ties), and only that candidate gets the
// final search (more starts, the repeats), from its own fit.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "calibration/calibrate.h"
#include "calibration/solver.h"
#include "topologies/topology_view.h"

namespace collkit {

// The base with every endpoint's cache size replaced; everything else the
// base's.
class CacheSized : public TopologyView {
 public:
  CacheSized(const Topology& base, double cache_bytes)
      : TopologyView(base), cache_bytes_(cache_bytes) {}
  EndpointProps endpoint(int rank) const override {
    EndpointProps e = base().endpoint(rank);
    e.cache_bytes = cache_bytes_;
    return e;
  }

 private:
  double cache_bytes_;
};

// The cache sizes to try, in order: the base's, then every power of two
// (bytes, from 1 MiB) within the footprints of the fitted rows: from
// bytes / p (a rank's share of a per-rank collective's total) to
// (p + 2) x bytes (input, output and up to p - 1 reducing receives' temp
// areas or a scratch copy).
std::vector<double> cache_candidates(const std::vector<CalibrationInput>& inputs,
                                     const Topology& base, const CalibrateOptions& options);

// How calibrate_fixed searches: `final` runs the extra starts and the
// repeat fits (the cache-size candidates are compared without them);
// `warm`, when it has one value per parameter, replaces the base as the
// first start (the candidate's own fit, log space).
struct SearchPlan {
  bool final = true;
  LmVector warm;
  // --repeats fastest: leave out the k-th file that measured each row (of
  // rows measured in two or more), for the stability check; -1 = none.
  int leave_out = -1;
  // What the progress lines call this fit ("cache 16 MiB", "without repeat 2").
  std::string label = "fit";
};

// One fit with the network's cache size held as it is; the fit's parameters
// (log space) in `theta_out` when given.
using FixedCacheFit = std::function<CalibrationResult(
    const Topology& network, const SearchPlan& search, LmVector* theta_out)>;

// Fits every candidate with `fit` (on `jobs` threads, core/parallel.h) and
// finishes the best; the result lists every candidate with its loss
// (CalibrationResult::cache_candidates).
CalibrationResult search_cache(const std::vector<double>& candidates, const Topology& base,
                               const FixedCacheFit& fit, int jobs = 1);

}  // namespace collkit
