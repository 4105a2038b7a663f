// `collkit bench` dispatch, and the two backends that run under mpirun: mpi
// (the host executor over MPI point-to-point, native = the MPI library's
// collectives) and nccl (one process per GPU: each step as grouped
// ncclSend/ncclRecv plus the reduction kernels, native = NCCL's
// collectives). The measurement loop, table and report are realrun/harness.h.
#include "realrun/bench.h"

#include "core/error.h"
#include "realrun/harness.h"
#ifdef COLLKIT_HAVE_CUDA
#include "realrun/device/cuda_bench.h"
#endif

#ifdef COLLKIT_HAVE_MPI

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/registry.h"
#include "core/atomic_file.h"
#include "realrun/check_data.h"
#include "realrun/executor.h"
#include "realrun/mpi_transport.h"
#include "realrun/native_mpi.h"

#ifdef COLLKIT_HAVE_NCCL_BACKEND
#include <nccl.h>

#include "realrun/device/cuda_util.h"
#include "realrun/device/device_rank.h"
#include "realrun/device/nccl_native.h"
#include "realrun/device/reduce.h"
#endif

namespace collkit::realrun {
namespace {

// Rank 0 reports a usage error and ends the job with exit code 2. The other
// ranks have reached the same error (the flags are equal everywhere), so they
// wait for rank 0's abort to end them and only one message appears; should
// rank 0 not have failed after all, they abort on their own rather than hang.
[[noreturn]] void usage_abort(int rank, const std::string& what) {
  if (rank != 0) {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    std::fprintf(stderr, "collkit: error: rank %d: %s\n", rank, what.c_str());
    std::fflush(stderr);
  } else {
    std::fprintf(stderr, "collkit: error: %s\n", what.c_str());
    std::fflush(stderr);
  }
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks == 1) {
    // Alone (no mpirun): nobody to take down, so no MPI_Abort banner.
    MPI_Finalize();
    std::_Exit(2);
  }
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::_Exit(2);
}

// A failure during the run may happen on one rank only: it reports itself.
[[noreturn]] void runtime_abort(int rank, const std::string& what, int code) {
  std::fprintf(stderr, "collkit bench: rank %d: error: %s\n", rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

// The MPI side shared by the mpi and nccl backends: agreement, combining
// times and counts on rank 0, and the host/pid table.
class MpiBackendBase : public BenchBackend {
 public:
  MpiBackendBase(const BenchConfig& cfg, int rank, int ranks)
      : cfg_(cfg), rank_(rank), ranks_(ranks) {}
  int ranks() const override { return ranks_; }
  int first_rank() const override { return rank_; }
  int ranks_here() const override { return 1; }

  std::string agree(const std::string& why) override {
    int first = why.empty() ? ranks_ : rank_;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (first == ranks_) return "";
    int len = static_cast<int>(why.size());
    MPI_CHECK(MPI_Bcast(&len, 1, MPI_INT, first, MPI_COMM_WORLD));
    std::string text = why;
    text.resize(static_cast<std::size_t>(len));
    MPI_CHECK(MPI_Bcast(text.data(), len, MPI_CHAR, first, MPI_COMM_WORLD));
    return text;
  }

  double combine_time(double time_us, Average average) override {
    switch (average) {
      case Average::rank0:
        break;
      case Average::mean:
        MPI_CHECK(MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : &time_us, &time_us, 1, MPI_DOUBLE, MPI_SUM,
                             0, MPI_COMM_WORLD));
        time_us /= ranks_;
        break;
      case Average::min:
        MPI_CHECK(MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : &time_us, &time_us, 1, MPI_DOUBLE, MPI_MIN,
                             0, MPI_COMM_WORLD));
        break;
      case Average::max:
        MPI_CHECK(MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : &time_us, &time_us, 1, MPI_DOUBLE, MPI_MAX,
                             0, MPI_COMM_WORLD));
        break;
    }
    return time_us;
  }

  std::int64_t combine_wrong(std::int64_t wrong) override {
    MPI_CHECK(MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : &wrong, &wrong, 1, MPI_INT64_T, MPI_SUM, 0,
                         MPI_COMM_WORLD));
    return wrong;
  }

 protected:
  struct HostInfo {
    int hosts = 1;
    Json devices = Json::array();
  };

  // Every rank's host, pid and `what` (its device text) on rank 0.
  HostInfo gather_hosts(const std::string& kind, const std::string& what) {
    constexpr int kText = 256;
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_CHECK(MPI_Get_processor_name(name, &len));
    std::vector<char> names(static_cast<std::size_t>(ranks_) * MPI_MAX_PROCESSOR_NAME);
    MPI_CHECK(MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(),
                         MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD));
    char mine[kText] = {};
    std::snprintf(mine, sizeof mine, "%s", what.c_str());
    std::vector<char> whats(static_cast<std::size_t>(ranks_) * kText);
    MPI_CHECK(MPI_Gather(mine, kText, MPI_CHAR, whats.data(), kText, MPI_CHAR, 0, MPI_COMM_WORLD));
    int pid = static_cast<int>(getpid());
    std::vector<int> pids(ranks_);
    MPI_CHECK(MPI_Gather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
    // The host's online CPUs (not this process's affinity, which mpirun's
    // binding narrows): calibrate bounds a fitted host_cores by it.
    int cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    std::vector<int> host_cpus(ranks_);
    MPI_CHECK(MPI_Gather(&cpus, 1, MPI_INT, host_cpus.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
    HostInfo info;
    if (rank_ != 0) return info;
    std::set<std::string> distinct;
    for (int r = 0; r < ranks_; ++r) {
      const std::string host(&names[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
      distinct.insert(host);
      Json d = {{"rank", r},
                {"host", host},
                {"pid", pids[r]},
                {"kind", kind},
                {"host_cpus", host_cpus[r]}};
      const std::string text(&whats[static_cast<std::size_t>(r) * kText]);
      if (!text.empty()) d["device_text"] = text;
      info.devices.push_back(d);
    }
    info.hosts = static_cast<int>(distinct.size());
    return info;
  }

  static std::string mpi_library() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(text, &len);
    std::string s(text, static_cast<std::size_t>(len));
    const std::size_t nl = s.find_first_of(",\n");
    return nl == std::string::npos ? s : s.substr(0, nl);
  }

  std::unique_ptr<Schedule> schedule_for(const std::string& algorithm, std::int64_t count,
                                         DataType type) const {
    return make_schedule(bench_schedule_spec(cfg_, algorithm, ranks_, count, type));
  }

  const BenchConfig& cfg_;
  int rank_, ranks_;
  HostInfo hosts_;
};

// ---- --backend mpi --------------------------------------------------------

// What one measurement runs: the executor over MPI, or MPI's own collective.
class MpiMeasurement final : public Measurement {
 public:
  MpiMeasurement(std::unique_ptr<Schedule> s, int rank, DataType t, RedOp op, bool in_place,
                 MpiTransport& transport, const BenchConfig& cfg)
      : schedule_(std::move(s)), cfg_(cfg), rank_(rank), ranks_(schedule_->ranks()) {
    executor_ = std::make_unique<Executor>(*schedule_, rank, t, op, in_place);
    input_ = executor_->input();
    output_ = executor_->output();
    run_ = [this, &transport] { executor_->run(transport); };
    type_ = t;
    op_ = op;
    in_place_ = in_place;
    count_ = schedule_->spec().count;
  }
  MpiMeasurement(const BenchConfig& cfg, int rank, int ranks, std::int64_t count, DataType t,
                 RedOp op, bool in_place)
      : cfg_(cfg), rank_(rank), ranks_(ranks) {
    native_ = std::make_unique<NativeCollective>(cfg.collective, MPI_COMM_WORLD, cfg.root, count, t,
                                                 op, in_place);
    input_ = native_->input();
    output_ = native_->output();
    run_ = [this] { native_->run(); };
    type_ = t;
    op_ = op;
    in_place_ = in_place;
    count_ = count;
  }

  double time_us(int warmup, int iters, RunContext& ctx, const std::string& what) override {
    // Timed runs use check data too: realistic values, no denormals.
    if (!in_place_) poison(output_);
    fill_check_input(cfg_.collective, type_, op_, ranks_, rank_, 0, input_);
    for (int i = 0; i < warmup; ++i) run_once(ctx, what);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) run_once(ctx, what);
    return (MPI_Wtime() - start) / iters * 1e6;
  }

  std::int64_t check(std::int64_t iter, RunContext& ctx, const std::string& what) override {
    expected_.resize(output_.size());
    // Poison first: in place the input lies inside the output.
    poison(output_);
    fill_check_input(cfg_.collective, type_, op_, ranks_, rank_, iter, input_);
    run_once(ctx, what);
    expected_output(cfg_.collective, type_, op_, ranks_, rank_, cfg_.root, count_, iter, expected_);
    return count_wrong(type_, output_, expected_);
  }

 private:
  void run_once(RunContext& ctx, const std::string& what) {
    ctx.before_run();
    Armed armed(*ctx.watchdog, what);
    run_();
  }

  std::unique_ptr<Schedule> schedule_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<NativeCollective> native_;
  const BenchConfig& cfg_;
  int rank_, ranks_;
  DataType type_ = DataType::float32;
  RedOp op_ = RedOp::sum;
  bool in_place_ = false;
  std::int64_t count_ = 0;
  std::span<std::byte> input_, output_;
  std::function<void()> run_;
  std::vector<std::byte> expected_;
};

class MpiBackend final : public MpiBackendBase {
 public:
  MpiBackend(const BenchConfig& cfg, int rank, int ranks)
      : MpiBackendBase(cfg, rank, ranks), transport_(MPI_COMM_WORLD) {
    hosts_ = gather_hosts("cpu", "");
  }

  std::string describe() override {
    return std::to_string(ranks_) + " ranks on " + std::to_string(hosts_.hosts) + " host(s), " +
           mpi_library();
  }
  std::vector<std::string> rank_lines() override {
    std::vector<std::string> lines;
    for (const auto& d : hosts_.devices) {
      char line[512];
      std::snprintf(line, sizeof line, "#  Rank %2d Group  0 Pid %6d on %10s cpu",
                    d["rank"].get<int>(), d["pid"].get<int>(),
                    d["host"].get<std::string>().c_str());
      lines.emplace_back(line);
    }
    return lines;
  }

  std::unique_ptr<Measurement> prepare(const std::string& algorithm, const SizeMapping& size,
                                       DataType type, RedOp op, bool in_place,
                                       std::string& unavailable) override {
    const Collective c = cfg_.collective;
    const std::int64_t count = size.spec_count;
    if (algorithm == kNative) {
      unavailable = in_place ? agree(native_in_place_unsupported(c)) : "";
      if (!unavailable.empty()) return nullptr;
      return std::make_unique<MpiMeasurement>(cfg_, rank_, ranks_, count, type, op, in_place);
    }
    std::unique_ptr<Schedule> s = schedule_for(algorithm, count, type);
    unavailable = agree(outside_declaration(s->spec(), in_place));
    if (!unavailable.empty()) return nullptr;
    if (in_place) {
      unavailable =
          agree(in_place_hazard(*s, rank_, in_place_layout(c, ranks_, rank_, cfg_.root, count)));
      if (!unavailable.empty()) return nullptr;
    }
    return std::make_unique<MpiMeasurement>(std::move(s), rank_, type, op, in_place, transport_,
                                            cfg_);
  }

  void report_extras(Json& extra) override {
    extra["hosts"] = hosts_.hosts;
    extra["devices"] = hosts_.devices;
    extra["mpi_library"] = mpi_library();
  }

 private:
  MpiTransport transport_;
};

#ifdef COLLKIT_HAVE_NCCL_BACKEND
// ---- --backend nccl -------------------------------------------------------

// One GPU per process: device = local rank (OMPI_COMM_WORLD_LOCAL_RANK) modulo
// the visible devices.
int local_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 0;
}

class NcclMeasurement final : public Measurement {
 public:
  // A schedule (plan with steps) or native (io_plan, `native` true).
  NcclMeasurement(std::unique_ptr<Schedule> s, CompiledPlan plan, bool native, std::int64_t count,
                  ncclComm_t comm, int device, cudaStream_t stream, const BenchConfig& cfg)
      : schedule_(std::move(s)),
        plan_(std::move(plan)),
        native_(native),
        comm_(comm),
        stream_(stream),
        cfg_(cfg),
        rank_(device, plan_),
        dummy_(1, device),
        count_(count) {
    DeviceGuard g(device);
    start_ = std::make_unique<CudaEvent>(device, true);
    stop_ = std::make_unique<CudaEvent>(device, true);
    if (cfg.local_register == 1) registered_ = register_storage(comm_, rank_.r, plan_);
  }

  double time_us(int warmup, int iters, RunContext& ctx, const std::string& what) override {
    DeviceGuard g(rank_.r.device());
    rank_.r.fill_check(0, !plan_.in_place, stream_);
    Armed armed(*ctx.watchdog, what);
    for (int i = 0; i < warmup; ++i) {
      ctx.before_run();
      enqueue();
    }
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const auto cpu_start = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaEventRecord(start_->get(), stream_));
    const int agg = cfg_.agg_iters;
    for (int i = 0; i < iters; ++i) {
      ctx.before_run();
      enqueue_aggregated(agg);
      // -z 1: the host waits for each collective, as nccl-tests' blocking mode.
      if (cfg_.blocking) CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    // -C 1: the host's time from the first launch to the last completion.
    return stop_timed_loop(stream_, start_->get(), stop_->get(), cfg_.cputime, cpu_start,
                           static_cast<double>(iters) * agg);
  }

  std::int64_t check(std::int64_t iter, RunContext& ctx, const std::string& what) override {
    DeviceGuard g(rank_.r.device());
    rank_.r.fill_check(iter, true, stream_);
    Armed armed(*ctx.watchdog, what);
    ctx.before_run();
    enqueue();
    rank_.r.reset_wrong(stream_);
    rank_.r.enqueue_check(iter, cfg_.root, count_, stream_);
    return rank_.r.wrong(stream_);
  }

 private:
  // -m n: one timed iteration. NCCL's own collectives go in one group, as
  // nccl-tests aggregates them, their finishing kernels (avg) after it; a
  // schedule's runs one after another (their steps are groups already).
  void enqueue_aggregated(int n) {
    if (n == 1) {
      enqueue();
      return;
    }
    if (native_) {
      NCCL_CHECK(ncclGroupStart());
      for (int k = 0; k < n; ++k)
        nccl_native_enqueue(plan_.collective, comm_, plan_.rank, plan_.ranks, cfg_.root, count_,
                            plan_.type, plan_.op, rank_.r.input(), rank_.r.output(), stream_);
      NCCL_CHECK(ncclGroupEnd());
      for (int k = 0; k < n; ++k)
        nccl_native_finish(plan_.collective, plan_.rank, plan_.ranks, cfg_.root, count_, plan_.type,
                           plan_.op, rank_.r.output(), stream_);
      return;
    }
    for (int k = 0; k < n; ++k) enqueue();
  }

  // One run of the collective, enqueued on the stream.
  void enqueue() {
    const AreaBases& b = rank_.r.bases();
    if (native_) {
      nccl_native_enqueue(plan_.collective, comm_, plan_.rank, plan_.ranks, cfg_.root, count_,
                          plan_.type, plan_.op, rank_.r.input(), rank_.r.output(), stream_);
      nccl_native_finish(plan_.collective, plan_.rank, plan_.ranks, cfg_.root, count_, plan_.type,
                         plan_.op, rank_.r.output(), stream_);
      return;
    }
    for (const PlanStep& s : plan_.steps) {
      if (s.sends + s.recvs > 0) {
        NCCL_CHECK(ncclGroupStart());
        // NCCL skips zero-byte point-to-point operations, so a barrier's
        // messages carry one byte (from/to a scratch byte) to keep their
        // synchronisation.
        for (std::uint32_t i = 0; i < s.recvs; ++i) {
          const PlanMessage& m = plan_.recvs[s.first_recv + i];
          const bool empty = m.ref.bytes == 0;
          NCCL_CHECK(ncclRecv(empty ? dummy_.data() : b.at(m.ref),
                              empty ? 1 : static_cast<std::size_t>(m.ref.bytes), ncclInt8, m.peer,
                              comm_, stream_));
        }
        for (std::uint32_t i = 0; i < s.sends; ++i) {
          const PlanMessage& m = plan_.sends[s.first_send + i];
          const bool empty = m.ref.bytes == 0;
          NCCL_CHECK(ncclSend(empty ? dummy_.data() : b.at(m.ref),
                              empty ? 1 : static_cast<std::size_t>(m.ref.bytes), ncclInt8, m.peer,
                              comm_, stream_));
        }
        NCCL_CHECK(ncclGroupEnd());
      }
      for (std::uint32_t i = 0; i < s.locals; ++i) {
        const PlanLocal& l = plan_.locals[s.first_local + i];
        if (l.src.bytes == 0) continue;
        if (l.reduce) {
          device_reduce(plan_.type, plan_.op, b.at(l.dst), b.at(l.src),
                        l.src.bytes / plan_.elem_size, stream_,
                        l.has_also ? b.at(l.also) : nullptr);
        } else if (l.src.area != l.dst.area || l.src.offset != l.dst.offset) {
          CUDA_CHECK(cudaMemcpyAsync(b.at(l.dst), b.at(l.src),
                                     static_cast<std::size_t>(l.src.bytes),
                                     cudaMemcpyDeviceToDevice, stream_));
        }
      }
    }
    if (plan_.finishes_avg())
      device_finish_avg(plan_.type, rank_.r.output(), plan_.output_bytes / plan_.elem_size,
                        plan_.ranks, stream_);
  }

  // DeviceRank keeps a pointer to the plan: constructed after plan_.
  struct Holder {
    Holder(int device, const CompiledPlan& p) : r(p, device) {}
    DeviceRank r;
  };
  std::unique_ptr<Schedule> schedule_;
  CompiledPlan plan_;
  bool native_;
  ncclComm_t comm_;
  cudaStream_t stream_;
  const BenchConfig& cfg_;
  Holder rank_;
  DeviceBuffer dummy_;
  // -R 1: the rank's input and output storage registered with NCCL; after
  // rank_, so deregistered before its buffers are freed.
  std::vector<std::unique_ptr<NcclRegistration>> registered_;
  std::int64_t count_;
  std::unique_ptr<CudaEvent> start_, stop_;
};

class NcclBackend final : public MpiBackendBase {
 public:
  NcclBackend(const BenchConfig& cfg, int rank, int ranks) : MpiBackendBase(cfg, rank, ranks) {
    const int devices = cuda_device_count();
    device_ = local_rank() % devices;
    CUDA_CHECK(cudaSetDevice(device_));
    info_ = device_info(device_);
    ncclUniqueId id;
    if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD));
    NCCL_CHECK(ncclCommInitRank(&comm_, ranks_, id, rank_));
    stream_ = std::make_unique<CudaStream>(device_);
    hosts_ = gather_hosts("gpu", [&] {
      // nccl-tests' fields: "device %2d [%04x:%02x:%02x] name".
      char text[256];
      std::snprintf(text, sizeof text, "device %2d [%s] %s", device_,
                    nccl_tests_bus_id(info_.pci_bus_id).c_str(), info_.name.c_str());
      return std::string(text);
    }());
  }
  ~NcclBackend() override {
    if (comm_) ncclCommDestroy(comm_);
  }

  std::string describe() override {
    return std::to_string(ranks_) + " ranks on " + std::to_string(hosts_.hosts) + " host(s), " +
           "CUDA driver " + cuda_version_text(cuda_driver_version()) + " runtime " +
           cuda_version_text(cuda_runtime_version()) + ", NCCL " + nccl_version_text() + ", " +
           mpi_library();
  }
  std::vector<std::string> rank_lines() override {
    std::vector<std::string> lines;
    for (const auto& d : hosts_.devices) {
      char line[512];
      std::snprintf(line, sizeof line, "#  Rank %2d Group  0 Pid %6d on %10s %s",
                    d["rank"].get<int>(), d["pid"].get<int>(), d["host"].get<std::string>().c_str(),
                    d.value("device_text", std::string()).c_str());
      lines.push_back(line);
    }
    return lines;
  }

  std::unique_ptr<Measurement> prepare(const std::string& algorithm, const SizeMapping& size,
                                       DataType type, RedOp op, bool in_place,
                                       std::string& unavailable) override {
    const Collective c = cfg_.collective;
    const std::int64_t count = size.spec_count;
    if (algorithm == kNative) {
      unavailable = agree(nccl_native_unsupported(c, in_place));
      if (!unavailable.empty()) return nullptr;
      return std::make_unique<NcclMeasurement>(
          nullptr, io_plan(c, ranks_, rank_, cfg_.root, count, type, op, in_place), true, count,
          comm_, device_, stream_->get(), cfg_);
    }
    std::unique_ptr<Schedule> s = schedule_for(algorithm, count, type);
    unavailable = agree(outside_declaration(s->spec(), in_place));
    if (!unavailable.empty()) return nullptr;
    if (in_place) {
      unavailable =
          agree(in_place_hazard(*s, rank_, in_place_layout(c, ranks_, rank_, cfg_.root, count)));
      if (!unavailable.empty()) return nullptr;
    }
    CompiledPlan plan = compile_plan(*s, rank_, type, op, in_place);
    return std::make_unique<NcclMeasurement>(std::move(s), std::move(plan), false, count, comm_,
                                             device_, stream_->get(), cfg_);
  }

  void report_extras(Json& extra) override {
    extra["hosts"] = hosts_.hosts;
    extra["devices"] = hosts_.devices;
    extra["mpi_library"] = mpi_library();
    extra["cuda_driver_version"] = cuda_version_text(cuda_driver_version());
    extra["cuda_runtime_version"] = cuda_version_text(cuda_runtime_version());
    extra["nccl_version"] = nccl_version_text();
  }

 private:
  int device_ = 0;
  DeviceInfo info_;
  ncclComm_t comm_ = nullptr;
  std::unique_ptr<CudaStream> stream_;
};
#endif  // COLLKIT_HAVE_NCCL_BACKEND

// A backend this process can run under mpirun: cuda never (one process
// drives every rank), nccl only in a build with it and with a device.
void check_backend_runs_here(const BenchConfig& cfg) {
  if (cfg.backend == Backend::cuda)
    throw UsageError("--backend cuda is one process driving every rank: run it without mpirun");
#ifdef COLLKIT_HAVE_NCCL_BACKEND
  if (cfg.backend == Backend::nccl) {
    const std::string problem = cuda_device_problem();
    if (!problem.empty()) throw UsageError(problem);
  }
#else
  if (cfg.backend == Backend::nccl)
    throw UsageError(
        "--backend 'nccl' is not available in this build (it needs CUDA, NCCL and MPI; "
        "configure with COLLKIT_WITH_CUDA=ON, COLLKIT_WITH_MPI=ON and NCCL installed)");
#endif
}

// Every check that needs no MPI, before MPI starts: a usage error is one
// line from rank 0 (the others exit quietly) and exit code 2, with no
// MPI_Abort banner. What needs the rank count is checked here when the
// launcher's environment gives it, else again after MPI_Init.
BenchConfig check_before_mpi(const BenchArgs& args, const LaunchEnv& env) {
  BenchConfig cfg = parse_config(args, env.size);
  FaultInjector::from_environment();
  check_backend_runs_here(cfg);
  if (env.rank == 0 && !cfg.json_path.empty()) check_writable(cfg.json_path);
  const int local_size = env.local_size > 0 ? env.local_size : env.size;
  if (env.size > 0 && cfg.backend == Backend::mpi) check_host_memory(cfg, env.size, local_size);
#ifdef COLLKIT_HAVE_NCCL_BACKEND
  if (env.size > 0 && cfg.backend == Backend::nccl) {
    // One GPU per process: local rank modulo the visible devices.
    const int devices = cuda_device_count();
    const int device = local_rank() % devices;
    const int sharing = (local_size - device + devices - 1) / devices;
    const DeviceInfo info = device_info(device);
    check_device_memory(cfg, env.size, sharing, device_free_memory(device),
                        static_cast<std::int64_t>(info.memory_bytes),
                        "device " + std::to_string(device) + " (" + info.name + ")");
  }
#endif
  return cfg;
}

void run_mpi_bench(const BenchArgs& args, const BenchSinkFactory& make_sink) {
  const LaunchEnv env = launch_environment();
  try {
    check_before_mpi(args, env);
  } catch (const Error&) {
    if (env.rank == 0) throw;  // printed by the command line: one line, its exit code
    std::_Exit(2);
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  // Same flags everywhere, or every later collective could mismatch.
  const std::uint64_t h = args_hash(args);
  std::uint64_t lo = h, hi = h;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi)
    usage_abort(rank,
                "the ranks were started with different bench flags; every rank must get "
                "the same command line");

  BenchConfig cfg;
  FaultInjector faults;
  try {
    cfg = parse_config(args, ranks);
    faults = FaultInjector::from_environment();
    check_backend_runs_here(cfg);
    if (rank == 0 && !cfg.json_path.empty()) check_writable(cfg.json_path);
    if (env.local_size == 0) {
      MPI_Comm host;
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
      int here = 1;
      MPI_Comm_size(host, &here);
      MPI_Comm_free(&host);
      if (cfg.backend == Backend::mpi) check_host_memory(cfg, ranks, here);
    }
  } catch (const Error& e) {
    usage_abort(rank, e.what());
  }
  // A rank-0-only failure (check_writable) aborted above; the rest is shared.
  std::int64_t total_wrong = 0;
  try {
    Watchdog watchdog(cfg.timeout_s, [rank](const std::string& what) {
      std::fprintf(stderr, "collkit bench: rank %d: error: %s\n", rank, what.c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
      std::_Exit(1);
    });
    RunContext ctx{&watchdog, &faults, rank, 1};
    std::unique_ptr<BenchBackend> backend;
#ifdef COLLKIT_HAVE_NCCL_BACKEND
    if (cfg.backend == Backend::nccl) backend = std::make_unique<NcclBackend>(cfg, rank, ranks);
#endif
    if (!backend) backend = std::make_unique<MpiBackend>(cfg, rank, ranks);
    std::unique_ptr<BenchSink> sink = backend->prints() ? make_sink(args) : nullptr;
    total_wrong = run_harness(cfg, *backend, ctx, sink.get());
  } catch (const UsageError& e) {
    usage_abort(rank, e.what());
  } catch (const Error& e) {
    runtime_abort(rank, e.what(), e.exit_code());
  } catch (const std::exception& e) {
    runtime_abort(rank, e.what(), 1);
  }
  MPI_Finalize();
  if (total_wrong > 0 && rank == 0)
    throw RuntimeFailure(std::to_string(total_wrong) +
                         " wrong element(s) in the correctness checks (see #wrong)");
}

}  // namespace

void run_bench(const BenchArgs& args, const BenchSinkFactory& make_sink) {
  // The cuda backend is one process with no MPI at all. (Under mpirun the
  // other backends' flags, --engine included, are checked by
  // check_before_mpi, which lets only rank 0 print.)
  if (args.backend == "cuda") {
    parse_engine(args.backend, args.engine);  // named before anything else, on every build
#ifdef COLLKIT_HAVE_CUDA
    run_cuda_bench(args, make_sink);
    return;
#else
    throw UsageError(
        "this collkit was built without CUDA (COLLKIT_WITH_CUDA=OFF): bench --backend cuda is "
        "unavailable");
#endif
  }
  run_mpi_bench(args, make_sink);
}

}  // namespace collkit::realrun

#else  // !COLLKIT_HAVE_MPI

#include <string>

namespace collkit::realrun {

void run_bench(const BenchArgs& args, const BenchSinkFactory& make_sink) {
  parse_engine(args.backend, args.engine);  // named before anything else, on every build
  if (args.backend == "cuda") {
#ifdef COLLKIT_HAVE_CUDA
    run_cuda_bench(args, make_sink);
    return;
#else
    throw UsageError(
        "this collkit was built without CUDA (COLLKIT_WITH_CUDA=OFF): bench --backend cuda is "
        "unavailable");
#endif
  }
  parse_bench_backend(args.backend);  // an unknown name is reported as such
  throw UsageError("this collkit was built without MPI (COLLKIT_WITH_MPI=OFF): bench --backend " +
                   args.backend + " is unavailable");
}

}  // namespace collkit::realrun

#endif  // COLLKIT_HAVE_MPI
