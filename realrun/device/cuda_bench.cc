#include "realrun/device/cuda_bench.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "realrun/device/cuda_interpreter.h"
#include "realrun/device/cuda_streams.h"
#include "realrun/device/cuda_util.h"
#include "realrun/device/device_rank.h"
#include "realrun/device_program.h"
#include "realrun/harness.h"
#include "realrun/multirank.h"
#ifdef COLLKIT_HAVE_NCCL
#include "realrun/device/nccl_native.h"
#endif

namespace collkit::realrun {
namespace {

// An instantiated CUDA graph (-G), destroyed with its template.
class CudaGraph {
 public:
  CudaGraph() = default;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  ~CudaGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  // Ends the capture on `stream`; when `instantiate`, makes the executable.
  void end_capture(cudaStream_t stream, bool instantiate) {
    const cudaError_t e = cudaStreamEndCapture(stream, &graph_);
    if (!instantiate) return;
    CUDA_CHECK(e);
    CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  cudaGraphExec_t exec() const { return exec_; }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// How the timed loop runs: -G graph launches, -z blocking, -C CPU time.
struct Timing {
  int graph_launches = 0;
  bool blocking = false;
  bool cputime = false;
  int agg_iters = 1;       // -m
  int local_register = 0;  // -R (NCCL's own collectives only)
  static Timing of(const BenchConfig& cfg) {
    return Timing{cfg.graph_launches, cfg.blocking, cfg.cputime, cfg.agg_iters, cfg.local_register};
  }
};

// The per-rank device buffers and the timing scaffolding shared by the
// schedule and native measurements.
class CudaMeasurementBase : public Measurement {
 public:
  CudaMeasurementBase(std::vector<CompiledPlan> plans, const std::vector<int>& rank_device,
                      int root, std::int64_t count, const Timing& timing)
      : plans_(std::move(plans)),
        root_(root),
        count_(count),
        graph_launches_(timing.graph_launches),
        blocking_(timing.blocking),
        cputime_(timing.cputime),
        agg_(timing.agg_iters) {
    for (std::size_t r = 0; r < plans_.size(); ++r)
      ranks_.push_back(std::make_unique<DeviceRank>(plans_[r], rank_device[r]));
  }

  double time_us(int warmup, int iters, RunContext& ctx, const std::string& what) override {
    const int p = static_cast<int>(plans_.size());
    for (int r = 0; r < p; ++r) ranks_[r]->fill_check(0, !plans_[r].in_place, stream(r));
    Armed armed(*ctx.watchdog, what);
    for (int i = 0; i < warmup; ++i) {
      ctx.before_run();
      enqueue();
    }
    DeviceGuard g(ranks_[0]->device());
    cudaStream_t main = main_stream();
    join(main);
    if (graph_launches_ > 0) {
      // As nccl-tests -G: the -n runs captured once, the graph launched -G
      // times; the capture itself is not timed.
      CudaGraph graph;
      capture(main, iters, graph);
      if (cputime_) CUDA_CHECK(cudaStreamSynchronize(main));  // -C: the host starts the clock
      const auto cpu_start = std::chrono::steady_clock::now();
      CUDA_CHECK(cudaEventRecord(start_->get(), main));
      for (int l = 0; l < graph_launches_; ++l) {
        for (int i = 0; i < iters; ++i) ctx.before_run();
        CUDA_CHECK(cudaGraphLaunch(graph.exec(), main));
        // -z 1: the host waits for each launch (a graph cannot hold a host wait).
        if (blocking_) CUDA_CHECK(cudaStreamSynchronize(main));
      }
      return stop_timing(main, cpu_start, static_cast<double>(iters) * agg_ * graph_launches_);
    }
    // -C 1: the warm-up done first, so that the host's clock starts with
    // the first timed launch (as the nccl backend does).
    if (cputime_) CUDA_CHECK(cudaStreamSynchronize(main));
    const auto cpu_start = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaEventRecord(start_->get(), main));
    start_all(start_->get());
    for (int i = 0; i < iters; ++i) {
      ctx.before_run();
      enqueue_aggregated(agg_);
      if (blocking_) {
        // -z 1: as nccl-tests' blocking mode, the host waits for each
        // collective (every rank's stream) before launching the next.
        join(main);
        CUDA_CHECK(cudaStreamSynchronize(main));
      }
    }
    join(main);
    return stop_timing(main, cpu_start, static_cast<double>(iters) * agg_);
  }

  std::int64_t check(std::int64_t iter, RunContext& ctx, const std::string& what) override {
    const int p = static_cast<int>(plans_.size());
    for (int r = 0; r < p; ++r) ranks_[r]->fill_check(iter, true, stream(r));
    Armed armed(*ctx.watchdog, what);
    ctx.before_run();
    enqueue();
    for (int r = 0; r < p; ++r) {
      ranks_[r]->reset_wrong(stream(r));
      ranks_[r]->enqueue_check(iter, root_, count_, stream(r));
    }
    std::int64_t wrong = 0;
    for (int r = 0; r < p; ++r) wrong += ranks_[r]->wrong(stream(r));
    return wrong;
  }

 protected:
  virtual cudaStream_t stream(int rank) = 0;
  virtual cudaStream_t main_stream() = 0;
  virtual void enqueue() = 0;
  // -m: `n` runs as one timed iteration; the schedules' runs are launched
  // one after another (collkit's own have no group launch).
  virtual void enqueue_aggregated(int n) {
    for (int k = 0; k < n; ++k) enqueue();
  }
  virtual void join(cudaStream_t main) = 0;
  virtual void start_all(cudaEvent_t start) = 0;
  // Ends the timed loop on `main`: time per run in microseconds, from the
  // events, or with -C 1 the host's time from `cpu_start` to the completion
  // of the last run.
  double stop_timing(cudaStream_t main, std::chrono::steady_clock::time_point cpu_start,
                     double runs) {
    return stop_timed_loop(main, start_->get(), stop_->get(), cputime_, cpu_start, runs);
  }
  void make_events() {
    DeviceGuard g(ranks_[0]->device());
    start_ = std::make_unique<CudaEvent>(ranks_[0]->device(), true);
    stop_ = std::make_unique<CudaEvent>(ranks_[0]->device(), true);
    fork_ = std::make_unique<CudaEvent>(ranks_[0]->device(), false);
  }
  // Captures `iters` runs into `graph`: the rank streams join the capture of
  // `main` through an event recorded in it, and `main` joins them at the end,
  // so every command of every stream, with the event order between them,
  // becomes one graph.
  void capture(cudaStream_t main, int iters, CudaGraph& graph) {
    CUDA_CHECK(cudaStreamBeginCapture(main, cudaStreamCaptureModeRelaxed));
    try {
      CUDA_CHECK(cudaEventRecord(fork_->get(), main));
      start_all(fork_->get());
      for (int i = 0; i < iters; ++i) enqueue_aggregated(agg_);
      join(main);
    } catch (...) {
      graph.end_capture(main, false);
      throw;
    }
    graph.end_capture(main, true);
  }

  std::vector<CompiledPlan> plans_;
  std::vector<std::unique_ptr<DeviceRank>> ranks_;
  int root_;
  std::int64_t count_;
  int graph_launches_;
  bool blocking_;
  bool cputime_;
  int agg_;
  std::unique_ptr<CudaEvent> start_, stop_, fork_;
};

// COLLKIT_RELEASE_AT_STEP_END=1: senders wait for their receivers at the end
// of each step, as the first compiler did (compile_multirank), to measure
// what waiting only before an overwrite saves.
bool release_at_step_end() {
  return env_tuning("COLLKIT_RELEASE_AT_STEP_END", 0, 1, 0,
                    "1: senders wait for their receivers at the end of each step") != 0;
}

// COLLKIT_INTERPRETER_LL_BYTES: the largest message the interpreter sends
// as LL (realrun/interpreter.h); 0 sends none. LL runs where every rank is
// on one GPU: its slots are written once per launch, and only one stream's
// launches are ordered with each other.
std::int64_t interpreter_ll_bytes() {
  return env_tuning("COLLKIT_INTERPRETER_LL_BYTES", 0, std::int64_t{1} << 30, kInterpreterLlBytes,
                    "the largest message sent as LL (0: none)");
}

class ScheduleMeasurement final : public CudaMeasurementBase {
 public:
  ScheduleMeasurement(std::unique_ptr<Schedule> schedule, std::vector<CompiledPlan> plans,
                      const std::vector<int>& rank_device, int root, std::int64_t count,
                      const Timing& timing)
      : CudaMeasurementBase(std::move(plans), rank_device, root, count, timing),
        schedule_(std::move(schedule)) {
    for (const CompiledPlan& p : plans_) plan_ptrs_.push_back(&p);
    for (const auto& r : ranks_) bases_.push_back(r->bases());
    engine_ = std::make_unique<CudaStreams>(rank_device);
    program_ =
        compile_multirank(plan_ptrs_, &CudaStreams::can_read, engine_.get(), release_at_step_end());
    engine_->set_events(program_.event_stream);
    main_ = std::make_unique<CudaStream>(rank_device[0]);
    make_events();
  }

 protected:
  cudaStream_t stream(int rank) override { return engine_->stream(rank); }
  cudaStream_t main_stream() override { return main_->get(); }
  void enqueue() override { replay(program_, plan_ptrs_, bases_, *engine_); }
  void join(cudaStream_t main) override { engine_->join_into(main); }
  void start_all(cudaEvent_t start) override { engine_->all_wait(start); }

 private:
  std::unique_ptr<Schedule> schedule_;
  std::vector<const CompiledPlan*> plan_ptrs_;
  std::vector<AreaBases> bases_;
  MultiRankProgram program_;
  std::unique_ptr<CudaStreams> engine_;
  std::unique_ptr<CudaStream> main_;
};

// The interpreter engine: every rank's device program in one persistent
// kernel launch per GPU per run (realrun/device/cuda_interpreter.h). Rank r's
// stream is its GPU's interpreter stream; -G captures the launches (the
// iteration counter lives in device memory, so the graph replays them).
class InterpreterMeasurement final : public CudaMeasurementBase {
 public:
  InterpreterMeasurement(std::unique_ptr<Schedule> schedule, std::vector<CompiledPlan> plans,
                         const std::vector<int>& rank_device, int root, std::int64_t count,
                         const Timing& timing, std::unique_ptr<CudaInterpreter> interpreter,
                         DeviceProgram program)
      : CudaMeasurementBase(std::move(plans), rank_device, root, count, timing),
        schedule_(std::move(schedule)),
        interpreter_(std::move(interpreter)) {
    std::vector<AreaBases> bases;
    for (const auto& r : ranks_) bases.push_back(r->bases());
    interpreter_->load(std::move(program), bases);
    main_ = std::make_unique<CudaStream>(rank_device[0]);
    for (int d : interpreter_->devices()) joins_.push_back(std::make_unique<CudaEvent>(d, false));
    make_events();
  }

  double time_us(int warmup, int iters, RunContext& ctx, const std::string& what) override {
    const double us = CudaMeasurementBase::time_us(warmup, iters, ctx, what);
    interpreter_->check_errors();
    return us;
  }
  std::int64_t check(std::int64_t iter, RunContext& ctx, const std::string& what) override {
    const std::int64_t wrong = CudaMeasurementBase::check(iter, ctx, what);
    interpreter_->check_errors();  // a stopped program explains the wrong elements
    return wrong;
  }

 protected:
  cudaStream_t stream(int rank) override {
    return interpreter_->stream_of_device(interpreter_->device(rank));
  }
  cudaStream_t main_stream() override { return main_->get(); }
  void enqueue() override { interpreter_->enqueue(); }
  void join(cudaStream_t main) override {
    const std::vector<int>& devices = interpreter_->devices();
    for (std::size_t i = 0; i < devices.size(); ++i) {
      DeviceGuard g(devices[i]);
      CUDA_CHECK(cudaEventRecord(joins_[i]->get(), interpreter_->stream_of_device(devices[i])));
      CUDA_CHECK(cudaStreamWaitEvent(main, joins_[i]->get(), 0));
    }
  }
  void start_all(cudaEvent_t start) override {
    for (int d : interpreter_->devices()) {
      DeviceGuard g(d);
      CUDA_CHECK(cudaStreamWaitEvent(interpreter_->stream_of_device(d), start, 0));
    }
  }

 private:
  std::unique_ptr<Schedule> schedule_;
  std::unique_ptr<CudaInterpreter> interpreter_;
  std::unique_ptr<CudaStream> main_;
  std::vector<std::unique_ptr<CudaEvent>> joins_;  // one per GPU
};

#ifdef COLLKIT_HAVE_NCCL
// ncclCommInitAll over ranks on distinct GPUs, made once per bench run.
class NcclWorld {
 public:
  explicit NcclWorld(const std::vector<int>& devices) : devices_(devices), comms_(devices.size()) {
    NCCL_CHECK(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices_.data()));
    for (int d : devices_) streams_.push_back(std::make_unique<CudaStream>(d));
  }
  ~NcclWorld() {
    for (ncclComm_t c : comms_)
      if (c) ncclCommDestroy(c);
  }
  ncclComm_t comm(int r) const { return comms_[r]; }
  cudaStream_t stream(int r) const { return streams_[r]->get(); }
  int size() const { return static_cast<int>(devices_.size()); }

 private:
  std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
  std::vector<std::unique_ptr<CudaStream>> streams_;
};

class NativeMeasurement final : public CudaMeasurementBase {
 public:
  NativeMeasurement(NcclWorld& world, Collective c, std::vector<CompiledPlan> plans,
                    const std::vector<int>& rank_device, int root, std::int64_t count,
                    const Timing& timing)
      : CudaMeasurementBase(std::move(plans), rank_device, root, count, timing),
        world_(world),
        c_(c) {
    main_ = std::make_unique<CudaStream>(rank_device[0]);
    for (int d : rank_device) joins_.push_back(std::make_unique<CudaEvent>(d, false));
    make_events();
    if (timing.local_register == 1)
      for (std::size_t r = 0; r < plans_.size(); ++r)
        for (auto& reg : register_storage(world_.comm(static_cast<int>(r)), *ranks_[r], plans_[r]))
          registered_.push_back(std::move(reg));
  }

 protected:
  cudaStream_t stream(int rank) override { return world_.stream(rank); }
  cudaStream_t main_stream() override { return main_->get(); }
  void enqueue() override { enqueue_aggregated(1); }
  // -m n: as nccl-tests, the n collectives of an iteration in one group;
  // then each one's finishing kernel (avg), which may not run inside it.
  void enqueue_aggregated(int n) override {
    const int p = world_.size();
    NCCL_CHECK(ncclGroupStart());
    for (int k = 0; k < n; ++k) {
      for (int r = 0; r < p; ++r) {
        const CompiledPlan& pl = plans_[r];
        nccl_native_enqueue(c_, world_.comm(r), r, p, root_, count_, pl.type, pl.op,
                            ranks_[r]->input(), ranks_[r]->output(), world_.stream(r));
      }
    }
    NCCL_CHECK(ncclGroupEnd());
    for (int k = 0; k < n; ++k) {
      for (int r = 0; r < p; ++r) {
        DeviceGuard g(ranks_[r]->device());
        nccl_native_finish(c_, r, p, root_, count_, plans_[r].type, plans_[r].op,
                           ranks_[r]->output(), world_.stream(r));
      }
    }
  }
  void join(cudaStream_t main) override {
    for (int r = 0; r < world_.size(); ++r) {
      DeviceGuard g(ranks_[r]->device());
      CUDA_CHECK(cudaEventRecord(joins_[r]->get(), world_.stream(r)));
      CUDA_CHECK(cudaStreamWaitEvent(main, joins_[r]->get(), 0));
    }
  }
  void start_all(cudaEvent_t start) override {
    for (int r = 0; r < world_.size(); ++r) {
      DeviceGuard g(ranks_[r]->device());
      CUDA_CHECK(cudaStreamWaitEvent(world_.stream(r), start, 0));
    }
  }

 private:
  NcclWorld& world_;
  Collective c_;
  std::unique_ptr<CudaStream> main_;
  std::vector<std::unique_ptr<CudaEvent>> joins_;
  // -R 1; deregistered before the base class frees the buffers.
  std::vector<std::unique_ptr<NcclRegistration>> registered_;
};
#endif  // COLLKIT_HAVE_NCCL

class CudaBackend final : public BenchBackend {
 public:
  CudaBackend(const BenchConfig& cfg, int ranks) : cfg_(cfg), ranks_(ranks) {
    devices_ = cuda_device_count();
    for (int r = 0; r < ranks_; ++r) rank_device_.push_back(r % devices_);
    if (cfg_.engine != CudaEngine::streams) {
      interpreter_problem_ = CudaInterpreter(rank_device_).problem(cfg_.dtypes.front());
      // One block per multiprocessor per lane at most, by default.
      const int per_device = (ranks_ + devices_ - 1) / devices_;
      int sms = 0;
      for (int d = 0; d < std::min(devices_, ranks_); ++d) {
        const int n = info(d).sms;
        sms = d == 0 ? n : std::min(sms, n);
      }
      lane_cap_ = std::max(1, sms / per_device);
      lanes_override_ = static_cast<int>(
          env_tuning("COLLKIT_INTERPRETER_LANES", 1, 4096, 0, "thread blocks per rank"));
      if (std::min(ranks_, devices_) == 1) {
        ll_bytes_ = interpreter_ll_bytes();
        ll_size_ = env_tuning("COLLKIT_INTERPRETER_LL_SIZE", 0, std::int64_t{1} << 40,
                              kInterpreterLlSize, "the largest collective size with LL messages");
      }
      ll_forward_ = env_tuning("COLLKIT_INTERPRETER_LL_FORWARD", 0, 1, 1,
                               "0: an LL receive does not send its result on itself") != 0;
      // COLLKIT_INTERPRETER_LL128_ABOVE: sizes above it send their LL
      // messages as LL128 lines (120 data bytes per 128; 0: at every size).
      ll128_above_ =
          env_tuning("COLLKIT_INTERPRETER_LL128_ABOVE", 0, std::int64_t{1} << 40,
                     kInterpreterLl128Above, "the size above which LL messages go as LL128 lines");
    }
  }

  int ranks() const override { return ranks_; }
  std::string describe() override {
    const int gpus = std::min(ranks_, devices_);
    std::string s = std::to_string(ranks_) + " ranks on " + std::to_string(gpus) + " GPU(s)";
    if (ranks_ > devices_)
      s += " (virtual ranks: up to " + std::to_string((ranks_ + devices_ - 1) / devices_) +
           " per GPU)";
    s += ", CUDA driver " + cuda_version_text(cuda_driver_version()) + " runtime " +
         cuda_version_text(cuda_runtime_version());
#ifdef COLLKIT_HAVE_NCCL
    s += ", NCCL " + nccl_version_text();
#else
    s += ", built without NCCL";
#endif
    return s + ", engine " + engine_text();
  }
  std::vector<std::string> rank_lines() override {
    std::vector<std::string> lines;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    for (int r = 0; r < ranks_; ++r) {
      const DeviceInfo d = info(rank_device_[r]);
      char line[512];
      std::snprintf(line, sizeof line, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s", r,
                    static_cast<int>(getpid()), host, d.index,
                    nccl_tests_bus_id(d.pci_bus_id).c_str(), d.name.c_str());
      lines.push_back(line);
    }
    return lines;
  }

  std::unique_ptr<Measurement> prepare(const std::string& algorithm, const SizeMapping& size,
                                       DataType type, RedOp op, bool in_place,
                                       std::string& unavailable) override {
    const Collective c = cfg_.collective;
    const std::int64_t count = size.spec_count;
    if (algorithm == kNative) return prepare_native(size, type, op, in_place, unavailable);
    std::unique_ptr<Schedule> s =
        make_schedule(bench_schedule_spec(cfg_, algorithm, ranks_, count, type));
    unavailable = outside_declaration(s->spec(), in_place);
    if (!unavailable.empty()) return nullptr;
    if (in_place) {
      for (int r = 0; r < ranks_; ++r) {
        unavailable = in_place_hazard(*s, r, in_place_layout(c, ranks_, r, cfg_.root, count));
        if (!unavailable.empty()) return nullptr;
      }
    }
    std::vector<CompiledPlan> plans;
    for (int r = 0; r < ranks_; ++r) plans.push_back(compile_plan(*s, r, type, op, in_place));
    if (cfg_.engine != CudaEngine::streams) {
      std::string why = interpreter_problem_;
      if (why.empty()) {
        auto interpreter = std::make_unique<CudaInterpreter>(rank_device_);
        std::vector<const CompiledPlan*> ptrs;
        ptrs.reserve(plans.size());
        for (const CompiledPlan& p : plans) ptrs.push_back(&p);
        // LL for the small messages of a small collective (the table's size
        // column, max(send, recv) bytes per rank): beyond ll_size_ its
        // halved bandwidth costs more than the handshakes it saves.
        // Above ll128_above_, as LL128 lines (more data per byte moved).
        const LlChoice choice = choose_ll(size.bytes, ll_bytes_, ll_size_, ll128_above_);
        const std::int64_t ll = choice.max_bytes;
        const MultiRankProgram program = compile_multirank(
            ptrs, &CudaInterpreter::can_read, interpreter.get(), release_at_step_end(), ll);
        const int max_lanes = interpreter->max_lanes(type);
        if (max_lanes < 1) why = interpreter->problem(type);
        if (max_lanes >= 1 && lanes_override_ > max_lanes)
          throw UsageError("COLLKIT_INTERPRETER_LANES=" + std::to_string(lanes_override_) +
                           ": at most " + std::to_string(max_lanes) +
                           " thread blocks per rank are resident at once here");
        const int lanes = lanes_override_ > 0
                              ? lanes_override_
                              : choose_lanes(ptrs, std::min(max_lanes, lane_cap_), ll);
        DeviceProgram dp =
            compile_device_program(ptrs, program, lanes, ll_forward_, choice.protocol);
        if (why.empty()) why = dp.unsupported;
        if (why.empty())
          return std::make_unique<InterpreterMeasurement>(
              std::move(s), std::move(plans), rank_device_, cfg_.root, count, Timing::of(cfg_),
              std::move(interpreter), std::move(dp));
      }
      if (cfg_.engine == CudaEngine::interpreter) {
        unavailable = "the interpreter cannot run this plan: " + why;
        return nullptr;
      }
      // A plan the interpreter cannot run (the reason for all of them is
      // in the title and the report already).
      if (interpreter_problem_.empty()) fallbacks_.insert({algorithm, why});
    }
    return std::make_unique<ScheduleMeasurement>(std::move(s), std::move(plans), rank_device_,
                                                 cfg_.root, count, Timing::of(cfg_));
  }

  void report_extras(Json& extra) override {
    extra["hosts"] = 1;
    Json devices = Json::array();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    for (int r = 0; r < ranks_; ++r) {
      const DeviceInfo d = info(rank_device_[r]);
      devices.push_back({{"rank", r},
                         {"host", host},
                         {"pid", static_cast<int>(getpid())},
                         {"kind", "gpu"},
                         {"device", d.index},
                         {"name", d.name},
                         {"pci_bus_id", d.pci_bus_id}});
    }
    extra["devices"] = devices;
    extra["gpus"] = std::min(ranks_, devices_);
    extra["virtual_ranks"] = ranks_ > devices_;
    // How collkit's schedules ran (--engine), and where the default
    // interpreter fell back to streams.
    extra["engine"] = engine_name();
    extra["engine_requested"] = to_string(cfg_.engine);
    if (engine_name() == "interpreter") {
      extra["interpreter_ll_max_bytes"] = ll_bytes_;
      extra["interpreter_ll_max_size"] = ll_bytes_ > 0 ? ll_size_ : 0;
      extra["interpreter_ll128_above"] = ll_bytes_ > 0 ? std::min(ll128_above_, ll_size_) : 0;
    }
    if (cfg_.engine == CudaEngine::automatic && !interpreter_problem_.empty())
      extra["interpreter_unavailable"] = interpreter_problem_;
    if (!fallbacks_.empty()) {
      Json list = Json::array();
      for (const auto& [algorithm, why] : fallbacks_)
        list.push_back({{"algorithm", algorithm}, {"engine", "streams"}, {"reason", why}});
      extra["engine_fallbacks"] = list;
    }
    extra["cuda_driver_version"] = cuda_version_text(cuda_driver_version());
    extra["cuda_runtime_version"] = cuda_version_text(cuda_runtime_version());
#ifdef COLLKIT_HAVE_NCCL
    extra["nccl_version"] = nccl_version_text();
#else
    extra["nccl_version"] = nullptr;
#endif
  }

 private:
  // The engine collkit's schedules run on: the one asked for, or by default
  // the interpreter where it can run these ranks here.
  std::string engine_name() const {
    if (cfg_.engine == CudaEngine::streams) return "streams";
    if (cfg_.engine == CudaEngine::interpreter || interpreter_problem_.empty())
      return "interpreter";
    return "streams";
  }
  // For the title: the engine, and why not the interpreter by default.
  std::string engine_text() const {
    if (cfg_.engine == CudaEngine::automatic && !interpreter_problem_.empty())
      return "streams (the interpreter cannot run here: " + interpreter_problem_ + ")";
    if (engine_name() == "interpreter")
      return ll_bytes_ > 0
                 ? "interpreter (LL messages up to " + std::to_string(ll_bytes_) +
                       " B at sizes up to " + std::to_string(ll_size_) + " B" +
                       (ll128_above_ < ll_size_
                            ? ", as LL128 lines above " + std::to_string(ll128_above_) + " B)"
                            : std::string(")"))
                 : "interpreter (no LL messages)";
    return engine_name();
  }

  DeviceInfo info(int device) {
    if (infos_.empty())
      for (int d = 0; d < devices_; ++d) infos_.push_back(device_info(d));
    return infos_[device];
  }

  std::unique_ptr<Measurement> prepare_native(const SizeMapping& size, DataType type, RedOp op,
                                              bool in_place, std::string& unavailable) {
#ifdef COLLKIT_HAVE_NCCL
    if (ranks_ > devices_) {
      unavailable = "native NCCL needs one GPU per rank (" + std::to_string(ranks_) + " ranks on " +
                    std::to_string(devices_) + " GPU(s); NCCL refuses two ranks on one GPU)";
      return nullptr;
    }
    unavailable = nccl_native_unsupported(cfg_.collective, in_place);
    if (!unavailable.empty()) return nullptr;
    if (!nccl_) nccl_ = std::make_unique<NcclWorld>(rank_device_);
    std::vector<CompiledPlan> plans;
    for (int r = 0; r < ranks_; ++r)
      plans.push_back(
          io_plan(cfg_.collective, ranks_, r, cfg_.root, size.spec_count, type, op, in_place));
    return std::make_unique<NativeMeasurement>(*nccl_, cfg_.collective, std::move(plans),
                                               rank_device_, cfg_.root, size.spec_count,
                                               Timing::of(cfg_));
#else
    (void)size;
    (void)type;
    (void)op;
    (void)in_place;
    unavailable = "this collkit was built without NCCL";
    return nullptr;
#endif
  }

  const BenchConfig& cfg_;
  int ranks_;
  int devices_ = 0;
  std::vector<int> rank_device_;
  std::vector<DeviceInfo> infos_;
  std::string interpreter_problem_;  // empty: the interpreter can run these ranks here
  std::int64_t ll_bytes_ = 0;        // the interpreter's largest LL message (0: none)
  std::int64_t ll_size_ = 0;         // and the largest size (bytes per rank) with LL
  bool ll_forward_ = true;           // compile_device_program's ll_forward
  std::int64_t ll128_above_ = 0;     // sizes above it send LL messages as LL128
  int lane_cap_ = 1;
  int lanes_override_ = 0;                                   // COLLKIT_INTERPRETER_LANES
  std::set<std::pair<std::string, std::string>> fallbacks_;  // (algorithm, why) ran on streams
#ifdef COLLKIT_HAVE_NCCL
  std::unique_ptr<NcclWorld> nccl_;
#endif
};

}  // namespace

void run_cuda_bench(const BenchArgs& args, const BenchSinkFactory& make_sink) {
  parse_engine(args.backend, args.engine);  // a bad --engine is named even without a device
  const std::string problem = cuda_device_problem();
  if (!problem.empty()) throw UsageError(problem);
  const int devices = cuda_device_count();
  int ranks = devices;
  if (!args.ranks.empty()) {
    char* end = nullptr;
    const long v = std::strtol(args.ranks.c_str(), &end, 10);
    if (end == args.ranks.c_str() || *end != '\0' || v < 1 || v > 4096)
      throw UsageError("-g/--ranks '" + args.ranks + "': expected a rank count in 1..4096");
    ranks = static_cast<int>(v);
  }
  const BenchConfig cfg = parse_config(args, ranks);
  if (!cfg.json_path.empty()) check_writable(cfg.json_path);
  // Ranks go round-robin on the devices: each device's ranks must fit.
  for (int d = 0; d < devices && d < ranks; ++d) {
    const DeviceInfo info = device_info(d);
    check_device_memory(cfg, ranks, (ranks - d + devices - 1) / devices, device_free_memory(d),
                        static_cast<std::int64_t>(info.memory_bytes),
                        "device " + std::to_string(d) + " (" + info.name + ")");
  }
  Watchdog watchdog(cfg.timeout_s, [](const std::string& what) {
    std::fprintf(stderr, "collkit bench: error: %s\n", what.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  });
  FaultInjector faults = FaultInjector::from_environment();
  RunContext ctx{&watchdog, &faults, 0, ranks};
  CudaBackend backend(cfg, ranks);
  std::unique_ptr<BenchSink> sink = make_sink(args);
  const std::int64_t wrong = run_harness(cfg, backend, ctx, sink.get());
  if (wrong > 0)
    throw RuntimeFailure(std::to_string(wrong) +
                         " wrong element(s) in the correctness checks (see #wrong)");
}

}  // namespace collkit::realrun
