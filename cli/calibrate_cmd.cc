#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "calibration/calibrate.h"
#include "cli/commands.h"
#include "cli/outputs.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/nccl_version.h"
#include "core/sizes.h"
#include "reports/inputs.h"
#include "reports/report.h"
#include "reports/report_extra.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "sim/rccl.h"
#include "topologies/sha256.h"
#include "topologies/topology.h"

namespace collkit::cli {
namespace {

struct CalibrateArgs {
  std::vector<std::string> measured;
  std::string topology;
  std::string output;
  std::string model = "flow";
  std::string renamed_model;  // --model, the old spelling of --net-model
  std::string min_bytes = "0";
  double huber = 0;
  int max_iterations = 100;
  int starts = CalibrateOptions{}.starts;
  int ranks = 0;
  std::string match;
  std::string collective;
  std::string launch = "proc";
  std::string repeats = "all";
  std::string nccl_version;
  bool accept = false;
  int jobs = 0;
  bool quiet = false;
};

// Progress on stderr for a fit that takes a while: nothing in its first two
// seconds, then the latest line at most once a second (the fit calls from
// several threads), and the time taken at the end if anything was printed.
class FitProgress {
 public:
  void operator()(const std::string& line) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const double now = seconds();
    if (now < 2.0 || now < last_ + 1.0) return;
    last_ = now;
    printed_ = true;
    std::fprintf(stderr, "calibrate: %5.1f s  %s\n", now, line.c_str());
  }
  void done() const {
    if (printed_) std::fprintf(stderr, "calibrate: done in %.1f s\n", seconds());
  }

 private:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_ = 0;
  bool printed_ = false;
};

std::string read_bytes(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(path + ": cannot open the " + what);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string short_hash(const std::string& sha) { return sha.substr(0, 16); }

void run_calibrate(const CalibrateArgs& a) {
  if (!a.renamed_model.empty()) throw UsageError(renamed_model_message(a.renamed_model));
  CalibrateOptions options;
  options.model = parse_net_model(a.model);
  options.min_bytes = a.min_bytes == "0" ? 0 : parse_size("--min-bytes", a.min_bytes);
  if (!(a.huber >= 0) || a.huber > 10)
    throw UsageError("--huber: must be a relative error in [0, 10] (0 = least squares), got " +
                     std::to_string(a.huber));
  options.huber = a.huber;
  options.max_iterations = a.max_iterations;
  options.starts = a.starts;
  options.match = a.match;
  options.launch_devices = parse_launch_mode(a.launch);
  if (a.repeats != "all" && a.repeats != "fastest")
    throw UsageError("--repeats '" + a.repeats + "': expected all or fastest");
  options.fastest_repeat = a.repeats == "fastest";
  options.jobs = a.jobs;
  const auto progress = std::make_shared<FitProgress>();
  if (!a.quiet) options.progress = [progress](const std::string& line) { (*progress)(line); };
  if (!a.nccl_version.empty())
    options.nccl_version = checked_nccl_version("--nccl-version", a.nccl_version);
  const ReadOptions read = read_options(a.collective, a.ranks);
  if (a.topology.rfind("astra:", 0) == 0)
    throw UsageError("--topology " + a.topology +
                     ": the fitted file is written in the base's JSON form; give a JSON topology");
  std::vector<PathArg> input_paths = {{"--topology", a.topology}};
  for (const std::string& path : a.measured) input_paths.push_back({"measured", path});
  prepare_outputs({{"-o", a.output}}, input_paths);

  const std::string base_text = read_bytes(a.topology, "topology file");
  const std::unique_ptr<Topology> base = parse_topology(base_text, a.topology, a.ranks);
  const std::string base_sha = sha256_hex(base_text);

  // Every run of every file is fitted (an nccl-tests log may hold several).
  std::vector<CalibrationInput> inputs;
  for (const std::string& path : a.measured) {
    const std::string bytes = read_bytes(path, "report");
    const std::string sha = sha256_hex(bytes);
    for (InputRun& run : parse_runs(bytes, path, read)) {
      CalibrationInput in;
      in.file = run.name;
      in.sha256 = sha;
      in.report = std::move(run.report);
      in.row_names = std::move(run.row_origins);
      inputs.push_back(std::move(in));
    }
  }

  const CalibrationResult result = calibrate(inputs, *base, options);
  progress->done();

  std::string description = "Fitted by collkit calibrate (" +
                            std::string(to_string(options.model)) + " model) to " +
                            std::to_string(result.points.size()) + " points (" +
                            std::to_string(result.distinct_points) + " distinct) from ";
  for (std::size_t i = 0; i < inputs.size(); ++i)
    description += (i ? ", " : "") + inputs[i].file + " (sha256 " + inputs[i].sha256 + ")";
  char summary[160];
  std::snprintf(summary, sizeof summary, "; |relative error| median %.3g%%, p90 %.3g%%",
                100 * result.median_abs_error, 100 * result.p90_abs_error);
  if (options.min_bytes > 0)
    description += "; rows below " + std::to_string(options.min_bytes) + " bytes left out";
  if (!options.match.empty())
    description += "; rows of algorithm nccl or native simulated as " + options.match;
  if (options.huber > 0) {
    char loss[96];
    std::snprintf(loss, sizeof loss, "; Huber loss, threshold %g", options.huber);
    description += loss;
  }
  description += "; base " + a.topology + " (sha256 " + base_sha + ")" + summary + ".";
  const std::string text = fitted_topology_text(base_text, a.topology, *base, result, description);

  for (const std::string& row : result.failed_check)
    std::fprintf(stderr, "collkit: warning: %s: left out of the fit: its check failed (#wrong)\n",
                 row.c_str());
  std::string problems;
  for (const std::string& p : result.problems) problems += (problems.empty() ? "" : "; ") + p;
  // Written before printing, so a reader that closes stdout early (| head)
  // does not cost the fit; a suspect fit only with --accept.
  if (problems.empty() || a.accept) write_file_atomic(a.output, text);
  std::printf("# collkit calibrate: base %s (sha256 %s...), %zu report(s), model %s\n",
              a.topology.c_str(), short_hash(base_sha).c_str(), inputs.size(),
              std::string(to_string(options.model)).c_str());
  // Which NCCL's choice stood for each report's rows of NCCL's own choice.
  for (const CalibrationInput& in : inputs) {
    if (!options.match.empty() && !is_nccl_algorithm(options.match)) break;
    bool nccl_rows = false;
    for (const ResultRow& row : in.report.results) nccl_rows = nccl_rows || row.algorithm == "nccl";
    if (!nccl_rows) continue;
    if (is_amd(base->nccl.gpu)) {  // RCCL's own model chose (docs/NCCL.md, "RCCL")
      std::printf("# %s: RCCL %s's cost model for gfx942 (no NCCL version applies)\n",
                  in.file.c_str(), std::string(rccl_gfx942().version).c_str());
      continue;
    }
    std::string from;
    const NcclVersion v = calibration_nccl_version(in, options, *base, &from);
    const std::optional<NcclVersion> logged = extra_nccl_version(in.report);
    std::string why = from;
    if (from != "the log" && logged)
      why += "; the log's NCCL " + to_string(*logged) + " is outside the versions collkit models";
    std::printf("# %s: NCCL %s from %s\n", in.file.c_str(), to_string(v).c_str(), why.c_str());
  }
  std::fputs(format_calibration(result).c_str(), stdout);
  std::fflush(stdout);
  if (!problems.empty() && !a.accept)
    throw Error("calibrate: the fit is suspect: " + problems + "; -o " + a.output +
                    " not written (--accept writes it anyway)",
                1);
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Fit a topology's link latency/bandwidth, endpoint overhead, reduce and copy bandwidth "
      "to measured reports by least squares on simulated times (docs/REPORTS.md)");
  auto a = std::make_shared<CalibrateArgs>();
  cmd->add_option("measured", a->measured,
                  "Measured reports: collkit bench --json, nccl-tests logs (every run) or -J files")
      ->required();
  cmd->add_option("--topology", a->topology, "Base topology file (JSON); its form is kept")
      ->required();
  cmd->add_option("-o,--output", a->output, "Write the fitted topology (JSON) to this file")
      ->required();
  cmd->add_option("--net-model", a->model, "Network model: flow (default) or alpha-beta");
  cmd->add_option("--model", a->renamed_model)->group("");  // renamed: fails naming --net-model
  cmd->add_option("--min-bytes", a->min_bytes,
                  "Leave rows below this size out of the fit (K/M/G suffixes; default 0)");
  cmd->add_option("--huber", a->huber,
                  "Robust fit: Huber loss with this relative-error threshold (e.g. 0.1); "
                  "residuals beyond it weigh linearly (default 0 = least squares)");
  cmd->add_option("--max-iterations", a->max_iterations,
                  "Levenberg-Marquardt iterations at most, per fit (default 100); the output "
                  "says how many ran")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--starts", a->starts,
                  "Descents of the final fit: from the base and STARTS - 1 more points spread "
                  "over each parameter's range, the same every run; the lowest loss wins "
                  "(default 4; 1 = the base only)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--ranks", a->ranks,
                  "Ranks on the topology's first endpoints, as the measured run had them "
                  "(0 = all endpoints); also the rank count of nccl-tests logs without '# Rank' "
                  "lines")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeats", a->repeats,
                  "Rows measured alike in several files: all (default: every one is a point) or "
                  "fastest (only the least time of each: the machine at its best, where what "
                  "varies between repeats only slows a run down)");
  cmd->add_option("--launch", a->launch,
                  "How the measured calls were launched: proc (one process per device, default) "
                  "or group:G (one thread on G devices, as nccl-tests -g G)");
  cmd->add_option("--match", a->match,
                  "The collkit algorithm whose schedule stands for rows of algorithm nccl "
                  "(nccl-tests) or native, e.g. ring (default: the registered algorithm 'nccl', "
                  "when there is one)");
  cmd->add_option("--collective", a->collective, kCollectiveHelp);
  cmd->add_option("--jobs", a->jobs,
                  "Threads for the fit (its starts, derivatives and points; default 0 = every "
                  "core); the fit is the same whatever the count")
      ->check(CLI::Range(0, 4096));
  cmd->add_flag("--quiet", a->quiet,
                "No progress lines on stderr (printed while a fit runs longer than 2 s)");
  cmd->add_option("--nccl-version", a->nccl_version,
                  "The NCCL version whose cost model picks what rows of NCCL's own choice ran, "
                  "e.g. 2.29.2 (default: each log's own version, else the base's nccl.version, "
                  "else 2.26.2; docs/NCCL.md, \"Versions\")");
  cmd->add_flag("--accept", a->accept,
                "Write the fit even when a parameter ends on a bound of its physical range or "
                "the fit predicts worse than the base (else exit 1, nothing written)");
  cmd->callback([a] { run_calibrate(*a); });
}

}  // namespace collkit::cli
