// What calibration fits (docs/REPORTS.md, "Calibration"): the measured
// points (each row's schedule, simulated once per distinct point), the
// parameters (each link class's latency and bandwidth, the endpoint's
// figures) with their physical ranges in log space, and the trial network
// the simulator times the points on. Its residuals are the relative errors
// of the simulated times, the function the solver (calibration/solver.h)
// minimises.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "calibration/calibrate.h"
#include "calibration/repeats.h"
#include "calibration/solver.h"
#include "topologies/topology_view.h"

namespace collkit {

// The base network with every link's props replaced by its class's trial
// values and every endpoint's by one trial pair. Routes stay the base's, so
// the fit never changes which links a transfer crosses. A class's protocol
// latencies (GPU networks) follow its fitted latency: the one latency
// parameter scales them all by fitted / base.
class TrialTopology : public TopologyView {
 public:
  // Starts at the base's figures: each class's first link, endpoint 0.
  explicit TrialTopology(const Topology& base);
  // One fitted endpoint for all, each on its own host (the base's: ranks
  // of a host share its cores).
  EndpointProps endpoint(int rank) const override;
  LinkProps link(LinkId id) const override;
  // The base's side of an in-network switch, at the class's trial rate.
  int in_network_side(LinkId id, double& bandwidth) const override;

  std::vector<LinkProps> classes;       // trial values, by class
  std::vector<LinkProps> base_classes;  // the base's
  // The in-network rate of links of each class that enter or leave such a
  // switch (bytes per second; 0 = none): trial values. The protocols'
  // trial figures are the view's own `protocols` (TopologyMetadata).
  std::vector<double> in_network;
  EndpointProps trial_endpoint;
  // Which protocols' per-link latencies follow a class's fitted latency
  // (by the base's ratio): those some fitted row runs. The others keep the
  // base's figures, since no row measured them (docs/REPORTS.md,
  // "Calibration").
  bool scale_protocol[3] = {true, true, true};
  // The class's link as the trial has it: its latency and bandwidth, and
  // each protocol's latency scaled with the latency where scale_protocol.
  LinkProps class_link(std::size_t c) const;
};

// The algorithm whose schedule a measured row is simulated as: its own, or
// --match's for rows of a library's own collective ("nccl", "native");
// nullopt for rows left out ("native" without --match).
std::optional<std::string> fitted_algorithm(const ResultRow& row, const CalibrateOptions& options);

// One measured row to fit.
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
  // Which network the run measured (PointSet::networks; 0 = the base).
  std::size_t network = 0;
};

// The points of the inputs and what was left out, and why.
struct PointSet {
  std::vector<Point> points;
  // The networks the points were measured on: the base first, then each
  // input's own (CalibrationInput::network) once, with its name.
  std::vector<const Topology*> networks;
  std::vector<std::string> network_names;
  std::size_t distinct = 0;
  std::size_t skipped_native = 0;
  std::size_t skipped_small = 0;
  std::size_t skipped_slower = 0;
  std::vector<std::string> failed_check;
  bool any_reduction = false;
  bool any_copy = false;  // some schedule copies locally
};

// Validates every input against `base` (FileError naming the file and
// field) and builds each fitted row's schedule as it ran.
PointSet collect_points(const std::vector<CalibrationInput>& inputs, const Topology& base,
                        const CalibrateOptions& options, RepeatSelection& selection);

// host_cores' upper bound (CalibrateOptions::host_cores_limit) and, in
// `source`, where it came from.
int host_cores_bound(const std::vector<CalibrationInput>& inputs, const CalibrateOptions& options,
                     std::string& source);

class FitProblem {
 public:
  // `leave_out`: RepeatSelection's. Throws UsageError when the distinct
  // points are fewer than the parameters + 1.
  FitProblem(const std::vector<CalibrationInput>& inputs, const Topology& base,
             const CalibrateOptions& options, int leave_out);
  FitProblem(const FitProblem&) = delete;
  FitProblem& operator=(const FitProblem&) = delete;

  const PointSet& points() const { return points_; }
  const std::vector<FittedParam>& params() const { return params_; }
  std::size_t size() const { return params_.size(); }
  // The base's values in log space, clipped to the ranges; the ranges.
  const LmVector& theta_start() const { return theta_start_; }
  const LmVector& lower() const { return lower_; }
  const LmVector& upper() const { return upper_; }
  // What a message pays in latency on each kind of route between ranks.
  const std::vector<Quantity>& route_latencies() const { return route_latencies_; }

  // The relative error of each point (simulated / measured - 1) at `theta`;
  // 0 for points outside `subset` (one flag per point) when given. Safe to
  // call from several threads; the distinct points are simulated on
  // CalibrateOptions::jobs threads (inline inside another parallel_for).
  LmVector raw_residuals(const LmVector& theta, const std::vector<char>* subset = nullptr) const;
  // The same at several points of parameter space at once: every (theta,
  // distinct row) simulation one task of one parallel loop, largest first.
  std::vector<LmVector> raw_residuals_many(const std::vector<LmVector>& thetas,
                                           const std::vector<char>* subset = nullptr) const;
  // The same under Huber's loss (CalibrateOptions::huber).
  LmVector residuals(const LmVector& theta, const std::vector<char>* subset = nullptr) const;
  std::vector<LmVector> residuals_many(const std::vector<LmVector>& thetas,
                                       const std::vector<char>* subset = nullptr) const;
  // The solver's view: residuals over `subset`, inside the ranges. Valid
  // while this problem lives.
  LmProblem solver_problem(const std::vector<char>* subset = nullptr) const;
  // The trial network at `theta` (the base's).
  TrialTopology trial_at(const LmVector& theta) const;
  // Every network's trial at `theta`, in PointSet::networks' order: each
  // class takes the fitted values of the base's class of the same figures.
  std::vector<TrialTopology> trials_at(const LmVector& theta) const;

  // `count` starts spread over each parameter's plausible range (a Halton
  // sequence, the same every run): bandwidths, latencies and overheads
  // within a factor of 8 of the base, the factors 1..4, host_cores over its
  // whole range.
  std::vector<LmVector> spread_starts(int count) const;

  // The parameters where the network is fastest: every rate at the top of
  // its range (a line rate where the base gives one), every time at its
  // bottom, the cache and written-data factors at 1, host_cores at its top.
  LmVector fastest_theta() const;
  // A warning naming the points that even fastest_theta simulates slower
  // than measured (by more than `tolerance`): no fit of this base can
  // reach them, so the run did something the model's schedule does not
  // (another NCCL algorithm, fewer bytes over the slowest links) or the
  // base's structure is not the machine's. Empty when there are none.
  std::string faster_than_possible(double tolerance) const;

  // The result before the fit: the parameters, what was left out, the
  // host_cores bound.
  CalibrationResult initial_result() const;
  // Fills the fitted parameters (those that never `mattered` keep the
  // base value; one on a bound is flagged unless `unused_at_fit`), the
  // fitted network, every point's error and the problems.
  void finish(const LmVector& theta, const std::vector<bool>& mattered,
              const std::vector<bool>& unused_at_fit, CalibrationResult& result);

 private:
  void list_params(const Topology& base);
  void set_ranges(const std::vector<CalibrationInput>& inputs, const CalibrateOptions& options);
  void map_networks();

  PointSet points_;
  TrialTopology trial_;  // at the base's figures
  // For each network of points_.networks: its trial at the base's figures,
  // and the base's class of each of its classes.
  std::vector<TrialTopology> network_trials_;
  std::vector<std::vector<int>> base_class_of_;
  std::vector<FittedParam> params_;
  std::vector<Quantity> route_latencies_;
  LmVector theta_start_, lower_, upper_;
  SimOptions sim_;
  double huber_ = 0;
  int jobs_ = 1;
  int host_cores_limit_ = 0;
  std::string host_cores_source_;
};

}  // namespace collkit
