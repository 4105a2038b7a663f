// collkit sweep GRID.json: a what-if grid (whatif/), evaluated on this
// process's cores or, started under mpirun/srun, shared out over the MPI
// ranks; rank 0 gathers the rows and writes the files.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/parallel.h"
#include "whatif/evaluate.h"
#include "whatif/grid.h"
#include "whatif/output.h"
#ifdef COLLKIT_HAVE_REALRUN
#include "realrun/harness.h"
#endif
#ifdef COLLKIT_HAVE_MPI
#include <mpi.h>
#endif

namespace collkit::cli {
namespace {

struct SweepArgs {
  std::string grid;
  std::string json_path;
  std::string csv_path;
  std::string html_path;
  int jobs = 0;
  bool quiet = false;
};

// Progress on stderr: nothing in the first two seconds, then the count at
// most once a second (the points finish on several threads), as
// calibrate's lines. Under MPI each rank reports its own share.
class SweepProgress {
 public:
  SweepProgress(std::string who, std::size_t total, bool quiet)
      : who_(std::move(who)), total_(total), quiet_(quiet) {}
  void operator()(std::size_t done) {
    if (quiet_) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    const double now = seconds();
    if (done < total_ && (now < 2.0 || now < last_ + 1.0)) return;
    if (done == total_ && !printed_) return;
    last_ = now;
    printed_ = true;
    std::fprintf(stderr, "sweep%s: %5.1f s  %zu/%zu points\n", who_.c_str(), now, done, total_);
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::string who_;
  std::size_t total_;
  bool quiet_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_ = 0;
  bool printed_ = false;
};

// The rows as text, one per line: how they travel between processes, and
// how the one-process run passes them too, so both write the same bytes.
std::string rows_text(const std::vector<Json>& rows) {
  std::string text;
  for (const Json& row : rows) text += row.dump() + "\n";
  return text;
}

void add_rows(const std::string& text, std::vector<Json>& all) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    Json row = Json::parse(text.substr(at, end - at));
    const std::size_t point = row.at("point").get<std::size_t>();
    all.at(point) = std::move(row);
    at = end + 1;
  }
}

void write_outputs(const SweepArgs& a, const Grid& grid, std::vector<Json>& rows) {
  mark_best_machines(grid, rows);
  std::vector<std::pair<std::string, std::string>> files;
  if (!a.json_path.empty()) files.emplace_back(a.json_path, sweep_json(grid, rows));
  if (!a.csv_path.empty()) files.emplace_back(a.csv_path, sweep_csv(grid, rows));
  if (!a.html_path.empty()) files.emplace_back(a.html_path, sweep_html(grid, rows));
  std::fputs(sweep_table(grid, rows).c_str(), stdout);
  std::fflush(stdout);
  write_files_atomic(files);
}

std::string shape_line(const Grid& grid) {
  std::string what = grid.kind == GridKind::simulate
                         ? std::to_string(grid.collectives.size()) + " collective(s) x " +
                               std::to_string(grid.sizes.size()) + " size(s)"
                         : std::to_string(grid.models.size()) + " model(s) x " +
                               std::to_string(grid.batches.size()) + " batch(es)";
  return std::to_string(grid.points()) + " points: " + std::to_string(grid.machines()) +
         " machine(s) x " + what;
}

// Everything that needs no other process: the grid and the output paths.
// None of the outputs may be a file the grid reads.
Grid prepare(const SweepArgs& a, bool writes) {
  Grid grid = read_grid(a.grid);
  if (writes) {
    std::vector<PathArg> inputs = {{"grid", a.grid}, {"topology", grid.topology_file}};
    for (const std::string& m : grid.models) inputs.push_back({"model", m});
    prepare_outputs({{"--json", a.json_path}, {"--csv", a.csv_path}, {"--html", a.html_path}},
                    inputs);
  }
  return grid;
}

void run_local(const SweepArgs& a) {
  const Grid grid = prepare(a, true);
  SweepProgress progress("", grid.points(), a.quiet);
  const int jobs = a.jobs > 0 ? a.jobs : hardware_jobs();
  if (!a.quiet)
    std::fprintf(stderr, "sweep: %s, on %d thread(s)\n", shape_line(grid).c_str(), jobs);
  const std::vector<Json> mine = evaluate_points(grid, points_of_rank(grid, 0, 1), jobs,
                                                 [&](std::size_t done) { progress(done); });
  std::vector<Json> rows(grid.points());
  add_rows(rows_text(mine), rows);
  write_outputs(a, grid, rows);
  if (!a.quiet) std::fprintf(stderr, "sweep: done in %.1f s\n", progress.seconds());
}

#ifdef COLLKIT_HAVE_MPI
[[noreturn]] void abort_all(int rank, const std::string& what, int code) {
  std::fprintf(stderr, "collkit: error: sweep: rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

void run_mpi(const SweepArgs& a, int local_size) {
  // The grid is read and checked on every rank before MPI starts: a bad
  // file is one line from rank 0 and exit 2 everywhere, no MPI_Abort.
  const realrun::LaunchEnv env = realrun::launch_environment();
  Grid grid;
  try {
    grid = prepare(a, env.rank == 0);
  } catch (const Error&) {
    if (env.rank == 0) throw;
    std::_Exit(2);
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // The ranks on one host share its cores.
  const int jobs = a.jobs > 0 ? a.jobs : std::max(1, hardware_jobs() / std::max(1, local_size));
  const std::vector<std::size_t> points = points_of_rank(grid, rank, size);
  if (rank == 0 && !a.quiet)
    std::fprintf(stderr, "sweep: %s, on %d MPI process(es) x %d thread(s)\n",
                 shape_line(grid).c_str(), size, jobs);
  SweepProgress progress(" (rank " + std::to_string(rank) + ")", points.size(), a.quiet);
  std::string text;
  try {
    text =
        rows_text(evaluate_points(grid, points, jobs, [&](std::size_t done) { progress(done); }));
  } catch (const Error& e) {
    abort_all(rank, e.what(), e.exit_code());
  } catch (const std::exception& e) {
    abort_all(rank, e.what(), 1);
  }
  // Rank 0 gathers every rank's rows (their lengths first).
  long long length = static_cast<long long>(text.size());
  std::vector<long long> lengths(static_cast<std::size_t>(size));
  MPI_Gather(&length, 1, MPI_LONG_LONG, lengths.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  std::vector<int> counts(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  std::string all;
  if (rank == 0) {
    long long total = 0;
    for (int r = 0; r < size; ++r) {
      if (total + lengths[r] > INT32_MAX)
        abort_all(rank, "the rows exceed 2 GiB, more than one MPI_Gatherv carries", 1);
      offsets[r] = static_cast<int>(total);
      counts[r] = static_cast<int>(lengths[r]);
      total += lengths[r];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(text.data(), static_cast<int>(text.size()), MPI_CHAR, all.data(), counts.data(),
              offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    try {
      std::vector<Json> rows(grid.points());
      add_rows(all, rows);
      write_outputs(a, grid, rows);
    } catch (const Error& e) {
      abort_all(rank, e.what(), e.exit_code());
    }
    if (!a.quiet) std::fprintf(stderr, "sweep: done in %.1f s\n", progress.seconds());
  }
  MPI_Finalize();
}
#endif

void run_sweep_command(const SweepArgs& a) {
#if defined(COLLKIT_HAVE_MPI) && defined(COLLKIT_HAVE_REALRUN)
  const realrun::LaunchEnv env = realrun::launch_environment();
  if (env.launched) {
    run_mpi(a, env.local_size > 0 ? env.local_size : env.size);
    return;
  }
#endif
  run_local(a);
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sweep",
      "Evaluate a what-if grid (one JSON file: a topology, the parameters to vary, and "
      "collectives x sizes or models x batches) on every core, or over the MPI ranks when "
      "started under mpirun/srun; print one row per point, write JSON/CSV/HTML "
      "(docs/SWEEP.md)");
  auto a = std::make_shared<SweepArgs>();
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("grid", a->grid, "The grid file (docs/SWEEP.md)")->required();
  cmd->add_option("--json", a->json_path, "Write the rows as one JSON document to this file");
  cmd->add_option("--csv", a->csv_path, "Write the rows as CSV (one line per point) to this file");
  cmd->add_option("--html", a->html_path,
                  "Write an HTML page of heatmaps (machines x sizes or batches, the best machine "
                  "of each column starred) to this file");
  cmd->add_option("--jobs", a->jobs,
                  "Threads per process (default 0 = every core, shared among the MPI ranks of a "
                  "host); the output is the same whatever the count")
      ->check(CLI::Range(0, 4096));
  cmd->add_flag("--quiet", a->quiet, "No progress lines on stderr");
  cmd->callback([a] { run_sweep_command(*a); });
}

}  // namespace collkit::cli
