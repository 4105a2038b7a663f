#include "calibration/solver.h"

#include <algorithm>
#include <cmath>

#include "core/parallel.h"

namespace collkit {

double sum_of_squares(const LmVector& r) {
  double s = 0;
  for (double x : r) s += x * x;
  return s;
}

Jacobian jacobian(const LmProblem& problem, const LmVector& at, double step, int jobs,
                  const JacobianPlan& plan) {
  const std::size_t n = at.size();
  Jacobian jac;
  jac.columns.resize(n);
  std::vector<char> unused(n, 0);
  const auto skipped = [&](std::size_t k) { return plan.skip != nullptr && (*plan.skip)[k]; };
  // The evaluations a column needs: theta + h e_k, and theta - h e_k for
  // central differences.
  const auto shifted = [&](std::size_t k, double by) {
    LmVector t = at;
    t[k] += by;
    return t;
  };
  const auto fill = [&](std::size_t k, const LmVector& up, const LmVector& down, double span) {
    LmVector& col = jac.columns[k];
    col.resize(up.size());
    double norm = 0;
    for (std::size_t i = 0; i < up.size(); ++i) {
      col[i] = (up[i] - down[i]) / span;
      norm = std::max(norm, std::abs(col[i]));
    }
    unused[k] = norm < 1e-12 ? 1 : 0;
  };
  if (problem.residuals_many) {
    std::vector<LmVector> thetas;
    std::vector<std::size_t> first(n, 0);
    for (std::size_t k = 0; k < n; ++k) {
      first[k] = thetas.size();
      if (skipped(k)) continue;
      thetas.push_back(shifted(k, step));
      if (plan.at_r == nullptr) thetas.push_back(shifted(k, -step));
    }
    const std::vector<LmVector> rs =
        thetas.empty() ? std::vector<LmVector>{} : problem.residuals_many(thetas);
    for (std::size_t k = 0; k < n; ++k) {
      if (skipped(k)) {
        jac.columns[k].assign(
            plan.at_r != nullptr ? plan.at_r->size() : problem.residuals(at).size(), 0.0);
        unused[k] = 1;
        continue;
      }
      if (plan.at_r != nullptr)
        fill(k, rs[first[k]], *plan.at_r, step);
      else
        fill(k, rs[first[k]], rs[first[k] + 1], 2 * step);
    }
    jac.unused.assign(unused.begin(), unused.end());
    return jac;
  }
  parallel_for(n, jobs, [&](std::size_t k) {
    if (skipped(k)) {
      jac.columns[k].assign(plan.at_r != nullptr ? plan.at_r->size() : problem.residuals(at).size(),
                            0.0);
      unused[k] = 1;
      return;
    }
    const LmVector up = problem.residuals(shifted(k, step));
    if (plan.at_r != nullptr)
      fill(k, up, *plan.at_r, step);
    else
      fill(k, up, problem.residuals(shifted(k, -step)), 2 * step);
  });
  jac.unused.assign(unused.begin(), unused.end());
  return jac;
}

namespace {

// The normal equations of one Gauss-Newton step: J^T J and J^T r.
void normal_equations(const Jacobian& jac, const LmVector& r, std::vector<LmVector>& jtj,
                      LmVector& jtr) {
  const std::size_t n = jac.columns.size();
  jtj.assign(n, LmVector(n, 0));
  jtr.assign(n, 0);
  for (std::size_t a = 0; a < n; ++a) {
    const LmVector& ca = jac.columns[a];
    for (std::size_t i = 0; i < r.size(); ++i) jtr[a] += ca[i] * r[i];
    for (std::size_t b = 0; b <= a; ++b) {
      const LmVector& cb = jac.columns[b];
      double s = 0;
      for (std::size_t i = 0; i < r.size(); ++i) s += ca[i] * cb[i];
      jtj[a][b] = jtj[b][a] = s;
    }
  }
}

// One descent; `first` numbers its first iteration (a screened start goes
// on from where it stopped).
Descent descend_one(const LmProblem& problem, const LmVector& from, const LmOptions& options,
                    std::size_t start, int first = 0) {
  const std::size_t n = from.size();
  Descent d;
  d.theta = from;
  d.r = problem.residuals(d.theta);
  d.cost = sum_of_squares(d.r);
  d.mattered.assign(n, false);
  double lambda = 1e-3;
  std::vector<LmVector> jtj;
  LmVector jtr;
  // The loss after each iteration, for the stall test.
  std::vector<double> history{d.cost};
  std::vector<bool> skip(n, false);
  int it = 0;
  for (; it < options.max_iterations && d.cost > 1e-26; ++it) {
    d.iterations = it + 1;
    const bool recheck = options.recheck_unused <= 0 || it % options.recheck_unused == 0;
    JacobianPlan plan;
    if (options.forward_differences) plan.at_r = &d.r;
    if (!recheck) plan.skip = &skip;
    const Jacobian jac = jacobian(problem, d.theta, options.step, options.jobs, plan);
    for (std::size_t k = 0; k < n; ++k) {
      if (!jac.unused[k]) d.mattered[k] = true;
      if (recheck) skip[k] = jac.unused[k];
    }
    normal_equations(jac, d.r, jtj, jtr);
    bool improved = false;
    for (int tries = 0; tries < 30 && !improved; ++tries) {
      std::vector<LmVector> m = jtj;
      LmVector delta(n);
      for (std::size_t k = 0; k < n; ++k) {
        // Marquardt's scaling plus a floor, so parameters the residuals
        // cannot tell apart stay put rather than make the system singular;
        // an unused parameter does not move.
        m[k][k] += lambda * jtj[k][k] + 1e-12 + (jac.unused[k] ? 1.0 : 0.0);
        delta[k] = jac.unused[k] ? 0.0 : -jtr[k];
      }
      if (!solve_spd(m, delta)) {
        lambda *= 10;
        continue;
      }
      LmVector next = d.theta;
      for (std::size_t k = 0; k < n; ++k)
        next[k] = std::clamp(next[k] + std::clamp(delta[k], -options.max_move, options.max_move),
                             problem.lower[k], problem.upper[k]);
      LmVector r_next = problem.residuals(next);
      const double c_next = sum_of_squares(r_next);
      if (c_next < d.cost) {
        const double gain = d.cost - c_next;
        d.theta = std::move(next);
        d.r = std::move(r_next);
        d.cost = c_next;
        lambda = std::max(lambda / 10, 1e-12);
        improved = true;
        if (options.progress) options.progress(start, first + it + 1, d.cost);
        if (gain <= 1e-15 * d.cost) d.settled = true;  // converged
        // Stalled: the last few iterations together gained less than the
        // stall tolerance, crawling along a kink of the objective.
        history.push_back(d.cost);
        const std::size_t w = static_cast<std::size_t>(std::max(1, options.stall_window));
        if (options.stall_tolerance > 0 && history.size() > w &&
            history[history.size() - 1 - w] - d.cost <= options.stall_tolerance * d.cost)
          d.settled = true;
      } else {
        lambda *= 10;
      }
    }
    if (!improved) d.settled = true;
    if (d.settled) break;
  }
  if (d.cost <= 1e-26) d.settled = true;
  return d;
}

}  // namespace

Descent descend(const LmProblem& problem, const LmVector& from, const LmOptions& options) {
  return descend_one(problem, from, options, 0);
}

MultiStart descend_from_each(const LmProblem& problem, const std::vector<LmVector>& starts,
                             const LmOptions& options) {
  MultiStart out;
  out.ends.resize(starts.size());
  const bool screen = starts.size() > 1 && options.screen_iterations > 0 &&
                      options.screen_iterations < options.max_iterations;
  LmOptions first = options;
  if (screen) first.max_iterations = options.screen_iterations;
  parallel_for(starts.size(), options.jobs,
               [&](std::size_t s) { out.ends[s] = descend_one(problem, starts[s], first, s); });
  const auto lowest = [&] {
    std::size_t best = 0;
    for (std::size_t s = 1; s < out.ends.size(); ++s)
      if (out.ends[s].cost < out.ends[best].cost) best = s;
    return best;
  };
  if (screen) {
    // The starts still descending and near the lowest loss go on.
    const double keep = out.ends[lowest()].cost * (1 + options.screen_keep);
    std::vector<std::size_t> go_on;
    for (std::size_t s = 0; s < out.ends.size(); ++s)
      if (!out.ends[s].settled && out.ends[s].cost <= keep) go_on.push_back(s);
    LmOptions rest = options;
    rest.max_iterations = options.max_iterations - options.screen_iterations;
    const auto go = [&](std::size_t j) {
      Descent& d = out.ends[go_on[j]];
      Descent more = descend_one(problem, d.theta, rest, go_on[j], d.iterations);
      for (std::size_t k = 0; k < more.mattered.size(); ++k)
        if (d.mattered[k]) more.mattered[k] = true;
      more.iterations += d.iterations;
      d = std::move(more);
    };
    // One start left (the common case): run it here, so that its
    // Jacobian's columns take the threads (inside parallel_for they would
    // run inline). The columns are stored by index: the same result.
    if (go_on.size() == 1)
      go(0);
    else
      parallel_for(go_on.size(), options.jobs, go);
  }
  out.best = lowest();
  return out;
}

double halton(int s, int prime) {
  double f = 1, out = 0;
  for (int i = s; i > 0; i /= prime) {
    f /= prime;
    out += f * (i % prime);
  }
  return out;
}

std::vector<std::size_t> proportional_groups(const Jacobian& jac, double tolerance) {
  const std::size_t n = jac.columns.size();
  std::vector<std::size_t> group(n);
  for (std::size_t k = 0; k < n; ++k) group[k] = k;
  const auto find = [&](std::size_t k) {
    while (group[k] != k) k = group[k] = group[group[k]];
    return k;
  };
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + 1; b < n; ++b) {
      if (jac.unused[a] || jac.unused[b]) continue;
      const LmVector& ca = jac.columns[a];
      const LmVector& cb = jac.columns[b];
      double ab = 0, aa = 0, bb = 0;
      for (std::size_t i = 0; i < ca.size(); ++i) {
        ab += ca[i] * cb[i];
        aa += ca[i] * ca[i];
        bb += cb[i] * cb[i];
      }
      if (std::abs(ab) >= (1 - tolerance) * std::sqrt(aa * bb)) group[find(b)] = find(a);
    }
  for (std::size_t k = 0; k < n; ++k) group[k] = find(k);
  return group;
}

bool solve_spd(std::vector<LmVector> a, LmVector& b) {
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

}  // namespace collkit
