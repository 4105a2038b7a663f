// A generic least-squares solver: Levenberg-Marquardt over a residual
// function inside a box, with central-difference derivatives, parameters no
// residual depends on held still, and descents from several starts. It knows
// nothing of networks: calibration (calibration/fit_problem.h) hands it the
// simulator's relative errors as a function of log-space parameters, and the
// tests hand it Rosenbrock's valley. docs/REPORTS.md, "Calibration".
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace collkit {

using LmVector = std::vector<double>;

// The function to minimise, sum of r_i(theta)^2, and the box theta stays in
// (lower[k] <= theta[k] <= upper[k]; every step is clipped to it).
struct LmProblem {
  std::function<LmVector(const LmVector&)> residuals;
  LmVector lower, upper;
  // Optional: residuals at several thetas at once, each exactly what
  // `residuals` gives (the Jacobian hands its columns over together, so
  // that their work shares the threads evenly).
  std::function<std::vector<LmVector>(const std::vector<LmVector>&)> residuals_many;
};

struct LmOptions {
  int max_iterations = 100;
  // Central differences: (r(theta + h e_k) - r(theta - h e_k)) / 2h.
  double step = 1e-5;
  // No parameter moves by more than this in one step.
  double max_move = 5.0;
  // Stop when the last `stall_window` iterations together lowered the loss
  // by at most stall_tolerance x the loss (0: only the other tests stop).
  double stall_tolerance = 0;
  int stall_window = 5;
  // Forward differences (r(theta + h e_k) - r(theta)) / h, one evaluation
  // per column instead of two.
  bool forward_differences = false;
  // A column a Jacobian found unused is taken as unused, without evaluating
  // it, until every recheck_unused-th iteration (0: every column every time).
  int recheck_unused = 0;
  // Several starts: each first descends at most screen_iterations (0: no
  // screening); only those then within screen_keep of the lowest loss
  // (relative) go on to max_iterations.
  int screen_iterations = 0;
  double screen_keep = 0.1;
  // Threads for the Jacobian's columns and the starts (core/parallel.h;
  // <= 0: every core). The residual function must then be safe to call
  // from several threads at once. Results do not depend on it.
  int jobs = 1;
  // Called after each iteration of a descent that lowered the loss (its
  // start's index, the iteration, the loss), from the thread running it.
  std::function<void(std::size_t start, int iteration, double loss)> progress = {};
};

double sum_of_squares(const LmVector& r);

// Column k holds d r_i / d theta_k. A column below 1e-12 everywhere is a
// parameter no residual depends on (`unused`): a descent holds it still.
struct Jacobian {
  std::vector<LmVector> columns;
  std::vector<bool> unused;
};
struct JacobianPlan {
  // The residuals at `at`: forward differences, one evaluation per column
  // (else central differences, two).
  const LmVector* at_r = nullptr;
  // Columns taken as unused without evaluating them.
  const std::vector<bool>* skip = nullptr;
};
Jacobian jacobian(const LmProblem& problem, const LmVector& at, double step, int jobs = 1,
                  const JacobianPlan& plan = {});

// One descent to the nearest minimum.
struct Descent {
  LmVector theta, r;
  double cost = 0;
  int iterations = 0;
  // The parameters some residual depended on at some point of the descent
  // (the Jacobians it computed).
  std::vector<bool> mattered;
  // True when it stopped on its own (converged, stalled, no step lowered
  // the loss); false when max_iterations ended it.
  bool settled = false;
};

// Levenberg-Marquardt from `from`: Marquardt's scaling of the damping plus a
// small floor, so parameters the residuals cannot tell apart stay put
// instead of making the system singular; a step that does not lower the
// loss raises the damping tenfold (at most 30 times per iteration), one
// that does lowers it; stops after max_iterations, when no step lowers the
// loss, at a loss of 1e-26, when a step gains less than 1e-15 of it, or
// when the loss has stalled (LmOptions::stall_tolerance).
Descent descend(const LmProblem& problem, const LmVector& from, const LmOptions& options);

// A descent from each start (in parallel, options.jobs), screened when
// options.screen_iterations is set; `best` is the lowest loss, the first on
// ties, so more starts never give a worse fit.
struct MultiStart {
  std::vector<Descent> ends;
  std::size_t best = 0;
};
MultiStart descend_from_each(const LmProblem& problem, const std::vector<LmVector>& starts,
                             const LmOptions& options);

// Element s (s >= 1) of the van der Corput sequence in base `prime`: points
// in (0, 1) that fill it evenly, the same every run. One prime per
// parameter (kHaltonPrimes[k % 16]) makes start s a point of a Halton
// sequence.
double halton(int s, int prime);
inline constexpr int kHaltonPrimes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53};

// Parameters whose columns are proportional (|cos| >= 1 - tolerance) move
// every residual alike: only their combination is determined. Returns, for
// each parameter, its group's representative (the same for every member;
// itself when alone); unused parameters stay alone. Proportionality is transitive, so the
// pairs form groups.
std::vector<std::size_t> proportional_groups(const Jacobian& jac, double tolerance = 1e-7);

// Solves the symmetric positive definite system a x = b in place
// (Cholesky); false when `a` is not positive definite.
bool solve_spd(std::vector<LmVector> a, LmVector& b);

}  // namespace collkit
