#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
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
#include "core/progress.h"
#include "core/protocol.h"
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

// Pipelined endpoints (GPU kernels, docs/SIMULATOR.md) charge nothing per
// message: a send is done once its data left, so on such a network a
// segment smaller than the pipeline chunk NCCL moves per step is priced as
// free (64 MiB broadcast by pipelined_chain on dgx-h100: 213 us with
// 256-byte segments, 16 M messages, against 222 us at NCCL's 512 KiB
// Simple chunk, and --segment 4 simulated for 21 s). So --segment below the
// smallest chunk the topology gives (its protocols' chunk_kib) is refused
// there, naming the chunk; a network without pipelined endpoints or
// without chunk figures takes any segment.
void check_segment_not_below_chunk(const std::string& flag_text, std::int64_t segment_bytes,
                                   const Topology& topology, int ranks) {
  if (segment_bytes <= 0) return;
  for (int r = 0; r < ranks; ++r)
    if (!topology.endpoint(r).pipelined) return;
  double chunk = 0;
  Protocol smallest = Protocol::none;
  for (const Protocol p : kAllProtocols) {
    const ProtocolProps& props = topology.protocol(p);
    if (props.set && props.chunk_bytes > 0 && (chunk == 0 || props.chunk_bytes < chunk)) {
      chunk = props.chunk_bytes;
      smallest = p;
    }
  }
  if (chunk > 0 && static_cast<double>(segment_bytes) < chunk)
    throw UsageError("--segment '" + flag_text + "': below " + topology.name +
                     "'s smallest pipeline chunk (" + std::string(to_string(smallest)) + ", " +
                     std::to_string(static_cast<std::int64_t>(chunk)) +
                     " bytes of data): its endpoints are pipelined GPU kernels, which the "
                     "simulator charges nothing per message, so smaller segments than NCCL moves "
                     "would look free; give at least " +
                     std::to_string(static_cast<std::int64_t>(chunk)) + ", or 0 for automatic");
}

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
  bool quiet = false;
  bool no_orbits = false;
  int jobs = 0;  // --jobs; 0 = every core
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

// --segments-as: the segment choice of a measured run, read before the
// topology so that a bad file fails first and alone. Returns the run's
// segment model (a collkit report's) and sets `segments_run` to it.
std::optional<CostParams> read_segments_as(const SimulateArgs& a, int ranks, SweepSpec& sweep,
                                           std::optional<Report>& segments_run) {
  std::optional<CostParams> run_model;
  if (a.segments_as.empty()) return run_model;
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
    return run_model;
  }
  run_model = segment_model_of(run, a.segments_as);
  segments_run = run;
  // The run's nccl variants ran with bench's default channel plan.
  sweep.nccl_as_bench = true;
  if (!run_model)
    throw FileError(a.segments_as +
                    ": segment_model: missing (the report predates it, or was not "
                    "written by collkit bench/simulate)");
  if (sweep.segment_bytes == 0) sweep.segment_bytes = extra_segment_bytes(run).value_or(0);
  if (sweep.group_size == 0) sweep.group_size = extra_group_size(run).value_or(0);
  return run_model;
}

// What the topology must agree with: the run whose segments are followed
// (its collective, its rank count), and NCCL versions on AMD GPUs.
void check_on_topology(const SimulateArgs& a, const SweepSpec& sweep, const Topology& topology,
                       const std::optional<Report>& segments_run) {
  // The run whose segments are followed must be of this collective on as
  // many ranks: another's segment choice predicts schedules it never ran.
  if (segments_run) {
    if (segments_run->ranks != sweep.ranks)
      throw UsageError("--segments-as " + a.segments_as + ": a run on " +
                       std::to_string(segments_run->ranks) + " ranks, but this simulation has " +
                       std::to_string(sweep.ranks) + " (--ranks " +
                       std::to_string(segments_run->ranks) + "?)");
    const bool same_collective =
        std::any_of(segments_run->results.begin(), segments_run->results.end(),
                    [&](const ResultRow& r) { return r.collective == sweep.collective; });
    if (!same_collective && !segments_run->results.empty())
      throw UsageError("--segments-as " + a.segments_as + ": a run of " +
                       std::string(to_string(segments_run->results.front().collective)) +
                       ", but this simulation is " + std::string(to_string(sweep.collective)));
  }
  if (is_amd(topology.nccl.gpu) &&
      std::any_of(sweep.algorithms.begin(), sweep.algorithms.end(),
                  [](const std::string& n) { return is_nccl_algorithm(n); })) {
    // RCCL's own cost model chooses (docs/NCCL.md, "RCCL"): no NCCL
    // release's table applies, so a version given for one is refused.
    if (sweep.nccl_version || topology.nccl.version)
      throw UsageError(
          std::string(sweep.nccl_version ? "--nccl-version" : "nccl.version") + ": " + a.topology +
          "'s GPU is " + to_string(topology.nccl.gpu) + ", whose library is RCCL, chosen by RCCL " +
          std::string(rccl_gfx942().version) + "'s cost model; NCCL versions do not apply");
  }
}

// One sweep per (root, type, op), in nccl-tests' order.
std::vector<SweepSpec> expand_sweeps(const SimulateArgs& a, const SweepSpec& sweep,
                                     const std::vector<int>& roots,
                                     const std::vector<DataType>& dtypes,
                                     const std::vector<RedOp>& ops, const Topology& topology) {
  std::vector<SweepSpec> sweeps;
  for (const int root : roots)
    for (const DataType type : dtypes)
      for (const RedOp op : ops) {
        SweepSpec s = sweep;
        s.root = root;
        s.dtype = type;
        s.op = op;
        s.segment_bytes = parse_segment_bytes("--segment", a.segment, type);
        // "all" holds the nccl variants NCCL runs on this machine (nccl:nvls
        // only where a switch reduces, ...); named ones that do not apply are
        // errors. Simulating a collkit run (--segments-as), they are the
        // schedules bench ran, which it can run on any machine.
        if (a.algorithm == "all" && !s.nccl_as_bench) {
          const NcclContext ctx = nccl_context(topology, s.ranks, s.nccl_version);
          std::erase_if(s.algorithms, [&](const std::string& name) {
            return is_nccl_algorithm(name) && !nccl_applies(ctx, s.collective, name, s.dtype, s.op);
          });
        }
        sweeps.push_back(std::move(s));
      }
  return sweeps;
}

// Every sweep simulated, rows in order (each with its own type, op and
// root when there are several), the best per size, and a note on stderr
// where the engine's orbit reduction was taken.
Report simulate_sweeps(const SimulateArgs& a, const std::vector<SweepSpec>& sweeps,
                       const Topology& topology, const SimOptions& options) {
  const SweepSpec& sweep = sweeps.front();
  const bool mixed = sweeps.size() > 1;
  Report report;
  std::size_t total = 0;
  for (const SweepSpec& s : sweeps) total += s.algorithms.size() * s.sizes.size();
  Progress progress("simulate " + std::string(to_string(sweep.collective)) + " on " + topology.name,
                    total, {a.quiet});
  // On a timer too: one row of many ranks (16k: minutes) reports only
  // when it ends, and the elapsed time keeps moving meanwhile.
  progress.start_ticker();
  std::size_t before = 0;
  std::vector<std::string> orbits;  // each row's orbit note
  for (const SweepSpec& s : sweeps) {
    const std::size_t points = s.algorithms.size() * s.sizes.size();
    Report part = simulate_report(
        s, topology, options,
        [&](std::size_t done, std::size_t) { progress.update(before + done); }, &orbits);
    before += points;
    if (mixed)
      for (ResultRow& row : part.results) {
        row.dtype = s.dtype;
        row.op = s.op;
        row.root = s.root;
      }
    if (&s == &sweeps.front()) {
      report = std::move(part);
      continue;
    }
    for (ResultRow& row : part.results) report.results.push_back(std::move(row));
  }
  report.best = compute_best(report.results);
  // The engine's orbit reduction (docs/SIMULATOR.md, "Orbits") where it
  // was taken, each turn once; the plain run is silent.
  std::map<std::string, int> taken;
  for (const std::string& note : orbits)
    if (!note.empty() && note.rfind("none: ", 0) != 0) ++taken[note];
  if (!a.quiet)
    for (const auto& [note, rows] : taken)
      std::fprintf(stderr,
                   "collkit: note: %d of %zu rows simulated one rank per orbit (%s; "
                   "--no-orbits runs every rank)\n",
                   rows, orbits.size(), note.c_str());
  return report;
}

// The line naming whose cost model made NCCL's (or RCCL's) choice, its
// version in the report, and with --explain every candidate per size.
std::string nccl_choice(const SimulateArgs& a, const SweepSpec& sweep, const Topology& topology,
                        const SimOptions& options, Report& report,
                        std::vector<NcclExplanation>& explained) {
  const bool nccl_ran = std::any_of(sweep.algorithms.begin(), sweep.algorithms.end(),
                                    [](const std::string& n) { return is_nccl_algorithm(n); });
  if (!nccl_ran) return "";
  std::string line;
  if (is_amd(topology.nccl.gpu)) {
    report.extra["rccl_model_version"] = std::string(rccl_gfx942().version);
    line = "# RCCL's choice: RCCL " + std::string(rccl_gfx942().version) +
           "'s cost model for gfx942 (docs/NCCL.md, \"RCCL\")\n";
  } else {
    const NcclVersion v =
        sweep.nccl_version.value_or(topology.nccl.version.value_or(kDefaultNcclVersion));
    const char* from = sweep.nccl_version      ? "from --nccl-version"
                       : topology.nccl.version ? "the topology's nccl.version"
                                               : "collkit's default (--nccl-version sets another)";
    const NcclVersion release = nccl_tuning(v).release;
    report.extra["nccl_model_version"] = to_string(v);
    line = "# NCCL's choice: NCCL " + to_string(v) + "'s cost model" +
           (release == v ? std::string() : " (release " + to_string(release) + "'s figures)") +
           ", " + from + "\n";
  }
  if (a.explain) {
    explained = explain_sweep(sweep, topology, options);
    Json all = Json::array();
    for (const NcclExplanation& e : explained) all.push_back(nccl_explanation_json(e));
    report.extra["nccl_explain"] = all;
  }
  return line;
}

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
  // nccl-tests' "all": every type (-d), every op (-o); every root (-r all
  // or -1, once the rank count is known).
  std::vector<DataType> dtypes;
  if (a.dtype == "all")
    dtypes.assign(std::begin(kAllDataTypes), std::end(kAllDataTypes));
  else
    dtypes = {parse_data_type(a.dtype)};
  std::vector<RedOp> ops;
  if (a.op == "all")
    ops = is_reduction(sweep.collective)
              ? std::vector<RedOp>(std::begin(kAllRedOps), std::end(kAllRedOps))
              : std::vector<RedOp>{RedOp::sum};
  else
    ops = {parse_red_op(a.op)};
  const bool every_root = a.root == "all" || a.root == "-1";
  sweep.dtype = dtypes.front();
  sweep.op = ops.front();
  sweep.root = every_root ? 0 : parse_int("--root", a.root);
  for (const DataType t : dtypes) parse_segment_bytes("--segment", a.segment, t);
  sweep.segment_bytes = parse_segment_bytes("--segment", a.segment, sweep.dtype);
  sweep.group_size = parse_int("--group", a.group);
  sweep.nccl_buffsize = parse_nccl_buffsize("--nccl-buffsize", a.buffsize);
  sweep.jobs = a.jobs;
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
  options.orbits = !a.no_orbits;
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

  std::optional<Report> segments_run;  // a collkit report's, checked against the sweep below
  const std::optional<CostParams> run_model = read_segments_as(a, ranks, sweep, segments_run);

  const std::unique_ptr<Topology> topology = load_topology(a.topology, ranks);
  sweep.ranks = topology->num_ranks();
  check_ranks_fit(sweep.ranks, "--topology " + a.topology);
  check_launch_fits(a.launch, options.launch_devices, sweep.ranks);
  check_segment_not_below_chunk(a.segment, sweep.segment_bytes, *topology, sweep.ranks);
  check_on_topology(a, sweep, *topology, segments_run);
  sweep.model = run_model.value_or(cost_params_of(*topology, sweep.ranks));
  std::vector<int> roots = {sweep.root};
  if (every_root && is_rooted(sweep.collective)) {
    roots.clear();
    for (int r = 0; r < sweep.ranks; ++r) roots.push_back(r);
  }

  const std::vector<SweepSpec> sweeps = expand_sweeps(a, sweep, roots, dtypes, ops, *topology);

  const std::string start_time = nccl_tests_timestamp();
  Report report = simulate_sweeps(a, sweeps, *topology, options);
  report.collkit_version = COLLKIT_VERSION;
  report.extra["min_bytes"] = min_bytes;
  report.extra["max_bytes"] = max_bytes;
  report.extra["step_factor"] = factor;
  report.extra["step_bytes"] = step;
  if (sweep.segment_bytes > 0) report.extra["segment_bytes"] = sweep.segment_bytes;
  if (sweep.group_size > 0) report.extra["group_size"] = sweep.group_size;
  report.extra["segment_model"] = segment_model_json(sweep.model);
  // The NCCL version whose cost model chose (docs/NCCL.md, "Versions").
  std::vector<NcclExplanation> explained;
  const std::string nccl_line = nccl_choice(a, sweep, *topology, options, report, explained);
  // Every setting that changes a number is a key; the launch mode was the
  // one missing (the command line as given goes to -J files, "args").
  report.extra["launch"] = a.launch;

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
    info.args = command_line();
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
                  "Data type: int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double, or "
                  "all (every one)");
  cmd->add_option("-o,--op", a->op, "Reduction op: sum prod min max avg, or all (sum)");
  cmd->add_option("-r,--root", a->root,
                  "Root rank of rooted collectives, or all (-1, as nccl-tests): every rank (0)");
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
  cmd->add_flag("--no-orbits", a->no_orbits,
                "Simulate every rank, even where ranks are proven to behave identically (the "
                "orbit reduction, docs/SIMULATOR.md \"Orbits\"; the times are the same to "
                "rounding)");
  cmd->add_flag("--explain", a->explain,
                "After the table, for each size: every (algorithm, protocol, channels) NCCL "
                "weighs, its estimate, the simulated time of each, and the NCCL settings that "
                "would change the choice (also in --json, key nccl_explain)");
  cmd->add_option("--jobs", a->jobs,
                  "Threads that simulate the (algorithm, size) points at once (default 0 = every "
                  "core); the output is the same whatever the count")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--json", a->json_path, "Write the report as JSON to this file");
  cmd->add_option("--csv", a->csv_path, "Write the rows as CSV to this file");
  cmd->add_option("-J,--output_file", a->nccl_tests_json,
                  "Write nccl-tests JSON (-J schema) to this file; with several algorithms one "
                  "file each, the algorithm before the extension (FILE.ring.json)");
  cmd->add_flag("--quiet", a->quiet,
                "No progress on standard error (shown after a few seconds: a bar on a terminal, "
                "a line now and then otherwise)");
  cmd->callback([a] { run_simulate(*a); });
}

}  // namespace collkit::cli
