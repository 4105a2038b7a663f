#include "realrun/host_interpreter.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>

#include "core/error.h"

namespace collkit::realrun {
namespace {

// One host thread as the Env of interp::run_lane: a lane of one thread.
struct HostEnv {
  std::mt19937_64 rng;
  bool random = false;
  int sleep_us = 0;    // before every operation (the slow rank)
  unsigned polls = 0;  // of the flag the current operation waits for

  static int thread() { return 0; }
  static int threads() { return 1; }
  static bool leader() { return true; }
  static void sync() {}
  static int share(int v) { return v; }
  static bool any(bool v) { return v; }
  static interp::ExecOp op(const interp::LaneRun& run, std::uint32_t i) { return run.ops[i]; }
  static std::uint64_t now_ns() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }
  // Yields first; a wait that lasts sleeps between polls, so that with more
  // threads than cores the waiters leave the cores to the ranks they wait for.
  void pause() {
    if (++polls < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  void between_ops() {
    polls = 0;
    if (sleep_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    if (!random) return;
    const std::uint64_t r = rng() % 32;
    if (r >= 30) {
      std::this_thread::sleep_for(std::chrono::microseconds(1 + static_cast<int>(rng() % 20)));
    } else if (r >= 20) {
      std::this_thread::yield();
    }
  }
};

template <typename T>
void run_lane_typed(HostEnv& env, const interp::LaneRun& run, interp::ErrorCode& result) {
  result = interp::run_lane<T>(env, run);
}

void run_lane_dispatch(DataType type, HostEnv& env, const interp::LaneRun& run,
                       interp::ErrorCode& result) {
  switch (type) {
    case DataType::int8:
      return run_lane_typed<std::int8_t>(env, run, result);
    case DataType::uint8:
      return run_lane_typed<std::uint8_t>(env, run, result);
    case DataType::int32:
      return run_lane_typed<std::int32_t>(env, run, result);
    case DataType::uint32:
      return run_lane_typed<std::uint32_t>(env, run, result);
    case DataType::int64:
      return run_lane_typed<std::int64_t>(env, run, result);
    case DataType::uint64:
      return run_lane_typed<std::uint64_t>(env, run, result);
    case DataType::half:
      return run_lane_typed<elem::Half16>(env, run, result);
    case DataType::bfloat16:
      return run_lane_typed<elem::BFloat16>(env, run, result);
    case DataType::float32:
      return run_lane_typed<float>(env, run, result);
    case DataType::float64:
      return run_lane_typed<double>(env, run, result);
  }
}

}  // namespace

HostInterpreter::HostInterpreter(const DeviceProgram& program, std::span<const AreaBases> bases)
    : program_(program),
      flags_(std::make_unique<interp::Flag[]>(static_cast<std::size_t>(program.flags()) + 1)) {
  std::vector<interp::Flag*> addresses(program.flags());
  for (int f = 0; f < program.flags(); ++f) addresses[f] = &flags_[f];
  std::vector<unsigned char*> ll(program.ranks);
  ll_areas_.resize(program.ranks);
  for (int r = 0; r < program.ranks; ++r) {
    const std::int64_t bytes = program.ll_bytes.empty() ? 0 : program.ll_bytes[r];
    constexpr std::int64_t kLine = sizeof(interp::Ll128Line);
    ll_areas_[r].assign(static_cast<std::size_t>((bytes + kLine - 1) / kLine), {});
    ll[r] = reinterpret_cast<unsigned char*>(ll_areas_[r].data());
  }
  ops_ = bind_device_program(program, bases, addresses, ll);
}

void HostInterpreter::run(const HostInterpreterOptions& options) {
  const int lanes = program_.lanes;
  const int threads = program_.ranks * lanes;
  std::vector<interp::ErrorCode> results(threads, interp::kOk);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  std::seed_seq seq{options.seed, epoch_};
  std::vector<std::uint64_t> seeds(threads);
  seq.generate(seeds.begin(), seeds.end());
  for (int t = 0; t < threads; ++t) {
    interp::LaneRun run;
    const int rank = t / lanes;
    run.ops = ops_.data() + program_.first_op[rank];
    run.count = program_.first_op[rank + 1] - program_.first_op[rank];
    run.rank = rank;
    run.lane = t % lanes;
    run.lanes = lanes;
    run.epoch = epoch_;
    run.avg_ranks = program_.ranks;
    run.spin_limit_ns = static_cast<std::uint64_t>(options.spin_limit_ms * 1e6);
    run.error = &error_;
    run.combine = interp::combine_of(program_.op);
    HostEnv env{std::mt19937_64(seeds[t]), options.random_delays, 0, 0};
    if (rank == options.slow_rank && (options.slow_lane < 0 || options.slow_lane == run.lane))
      env.sleep_us = options.slow_us;
    pool.emplace_back([this, run, env, &results, t]() mutable {
      run_lane_dispatch(program_.type, env, run, results[t]);
    });
  }
  for (std::thread& th : pool) th.join();
  if (error_ != 0) {
    const interp::Flag word = error_;
    // Start over: the flags of an interrupted iteration mean nothing.
    for (int f = 0; f < program_.flags(); ++f) flags_[f] = 0;
    for (auto& area : ll_areas_) std::fill(area.begin(), area.end(), interp::Ll128Line{});
    error_ = 0;
    epoch_ = 0;
    throw RuntimeFailure(describe_interpreter_error(program_, word, options.spin_limit_ms));
  }
  ++epoch_;
}

}  // namespace collkit::realrun
