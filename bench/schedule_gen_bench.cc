// Cost of producing schedules and of running them in the reference executor.
//   BM_RingAllReduceOneRank: one rank's ring all_reduce program, iterated and
//     its ops counted; the work must grow with the rank's steps (2(p-1)), not
//     with p times that, since engines pull one rank's steps on demand.
//   BM_CheckStructure: check_structure of a log-step all_reduce at large p.
//   BM_ReferenceSweepSubset: numeric + symbolic verification of every
//     registered algorithm on a mid-size grid (the sweep test's inner loop).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/reference.h"
#include "algorithms/registry.h"
#include "core/error.h"

namespace collkit {
namespace {

// Skips the benchmark (rather than failing the binary) while the algorithm is
// not registered yet.
bool registered(benchmark::State& state, Collective c, const std::string& name) {
  for (const AlgorithmDef* d : algorithms_for(c))
    if (d->name == name) return true;
  state.SkipWithError((std::string(to_string(c)) + "/" + name + " is not registered").c_str());
  return false;
}

ScheduleSpec all_reduce_spec(const std::string& algorithm, int p, std::int64_t n) {
  ScheduleSpec spec;
  spec.collective = Collective::all_reduce;
  spec.algorithm = algorithm;
  spec.ranks = p;
  spec.count = n;
  return spec;
}

void BM_RingAllReduceOneRank(benchmark::State& state) {
  if (!registered(state, Collective::all_reduce, "ring")) return;
  const int p = static_cast<int>(state.range(0));
  const auto schedule = make_schedule(all_reduce_spec("ring", p, std::int64_t{1} << 26));
  std::int64_t ops = 0, steps = 0;
  for (auto _ : state) {
    ops = steps = 0;
    for (const Step& s : schedule->program(p / 2)) {
      ++steps;
      ops += static_cast<std::int64_t>(s.ops.size());
    }
    benchmark::DoNotOptimize(ops);
  }
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["ns_per_step"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
  state.SetComplexityN(p);
}
BENCHMARK(BM_RingAllReduceOneRank)
    ->RangeMultiplier(2)
    ->Range(1024, 65536)
    ->Complexity(benchmark::oN)
    ->Unit(benchmark::kMicrosecond);

void BM_CheckStructure(benchmark::State& state) {
  if (!registered(state, Collective::all_reduce, "recursive_doubling")) return;
  const int p = static_cast<int>(state.range(0));
  const auto schedule = make_schedule(all_reduce_spec("recursive_doubling", p, 64));
  ExecutionStats stats;
  for (auto _ : state) stats = check_structure(*schedule);
  state.counters["messages"] = static_cast<double>(stats.total_messages);
  state.counters["ns_per_message"] = benchmark::Counter(
      static_cast<double>(stats.total_messages),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetComplexityN(p);
}
BENCHMARK(BM_CheckStructure)
    ->RangeMultiplier(4)
    ->Range(1024, 65536)
    ->Complexity(benchmark::oNLogN)
    ->Unit(benchmark::kMillisecond);

void BM_ReferenceSweepSubset(benchmark::State& state) {
  if (algorithm_registry().empty()) {
    state.SkipWithError("no algorithm is registered");
    return;
  }
  const std::int64_t n = state.range(0);
  std::vector<std::unique_ptr<Schedule>> schedules;
  for (const AlgorithmDef& d : algorithm_registry())
    for (int p : {8, 17, 32})
      for (int root : {0, p - 1}) {
        if (root != 0 && !is_rooted(d.collective)) continue;
        ScheduleSpec spec;
        spec.collective = d.collective;
        spec.algorithm = d.name;
        spec.ranks = p;
        spec.root = root;
        spec.count = d.collective == Collective::barrier ? 0 : n;
        schedules.push_back(make_schedule(spec));
      }
  std::int64_t failures = 0;
  for (auto _ : state) {
    for (const auto& s : schedules) {
      try {
        verify_numeric(*s, DType::int32, ReduceOp::sum);
        verify_symbolic(*s);
      } catch (const ScheduleError&) {
        ++failures;  // the sweep test reports these; here only time matters
      }
    }
  }
  state.counters["schedules"] = static_cast<double>(schedules.size());
  state.counters["failing"] =
      static_cast<double>(failures / std::max<std::int64_t>(1, state.iterations()));
  // Shown as a time: seconds per schedule, both modes.
  state.counters["per_schedule"] = benchmark::Counter(
      static_cast<double>(schedules.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ReferenceSweepSubset)->Arg(1000)->Arg(65537)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace collkit

BENCHMARK_MAIN();
