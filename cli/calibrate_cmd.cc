#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "calibration/calibrate.h"
#include "cli/commands.h"
#include "cli/outputs.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/input_file.h"
#include "core/nccl_version.h"
#include "core/progress.h"
#include "core/sizes.h"
#include "reports/inputs.h"
#include "reports/report.h"
#include "reports/report_extra.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "sim/rccl.h"
#include "topologies/reshape.h"
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
  std::string launch;  // empty: as the measured runs were launched
  std::string repeats = "all";
  std::string nccl_version;
  bool accept = false;
  int jobs = 0;
  bool quiet = false;
};

std::string read_bytes(const std::string& path, const char* what) {
  return read_input_file(path, what);
}

std::string short_hash(const std::string& sha) { return sha.substr(0, 16); }

// A measured argument: FILE, or FILE@NODESxGPUS for a run of the base
// cluster at another scale (topologies/reshape.h).
struct MeasuredArg {
  std::string path;
  std::optional<ClusterShape> shape;
  std::string shape_text;
};

MeasuredArg split_measured(const std::string& arg) {
  const std::size_t at = arg.rfind('@');
  if (at == std::string::npos || at + 1 >= arg.size() ||
      !std::isdigit(static_cast<unsigned char>(arg[at + 1])) ||
      arg.find('x', at) == std::string::npos || std::filesystem::exists(arg))
    return {arg, std::nullopt, ""};
  const std::string tail = arg.substr(at + 1);
  return {arg.substr(0, at), parse_cluster_shape(tail, "measured " + arg), tail};
}

CalibrateOptions calibrate_options(const CalibrateArgs& a) {
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
  if (!a.launch.empty()) options.launch_devices = parse_launch_mode(a.launch);
  if (a.repeats != "all" && a.repeats != "fastest")
    throw UsageError("--repeats '" + a.repeats + "': expected all or fastest");
  options.fastest_repeat = a.repeats == "fastest";
  options.jobs = a.jobs;
  if (!a.nccl_version.empty())
    options.nccl_version = checked_nccl_version("--nccl-version", a.nccl_version);
  return options;
}

// Every run of every measured file (an nccl-tests log may hold several),
// each on its network: FILE@NODESxGPUS measured the base at that scale,
// and its logs hold that many ranks.
std::vector<CalibrationInput> read_measured(const std::vector<MeasuredArg>& measured,
                                            const std::string& base_text,
                                            const std::string& base_file, const ReadOptions& read) {
  std::vector<CalibrationInput> inputs;
  for (const MeasuredArg& m : measured) {
    std::shared_ptr<const Topology> network;
    ReadOptions run_read = read;
    if (m.shape) {
      network = parse_topology(reshape_topology_text(base_text, base_file, *m.shape),
                               base_file + "@" + m.shape_text);
      run_read.ranks = network->num_ranks();
    }
    const std::string bytes = read_bytes(m.path, "report");
    const std::string sha = sha256_hex(bytes);
    for (InputRun& run : parse_runs(bytes, m.path, run_read)) {
      CalibrationInput in;
      in.file = run.name;
      in.sha256 = sha;
      in.report = std::move(run.report);
      in.row_names = std::move(run.row_origins);
      in.network = network;
      in.shape = m.shape_text;
      inputs.push_back(std::move(in));
    }
  }
  return inputs;
}

// How the calls are simulated: as the measured runs were launched
// (nccl-tests -g G: one thread on G devices, nGpus G), or as --launch says,
// with a word where it disagrees with a run. Sets options.launch_devices;
// returns the --launch flag it stands for; `notes` are printed once the fit
// ran.
std::string resolve_launch(const CalibrateArgs& a, const std::vector<CalibrationInput>& inputs,
                           int base_ranks, CalibrateOptions& options,
                           std::vector<std::string>& notes) {
  std::string first_file;
  std::optional<LaunchOf> first;
  for (const CalibrationInput& in : inputs) {
    const std::optional<LaunchOf> l = extra_launch(in.report);
    if (!l) continue;
    if (!a.launch.empty()) {
      if (l->devices != options.launch_devices)
        notes.push_back("collkit: warning: " + in.file + " was launched as " + l->described() +
                        "; fitted as --launch " + a.launch + ", as given");
    } else if (!first) {
      first = l;
      first_file = in.file;
    } else if (first->devices != l->devices) {
      throw UsageError(first_file + " was launched as " + first->described() + ", " + in.file +
                       " as " + l->described() + ": calibrate them apart, or give --launch");
    }
  }
  if (!a.launch.empty()) return a.launch;
  options.launch_devices = first ? first->devices : 1;
  if (first && first->devices > 1)
    notes.push_back("collkit: note: calls simulated as " + first->described() + ", as " +
                    first_file +
                    " was launched; --launch proc fits them as one process per device");
  if (options.launch_devices > base_ranks)
    throw UsageError(first_file + ": launched on " + std::to_string(options.launch_devices) +
                     " devices per thread, but --topology " + a.topology + " has " +
                     std::to_string(base_ranks) + " ranks");
  return first ? first->flag() : "proc";
}

// The fitted file's description: what it was fitted to, how, and how well.
std::string fitted_description(const CalibrateArgs& a, const CalibrateOptions& options,
                               const std::vector<CalibrationInput>& inputs,
                               const CalibrationResult& result, const std::string& launch,
                               const std::string& base_sha) {
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
  if (options.launch_devices > 1)
    description += "; calls launched as --launch " + launch +
                   (a.launch.empty() ? " (as the measured runs were)" : "");
  if (options.huber > 0) {
    char loss[96];
    std::snprintf(loss, sizeof loss, "; Huber loss, threshold %g", options.huber);
    description += loss;
  }
  return description + "; base " + a.topology + " (sha256 " + base_sha + ")" + summary + ".";
}

// Which NCCL's choice stood for each report's rows of NCCL's own choice.
void print_nccl_versions(const std::vector<CalibrationInput>& inputs,
                         const CalibrateOptions& options, const Topology& base) {
  for (const CalibrationInput& in : inputs) {
    if (!options.match.empty() && !is_nccl_algorithm(options.match)) break;
    bool nccl_rows = false;
    for (const ResultRow& row : in.report.results) nccl_rows = nccl_rows || row.algorithm == "nccl";
    if (!nccl_rows) continue;
    if (is_amd(base.nccl.gpu)) {  // RCCL's own model chose (docs/NCCL.md, "RCCL")
      std::printf("# %s: RCCL %s's cost model for gfx942 (no NCCL version applies)\n",
                  in.file.c_str(), std::string(rccl_gfx942().version).c_str());
      continue;
    }
    std::string from;
    const NcclVersion v = calibration_nccl_version(in, options, base, &from);
    const std::optional<NcclVersion> logged = extra_nccl_version(in.report);
    std::string why = from;
    if (from != "the log" && logged)
      why += "; the log's NCCL " + to_string(*logged) + " is outside the versions collkit models";
    std::printf("# %s: NCCL %s from %s\n", in.file.c_str(), to_string(v).c_str(), why.c_str());
  }
}

void run_calibrate(const CalibrateArgs& a) {
  CalibrateOptions options = calibrate_options(a);
  const ReadOptions read = read_options(a.collective, a.ranks);
  if (a.topology.rfind("astra:", 0) == 0)
    throw UsageError("--topology " + a.topology +
                     ": the fitted file is written in the base's JSON form; give a JSON topology");
  std::vector<PathArg> input_paths = {{"--topology", a.topology}};
  std::vector<MeasuredArg> measured;
  for (const std::string& arg : a.measured) {
    measured.push_back(split_measured(arg));
    input_paths.push_back({"measured", measured.back().path});
  }
  prepare_outputs({{"-o", a.output}}, input_paths);

  const std::string base_text = read_bytes(a.topology, "topology file");
  const std::unique_ptr<Topology> base = parse_topology(base_text, a.topology, a.ranks);
  const std::string base_sha = sha256_hex(base_text);
  check_ranks_fit(base->num_ranks(), "--topology " + a.topology);
  if (!a.launch.empty()) check_launch_fits(a.launch, options.launch_devices, base->num_ranks());
  const std::vector<CalibrationInput> inputs = read_measured(measured, base_text, a.topology, read);
  std::vector<std::string> launch_notes;
  const std::string launch = resolve_launch(a, inputs, base->num_ranks(), options, launch_notes);

  CalibrationResult result;
  {
    // The fit reports nothing while it works (a cache-size search, several
    // starts, each of many simulations): the elapsed time, on a timer.
    Progress progress(
        "calibrate " + base->name + " to " + std::to_string(inputs.size()) + " report(s)", 0,
        {a.quiet});
    progress.start_ticker();
    // Each step of the fit names its pass, start, iteration and rms error.
    options.progress = [&progress](const std::string& line) { progress.update(0, line); };
    result = calibrate(inputs, *base, options);
    options.progress = nullptr;
  }
  for (const std::string& line : launch_notes) std::fprintf(stderr, "%s\n", line.c_str());

  const std::string text =
      fitted_topology_text(base_text, a.topology, *base, result,
                           fitted_description(a, options, inputs, result, launch, base_sha));
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
  print_nccl_versions(inputs, options, *base);
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
                  "Measured reports: collkit bench --json, nccl-tests logs (every run) or -J "
                  "files; FILE@NODESxGPUS: a run of the base cluster at that scale (e.g. "
                  "run.log@10x2), fitted on the base resized")
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
                  "How the measured calls were launched: proc (one process per device) or "
                  "group:G (one thread on G devices, as nccl-tests -g G); default: as the "
                  "measured runs say (nGpus, config.ngpus, simulate's --launch), else proc");
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
                "No progress on standard error (the elapsed time and the fit's start, iteration "
                "and error, after a few seconds: on a terminal in place, otherwise a line every "
                "10 s)");
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
