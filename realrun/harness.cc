#include "realrun/harness.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "algorithms/registry.h"
#include "core/error.h"
#include "core/sizes.h"
#include "realrun/plan.h"

namespace collkit::realrun {
namespace {

std::int64_t parse_int(const std::string& flag, const std::string& text, std::int64_t lo,
                       std::int64_t hi) {
  return parse_integer(flag, text, lo, hi);
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* to_string(Average a) {
  switch (a) {
    case Average::rank0:
      return "rank0";
    case Average::mean:
      return "mean";
    case Average::min:
      return "min";
    case Average::max:
      return "max";
  }
  return "?";
}

Backend parse_bench_backend(const std::string& text) {
  if (text.empty()) throw UsageError("--backend is required (valid: mpi, nccl, cuda)");
  if (text == "mpi") return Backend::mpi;
  if (text == "nccl") return Backend::nccl;
  if (text == "cuda") return Backend::cuda;
  throw UsageError("--backend '" + text + "' is not available here (valid: mpi, nccl, cuda)");
}

const char* to_string(CudaEngine e) {
  switch (e) {
    case CudaEngine::automatic:
      return "automatic";
    case CudaEngine::interpreter:
      return "interpreter";
    case CudaEngine::streams:
      return "streams";
  }
  return "?";
}

CudaEngine parse_engine(const std::string& backend, const std::string& engine) {
  if (engine.empty()) return CudaEngine::automatic;
  if (backend != "cuda")
    throw UsageError("--engine " + engine + ": only --backend cuda has engines (interpreter, " +
                     "streams); --backend " + (backend.empty() ? "(none)" : backend) +
                     " runs its schedules one way");
  if (engine == "interpreter") return CudaEngine::interpreter;
  if (engine == "streams") return CudaEngine::streams;
  throw UsageError("--engine '" + engine + "' is not an engine (valid: interpreter, streams)");
}

BenchConfig parse_config(const BenchArgs& a, int ranks) {
  if (!a.extras.empty()) {
    std::string list;
    for (const auto& e : a.extras) list += (list.empty() ? "" : " ") + e;
    throw UsageError("unknown argument(s) for bench: " + list +
                     " (flags: --backend --collective --algorithm -b -e -f -i -n -w -c -d -o -r "
                     "-a -T -g -G --engine -t -m -z -p -N -C -R --json -J)");
  }
  BenchConfig cfg;
  cfg.backend = parse_bench_backend(a.backend);
  const std::string backend = "--backend " + std::string(to_string(cfg.backend));
  cfg.engine = parse_engine(a.backend, a.engine);
  // nccl-tests' flags that collkit's backends either honour or refuse.
  if (parse_int("-t", a.threads, 1, 1 << 20) != 1)
    throw UsageError("-t " + a.threads +
                     ": collkit bench runs one thread per process, so -t (threads per process) "
                     "has no meaning here; start more processes (mpirun -np)" +
                     std::string(cfg.backend == Backend::cuda ? " or more ranks (-g)" : ""));
  if (parse_int("-p", a.parallel_init, 0, 1) != 0)
    throw UsageError("-p " + a.parallel_init +
                     ": parallel initialisation of the -t threads' communicators has no meaning "
                     "with one thread per process");
  cfg.agg_iters = parse_int("-m", a.agg_iters, 1, 1 << 20);
  if (cfg.agg_iters != 1 && cfg.backend == Backend::mpi)
    throw UsageError("-m " + a.agg_iters +
                     ": aggregating operations into one group launch has no meaning for " +
                     backend + " (MPI has no group launch)");
  cfg.blocking = parse_int("-z", a.blocking, 0, 1) == 1;
  cfg.cycles = parse_int("-N", a.cycles, 0, 1 << 30);
  if (cfg.cycles != 1) {
    // -N repeats every row; a report file holds each row once.
    std::vector<std::pair<std::string, std::string>> files = a.other_outputs;
    if (!a.json_path.empty()) files.emplace(files.begin(), "--json", a.json_path);
    if (!files.empty())
      throw UsageError("-N " + a.cycles + " with " + files.front().first + " " +
                       files.front().second +
                       ": a report holds one measurement per row; write one report per run "
                       "(run the command once per cycle) or drop " +
                       files.front().first);
  }
  cfg.cputime = parse_int("-C", a.cputime, 0, 1) == 1;
  cfg.local_register = parse_int("-R", a.local_register, 0, 2);
  if (cfg.local_register != 0 && cfg.backend == Backend::mpi)
    throw UsageError("-R " + a.local_register +
                     ": registering buffers with NCCL has no meaning for " + backend);
  if (cfg.local_register == 2)
    throw UsageError(
        "-R 2: symmetric registration (ncclCommWindowRegister) needs buffers from "
        "ncclMemAlloc, and collkit bench allocates its buffers with cudaMalloc; "
        "use -R 1 (ncclCommRegister)");
  if (cfg.backend != Backend::cuda && !a.ranks.empty())
    throw UsageError("-g/--ranks " + a.ranks + ": only --backend cuda takes a rank count (under " +
                     "mpirun the rank count is -np)");
  if (a.collective.empty()) throw UsageError("--collective is required");
  cfg.collective = parse_collective(a.collective);
  const Collective c = cfg.collective;

  cfg.min_bytes = parse_size("-b", a.min_bytes);
  cfg.max_bytes = parse_size("-e", a.max_bytes);
  cfg.step_factor = parse_int("-f", a.step_factor, 1, 1 << 20);
  cfg.step_bytes = parse_size("-i", a.step_bytes);
  cfg.sizes = sweep_sizes(cfg.min_bytes, cfg.max_bytes, cfg.step_factor, cfg.step_bytes);
  // Barrier moves no data: one row, whatever the sizes.
  if (c == Collective::barrier) cfg.sizes = {cfg.min_bytes};
  cfg.iters = static_cast<int>(parse_int("-n", a.iters, 1, 1 << 30));
  cfg.warmup = static_cast<int>(parse_int("-w", a.warmup, 0, 1 << 30));
  cfg.check = static_cast<int>(parse_int("-c", a.check, 0, 1 << 20));
  if (a.root == "all" || a.root == "-1")
    throw UsageError("-r " + a.root +
                     ": bench measures one root per run (its buffers and checks are the "
                     "root's); run it once per root (-r 0, -r 1, ...); collkit simulate takes "
                     "-r all");
  cfg.root = static_cast<int>(parse_int("-r", a.root, 0, 1 << 30));
  if (ranks > 0 && cfg.root >= ranks)
    throw UsageError("-r " + a.root + ": root is out of range for " + std::to_string(ranks) +
                     " ranks (valid: 0.." + std::to_string(ranks - 1) + ")");
  cfg.average = static_cast<Average>(parse_int("-a", a.average, 0, 3));
  cfg.timeout_s = static_cast<double>(parse_int("-T", a.timeout, 0, std::int64_t{7} * 24 * 3600));
  cfg.graph_launches = static_cast<int>(parse_int("-G", a.graph, 0, 1 << 20));
  if (cfg.graph_launches > 0 && cfg.backend != Backend::cuda)
    throw UsageError("-G " + a.graph + ": CUDA graphs are implemented for --backend cuda only");
  if (a.dtype == "all") {
    cfg.dtypes.assign(std::begin(kAllDataTypes), std::end(kAllDataTypes));
  } else {
    cfg.dtypes = {parse_data_type(a.dtype)};
  }
  if (!is_reduction(c)) {
    // The op means nothing to data movement: validate it, run once.
    if (a.op != "all") parse_red_op(a.op);
    cfg.ops = {RedOp::sum};
  } else if (a.op == "all") {
    cfg.ops.assign(std::begin(kAllRedOps), std::end(kAllRedOps));
  } else {
    cfg.ops = {parse_red_op(a.op)};
  }

  // "native" is ours; every other name must build a schedule at this p.
  std::vector<std::string> names;
  for (std::size_t start = 0;;) {
    const std::size_t comma = a.algorithms.find(',', start);
    const std::string name =
        a.algorithms.substr(start, comma == std::string::npos ? comma : comma - start);
    if (name == kNative) {
      names.push_back(name);
    } else if (name == "all") {
      for (const std::string& n : expand_algorithms(c, "all", false)) names.push_back(n);
      names.emplace_back(kNative);
    } else {
      for (const std::string& n : expand_algorithms(c, name)) names.push_back(n);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  cfg.nccl_buffsize = parse_nccl_buffsize("--nccl-buffsize", a.nccl_buffsize);
  for (const std::string& n : names) {
    if (n == kNative || ranks <= 0) continue;
    make_schedule(bench_schedule_spec(cfg, n, ranks, 0, DataType::float32));
    // Where the runtime a schedule comes from (msccl:FILE.xml) would hang,
    // there is nothing to measure: refused before anything runs.
    for (std::int64_t bytes : cfg.sizes)
      for (DataType type : cfg.dtypes) {
        const SizeMapping size = map_size(c, bytes, size_of(type), ranks);
        const std::string hang =
            runtime_hang(bench_schedule_spec(cfg, n, ranks, size.spec_count, type));
        if (!hang.empty())
          throw UsageError((cfg.min_bytes == cfg.max_bytes ? "-b/-e " : "-e ") + a.max_bytes +
                           ": " + std::to_string(bytes) + " bytes of " +
                           std::string(to_string(type)) + ": " + hang);
      }
  }
  for (const std::string& n : names)
    if (std::find(cfg.algorithms.begin(), cfg.algorithms.end(), n) == cfg.algorithms.end())
      cfg.algorithms.push_back(n);
  if (cfg.local_register == 1 && cfg.backend == Backend::cuda &&
      std::find(cfg.algorithms.begin(), cfg.algorithms.end(), kNative) == cfg.algorithms.end())
    throw UsageError(
        "-R 1: on --backend cuda only NCCL's own collectives (--algorithm native) "
        "go through NCCL; collkit's schedules run without it, so registration has "
        "no meaning for them");
  cfg.json_path = a.json_path;
  return cfg;
}

LaunchEnv launch_environment() {
  const auto number = [](std::initializer_list<const char*> names, int& out) {
    for (const char* name : names)
      if (const char* v = std::getenv(name)) {
        char* end = nullptr;
        const long x = std::strtol(v, &end, 10);
        if (end != v && *end == '\0' && x >= 0 && x < (1L << 30)) {
          out = static_cast<int>(x);
          return true;
        }
      }
    return false;
  };
  LaunchEnv env;
  env.launched =
      number({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"}, env.size);
  number({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}, env.rank);
  number({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"},
         env.local_size);
  if (!env.launched) {
    // No launcher: MPI_Init makes a singleton.
    env.size = 1;
    env.local_size = 1;
  }
  return env;
}

namespace {

std::string gib(std::int64_t bytes) {
  char text[64];
  if (bytes < (std::int64_t{1} << 20)) {
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  }
  return text;
}

}  // namespace

MemoryNeed memory_needed(const BenchConfig& cfg, int ranks) {
  MemoryNeed need;
  const Collective c = cfg.collective;
  const std::int64_t bytes = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
  for (const std::string& algorithm : cfg.algorithms) {
    for (DataType type : cfg.dtypes) {
      const SizeMapping size = map_size(c, bytes, size_of(type), ranks);
      for (const bool in_place : {false, true}) {
        // Every rank's plan: the largest decides (rooted collectives differ).
        const std::int64_t count = c == Collective::barrier ? 0 : size.spec_count;
        for (int rank = 0; rank < std::min(ranks, 64); ++rank) {
          CompiledPlan plan;
          try {
            if (algorithm == kNative) {
              plan = io_plan(c, ranks, rank, cfg.root, count, type, cfg.ops.front(), in_place);
            } else {
              const std::unique_ptr<Schedule> schedule =
                  make_schedule(bench_schedule_spec(cfg, algorithm, ranks, count, type));
              plan = compile_plan(*schedule, rank, type, cfg.ops.front(), in_place);
            }
          } catch (const Error&) {
            break;  // not defined in this placement: the run says so and measures nothing
          }
          const std::int64_t check = cfg.check > 0 ? plan.output_bytes : 0;
          const std::int64_t total = plan.storage_in_bytes + plan.storage_out_bytes +
                                     plan.scratch_bytes + plan.temp_bytes + check;
          if (total <= need.per_rank) continue;
          need.per_rank = total;
          need.detail = std::string(to_string(c)) + " " + algorithm + " at " +
                        std::to_string(size.bytes) + " bytes (" + std::string(to_string(type)) +
                        (in_place ? ", in place" : ", out of place") + "): buffers " +
                        gib(plan.storage_in_bytes + plan.storage_out_bytes) + ", scratch " +
                        gib(plan.scratch_bytes) + ", temp " + gib(plan.temp_bytes) +
                        ", expected values " + gib(check);
        }
      }
    }
  }
  return need;
}

std::int64_t host_memory_bytes() {
  if (const char* v = std::getenv("COLLKIT_HOST_MEMORY")) return std::atoll(v);
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    long long kb = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
    std::fclose(f);
    if (kb >= 0) return kb * 1024;
  }
  return static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
}

void check_host_memory(const BenchConfig& cfg, int ranks, int ranks_on_host) {
  if (cfg.sizes.empty() || cfg.algorithms.empty() || ranks <= 0) return;
  const MemoryNeed need = memory_needed(cfg, ranks);
  const std::int64_t host = host_memory_bytes();
  const int here = std::max(ranks_on_host, 1);
  const double on_host = static_cast<double>(need.per_rank) * here;
  if (on_host <= static_cast<double>(host)) return;
  const std::string flag = cfg.min_bytes == cfg.max_bytes ? "-b/-e " : "-e ";
  throw UsageError(
      flag + std::to_string(cfg.max_bytes) + ": needs " + gib(need.per_rank) + " per rank and " +
      gib(static_cast<std::int64_t>(static_cast<double>(need.per_rank) * ranks)) + " in all (" +
      std::to_string(ranks) + " ranks, " + std::to_string(here) +
      " on this host: " + gib(static_cast<std::int64_t>(on_host)) + "); this host has " +
      gib(host) + " of memory available. Largest: " + need.detail);
}

void check_device_memory(const BenchConfig& cfg, int ranks, int ranks_on_device,
                         std::int64_t free_bytes, std::int64_t total_bytes,
                         const std::string& device_name) {
  if (cfg.sizes.empty() || cfg.algorithms.empty() || ranks <= 0 || total_bytes <= 0) return;
  const std::int64_t device_bytes = std::max<std::int64_t>(free_bytes, 0);
  const MemoryNeed need = memory_needed(cfg, ranks);
  const int here = std::max(ranks_on_device, 1);
  const double on_device = static_cast<double>(need.per_rank) * here;
  if (on_device <= static_cast<double>(device_bytes)) return;
  const std::string flag = cfg.min_bytes == cfg.max_bytes ? "-b/-e " : "-e ";
  throw UsageError(flag + std::to_string(cfg.max_bytes) + ": needs " + gib(need.per_rank) +
                   " of device memory per rank and " +
                   gib(static_cast<std::int64_t>(static_cast<double>(need.per_rank) * ranks)) +
                   " in all (" + std::to_string(ranks) + " ranks, " + std::to_string(here) +
                   " on " + device_name + ": " + gib(static_cast<std::int64_t>(on_device)) + "); " +
                   device_name + " has " + gib(device_bytes) + " free of " + gib(total_bytes) +
                   ". Largest: " + need.detail);
}

ScheduleSpec bench_schedule_spec(const BenchConfig& cfg, const std::string& algorithm, int ranks,
                                 std::int64_t count, DataType type) {
  ScheduleSpec spec;
  spec.collective = cfg.collective;
  spec.algorithm = algorithm;
  spec.ranks = ranks;
  spec.root = cfg.root;
  spec.count = count;
  spec.elem_size = size_of(type);
  spec.model = kBenchSegmentModel;
  spec.nccl_buffsize = cfg.nccl_buffsize;
  return spec;
}

std::uint64_t args_hash(const BenchArgs& a) {
  std::uint64_t h = 1469598103934665603ull;
  const auto add = [&](const std::string& s) {
    for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
    h = (h ^ 0xFF) * 1099511628211ull;  // separator: ("ab","c") != ("a","bc")
  };
  for (const std::string* s : {&a.backend,        &a.collective,    &a.algorithms,   &a.min_bytes,
                               &a.max_bytes,      &a.step_factor,   &a.step_bytes,   &a.iters,
                               &a.warmup,         &a.check,         &a.dtype,        &a.op,
                               &a.root,           &a.average,       &a.json_path,    &a.timeout,
                               &a.ranks,          &a.graph,         &a.threads,      &a.agg_iters,
                               &a.blocking,       &a.parallel_init, &a.cycles,       &a.cputime,
                               &a.local_register, &a.engine,        &a.nccl_buffsize})
    add(*s);
  for (const std::string& e : a.extras) add(e);
  return h;
}

Watchdog::Watchdog(double timeout_s, std::function<void(const std::string&)> on_timeout)
    : timeout_s_(timeout_s), on_timeout_(std::move(on_timeout)) {
  if (timeout_s_ > 0) thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

void Watchdog::arm(const std::string& what) {
  if (timeout_s_ <= 0) return;
  const std::int64_t now = now_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  what_ = what;  // a copy: reuses what_'s storage, so no allocation per run
  armed_at_ns_ = now;
  armed_ = true;
}

void Watchdog::disarm() {
  if (timeout_s_ <= 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
}

void Watchdog::loop() {
  const auto limit_ns = static_cast<std::int64_t>(timeout_s_ * 1e9);
  // Polls often enough that the abort comes within ~2% of the timeout.
  const auto period = std::chrono::milliseconds(
      std::clamp<std::int64_t>(static_cast<std::int64_t>(timeout_s_ * 20), 10, 500));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_cv_.wait_for(lock, period, [this] { return stop_; })) {
    if (!armed_ || now_ns() - armed_at_ns_ < limit_ns) continue;
    // Still under mutex_: the run can neither disarm nor re-arm until the
    // process has ended, and what_ is the watchdog's own copy.
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", timeout_s_);
    on_timeout_("timeout: " + what_ + " did not complete within " + seconds + " s (-T " + seconds +
                ")");
    std::_Exit(1);  // on_timeout must not return; never let a hung run continue
  }
}

FaultInjector FaultInjector::from_environment() {
  const char* v = std::getenv(kVariable);
  return v ? parse(v) : FaultInjector{};
}

FaultInjector FaultInjector::parse(const std::string& text) {
  FaultInjector f;
  const auto bad = [&](const std::string& why) {
    return UsageError(std::string(kVariable) + "='" + text + "': " + why +
                      " (expected rank=R,iter=N,action=exit|kill|hang)");
  };
  if (text.empty()) return f;
  bool have_rank = false, have_iter = false, have_action = false;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw bad("'" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "rank") {
      f.rank_ = static_cast<int>(parse_int(std::string(kVariable) + " rank", value, 0, 1 << 24));
      have_rank = true;
    } else if (key == "iter") {
      f.iter_ = parse_int(std::string(kVariable) + " iter", value, 1, std::int64_t{1} << 40);
      have_iter = true;
    } else if (key == "action") {
      if (value == "exit") {
        f.action_ = Action::exit;
      } else if (value == "kill") {
        f.action_ = Action::kill;
      } else if (value == "hang") {
        f.action_ = Action::hang;
      } else {
        throw bad("unknown action '" + value + "'");
      }
      have_action = true;
    } else {
      throw bad("unknown key '" + key + "'");
    }
    start = comma + 1;
  }
  if (!have_rank || !have_iter || !have_action) throw bad("rank, iter and action are required");
  return f;
}

void FaultInjector::fire() {
  const char* what = action_ == Action::exit   ? "exiting with code 17"
                     : action_ == Action::kill ? "killing itself (SIGKILL)"
                                               : "hanging";
  std::fprintf(stderr, "collkit bench: rank %d: fault injection (%s): %s at run %lld\n", rank_,
               kVariable, what, static_cast<long long>(iter_));
  std::fflush(stderr);
  switch (action_) {
    case Action::exit:
      std::_Exit(17);
    case Action::kill:
      std::raise(SIGKILL);
      std::_Exit(137);
    case Action::hang:
    case Action::none:
      for (;;) pause();
  }
  std::_Exit(17);
}

std::string nccl_tests_bus_id(const std::string& pci) {
  // DDDD:BB:DD.F -> dddd:bb:dd
  if (pci.size() != 12 || pci[4] != ':' || pci[7] != ':' || pci[10] != '.') return pci;
  std::string out = pci.substr(0, 10);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

std::string describe_run(const BenchConfig& cfg, const std::string& algorithm,
                         const SizeMapping& size, DataType type, RedOp op, bool in_place,
                         const std::string& ranks_text) {
  std::string s = std::string(to_string(cfg.collective)) + " algorithm " + algorithm + ", " +
                  std::to_string(size.bytes) + " bytes (" + std::string(to_string(type));
  if (is_reduction(cfg.collective)) s += " " + std::string(to_string(op));
  s += in_place ? ", in place)" : ", out of place)";
  return s + " on " + ranks_text;
}

std::int64_t run_harness(const BenchConfig& cfg, BenchBackend& backend, RunContext& ctx,
                         BenchSink* sink) {
  const Collective c = cfg.collective;
  const int ranks = backend.ranks();
  const std::string title = backend.describe();
  const std::vector<std::string> lines = backend.rank_lines();
  if (sink) sink->begin(cfg, ranks, title, lines);
  const std::string ranks_text =
      backend.ranks_here() == 1
          ? "rank " + std::to_string(backend.first_rank())
          : "ranks " + std::to_string(backend.first_rank()) + ".." +
                std::to_string(backend.first_rank() + backend.ranks_here() - 1);

  std::int64_t total_wrong = 0;
  // -N: nccl-tests' run cycles; 0 runs until the process is interrupted.
  for (int cycle = 1; cfg.cycles == 0 || cycle <= cfg.cycles; ++cycle) {
    for (const std::string& algorithm : cfg.algorithms) {
      if (sink) sink->begin_algorithm(algorithm, cycle);
      std::set<std::string> reasons, oop_reasons;
      for (DataType type : cfg.dtypes) {
        for (RedOp op : cfg.ops) {
          for (std::int64_t bytes : cfg.sizes) {
            const SizeMapping size = map_size(c, bytes, size_of(type), ranks);
            BenchFigure figures[2];
            bool have[2] = {false, false};
            for (int ip = 0; ip < 2; ++ip) {
              const bool in_place = ip == 1;
              std::string na;
              std::unique_ptr<Measurement> m =
                  backend.prepare(algorithm, size, type, op, in_place, na);
              if (!m) {
                (in_place ? reasons : oop_reasons).insert(na);
                continue;
              }
              const std::string what =
                  describe_run(cfg, algorithm, size, type, op, in_place, ranks_text);
              figures[ip].time_us =
                  backend.combine_time(m->time_us(cfg.warmup, cfg.iters, ctx, what), cfg.average);
              if (cfg.check > 0) {
                std::int64_t local = 0;
                for (int k = 1; k <= cfg.check; ++k) local += m->check(k, ctx, what);
                figures[ip].wrong = backend.combine_wrong(local);
              }
              have[ip] = true;
              if (figures[ip].wrong > 0) total_wrong += figures[ip].wrong;
            }
            if (sink)
              sink->add(type, op, size, have[0] ? &figures[0] : nullptr,
                        have[1] ? &figures[1] : nullptr);
          }
        }
      }
      if (sink) sink->end_algorithm(oop_reasons, reasons);
    }
  }

  if (sink) {
    Json extra = Json::object();
    backend.report_extras(extra);
    sink->end(extra);
  }
  return total_wrong;
}

}  // namespace collkit::realrun
