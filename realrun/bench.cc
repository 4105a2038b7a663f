#include "realrun/bench.h"

#include "algorithms/error.h"

#ifdef COLLKIT_HAVE_MPI

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/error.h"
#include "algorithms/registry.h"
#include "realrun/check_data.h"
#include "realrun/executor.h"
#include "realrun/mpi_transport.h"
#include "realrun/native_mpi.h"
#include "reports/atomic_file.h"
#include "reports/nccl_sizes.h"
#include "reports/report.h"
#include "reports/sweep.h"
#include "reports/table.h"

namespace collkit::realrun {
namespace {

constexpr char kNative[] = "native";

enum class Average : int { rank0 = 0, mean = 1, min = 2, max = 3 };

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

// The validated options.
struct BenchConfig {
  Collective collective = Collective::all_reduce;
  std::vector<std::string> algorithms;  // registered names and/or "native"
  std::vector<std::int64_t> sizes;
  std::int64_t min_bytes = 0, max_bytes = 0, step_factor = 1, step_bytes = 0;
  int iters = 20, warmup = 1, check = 1, root = 0;
  Average average = Average::mean;
  std::vector<DataType> dtypes;
  std::vector<RedOp> ops;
  std::string json_path;
};

std::int64_t parse_int(const std::string& flag, const std::string& text, std::int64_t lo,
                       std::int64_t hi) {
  std::int64_t v = 0;
  bool ok = !text.empty() && text.size() <= 12;
  std::size_t i = 0;
  const bool negative = ok && text[0] == '-';
  if (negative) ++i;
  ok = ok && i < text.size();
  for (; ok && i < text.size(); ++i) {
    ok = text[i] >= '0' && text[i] <= '9';
    v = v * 10 + (text[i] - '0');
  }
  if (!ok) throw UsageError(flag + " '" + text + "': expected an integer");
  if (negative) v = -v;
  if (v < lo || v > hi)
    throw UsageError(flag + " " + text + ": must be in " + std::to_string(lo) + ".." +
                     std::to_string(hi));
  return v;
}

BenchConfig parse_config(const BenchArgs& a, int ranks) {
  if (!a.extras.empty()) {
    std::string list;
    for (const auto& e : a.extras) list += (list.empty() ? "" : " ") + e;
    throw UsageError("unknown argument(s) for bench: " + list +
                     " (flags: --backend --collective --algorithm -b -e -f -i -n -w -c -d -o -r "
                     "-a --json)");
  }
  if (a.backend.empty()) throw UsageError("--backend is required (valid: mpi)");
  if (a.backend != "mpi")
    throw UsageError("--backend '" + a.backend + "' is not available here (valid: mpi)");
  if (a.collective.empty()) throw UsageError("--collective is required");
  BenchConfig cfg;
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
  cfg.root = static_cast<int>(parse_int("-r", a.root, 0, 1 << 30));
  if (cfg.root >= ranks)
    throw UsageError("-r " + a.root + ": root is out of range for " + std::to_string(ranks) +
                     " ranks (valid: 0.." + std::to_string(ranks - 1) + ")");
  cfg.average = static_cast<Average>(parse_int("-a", a.average, 0, 3));
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
      for (const std::string& n : expand_algorithms(c, "all")) names.push_back(n);
      names.push_back(kNative);
    } else {
      for (const std::string& n : expand_algorithms(c, name)) names.push_back(n);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const std::string& n : names) {
    if (n == kNative) continue;
    ScheduleSpec spec;
    spec.collective = c;
    spec.algorithm = n;
    spec.ranks = ranks;
    spec.root = cfg.root;
    make_schedule(spec);
  }
  for (const std::string& n : names)
    if (std::find(cfg.algorithms.begin(), cfg.algorithms.end(), n) == cfg.algorithms.end())
      cfg.algorithms.push_back(n);
  cfg.json_path = a.json_path;
  return cfg;
}

// FNV-1a over every flag's text: ranks launched with different flags would
// otherwise run different collectives and hang in mismatched messages.
std::uint64_t args_hash(const BenchArgs& a) {
  std::uint64_t h = 1469598103934665603ull;
  const auto add = [&](const std::string& s) {
    for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
    h = (h ^ 0xFF) * 1099511628211ull;  // separator: ("ab","c") != ("a","bc")
  };
  for (const std::string* s : {&a.backend, &a.collective, &a.algorithms, &a.min_bytes, &a.max_bytes,
                               &a.step_factor, &a.step_bytes, &a.iters, &a.warmup, &a.check,
                               &a.dtype, &a.op, &a.root, &a.average, &a.json_path})
    add(*s);
  for (const std::string& e : a.extras) add(e);
  return h;
}

// Rank 0 reports a usage error and ends the job with exit code 2. The other
// ranks have reached the same error (the flags are equal everywhere), so they
// wait for rank 0's abort to end them and only one message appears; should
// rank 0 not have failed after all, they abort on their own rather than hang.
[[noreturn]] void usage_abort(int rank, const std::string& what) {
  if (rank != 0) {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    std::fprintf(stderr, "collkit bench: rank %d: error: %s\n", rank, what.c_str());
    std::fflush(stderr);
  } else {
    std::fprintf(stderr, "collkit bench: error: %s\n", what.c_str());
    std::fflush(stderr);
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

// What one measurement runs: the executor over MPI, or MPI's own collective.
class Runner {
 public:
  virtual ~Runner() = default;
  virtual std::span<std::byte> input() const = 0;
  virtual std::span<std::byte> output() const = 0;
  virtual void run() = 0;
};

class ScheduleRunner final : public Runner {
 public:
  ScheduleRunner(std::unique_ptr<Schedule> s, int rank, DataType t, RedOp op, bool in_place,
                 MpiTransport& transport)
      : schedule_(std::move(s)),
        executor_(*schedule_, rank, t, op, in_place),
        transport_(transport) {}
  std::span<std::byte> input() const override { return executor_.input(); }
  std::span<std::byte> output() const override { return executor_.output(); }
  void run() override { executor_.run(transport_); }

 private:
  std::unique_ptr<Schedule> schedule_;
  Executor executor_;
  MpiTransport& transport_;
};

class NativeRunner final : public Runner {
 public:
  template <typename... Args>
  explicit NativeRunner(Args&&... args) : native_(std::forward<Args>(args)...) {}
  std::span<std::byte> input() const override { return native_.input(); }
  std::span<std::byte> output() const override { return native_.output(); }
  void run() override { native_.run(); }

 private:
  NativeCollective native_;
};

struct Measurement {
  std::string unavailable;  // non-empty: N/A, and why
  double time_us = 0;
  std::int64_t wrong = -1;
};

class Bench {
 public:
  Bench(const BenchConfig& cfg, int rank, int ranks)
      : cfg_(cfg), rank_(rank), ranks_(ranks), transport_(MPI_COMM_WORLD) {}

  Measurement measure(const std::string& algorithm, const SizeMapping& size, DataType type,
                      RedOp op, bool in_place);

 private:
  std::unique_ptr<Runner> make_runner(const std::string& algorithm, std::int64_t count,
                                      DataType type, RedOp op, bool in_place, std::string& na);
  // Every rank's `why` is empty, or the first rank's non-empty one.
  std::string agree(const std::string& why);

  const BenchConfig& cfg_;
  int rank_, ranks_;
  MpiTransport transport_;
};

std::string Bench::agree(const std::string& why) {
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

std::unique_ptr<Runner> Bench::make_runner(const std::string& algorithm, std::int64_t count,
                                           DataType type, RedOp op, bool in_place,
                                           std::string& na) {
  const Collective c = cfg_.collective;
  if (algorithm == kNative) {
    na = in_place ? agree(native_in_place_unsupported(c)) : "";
    if (!na.empty()) return nullptr;
    return std::make_unique<NativeRunner>(c, MPI_COMM_WORLD, cfg_.root, count, type, op, in_place);
  }
  ScheduleSpec spec;
  spec.collective = c;
  spec.algorithm = algorithm;
  spec.ranks = ranks_;
  spec.root = cfg_.root;
  spec.count = count;
  spec.elem_size = size_of(type);
  std::unique_ptr<Schedule> s = make_schedule(spec);
  if (in_place) {
    na = agree(in_place_hazard(*s, rank_, in_place_layout(c, ranks_, rank_, cfg_.root, count)));
    if (!na.empty()) return nullptr;
  }
  return std::make_unique<ScheduleRunner>(std::move(s), rank_, type, op, in_place, transport_);
}

Measurement Bench::measure(const std::string& algorithm, const SizeMapping& size, DataType type,
                           RedOp op, bool in_place) {
  const Collective c = cfg_.collective;
  Measurement m;
  std::unique_ptr<Runner> runner =
      make_runner(algorithm, size.spec_count, type, op, in_place, m.unavailable);
  if (!runner) return m;

  // Timed runs use check data too: realistic values, no denormals.
  if (!in_place) poison(runner->output());
  fill_check_input(c, type, op, ranks_, rank_, 0, runner->input());
  for (int i = 0; i < cfg_.warmup; ++i) runner->run();
  MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
  const double start = MPI_Wtime();
  for (int i = 0; i < cfg_.iters; ++i) runner->run();
  double time_us = (MPI_Wtime() - start) / cfg_.iters * 1e6;
  switch (cfg_.average) {
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
  m.time_us = time_us;

  if (cfg_.check > 0) {
    std::vector<std::byte> expected(runner->output().size());
    std::int64_t wrong = 0;
    for (int k = 1; k <= cfg_.check; ++k) {
      // Poison first: in place the input lies inside the output.
      poison(runner->output());
      fill_check_input(c, type, op, ranks_, rank_, k, runner->input());
      runner->run();
      expected_output(c, type, op, ranks_, rank_, cfg_.root, size.spec_count, k, expected);
      wrong += count_wrong(type, runner->output(), expected);
    }
    MPI_CHECK(MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : &wrong, &wrong, 1, MPI_INT64_T, MPI_SUM, 0,
                         MPI_COMM_WORLD));
    m.wrong = wrong;
  }
  return m;
}

// One table row; when in place is not available its columns read N/A.
std::string table_row(const ResultRow& oop, const ResultRow* ip, const std::string& type,
                      const std::string& redop, int root) {
  if (ip) return format_table_row(oop, *ip, type, redop, root);
  std::string row = format_table_row(oop, oop, type, redop, root);
  // Drop the in-place copy of the figures (the last four columns).
  row.pop_back();
  for (int col = 0; col < 4; ++col) {
    const std::size_t end = row.find_last_not_of(' ');
    row.resize(row.find_last_of(' ', end) + 1);
    row.resize(row.find_last_not_of(' ') + 1);
  }
  // "  %7s  %6s  %6s  %6s" with N/A in each column.
  return row + "      N/A     N/A     N/A     N/A\n";
}

struct HostInfo {
  int hosts = 1;
  Json devices = Json::array();
};

HostInfo gather_hosts(int rank, int ranks) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_CHECK(MPI_Get_processor_name(name, &len));
  std::vector<char> names(static_cast<std::size_t>(ranks) * MPI_MAX_PROCESSOR_NAME);
  MPI_CHECK(MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME,
                       MPI_CHAR, 0, MPI_COMM_WORLD));
  int pid = static_cast<int>(getpid());
  std::vector<int> pids(ranks);
  MPI_CHECK(MPI_Gather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  HostInfo info;
  if (rank != 0) return info;
  std::set<std::string> distinct;
  for (int r = 0; r < ranks; ++r) {
    const std::string host(&names[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
    distinct.insert(host);
    info.devices.push_back({{"rank", r}, {"host", host}, {"pid", pids[r]}, {"kind", "cpu"}});
  }
  info.hosts = static_cast<int>(distinct.size());
  return info;
}

std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len));
  const std::size_t nl = s.find_first_of(",\n");
  return nl == std::string::npos ? s : s.substr(0, nl);
}

void run(const BenchConfig& cfg, const BenchArgs& args, int rank, int ranks, bool& any_wrong,
         std::int64_t& total_wrong) {
  const Collective c = cfg.collective;
  const HostInfo hosts = gather_hosts(rank, ranks);
  const bool print = rank == 0;
  if (print) {
    std::printf("# collkit bench --backend mpi: %s, %d ranks on %d host(s), %s\n",
                std::string(to_string(c)).c_str(), ranks, hosts.hosts, mpi_library().c_str());
    std::printf(
        "#  minBytes %lld maxBytes %lld step: %lld(%s) warmup iters: %d iters: %d "
        "validation: %d average: %s\n",
        static_cast<long long>(cfg.min_bytes), static_cast<long long>(cfg.max_bytes),
        static_cast<long long>(cfg.step_factor > 1 ? cfg.step_factor : cfg.step_bytes),
        cfg.step_factor > 1 ? "factor" : "bytes", cfg.warmup, cfg.iters, cfg.check,
        to_string(cfg.average));
    std::printf("#\n");
    for (const auto& d : hosts.devices)
      std::printf("#  Rank %2d Pid %6d on %10s cpu\n", d["rank"].get<int>(), d["pid"].get<int>(),
                  d["host"].get<std::string>().c_str());
    std::fflush(stdout);
  }

  Report report;
  report.collkit_version = args.version;
  report.mode = ReportMode::measure;
  report.backend = Backend::mpi;
  report.ranks = ranks;
  report.dtype = cfg.dtypes.front();
  report.op = cfg.ops.front();
  report.root = cfg.root;
  const bool mixed = cfg.dtypes.size() > 1 || cfg.ops.size() > 1;
  Json unavailable = Json::array();

  Bench bench(cfg, rank, ranks);
  for (const std::string& algorithm : cfg.algorithms) {
    if (print) {
      std::printf("#\n# collkit measure (mpi): %s, algorithm %s, %d ranks\n#\n%s",
                  std::string(to_string(c)).c_str(), algorithm.c_str(), ranks,
                  table_header().c_str());
      std::fflush(stdout);
    }
    double busbw_sum = 0;
    int busbw_n = 0;
    std::int64_t wrong = 0;
    std::set<std::string> reasons;
    for (DataType type : cfg.dtypes) {
      for (RedOp op : cfg.ops) {
        for (std::int64_t bytes : cfg.sizes) {
          const SizeMapping size = map_size(c, bytes, size_of(type), ranks);
          ResultRow rows[2];
          bool have[2] = {false, false};
          for (int ip = 0; ip < 2; ++ip) {
            const Measurement m = bench.measure(algorithm, size, type, op, ip == 1);
            if (!m.unavailable.empty()) {
              reasons.insert(m.unavailable);
              continue;
            }
            rows[ip] = make_row(c, algorithm, size, ranks, m.time_us, ip == 1, m.wrong);
            if (mixed) {
              rows[ip].dtype = type;
              rows[ip].op = op;
            }
            have[ip] = true;
            if (print) report.results.push_back(rows[ip]);
            busbw_sum += rows[ip].busbw_gbps;
            ++busbw_n;
            if (m.wrong > 0) wrong += m.wrong;
          }
          if (print) {
            std::printf(
                "%s", table_row(rows[0], have[1] ? &rows[1] : nullptr, std::string(to_string(type)),
                                redop_column(c, op), root_column(c, cfg.root))
                          .c_str());
            std::fflush(stdout);
          }
        }
      }
    }
    if (print) {
      for (const std::string& why : reasons) {
        std::printf("# in-place: N/A (%s)\n", why.c_str());
        unavailable.push_back({{"algorithm", algorithm}, {"reason", why}});
      }
      std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong),
                  wrong == 0 ? "OK" : "FAILED");
      std::printf("# Avg bus bandwidth    : %g\n", busbw_n ? busbw_sum / busbw_n : 0.0);
      std::fflush(stdout);
    }
    total_wrong += wrong;
  }
  any_wrong = total_wrong > 0;

  if (print) {
    report.best = compute_best(report.results);
    report.extra["hosts"] = hosts.hosts;
    report.extra["devices"] = hosts.devices;
    report.extra["iters"] = cfg.iters;
    report.extra["warmup"] = cfg.warmup;
    report.extra["check_iters"] = cfg.check;
    report.extra["average"] = to_string(cfg.average);
    report.extra["mpi_library"] = mpi_library();
    report.extra["in_place_unavailable"] = unavailable;
    std::printf("#\n%s", format_best_summary(report).c_str());
    std::fflush(stdout);
    if (!cfg.json_path.empty()) write_file_atomic(cfg.json_path, report_json_text(report));
  }
}

}  // namespace

void run_bench(const BenchArgs& args) {
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
  try {
    cfg = parse_config(args, ranks);
    if (rank == 0 && !cfg.json_path.empty()) check_writable(cfg.json_path);
  } catch (const Error& e) {
    usage_abort(rank, e.what());
  }
  // A rank-0-only failure (check_writable) aborted above; the rest is shared.
  bool any_wrong = false;
  std::int64_t total_wrong = 0;
  try {
    run(cfg, args, rank, ranks, any_wrong, total_wrong);
  } catch (const UsageError& e) {
    usage_abort(rank, e.what());
  } catch (const Error& e) {
    runtime_abort(rank, e.what(), e.exit_code());
  } catch (const std::exception& e) {
    runtime_abort(rank, e.what(), 1);
  }
  MPI_Finalize();
  if (any_wrong && rank == 0)
    throw RuntimeFailure(std::to_string(total_wrong) +
                         " wrong element(s) in the correctness checks (see #wrong)");
}

}  // namespace collkit::realrun

#else  // !COLLKIT_HAVE_MPI

namespace collkit::realrun {

void run_bench(const BenchArgs&) {
  throw UsageError(
      "this collkit was built without MPI (COLLKIT_WITH_MPI=OFF): "
      "bench --backend mpi is unavailable");
}

}  // namespace collkit::realrun

#endif  // COLLKIT_HAVE_MPI
