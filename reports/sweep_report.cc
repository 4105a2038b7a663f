#include "reports/sweep_report.h"

#include <string>

namespace collkit {

Report sweep_report(const SweepSpec& sweep, const std::vector<SweepPoint>& points) {
  Report report;
  report.ranks = sweep.ranks;
  report.dtype = sweep.dtype;
  report.op = sweep.op;
  report.root = sweep.root;
  report.results.reserve(points.size());
  for (const SweepPoint& p : points) {
    report.results.push_back(
        make_row(sweep.collective, p.algorithm, p.size, sweep.ranks, p.seconds * 1e6));
    if (!p.note.empty()) report.results.back().extra["ran"] = p.note;
  }
  report.best = compute_best(report.results);
  return report;
}

Report simulate_report(const SweepSpec& sweep, const Topology& topology, const SimOptions& options,
                       const ProgressFn& progress, std::vector<std::string>* orbits) {
  const std::vector<SweepPoint> points = simulate_sweep(sweep, topology, options, progress);
  if (orbits)
    for (const SweepPoint& p : points) orbits->push_back(p.orbits);
  Report report = sweep_report(sweep, points);
  report.mode = ReportMode::simulate;
  report.backend = Backend::sim;
  report.topology = TopologyInfo{topology.name, topology.file, topology.sha256};
  report.extra["model"] = std::string(to_string(options.model));
  return report;
}

}  // namespace collkit
