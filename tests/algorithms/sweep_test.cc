// The project sweep: every registered (collective, algorithm, variant) is run
// by the reference executor for every p in 1..17, 24, 32, 33, 64, 100, several
// roots and counts, numerically and symbolically, and its observed steps and
// bytes are compared with its closed-form cost. The registry grows while the
// project grows; this file needs no change when an algorithm is added.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "core/error.h"
#include "tests/algorithms/test_support.h"

namespace collkit {
namespace {

using testing_support::elem_size;
using testing_support::kLargeCount;
using testing_support::make_spec;
using testing_support::roots;
using testing_support::sweep_counts;
// One registered algorithm with one of its variants ("" = it has none).
using AlgorithmCase = testing_support::AlgoId;

// Symbolic runs carry a rank bitset per element (24 bytes at p = 100), so the
// largest count is verified symbolically only up to this many ranks; the
// numeric run covers it at every p, and every smaller count is symbolic too.
constexpr int kSymbolicLargeMaxRanks = 17;
// Failures listed per algorithm before the rest are only counted.
constexpr int kMaxListedFailures = 20;

std::vector<AlgorithmCase> all_cases() {
  std::vector<AlgorithmCase> out;
  for (const AlgorithmDef& d : algorithm_registry())
    for (const std::string& v : buildable_variants(d)) out.push_back({d.collective, d.name, v});
  return out;
}

bool symbolic_at(int p, std::int64_t n) { return n < kLargeCount || p <= kSymbolicLargeMaxRanks; }

std::string precise(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

// Cost parameters for the lower-bound check: the default model, one where
// latency, bandwidth and reduction all matter, and the family tests' model.
const CostParams kCostModels[] = {CostParams{}, CostParams{5e-6, 1.0 / 25e9, 1.0 / 200e9},
                                  testing_support::kModel};

// Runs every check on one configuration; returns "" or what failed.
std::string check_config(const AlgorithmCase& a, int p, int root, std::int64_t n, bool symbolic) {
  try {
    const auto schedule = make_schedule(make_spec(a, p, root, n));
    const ExecutionStats num = verify_numeric(*schedule, DType::int32, ReduceOp::sum, 1 + n + p);
    const ExecutionStats str = check_structure(*schedule);
    if (a.collective == Collective::barrier && !str.barrier_causality_checked)
      return "barrier causality was not checked";
    if (str.max_comm_steps != num.max_comm_steps || str.max_elems_sent != num.max_elems_sent ||
        str.total_messages != num.total_messages || str.max_steps != num.max_steps)
      return "check_structure stats differ from verify_numeric stats";
    if (symbolic) {
      const ExecutionStats sym = verify_symbolic(*schedule);
      if (sym.max_elems_sent != num.max_elems_sent || sym.total_messages != num.total_messages)
        return "verify_symbolic stats differ from verify_numeric stats";
    }
    const ScheduleSpec& spec = schedule->spec();
    const CostEstimate cost = closed_form_cost(spec, spec.model);
    if (cost.steps != num.max_comm_steps)
      return "closed-form steps " + std::to_string(cost.steps) + " but the schedule has " +
             std::to_string(num.max_comm_steps) + " communicating steps";
    const double bytes = static_cast<double>(num.max_elems_sent) * spec.elem_size;
    if (!close(cost.bytes_sent, bytes))
      return "closed-form bytes_sent " + precise(cost.bytes_sent) +
             " but the schedule sends at most " + precise(bytes) + " bytes per rank";
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("unexpected exception: ") + e.what();
  }
  return {};
}

// The closed-form time must not beat the lower bound (COSTS.md) under any
// cost model; returns "" or the violation.
std::string check_lower_bound(const AlgorithmCase& a, int p, int root, std::int64_t n) {
  try {
    const ScheduleSpec spec = make_spec(a, p, root, n);
    for (const CostParams& m : kCostModels) {
      const CostEstimate c = closed_form_cost(spec, m);
      const CostEstimate lb = lower_bound(spec.collective, p, n, spec.elem_size, m);
      if (!(c.time >= lb.time * (1 - 1e-9)))
        return "closed-form time " + precise(c.time) + " s is below the lower bound " +
               precise(lb.time) + " s (alpha " + precise(m.alpha) + ", beta " + precise(m.beta) +
               ", gamma " + precise(m.gamma) + ")";
    }
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// Wall time and size of the whole sweep, printed once at the end.
struct SweepTotals {
  double seconds = 0;
  long long configs = 0;
  long long failures = 0;
};
SweepTotals& totals() {
  static SweepTotals t;
  return t;
}

class TotalsPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    const SweepTotals& t = totals();
    std::printf("[ sweep    ] %zu algorithm variants, %lld configurations, %lld failing, %.2f s\n",
                all_cases().size(), t.configs, t.failures, t.seconds);
  }
};
const auto* const kPrinter = ::testing::AddGlobalTestEnvironment(new TotalsPrinter);

std::string case_name(const ::testing::TestParamInfo<AlgorithmCase>& info) {
  std::string name = info.param.label();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

class Sweep : public ::testing::TestWithParam<AlgorithmCase> {};

// Runs `check` on every (p, root, count) of the sweep grid and fails with the
// list of failing configurations.
template <typename Check>
void sweep_grid(const AlgorithmCase& a, const char* what, Check check, bool timed) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> failures;
  long long configs = 0;
  for (int p : testing_support::sweep_ranks())
    for (int root : roots(a.collective, p))
      for (std::int64_t n : sweep_counts(a.collective, p)) {
        ++configs;
        const std::string problem = check(p, root, n);
        if (!problem.empty())
          failures.push_back(a.label() + " p=" + std::to_string(p) + " root=" +
                             std::to_string(root) + " n=" + std::to_string(n) + ": " + problem);
      }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (timed) {
    totals().seconds += seconds;
    totals().configs += configs;
    totals().failures += static_cast<long long>(failures.size());
    std::printf("[ sweep    ] %-40s %5lld configurations %7.3f s\n", a.label().c_str(), configs,
                seconds);
  }
  std::string listed;
  for (std::size_t i = 0; i < failures.size() && i < kMaxListedFailures; ++i)
    listed += "\n  " + failures[i];
  if (failures.size() > kMaxListedFailures)
    listed += "\n  ... and " + std::to_string(failures.size() - kMaxListedFailures) + " more";
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << configs << " configurations fail "
                                << what << ":" << listed;
}

// Numeric and symbolic verification, and the schedule's steps and bytes
// against the closed-form cost.
TEST_P(Sweep, EveryRankCountRootAndCount) {
  const AlgorithmCase& a = GetParam();
  sweep_grid(
      a, "verification",
      [&](int p, int root, std::int64_t n) {
        return check_config(a, p, root, n, symbolic_at(p, n));
      },
      true);
}

TEST_P(Sweep, ClosedFormTimeIsAboveLowerBound) {
  const AlgorithmCase& a = GetParam();
  // The bounds of COSTS.md are for one-port schedules; a multi-port one
  // (NCCL's trees serve every child at once) may beat them on paper.
  if (find_algorithm(a.collective, a.name).cost_formula.find("multi-port") != std::string::npos)
    GTEST_SKIP() << a.label() << ": multi-port schedule, one-port bounds do not apply";
  sweep_grid(
      a, "the lower bound",
      [&](int p, int root, std::int64_t n) { return check_lower_bound(a, p, root, n); }, false);
}

// Every dtype and reduction op on a smaller grid; elem_size follows the dtype
// so segment choices that depend on bytes are exercised too.
TEST_P(Sweep, EveryDtypeAndOp) {
  const AlgorithmCase& a = GetParam();
  std::vector<std::string> failures;
  for (int p : {1, 2, 3, 5, 8, 13})
    for (int root : roots(a.collective, p))
      for (std::int64_t n :
           {std::int64_t{0}, std::int64_t{1}, std::int64_t{p + 1}, std::int64_t{100}}) {
        if (a.collective == Collective::barrier && n != 0) continue;
        for (DType t : kAllDTypes)
          for (ReduceOp op : kAllReduceOps) {
            try {
              const auto s = make_schedule(make_spec(a, p, root, n, elem_size(t)));
              for (std::uint64_t seed : {1, 2}) verify_numeric(*s, t, op, seed);
            } catch (const Error& e) {
              failures.push_back(a.label() + " p=" + std::to_string(p) +
                                 " root=" + std::to_string(root) + " n=" + std::to_string(n) + " " +
                                 std::string(to_string(t)) + "/" + std::string(to_string(op)) +
                                 ": " + e.what());
            }
          }
      }
  std::string listed;
  for (std::size_t i = 0; i < failures.size() && i < kMaxListedFailures; ++i)
    listed += "\n  " + failures[i];
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures:" << listed;
}

INSTANTIATE_TEST_SUITE_P(Registry, Sweep, ::testing::ValuesIn(all_cases()), case_name);
// The registry may still be empty while algorithms are being written.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Sweep);

TEST(SweepRegistry, NamesAreUniquePerCollective) {
  const auto cases = all_cases();
  for (std::size_t i = 0; i < cases.size(); ++i)
    for (std::size_t j = i + 1; j < cases.size(); ++j)
      EXPECT_FALSE(cases[i].collective == cases[j].collective && cases[i].name == cases[j].name &&
                   cases[i].variant == cases[j].variant)
          << cases[i].label() << " is registered twice";
}

// ---------------------------------------------------------------------------
// Bad input to make_schedule: one UsageError with a clear message each.

template <typename F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a UsageError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected a UsageError";
  return {};
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// Some registered algorithm, preferring a rooted collective so that the root
// checks apply; nullptr while the registry is empty.
const AlgorithmDef* some_algorithm(bool rooted) {
  for (const AlgorithmDef& d : algorithm_registry())
    if (!rooted || is_rooted(d.collective)) return &d;
  return nullptr;
}

ScheduleSpec valid_spec(const AlgorithmDef& d) {
  ScheduleSpec spec;
  spec.collective = d.collective;
  spec.algorithm = d.name;
  spec.ranks = 4;
  spec.root = 0;
  spec.count = d.collective == Collective::barrier ? 0 : 8;
  return spec;
}

TEST(SweepBadInput, UnknownCollectiveListsValidNames) {
  const std::string msg = usage_error_of([] { parse_collective("allreduc"); });
  EXPECT_HAS(msg, "unknown collective 'allreduc'");
  for (Collective c : kAllCollectives) EXPECT_HAS(msg, std::string(to_string(c)));
}

TEST(SweepBadInput, UnknownAlgorithmListsValidNames) {
  for (Collective c : kAllCollectives) {
    ScheduleSpec spec;
    spec.collective = c;
    spec.algorithm = "no_such_algorithm";
    spec.ranks = 4;
    const std::string msg = usage_error_of([&] { make_schedule(spec); });
    EXPECT_HAS(msg, "unknown algorithm 'no_such_algorithm'");
    for (const AlgorithmDef* d : algorithms_for(c)) EXPECT_HAS(msg, d->name);
  }
}

TEST(SweepBadInput, RanksRootCountVariant) {
  const AlgorithmDef* d = some_algorithm(/*rooted=*/false);
  if (!d) GTEST_SKIP() << "no algorithm registered yet";
  ScheduleSpec spec = valid_spec(*d);
  EXPECT_NO_THROW(make_schedule(spec));

  ScheduleSpec zero = spec;
  zero.ranks = 0;
  EXPECT_HAS(usage_error_of([&] { make_schedule(zero); }), "ranks must be >= 1");
  ScheduleSpec root = spec;
  root.root = 4;
  EXPECT_HAS(usage_error_of([&] { make_schedule(root); }), "root 4 is out of range");
  root.root = -1;
  EXPECT_HAS(usage_error_of([&] { make_schedule(root); }), "root -1 is out of range");
  ScheduleSpec negative = spec;
  negative.count = -1;
  EXPECT_HAS(usage_error_of([&] { make_schedule(negative); }), "count must be >= 0");
  ScheduleSpec variant = spec;
  variant.variant = "no_such_variant";
  EXPECT_HAS(usage_error_of([&] { make_schedule(variant); }), "unknown variant 'no_such_variant'");
  ScheduleSpec suffix = spec;
  suffix.algorithm = d->name + ":no_such_variant";
  EXPECT_HAS(usage_error_of([&] { make_schedule(suffix); }), "unknown variant");
}

TEST(SweepBadInput, RootOutOfRangeForRootedCollective) {
  const AlgorithmDef* d = some_algorithm(/*rooted=*/true);
  if (!d) GTEST_SKIP() << "no rooted algorithm registered yet";
  ScheduleSpec spec = valid_spec(*d);
  spec.root = spec.ranks;
  EXPECT_HAS(usage_error_of([&] { make_schedule(spec); }), "out of range");
}

TEST(SweepBadInput, BarrierCountMustBeZero) {
  const auto barriers = algorithms_for(Collective::barrier);
  if (barriers.empty()) GTEST_SKIP() << "no barrier registered yet";
  ScheduleSpec spec = valid_spec(*barriers.front());
  spec.count = 1;
  EXPECT_HAS(usage_error_of([&] { make_schedule(spec); }), "barrier moves no data");
}

}  // namespace
}  // namespace collkit
