// The least-squares solver alone, on functions whose minima are known by
// hand: Rosenbrock's valley, a linear system (the normal equations' exact
// answer), a rank-deficient pair, a minimum outside the box, a parameter
// nothing depends on, and a double well where only one start finds the
// deeper minimum.
#include "calibration/solver.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace collkit {
namespace {

LmProblem unbounded(std::function<LmVector(const LmVector&)> f, std::size_t n) {
  return LmProblem{std::move(f), LmVector(n, -1e9), LmVector(n, 1e9), {}};
}

TEST(Solver, RosenbrockValley) {
  // sum r^2 = 100 (y - x^2)^2 + (1 - x)^2, minimum 0 at (1, 1).
  const LmProblem p = unbounded(
      [](const LmVector& t) {
        return LmVector{10 * (t[1] - t[0] * t[0]), 1 - t[0]};
      },
      2);
  LmOptions o;
  o.max_iterations = 200;
  const Descent d = descend(p, {-1.2, 1.0}, o);
  EXPECT_NEAR(d.theta[0], 1.0, 1e-6);
  EXPECT_NEAR(d.theta[1], 1.0, 1e-6);
  EXPECT_LT(d.cost, 1e-12);
  EXPECT_GT(d.iterations, 1);
  EXPECT_EQ(d.mattered, (std::vector<bool>{true, true}));
}

TEST(Solver, LinearLeastSquaresMatchesTheNormalEquations) {
  // r_i = a_i . theta - b_i over 5 rows; the answer solves A^T A x = A^T b.
  const std::vector<LmVector> a = {{1, 2}, {3, 1}, {0, 1}, {2, -1}, {1, 1}};
  const LmVector b = {3, 5, -1, 2, 4};
  const LmProblem p = unbounded(
      [&](const LmVector& t) {
        LmVector r;
        for (std::size_t i = 0; i < a.size(); ++i)
          r.push_back(a[i][0] * t[0] + a[i][1] * t[1] - b[i]);
        return r;
      },
      2);
  std::vector<LmVector> ata(2, LmVector(2, 0));
  LmVector atb(2, 0);
  for (std::size_t i = 0; i < a.size(); ++i)
    for (int j = 0; j < 2; ++j) {
      atb[j] += a[i][j] * b[i];
      for (int k = 0; k < 2; ++k) ata[j][k] += a[i][j] * a[i][k];
    }
  ASSERT_TRUE(solve_spd(ata, atb));
  const Descent d = descend(p, {0, 0}, LmOptions{});
  EXPECT_NEAR(d.theta[0], atb[0], 1e-7);
  EXPECT_NEAR(d.theta[1], atb[1], 1e-7);
}

TEST(Solver, RankDeficientPairMovesTogetherAndIsGrouped) {
  // Only theta0 + theta1 matters: it reaches 3, the split stays as started
  // (both move by the same step), and the pair forms one group.
  const LmProblem p = unbounded(
      [](const LmVector& t) {
        LmVector r;
        for (double x : {1.0, 2.0, 3.0}) r.push_back((t[0] + t[1] - 3) * x);
        return r;
      },
      2);
  const Descent d = descend(p, {0.5, -0.5}, LmOptions{});
  EXPECT_NEAR(d.theta[0] + d.theta[1], 3.0, 1e-8);
  EXPECT_NEAR(d.theta[0] - d.theta[1], 1.0, 1e-8);
  const std::vector<std::size_t> group = proportional_groups(jacobian(p, d.theta, 1e-5));
  EXPECT_EQ(group[0], group[1]);
}

TEST(Solver, StopsOnTheActiveBound) {
  // Minimum at theta = 5, outside [-1, 2]: the descent ends on 2.
  const LmProblem p{[](const LmVector& t) {
                      return LmVector{t[0] - 5, 0.5 * (t[0] - 5)};
                    },
                    {-1.0},
                    {2.0},
                    {}};
  const Descent d = descend(p, {0.0}, LmOptions{});
  EXPECT_EQ(d.theta[0], 2.0);
  EXPECT_NEAR(d.cost, 9 * 1.25, 1e-12);
}

TEST(Solver, ParameterNothingDependsOnStaysPut) {
  const LmProblem p = unbounded(
      [](const LmVector& t) {
        return LmVector{t[0] - 1, 2 * (t[0] - 1), 0 * t[1]};
      },
      2);
  const Descent d = descend(p, {4.0, 7.25}, LmOptions{});
  EXPECT_NEAR(d.theta[0], 1.0, 1e-9);
  EXPECT_EQ(d.theta[1], 7.25);
  EXPECT_EQ(d.mattered, (std::vector<bool>{true, false}));
  const Jacobian j = jacobian(p, d.theta, 1e-5);
  EXPECT_EQ(j.unused, (std::vector<bool>{false, true}));
  // Unused parameters are never grouped.
  EXPECT_EQ(proportional_groups(j), (std::vector<std::size_t>{0, 1}));
}

TEST(Solver, NoIterationsLeavesTheStart) {
  const LmProblem p = unbounded([](const LmVector& t) { return LmVector{t[0] - 1}; }, 1);
  LmOptions o;
  o.max_iterations = 0;
  const Descent d = descend(p, {3.0}, o);
  EXPECT_EQ(d.theta[0], 3.0);
  EXPECT_EQ(d.cost, 4.0);
  EXPECT_EQ(d.iterations, 0);
}

TEST(Solver, MultiStartKeepsTheDeepestMinimumFirstOnTies) {
  // A double well: r = (theta^2 - 1, 0.3 (theta + 1)). Near theta = -1 the
  // loss is ~0; near +1 about 0.36. A start at +2 finds only the shallow one.
  const LmProblem p = unbounded(
      [](const LmVector& t) {
        return LmVector{t[0] * t[0] - 1, 0.3 * (t[0] + 1)};
      },
      1);
  const MultiStart ms = descend_from_each(p, {{2.0}, {-2.0}, {2.0}}, LmOptions{});
  ASSERT_EQ(ms.ends.size(), 3U);
  EXPECT_GT(ms.ends[0].theta[0], 0.5);
  EXPECT_NEAR(ms.ends[0].cost, 0.35, 0.02);
  EXPECT_NEAR(ms.ends[1].theta[0], -1.0, 1e-6);
  EXPECT_EQ(ms.best, 1U);
  // Equal losses: the first start wins.
  EXPECT_EQ(descend_from_each(p, {{2.0}, {2.0}}, LmOptions{}).best, 0U);
}

TEST(Solver, HaltonIsTheRadicalInverse) {
  EXPECT_DOUBLE_EQ(halton(1, 2), 0.5);
  EXPECT_DOUBLE_EQ(halton(2, 2), 0.25);
  EXPECT_DOUBLE_EQ(halton(3, 2), 0.75);
  EXPECT_DOUBLE_EQ(halton(6, 2), 0.375);  // 110 -> 0.011
  EXPECT_DOUBLE_EQ(halton(1, 3), 1.0 / 3);
  EXPECT_DOUBLE_EQ(halton(5, 3), 7.0 / 9);     // 12 -> 0.21
  EXPECT_DOUBLE_EQ(halton(7, 5), 0.4 + 0.04);  // 12 -> 0.21
}

TEST(Solver, CholeskySolvesAndRefusesIndefinite) {
  std::vector<LmVector> a = {{4, 2, 0}, {2, 5, 1}, {0, 1, 3}};
  const LmVector x = {1, -2, 3};
  LmVector b(3, 0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) b[i] += a[i][j] * x[j];
  ASSERT_TRUE(solve_spd(a, b));
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(b[i], x[i], 1e-12);
  LmVector c = {1, 1};
  EXPECT_FALSE(solve_spd({{1, 2}, {2, 1}}, c));
}

}  // namespace
}  // namespace collkit
