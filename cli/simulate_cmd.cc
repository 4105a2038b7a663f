#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/registry.h"
#include "cli/commands.h"
#include "cli/outputs.h"
#include "core/atomic_file.h"
#include "core/dtypes.h"
#include "core/error.h"
#include "core/nccl_version.h"
#include "core/sizes.h"
#include "reports/inputs.h"
#include "reports/nccl_tests.h"
#include "reports/report.h"
#include "reports/report_extra.h"
#include "reports/sweep_report.h"
#include "reports/table.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "sim/nccl_explain.h"
#include "sim/rccl.h"
#include "sim/sweep.h"
#include "topologies/topology.h"

namespace collkit::cli {
namespace {

struct SimulateArgs {
  std::string topology;
  std::string collective;
  std::string algorithm = "all";
  // Sizes are kept as text so that a bad value is reported by our own parser
  // with the flag's name, in one line, like every other usage error.
  std::string min_bytes = "32M";  // nccl-tests' defaults
  std::string max_bytes = "32M";
  std::string step_factor = "1";
  std::string step_bytes = "1M";
  std::string dtype = "float";
  std::string op = "sum";
  std::string root = "0";
  std::string ranks = "0";
  std::string model = "flow";
  std::string renamed_model;  // --model, the old spelling of --net-model
  std::string segment = "0";
  std::string group = "0";
  std::string buffsize = "0";
  std::string segments_as;
  std::string launch = "proc";
  std::string json_path;
  std::string csv_path;
  std::string nccl_tests_json;  // -J
  std::string nccl_version;     // --nccl-version; empty = the topology's, else the default
  bool explain = false;
};

// A non-negative integer flag, with the flag's name in the error.
std::int64_t parse_count(const std::string& flag, const std::string& text) {
  return parse_integer(flag, text, 0, INT64_MAX);
}

int parse_int(const std::string& flag, const std::string& text) {
  return static_cast<int>(parse_integer(flag, text, 0, 1 << 30));
}

// Names are checked before the topology is loaded so that a typo is reported
// at once; make_schedule checks the rest (root, group) once p is known.
void check_algorithm_names(Collective c, const std::vector<std::string>& names) {
  for (const std::string& full : names) {
    if (find_schedule_source(full)) continue;  // e.g. msccl:FILE.xml, checked when built
    // "rccl[:variant]" is the nccl family on an AMD machine (sim/nccl.h).
    const std::string family = is_rccl_algorithm(full) ? "nccl" + full.substr(4) : full;
    const auto [name, variant] = split_algorithm_name(family);
    const AlgorithmDef& def = find_algorithm(c, name);
    bool known = variant.empty();
    std::string valid;
    for (const std::string& v : def.variants) {
      known = known || v == variant;
      valid += (valid.empty() ? "" : ", ") + v;
    }
    if (!known)
      throw UsageError("unknown variant '" + variant + "' of " + std::string(to_string(c)) +
                       " algorithm '" + name + "'; valid: " + (valid.empty() ? "(none)" : valid));
  }
}

// A one-line bar on stderr, drawn only when stderr is a terminal and the
// sweep has already run for a second: short sweeps and logs stay clean.
class ProgressBar {
 public:
  ProgressBar() : enabled_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()) {}
  ~ProgressBar() { clear(); }

  void update(std::size_t done, std::size_t total) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(1)) return;
    if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    constexpr int kWidth = 40;
    const int filled = static_cast<int>(kWidth * done / (total ? total : 1));
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r[%s] %3zu%% %zu/%zu", bar.c_str(), 100 * done / (total ? total : 1),
                 done, total);
    std::fflush(stderr);
    drawn_ = true;
  }

  void clear() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r%*s\r", 72, "");
    std::fflush(stderr);
    drawn_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point start_;
  Clock::time_point last_{};
};

void run_simulate(const SimulateArgs& a) {
  // Every argument is checked before anything runs or is written.
  if (!a.renamed_model.empty()) throw UsageError(renamed_model_message(a.renamed_model));
  SweepSpec sweep;
  sweep.collective = parse_collective(a.collective);
  sweep.algorithms = expand_algorithms(sweep.collective, a.algorithm);
  check_algorithm_names(sweep.collective, sweep.algorithms);
  const std::int64_t min_bytes = parse_size("-b", a.min_bytes);
  const std::int64_t max_bytes = parse_size("-e", a.max_bytes);
  const std::int64_t factor = parse_count("-f", a.step_factor);
  const std::int64_t step = parse_size("-i", a.step_bytes);
  sweep.sizes = sweep_sizes(min_bytes, max_bytes, factor, step);
  sweep.dtype = parse_data_type(a.dtype);
  sweep.op = parse_red_op(a.op);
  sweep.root = parse_int("--root", a.root);
  sweep.segment_bytes = parse_segment_bytes("--segment", a.segment, sweep.dtype);
  sweep.group_size = parse_int("--group", a.group);
  sweep.nccl_buffsize = parse_nccl_buffsize("--nccl-buffsize", a.buffsize);
  int ranks = parse_int("--ranks", a.ranks);
  // An algorithm fixed to a rank count (msccl:FILE.xml: the file's ngpus)
  // runs on that many ranks of the topology unless --ranks says otherwise.
  for (const std::string& name : sweep.algorithms) {
    const auto source = find_schedule_source(name);
    const int fixed = source && source->fixed_ranks ? source->fixed_ranks(name) : 0;
    if (fixed == 0) continue;
    if (ranks == 0) ranks = fixed;
    if (ranks != fixed)
      throw UsageError("--algorithm " + name + " is for " + std::to_string(fixed) +
                       " ranks, but the run has " + std::to_string(ranks) +
                       " (--ranks, or another algorithm's)");
  }
  if (!a.nccl_version.empty())
    sweep.nccl_version = checked_nccl_version("--nccl-version", a.nccl_version);
  const bool any_nccl = std::any_of(sweep.algorithms.begin(), sweep.algorithms.end(),
                                    [](const std::string& n) { return is_nccl_algorithm(n); });
  if (a.explain && !any_nccl)
    throw UsageError("--explain: explains NCCL's choice, and --algorithm " + a.algorithm +
                     " has no nccl algorithm (nccl, nccl:VARIANT or all)");
  SimOptions options;
  options.model = parse_net_model(a.model);
  options.launch_devices = parse_launch_mode(a.launch);
  // Outputs: writable, distinct, none of them an input; -J is one
  // nccl-tests JSON file per algorithm.
  std::vector<PathArg> outputs = {{"--json", a.json_path}, {"--csv", a.csv_path}};
  if (a.nccl_tests_json == kStdoutPath && sweep.algorithms.size() > 1)
    throw UsageError("-J -: " + std::to_string(sweep.algorithms.size()) +
                     " algorithms write one file each; standard output takes one (name one "
                     "--algorithm, or give -J a file name)");
  for (const std::string& algorithm : sweep.algorithms)
    if (!a.nccl_tests_json.empty())
      outputs.push_back(
          {"-J", nccl_tests_json_path(a.nccl_tests_json, algorithm, sweep.algorithms.size() > 1)});
  std::vector<PathArg> inputs = {{"--topology", topology_file(a.topology)},
                                 {"--segments-as", a.segments_as}};
  for (const std::string& name : sweep.algorithms)
    if (name.rfind("msccl:", 0) == 0) inputs.push_back({"--algorithm", name.substr(6)});
  prepare_outputs(outputs, inputs);

  // --segments-as: the segment choice of a measured run, read before the
  // topology so that a bad file fails first and alone.
  std::optional<CostParams> run_model;
  if (!a.segments_as.empty()) {
    ReadOptions read;
    read.collective = sweep.collective;
    read.ranks = ranks;
    const std::vector<InputRun> runs = read_runs(a.segments_as, read);
    const Report& run = runs.front().report;
    if (runs.front().format != InputFormat::collkit) {
      // NCCL cut its own segments; there is no collkit segment model to follow.
      std::fprintf(stderr,
                   "collkit: note: --segments-as %s: an %s (NCCL chose its own segments); "
                   "segments are chosen from the topology, as without --segments-as\n",
                   a.segments_as.c_str(), std::string(to_string(runs.front().format)).c_str());
    } else {
      run_model = segment_model_of(run, a.segments_as);
      // The run's nccl variants ran with bench's default channel plan.
      sweep.nccl_as_bench = true;
      if (!run_model)
        throw FileError(a.segments_as +
                        ": segment_model: missing (the report predates it, or was not "
                        "written by collkit bench/simulate)");
      if (sweep.segment_bytes == 0) sweep.segment_bytes = extra_segment_bytes(run).value_or(0);
      if (sweep.group_size == 0) sweep.group_size = extra_group_size(run).value_or(0);
    }
  }

  const std::unique_ptr<Topology> topology = load_topology(a.topology, ranks);
  sweep.ranks = topology->num_ranks();
  // "all" holds the nccl variants NCCL runs on this machine (nccl:nvls only
  // where a switch reduces, ...); named ones that do not apply are errors.
  // Simulating a collkit run (--segments-as), they are the schedules bench
  // ran, which it can run on any machine.
  if (a.algorithm == "all" && !sweep.nccl_as_bench) {
    const NcclContext ctx = nccl_context(*topology, sweep.ranks, sweep.nccl_version);
    std::erase_if(sweep.algorithms, [&](const std::string& name) {
      return is_nccl_algorithm(name) &&
             !nccl_applies(ctx, sweep.collective, name, sweep.dtype, sweep.op);
    });
  }
  if (is_amd(topology->nccl.gpu) &&
      std::any_of(sweep.algorithms.begin(), sweep.algorithms.end(),
                  [](const std::string& n) { return is_nccl_algorithm(n); })) {
    // RCCL's own cost model chooses (docs/NCCL.md, "RCCL"): no NCCL
    // release's table applies, so a version given for one is refused.
    if (sweep.nccl_version || topology->nccl.version)
      throw UsageError(std::string(sweep.nccl_version ? "--nccl-version" : "nccl.version") + ": " +
                       a.topology + "'s GPU is " + to_string(topology->nccl.gpu) +
                       ", whose library is RCCL, chosen by RCCL " +
                       std::string(rccl_gfx942().version) +
                       "'s cost model; NCCL versions do not apply");
  }
  sweep.model = run_model.value_or(cost_params_of(*topology, sweep.ranks));

  const std::string start_time = nccl_tests_timestamp();
  Report report;
  {
    ProgressBar bar;
    report =
        simulate_report(sweep, *topology, options,
                        [&bar](std::size_t done, std::size_t total) { bar.update(done, total); });
  }
  report.collkit_version = COLLKIT_VERSION;
  report.extra["min_bytes"] = min_bytes;
  report.extra["max_bytes"] = max_bytes;
  report.extra["step_factor"] = factor;
  report.extra["step_bytes"] = step;
  if (sweep.segment_bytes > 0) report.extra["segment_bytes"] = sweep.segment_bytes;
  if (sweep.group_size > 0) report.extra["group_size"] = sweep.group_size;
  report.extra["segment_model"] = segment_model_json(sweep.model);
  // The NCCL version whose cost model chose (docs/NCCL.md, "Versions").
  std::string nccl_line;
  std::vector<NcclExplanation> explained;
  const bool nccl_ran = std::any_of(sweep.algorithms.begin(), sweep.algorithms.end(),
                                    [](const std::string& n) { return is_nccl_algorithm(n); });
  if (nccl_ran && is_amd(topology->nccl.gpu)) {
    report.extra["rccl_model_version"] = std::string(rccl_gfx942().version);
    nccl_line = "# RCCL's choice: RCCL " + std::string(rccl_gfx942().version) +
                "'s cost model for gfx942 (docs/NCCL.md, \"RCCL\")\n";
    if (a.explain) {
      explained = explain_sweep(sweep, *topology, options);
      Json all = Json::array();
      for (const NcclExplanation& e : explained) all.push_back(nccl_explanation_json(e));
      report.extra["nccl_explain"] = all;
    }
  } else if (nccl_ran) {
    const NcclVersion v =
        sweep.nccl_version.value_or(topology->nccl.version.value_or(kDefaultNcclVersion));
    const char* from = sweep.nccl_version       ? "from --nccl-version"
                       : topology->nccl.version ? "the topology's nccl.version"
                                                : "collkit's default (--nccl-version sets another)";
    const NcclVersion release = nccl_tuning(v).release;
    report.extra["nccl_model_version"] = to_string(v);
    nccl_line = "# NCCL's choice: NCCL " + to_string(v) + "'s cost model" +
                (release == v ? std::string() : " (release " + to_string(release) + "'s figures)") +
                ", " + from + "\n";
    if (a.explain) {
      explained = explain_sweep(sweep, *topology, options);
      Json all = Json::array();
      for (const NcclExplanation& e : explained) all.push_back(nccl_explanation_json(e));
      report.extra["nccl_explain"] = all;
    }
  }

  std::fputs(format_tables(report).c_str(), stdout);
  std::fputs("#\n", stdout);
  std::fputs(format_best_summary(report).c_str(), stdout);
  std::fputs(nccl_line.c_str(), stdout);
  std::fputs(format_nccl_explanations(explained).c_str(), stdout);
  std::fflush(stdout);

  std::vector<std::pair<std::string, std::string>> files;
  if (!a.json_path.empty()) files.emplace_back(a.json_path, report_json_text(report));
  if (!a.csv_path.empty()) files.emplace_back(a.csv_path, to_csv(report));
  if (!a.nccl_tests_json.empty()) {
    NcclTestsJsonInfo info;
    info.start_time = start_time;
    info.args = {"collkit",    "simulate",    "--topology", a.topology,   "--collective",
                 a.collective, "-b",          a.min_bytes,  "-e",         a.max_bytes,
                 "-f",         a.step_factor, "-i",         a.step_bytes, "-d",
                 a.dtype,      "-o",          a.op,         "-r",         a.root};
    for (auto& file : nccl_tests_json_files(report, a.nccl_tests_json, info))
      files.push_back(std::move(file));
  }
  write_files_atomic(files);
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "simulate",
      "Simulate a collective's algorithms over a size sweep on a topology; print nccl-tests "
      "tables and the best algorithm per size (docs/REPORTS.md)");
  auto a = std::make_shared<SimulateArgs>();
  // A repeated flag overrides the earlier one (as with nccl-tests' getopt), so
  // wrappers can append to a default command line.
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--topology", a->topology, "Topology file (JSON) or astra:FILE.yml")->required();
  cmd->add_option("--collective", a->collective, "Collective, e.g. all_reduce")->required();
  cmd->add_option("--algorithm", a->algorithm,
                  "Algorithm(s): name[:variant] or msccl:FILE.xml, comma-separated, or all "
                  "(default: all)");
  cmd->add_option("-b,--minbytes", a->min_bytes, "Smallest size in bytes, K/M/G suffixes (32M)");
  cmd->add_option("-e,--maxbytes", a->max_bytes, "Largest size in bytes (32M)");
  cmd->add_option("-f,--stepfactor", a->step_factor,
                  "Multiply the size by this factor (> 1) at each step (1: use -i)");
  cmd->add_option("-i,--stepbytes", a->step_bytes, "Add this many bytes at each step (1M)");
  cmd->add_option("-d,--dtype,--datatype", a->dtype,
                  "Data type: int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double");
  cmd->add_option("-o,--op", a->op, "Reduction op: sum prod min max avg (sum)");
  cmd->add_option("-r,--root", a->root, "Root rank of rooted collectives (0)");
  cmd->add_option("--ranks", a->ranks, "Ranks on the topology's first endpoints (0 = all)");
  cmd->add_option("--net-model", a->model,
                  "Network model: flow (link sharing, default) or alpha-beta");
  // The old spelling fails naming the new one (plan --model is the model file).
  cmd->add_option("--model", a->renamed_model)->group("");
  cmd->add_option(
      "--segment", a->segment,
      "Segment size of pipelined algorithms in bytes (K/M/G suffixes), a whole number of "
      "elements (0 = the closed-form optimum)");
  cmd->add_option("--group", a->group, "Group size of hierarchical algorithms (0 = automatic)");
  cmd->add_option("--nccl-buffsize", a->buffsize,
                  "msccl:FILE.xml: NCCL_BUFFSIZE of the runtime, bytes (K/M/G suffixes) of a "
                  "connection's Simple buffer; sizes at which the file would hang are refused "
                  "(0 = NCCL's default, 4M)");
  cmd->add_option("--launch", a->launch,
                  "How calls are launched: proc (one process per device, default) or group:G "
                  "(one host thread launches on G devices, as nccl-tests -g G): the call is never "
                  "faster than G x the endpoints' launch_us");
  cmd->add_option("--segments-as", a->segments_as,
                  "Choose segment sizes (and --segment/--group when unset) as the run of this "
                  "report did (its segment_model key), to predict the schedules it measured; "
                  "nccl-tests files are accepted (NCCL cut its own segments: a note, and the "
                  "topology's choice)");
  cmd->add_option("--nccl-version", a->nccl_version,
                  "The NCCL version whose cost model makes NCCL's choice for the nccl "
                  "algorithms, e.g. 2.29.2 (2.18.1 to 2.30.x; default: the topology's "
                  "nccl.version, else 2.26.2; docs/NCCL.md, \"Versions\")");
  cmd->add_flag("--explain", a->explain,
                "After the table, for each size: every (algorithm, protocol, channels) NCCL "
                "weighs, its estimate, the simulated time of each, and the NCCL settings that "
                "would change the choice (also in --json, key nccl_explain)");
  cmd->add_option("--json", a->json_path, "Write the report as JSON to this file");
  cmd->add_option("--csv", a->csv_path, "Write the rows as CSV to this file");
  cmd->add_option("-J,--output_file", a->nccl_tests_json,
                  "Write nccl-tests JSON (-J schema) to this file; with several algorithms one "
                  "file each, the algorithm before the extension (FILE.ring.json)");
  cmd->callback([a] { run_simulate(*a); });
}

}  // namespace collkit::cli
