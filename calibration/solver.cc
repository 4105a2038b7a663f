#include "calibration/solver.h"

#include <algorithm>
#include <cmath>

namespace collkit {

double sum_of_squares(const LmVector& r) {
  double s = 0;
  for (double x : r) s += x * x;
  return s;
}

Jacobian jacobian(const LmProblem& problem, const LmVector& at, double step) {
  const std::size_t n = at.size();
  Jacobian jac;
  jac.columns.resize(n);
  jac.unused.assign(n, false);
  for (std::size_t k = 0; k < n; ++k) {
    LmVector t = at;
    t[k] += step;
    const LmVector up = problem.residuals(t);
    t[k] -= 2 * step;
    const LmVector down = problem.residuals(t);
    LmVector& col = jac.columns[k];
    col.resize(up.size());
    double norm = 0;
    for (std::size_t i = 0; i < up.size(); ++i) {
      col[i] = (up[i] - down[i]) / (2 * step);
      norm = std::max(norm, std::abs(col[i]));
    }
    jac.unused[k] = norm < 1e-12;
  }
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

}  // namespace

Descent descend(const LmProblem& problem, const LmVector& from, const LmOptions& options) {
  const std::size_t n = from.size();
  Descent d;
  d.theta = from;
  d.r = problem.residuals(d.theta);
  d.cost = sum_of_squares(d.r);
  d.mattered.assign(n, false);
  double lambda = 1e-3;
  std::vector<LmVector> jtj;
  LmVector jtr;
  for (int it = 0; it < options.max_iterations && d.cost > 1e-26; ++it) {
    d.iterations = it + 1;
    const Jacobian jac = jacobian(problem, d.theta, options.step);
    for (std::size_t k = 0; k < n; ++k)
      if (!jac.unused[k]) d.mattered[k] = true;
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
        if (gain <= 1e-15 * d.cost) it = options.max_iterations;  // converged
      } else {
        lambda *= 10;
      }
    }
    if (!improved) break;
  }
  return d;
}

MultiStart descend_from_each(const LmProblem& problem, const std::vector<LmVector>& starts,
                             const LmOptions& options) {
  MultiStart out;
  out.ends.reserve(starts.size());
  for (const LmVector& from : starts) {
    out.ends.push_back(descend(problem, from, options));
    if (out.ends.back().cost < out.ends[out.best].cost) out.best = out.ends.size() - 1;
  }
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
