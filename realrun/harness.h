// The backend-independent half of `collkit bench`: flag parsing, the size,
// type and op loops, the correctness check, the nccl-tests table, the JSON
// report, the -T watchdog and test-only fault injection. A backend (MPI
// processes, NCCL processes, one CUDA process driving every rank) provides
// its ranks, how to prepare and time one measurement, and how to check it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/schedule.h"
#include "core/backend.h"
#include "core/dtypes.h"
#include "core/json.h"
#include "core/nccl_sizes.h"
#include "realrun/bench.h"

namespace collkit::realrun {

inline constexpr char kNative[] = "native";
// The cost parameters every backend picks default segment sizes with (no
// network is known when measuring); written to the report's
// extra.segment_model so calibrate and simulate rebuild the same schedules.
inline constexpr CostParams kBenchSegmentModel{};

enum class Average : int { rank0 = 0, mean = 1, min = 2, max = 3 };
const char* to_string(Average a);

// --engine (cuda backend): how collkit's schedules run on the GPUs. The
// interpreter runs every rank's device program in one persistent kernel
// launch per GPU (realrun/device_program.h); streams enqueues every step's
// copies, kernels and events (realrun/multirank.h). automatic: the
// interpreter where it can run the plan, else streams.
enum class CudaEngine : std::uint8_t { automatic, interpreter, streams };
const char* to_string(CudaEngine e);

// Validates --engine `engine` (empty: automatic) for --backend `backend`:
// UsageError naming the flag and value for an unknown engine, or for an
// engine given to another backend than cuda.
CudaEngine parse_engine(const std::string& backend, const std::string& engine);

// The validated options.
struct BenchConfig {
  Backend backend = Backend::mpi;
  Collective collective = Collective::all_reduce;
  std::vector<std::string> algorithms;  // registered names and/or "native"
  std::vector<std::int64_t> sizes;
  std::int64_t min_bytes = 0, max_bytes = 0, step_factor = 1, step_bytes = 0;
  int iters = 20, warmup = 1, check = 1, root = 0;
  Average average = Average::mean;
  std::vector<DataType> dtypes;
  std::vector<RedOp> ops;
  std::string json_path;
  double timeout_s = 0;  // -T; 0 = no watchdog
  // -G (cuda backend): the -n timed runs are captured once into a CUDA graph
  // that is launched this many times; 0 = no graph, every run enqueued.
  int graph_launches = 0;
  CudaEngine engine = CudaEngine::automatic;  // --engine (cuda backend)
  // -z: the host waits for each collective to complete before the next one
  // (nccl: a stream synchronisation after every run; mpi: always so).
  bool blocking = false;
  // -C: report the host's wall-clock time of the timed loop (until the last
  // run completed) instead of GPU event time (nccl); mpi's times are so.
  bool cputime = false;
  // -m (nccl, cuda): each timed iteration launches this many collectives,
  // NCCL's own inside one ncclGroupStart/End (nccl-tests' aggregation);
  // the time reported is per collective: elapsed / (iters x agg_iters).
  int agg_iters = 1;
  // -R 1 (nccl; cuda's native): input and output registered with NCCL
  // (ncclCommRegister) for the measurement; 2 (symmetric windows) refused.
  int local_register = 0;
  // -N: the whole bench (every algorithm, type, op and size) runs this many
  // times, each cycle's rows printed as they come; 0 = until interrupted.
  int cycles = 1;
  // --nccl-buffsize: NCCL_BUFFSIZE of the runtime an msccl:FILE.xml comes
  // from (0 = NCCL's default); sizes at which that runtime would hang are
  // refused (docs/MSCCL.md).
  std::int64_t nccl_buffsize = 0;
};

// The spec of the schedule bench runs for `algorithm` at `count` elements
// of `type` on `ranks` ranks (segments chosen with kBenchSegmentModel).
ScheduleSpec bench_schedule_spec(const BenchConfig& cfg, const std::string& algorithm, int ranks,
                                 std::int64_t count, DataType type);

// The backend named by --backend (UsageError listing the valid ones).
Backend parse_bench_backend(const std::string& text);

// Validates every flag for `ranks` ranks; throws UsageError naming the flag
// (also for a size at which an msccl:FILE.xml's runtime would hang).
// ranks = 0: the rank count is not known yet (before MPI starts, under a
// launcher that does not say): the checks that need it are left for later.
BenchConfig parse_config(const BenchArgs& a, int ranks);

// The job as the launcher's environment describes it before MPI starts
// (Open MPI's OMPI_COMM_WORLD_*, PMI_*, Slurm's SLURM_*): this process's
// rank, the job's rank count and the ranks on this host; size 0 = no
// launcher said (run without mpirun: a singleton of one rank).
struct LaunchEnv {
  int rank = 0;
  int size = 0;
  int local_size = 0;
  bool launched = false;  // a launcher's variables were found
};
LaunchEnv launch_environment();

// Memory one rank of the bench needs at its largest measurement: the
// buffers of every algorithm's plan (input, output, scratch, temp) plus the
// expected values of the check, the largest over algorithms, types and
// placements.
struct MemoryNeed {
  std::int64_t per_rank = 0;
  std::string detail;  // "all_reduce ring at 17179869184 bytes (float, out of place): ..."
};
MemoryNeed memory_needed(const BenchConfig& cfg, int ranks);

// Host memory this process may use: MemAvailable of /proc/meminfo, else the
// physical pages. COLLKIT_HOST_MEMORY (bytes, test only) overrides it.
std::int64_t host_memory_bytes();

// Throws UsageError (exit 2) naming -b/-e, the bytes per rank and in all,
// and the host's memory when `ranks_on_host` ranks of the job do not fit
// in this host's memory; before anything is allocated.
void check_host_memory(const BenchConfig& cfg, int ranks, int ranks_on_host);

// The same for one GPU (backends nccl and cuda): `ranks_on_device` ranks'
// buffers against the device's free memory (`free_bytes`, cudaMemGetInfo
// after this process's context exists: other processes' allocations count;
// NCCL needs some more, so passing is necessary, not sufficient); the
// message gives the device's `total_bytes` beside it.
void check_device_memory(const BenchConfig& cfg, int ranks, int ranks_on_device,
                         std::int64_t free_bytes, std::int64_t total_bytes,
                         const std::string& device_name);

// FNV-1a over every flag's text (ranks started with different flags).
std::uint64_t args_hash(const BenchArgs& a);

// -T: aborts the process when one collective (armed region) has not
// completed within the timeout. `on_timeout` prints and ends the job (MPI:
// MPI_Abort); it must not return.
class Watchdog {
 public:
  Watchdog(double timeout_s, std::function<void(const std::string&)> on_timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  double timeout_s() const { return timeout_s_; }
  // `what` names the collective, algorithm, size and rank. The watchdog
  // keeps its own copy, so the caller's string may go away at any time
  // (the watchdog's thread prints the copy).
  void arm(const std::string& what);
  void disarm();

 private:
  void loop();
  double timeout_s_;
  std::function<void(const std::string&)> on_timeout_;
  // Guarded by mutex_: what is armed, since when, and whether to stop. The
  // thread reads them and prints under the mutex, so a run that completes
  // meanwhile cannot change or free what it prints.
  std::mutex mutex_;
  std::string what_;
  bool armed_ = false;
  std::int64_t armed_at_ns_ = 0;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

// RAII arming of a Watchdog.
class Armed {
 public:
  Armed(Watchdog& w, const std::string& what) : w_(w) { w_.arm(what); }
  ~Armed() { w_.disarm(); }
  Armed(const Armed&) = delete;
  Armed& operator=(const Armed&) = delete;

 private:
  Watchdog& w_;
};

// Test-only fault injection, from COLLKIT_FAULT_INJECT =
// "rank=R,iter=N,action=exit|kill|hang": the process running rank R, at its
// N-th collective run (counted from 1 over the whole bench), exits with code
// 17, sends itself SIGKILL, or sleeps forever. Unset: does nothing.
class FaultInjector {
 public:
  static constexpr char kVariable[] = "COLLKIT_FAULT_INJECT";
  enum class Action : std::uint8_t { none, exit, kill, hang };
  // Parses the variable (UsageError on a malformed value).
  static FaultInjector from_environment();
  static FaultInjector parse(const std::string& text);
  // Called before every collective run by the process of rank `rank` (for a
  // single-process backend, every rank it drives is checked).
  void tick(int first_rank, int ranks_here = 1) {
    if (action_ != Action::none && ++runs_ == iter_ && rank_ >= first_rank &&
        rank_ < first_rank + ranks_here)
      fire();
  }
  Action action() const { return action_; }
  int rank() const { return rank_; }
  std::int64_t iter() const { return iter_; }

 private:
  [[noreturn]] void fire();
  Action action_ = Action::none;
  int rank_ = 0;
  std::int64_t iter_ = 0;
  std::int64_t runs_ = 0;
};

// What the harness gives a measurement: the watchdog and the fault hook.
struct RunContext {
  Watchdog* watchdog = nullptr;
  FaultInjector* faults = nullptr;
  int first_rank = 0;  // of this process
  int ranks_here = 1;
  void before_run() { faults->tick(first_rank, ranks_here); }
};

// One prepared measurement (algorithm, size, type, op, placement) on the
// ranks this process drives.
class Measurement {
 public:
  virtual ~Measurement() = default;
  // -w untimed runs, then -n timed runs; this process's time per run in
  // microseconds (the backend combines across processes). `what` names the
  // collective for the watchdog; ctx.before_run() precedes every run.
  virtual double time_us(int warmup, int iters, RunContext& ctx, const std::string& what) = 0;
  // One check run with fresh inputs of check iteration `iter` (outputs
  // poisoned first); wrong elements on this process's ranks.
  virtual std::int64_t check(std::int64_t iter, RunContext& ctx, const std::string& what) = 0;
};

class BenchBackend {
 public:
  virtual ~BenchBackend() = default;
  virtual int ranks() const = 0;
  // This process's first rank and how many it drives; rank 0's process prints.
  virtual int first_rank() const { return 0; }
  virtual int ranks_here() const { return ranks(); }
  bool prints() const { return first_rank() == 0; }
  // "4 ranks on 1 host(s), Open MPI v4.1.4" for the title line.
  virtual std::string describe() = 0;
  // "#  Rank  0 ..." lines under the title.
  virtual std::vector<std::string> rank_lines() = 0;
  // Every process's `why` is empty, or the first non-empty one (MPI).
  virtual std::string agree(const std::string& why) { return why; }
  // Prepares one measurement, or returns null with `unavailable` set.
  virtual std::unique_ptr<Measurement> prepare(const std::string& algorithm,
                                               const SizeMapping& size, DataType type, RedOp op,
                                               bool in_place, std::string& unavailable) = 0;
  virtual double combine_time(double us, Average) { return us; }
  virtual std::int64_t combine_wrong(std::int64_t w) { return w; }
  // Backend-specific top-level report keys (devices, versions, ...).
  virtual void report_extras(Json& extra) = 0;
};

// One measured placement (out of place or in place) of one size.
struct BenchFigure {
  double time_us = 0;       // combined across processes (-a)
  std::int64_t wrong = -1;  // summed over processes; -1 = not checked (-c 0)
};

// Where a bench run's figures go, in the order they are measured: the layer
// above (reports/bench_report.h) prints nccl-tests' table as it goes and
// writes the report at the end. Only the printing process (rank 0's) has one;
// realrun itself knows nothing of tables or report files.
class BenchSink {
 public:
  virtual ~BenchSink() = default;
  // Before the first measurement. `title` and `rank_lines` are the
  // backend's (BenchBackend::describe and rank_lines).
  virtual void begin(const BenchConfig& cfg, int ranks, const std::string& title,
                     const std::vector<std::string>& rank_lines) = 0;
  // `cycle` counts from 1 (-N); with cycles == 1 there is only cycle 1.
  virtual void begin_algorithm(const std::string& algorithm, int cycle) = 0;
  // One size of one (type, op) of the current algorithm; a placement that
  // could not be measured is null.
  virtual void add(DataType type, RedOp op, const SizeMapping& size,
                   const BenchFigure* out_of_place, const BenchFigure* in_place) = 0;
  // After the algorithm's last size: why placements were unavailable.
  virtual void end_algorithm(const std::set<std::string>& out_of_place_unavailable,
                             const std::set<std::string>& in_place_unavailable) = 0;
  // After the last algorithm, with the backend's report keys
  // (BenchBackend::report_extras).
  virtual void end(const Json& backend_extra) = 0;
};

// The whole bench on `backend`; the printing process hands every figure to
// `sink` (null on the others). Returns the wrong elements over every check.
std::int64_t run_harness(const BenchConfig& cfg, BenchBackend& backend, RunContext& ctx,
                         BenchSink* sink);

// A PCI bus id as nccl-tests prints it in its device lines
// ("[%04x:%02x:%02x]" of domain, bus, device): "0000:1B:00.0" (CUDA's
// cudaDeviceGetPCIBusId) becomes "0000:1b:00". Other text is returned as is.
std::string nccl_tests_bus_id(const std::string& pci);

// The watchdog's message for one measurement.
std::string describe_run(const BenchConfig& cfg, const std::string& algorithm,
                         const SizeMapping& size, DataType type, RedOp op, bool in_place,
                         const std::string& ranks_text);

}  // namespace collkit::realrun
