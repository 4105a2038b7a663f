// Simulator performance (docs/SIMULATOR.md, "Performance"): wall time and peak
// memory of simulate() on the scale targets. Run e.g.
//   build/sim_bench --benchmark_filter=RingFatTree/4096
// alone to read a target's peak RSS (it is the process's high-water mark).
// Each benchmark needs a generator and the topology loader; an algorithm not
// registered yet makes it skip with a message instead of failing.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "algorithms/registry.h"
#include "core/error.h"
#include "core/nccl_sizes.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

// The checkout this program was built from (bench/CMakeLists.txt), so
// shipped topology files are found from any working directory.
std::string source_dir() { return COLLKIT_SOURCE_DIR; }

std::unique_ptr<Topology> topology_or_skip(benchmark::State& state, const std::string& json,
                                           int ranks) {
  try {
    return parse_topology(json, "sim_bench", ranks);
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return nullptr;
  }
}

std::unique_ptr<Schedule> schedule_or_skip(benchmark::State& state, ScheduleSpec spec) {
  try {
    return make_schedule(std::move(spec));
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return nullptr;
  }
}

// The smallest k-ary fat tree (k even, k^3/4 hosts) with at least p hosts:
// 48 GB/s InfiniBand NDR links, 1.35 us per link (topologies/fat-tree-k8.json).
std::string fat_tree_json(int p) {
  int k = 2;
  while (k * k * k / 4 < p) k += 2;
  return R"({"name": "fat-tree-k)" + std::to_string(k) +
         R"(", "endpoint": {"overhead_us": 0.5}, "generator": {"kind": "fat_tree", "k": )" +
         std::to_string(k) +
         R"(, "oversubscription": 1, "bandwidth_gbps": 48, "latency_us": 1.35}})";
}

ScheduleSpec all_reduce_spec(const std::string& algorithm, int p, std::int64_t bytes) {
  ScheduleSpec spec;
  spec.collective = Collective::all_reduce;
  spec.algorithm = algorithm;
  spec.ranks = p;
  spec.count = bytes / 4;
  spec.elem_size = 4;
  return spec;
}

void report(benchmark::State& state, const SimResult& r) {
  state.counters["sim_time_us"] = r.time * 1e6;
  state.counters["events"] = static_cast<double>(r.events);
  state.counters["messages"] = static_cast<double>(r.messages);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

// all_reduce `algorithm` on a fat tree, flow model, 16 MiB per rank. The
// targets: ring at p=1024 <= 2 s; at p=4096 <= 20 s and <= 2 GiB.
void run_fat_tree(benchmark::State& state, const std::string& algorithm) {
  const int p = static_cast<int>(state.range(0));
  const auto topo = topology_or_skip(state, fat_tree_json(p), p);
  if (!topo) return;
  const auto schedule = schedule_or_skip(state, all_reduce_spec(algorithm, p, 16 << 20));
  if (!schedule) return;
  SimResult r;
  for (auto _ : state) r = simulate(*schedule, *topo, SimOptions{NetModel::flow});
  report(state, r);
}

void BM_RingFatTree(benchmark::State& state) { run_fat_tree(state, "ring"); }
BENCHMARK(BM_RingFatTree)
    ->RangeMultiplier(2)
    ->Range(64, 4096)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

void BM_RabenseifnerFatTree(benchmark::State& state) { run_fat_tree(state, "rabenseifner"); }
BENCHMARK(BM_RabenseifnerFatTree)
    ->RangeMultiplier(2)
    ->Range(64, 4096)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// recursive_doubling all_reduce at p = 2^20 on fully_connected, alpha-beta
// model, 1 MiB per rank. Target: <= 20 s.
void BM_RecursiveDoublingFullyConnected(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0));
  const std::string json = R"({"name": "fc", "generator": {"kind": "fully_connected", "ranks": )" +
                           std::to_string(p) + R"(, "bandwidth_gbps": 100, "latency_us": 1.0}})";
  const auto topo = topology_or_skip(state, json, p);
  if (!topo) return;
  const auto schedule = schedule_or_skip(state, all_reduce_spec("recursive_doubling", p, 1 << 20));
  if (!schedule) return;
  SimResult r;
  for (auto _ : state) r = simulate(*schedule, *topo, SimOptions{NetModel::alpha_beta});
  report(state, r);
}
BENCHMARK(BM_RecursiveDoublingFullyConnected)
    ->Arg(1 << 16)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// Every registered all_reduce algorithm at 64 sizes (32 B to 64 MiB, ratio
// 2^(1/3)) on topologies/dgx-h100.json, flow model. Target: <= 1 s per sweep.
void BM_SweepDgxH100(benchmark::State& state) {
  std::unique_ptr<Topology> topo;
  try {
    topo = load_topology(source_dir() + "topologies/dgx-h100.json");
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  const int p = topo->num_ranks();
  std::vector<std::unique_ptr<Schedule>> schedules;
  for (const AlgorithmDef* def : algorithms_for(Collective::all_reduce)) {
    for (int k = 0; k < 64; ++k) {
      const auto elems = static_cast<std::int64_t>(std::llround(std::exp2(k / 3.0)));
      try {
        schedules.push_back(make_schedule(all_reduce_spec(def->name, p, elems * p * 4)));
      } catch (const UsageError&) {
        break;  // the algorithm does not accept this p: the sweep leaves it out
      }
    }
  }
  if (schedules.empty()) {
    state.SkipWithError("no all_reduce algorithm registered");
    return;
  }
  double total = 0;
  std::int64_t events = 0;
  for (auto _ : state) {
    total = 0;
    events = 0;
    for (const auto& s : schedules) {
      const SimResult r = simulate(*s, *topo);
      total += r.time;
      events += r.events;
    }
  }
  state.counters["simulations"] = static_cast<double>(schedules.size());
  state.counters["events"] = static_cast<double>(events);
  state.counters["sum_sim_time_us"] = total * 1e6;
}
BENCHMARK(BM_SweepDgxH100)->Unit(benchmark::kMillisecond);

// `collkit simulate --algorithm nccl` of one size (256 MiB, float, as
// nccl-tests -b 256M) on topologies/h100-cluster-2048x8.json with
// generator.nodes set to N: the channel search, NCCL's choice, building the
// schedule and simulating it, all timed. Arguments: N, fold (0: NVLS
// channels channel by channel instead of folded, ScheduleSpec::
// fold_channels, the same times with more transfers), the collective
// (0 all_reduce, 1 all_gather, 2 reduce_scatter) and the orbit reduction
// (1 on, the default; 0 every rank: SimOptions::orbits, the same times).
// Targets (issue 41): N = 128 (1024 ranks) <= 1 s; N = 2048 (16,384 ranks)
// <= 10 s; N = 16384 (131,072 ranks) <= 5 minutes and <= 8 GB. Filter on
// one case to read its peak RSS (the process's high-water mark).
// all_gather and reduce_scatter are NCCL's ring, p^2 events (and the orbit
// check walks every rank's program: p^2 ops too), so they are listed up to
// N = 2048; without the reduction N = 16384 all_reduce took 28 minutes of
// CPU (docs/results/parallel.md).
void BM_NcclCluster(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const bool fold = state.range(1) != 0;
  constexpr Collective kCollectives[] = {Collective::all_reduce, Collective::all_gather,
                                         Collective::reduce_scatter};
  const Collective collective = kCollectives[state.range(2)];
  std::unique_ptr<Topology> topo;
  try {
    std::ifstream in(source_dir() + "topologies/h100-cluster-2048x8.json");
    std::stringstream text;
    text << in.rdbuf();
    std::string json = text.str();
    const std::string key = "\"nodes\": 2048";
    const std::size_t at = json.find(key);
    if (at == std::string::npos) throw Error("h100-cluster-2048x8.json: no " + key);
    json.replace(at, key.size(), "\"nodes\": " + std::to_string(nodes));
    topo = parse_topology(json, "h100-cluster-" + std::to_string(nodes) + "x8", 0);
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  const int p = topo->num_ranks();
  const SizeMapping size = map_size(collective, std::int64_t{256} << 20, 4, p);
  SimResult r;
  NcclChoice choice;
  for (auto _ : state) {
    const NcclContext ctx = nccl_context(*topo, p);
    choice = nccl_runnable_choice(ctx, collective, size.spec_count * 4, DataType::float32,
                                  RedOp::sum, std::nullopt);
    ScheduleSpec spec = all_reduce_spec("nccl", p, 0);
    spec.collective = collective;
    spec.count = size.spec_count;
    spec = nccl_schedule_spec(spec, ctx, choice, *topo);
    spec.fold_channels = fold;
    SimOptions options;
    options.orbits = state.range(3) != 0;
    r = simulate(*make_schedule(spec), *topo, options);
  }
  report(state, r);
  state.counters["channels"] = choice.channels;
  state.counters["orbit"] = r.orbit;
  state.SetLabel(std::string(to_string(collective)) + " " + describe(choice) +
                 ", orbits: " + r.orbit_note);
}
BENCHMARK(BM_NcclCluster)
    ->Args({128, 1, 0, 1})
    ->Args({128, 1, 0, 0})
    ->Args({128, 0, 0, 1})
    ->Args({128, 1, 1, 1})
    ->Args({128, 1, 1, 0})
    ->Args({128, 1, 2, 1})
    ->Args({2048, 1, 0, 1})
    ->Args({2048, 1, 1, 1})
    ->Args({2048, 1, 2, 1})
    ->Args({16384, 1, 0, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace collkit

BENCHMARK_MAIN();
