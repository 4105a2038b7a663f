// `collkit tuner`: the NCCL tuner files for a cluster (docs/TUNER.md).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "core/atomic_file.h"
#include "core/dtypes.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/sizes.h"
#include "sim/engine.h"
#include "topologies/topology.h"
#include "tuner/tuner_generate.h"
#include "tuner/tuner_model.h"

namespace collkit::cli {
namespace {

struct TunerArgs {
  std::string topology;
  std::string ranks = "0";
  std::string out_dir;
  std::string min_bytes = "256";
  std::string max_bytes = "4G";
  std::string step_factor = "2";
  std::string dtype = "float";
  std::string op = "sum";
  std::string model = "flow";
  std::string launch = "proc";
  bool quiet = false;
};

// "8,16,0": rank counts, 0 = all ranks of the topology.
std::vector<int> parse_rank_list(const std::string& text) {
  std::vector<int> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = text.find(',', pos);
    const std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    bool digits = !item.empty() && item.size() <= 9;
    for (char c : item) digits = digits && c >= '0' && c <= '9';
    if (!digits)
      throw UsageError("--ranks '" + text + "': '" + item +
                       "' is not a rank count (comma-separated non-negative integers)");
    out.push_back(std::stoi(item));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::string human(std::uint64_t b) {
  if (b == UINT64_MAX) return "max";
  const char* units[] = {"B", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && b >= 1024 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + units[u];
}

void run_tuner(const TunerArgs& a) {
  // Everything is checked before the first simulation, and nothing is
  // written before the last.
  TunerSpec spec;
  const std::int64_t min_bytes = parse_size("-b", a.min_bytes);
  const std::int64_t max_bytes = parse_size("-e", a.max_bytes);
  const std::int64_t factor = parse_size("-f", a.step_factor);
  if (factor < 2)
    throw UsageError("-f '" + a.step_factor + "': the tuner's grid needs a factor of 2 or more");
  spec.sizes = sweep_sizes(min_bytes, max_bytes, factor, 0);
  spec.dtype = parse_data_type(a.dtype);
  spec.op = parse_red_op(a.op);
  spec.options.model = parse_net_model(a.model);
  spec.options.launch_devices = parse_launch_mode(a.launch);
  const std::vector<int> rank_list = parse_rank_list(a.ranks);
  if (a.out_dir.empty()) throw UsageError("-o: the output directory is empty");
  namespace fs = std::filesystem;
  const fs::path dir(a.out_dir);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw FileError(a.out_dir + ": -o names a file, not a directory");
  const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  if (!fs::exists(dir, ec) && !fs::is_directory(parent, ec))
    throw FileError(a.out_dir + ": -o: the directory above it, " + parent.string() +
                    ", does not exist");
  const std::string model_path = (dir / "collkit-tuner.model").string();
  const std::string config_path = (dir / "nccl_tuner.conf").string();
  // The two files are outputs like any other: never one of the inputs (a
  // topology kept next to the files it produced), never read-only. A
  // directory yet to be created holds neither.
  if (fs::is_directory(dir, ec))
    prepare_outputs({{"-o", model_path}, {"-o", config_path}},
                    {{"--topology", topology_file(a.topology)}});

  // Every topology is loaded (and every rank count checked) before the
  // first simulation.
  std::vector<std::unique_ptr<Topology>> topologies;
  for (int r : rank_list) {
    topologies.push_back(load_topology(a.topology, r));
    const int ranks = topologies.back()->num_ranks();
    check_ranks_fit(ranks, "--topology " + a.topology);
    check_launch_fits(a.launch, spec.options.launch_devices, ranks);
    for (std::size_t i = 0; i + 1 < topologies.size(); ++i)
      if (topologies[i]->num_ranks() == ranks)
        throw UsageError("--ranks '" + a.ranks + "': " + std::to_string(ranks) +
                         " ranks given twice");
  }
  TunerModel model;
  const std::string topo_name = topologies.front()->name;
  Progress progress("tuner on " + topo_name, topologies.size(), {a.quiet});
  progress.start_ticker();
  for (const std::unique_ptr<Topology>& topology : topologies) {
    progress.update(model.comms.size(), std::to_string(topology->num_ranks()) + " ranks");
    TunerComm comm = tuner_comm(*topology, topology->num_ranks(), spec);
    progress.print("collkit: tuner: " + std::to_string(comm.ranks) + " ranks on " +
                   std::to_string(comm.nodes) + " node(s): " + std::to_string(comm.tables.size()) +
                   " tables");
    model.comms.push_back(std::move(comm));
  }
  progress.finish();
  const std::string sizes = human(static_cast<std::uint64_t>(spec.sizes.front())) + ".." +
                            human(static_cast<std::uint64_t>(spec.sizes.back())) + " x" +
                            std::to_string(factor);
  model.comments = {
      "collkit " COLLKIT_VERSION " tuner model for NCCL's tuner plugin libnccl-tuner-collkit.so",
      "(docs/TUNER.md): COLLKIT_TUNER_MODEL=<this file> NCCL_TUNER_PLUGIN=collkit",
      "topology " + topo_name + " (" + a.topology + "), " + std::string(to_string(spec.dtype)) +
          " " + std::string(to_string(spec.op)) + ", sizes " + sizes + ", --net-model " + a.model +
          ", --launch " + a.launch,
      "times in microseconds simulated by collkit with the nccl family; channels by NCCL's rule"};
  const std::vector<std::string> config_comments = {
      "NCCL example tuner plugin config (NCCL_TUNER_CONFIG_FILE), written by "
      "collkit " COLLKIT_VERSION,
      "topology " + topo_name + " (" + a.topology + "), " + std::string(to_string(spec.dtype)) +
          " " + std::string(to_string(spec.op)) + ", sizes " + sizes,
      "the fastest (algorithm, protocol) by collkit's simulation, per size range (docs/TUNER.md)"};
  const std::string model_text = tuner_model_text(model);
  const std::string config_text = tuner_config_text(model, config_comments);

  // The summary: the choice per range, as the config file has it.
  std::printf("# %-13s %10s %10s  %-9s %-6s %8s %6s %6s\n", "collective", "from", "to", "algorithm",
              "proto", "channels", "nodes", "ranks");
  for (const TunerConfigLine& l : tuner_config_lines(model))
    std::printf("  %-13s %10s %10s  %-9s %-6s %8d %6d %6d\n",
                std::string(tuner_collective_name(l.collective)).c_str(),
                human(l.min_bytes).c_str(), human(l.max_bytes).c_str(),
                std::string(tuner_algorithm_name(l.algorithm)).c_str(),
                std::string(tuner_protocol_name(l.protocol)).c_str(), l.channels, l.nodes, l.ranks);
  std::fflush(stdout);

  fs::create_directories(dir, ec);
  if (ec) throw FileError(a.out_dir + ": cannot create the directory: " + ec.message());
  write_files_atomic({{model_path, model_text}, {config_path, config_text}});
  std::fprintf(stderr,
               "collkit: wrote %s (export NCCL_TUNER_PLUGIN=collkit COLLKIT_TUNER_MODEL=%s)\n"
               "collkit: wrote %s (NCCL's example plugin: NCCL_TUNER_CONFIG_FILE=%s)\n",
               model_path.c_str(), model_path.c_str(), config_path.c_str(), config_path.c_str());
}

}  // namespace

void add_tuner_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tuner",
      "Write NCCL tuner files for a topology: the model of collkit's tuner plugin "
      "(libnccl-tuner-collkit.so) and a config for NCCL's example tuner (docs/TUNER.md)");
  auto a = std::make_shared<TunerArgs>();
  cmd->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->add_option("--topology", a->topology, "Topology file (JSON) or astra:FILE.yml")->required();
  cmd->add_option("--ranks", a->ranks,
                  "Communicator sizes, comma-separated: each the topology's first N ranks "
                  "(0 = all; default 0)");
  cmd->add_option("-o,--output", a->out_dir,
                  "Directory for collkit-tuner.model and nccl_tuner.conf (created if missing)")
      ->required();
  cmd->add_option("-b,--minbytes", a->min_bytes, "Smallest grid size in bytes (256)");
  cmd->add_option("-e,--maxbytes", a->max_bytes, "Largest grid size in bytes (4G)");
  cmd->add_option("-f,--stepfactor", a->step_factor, "Grid factor between sizes, >= 2 (2)");
  cmd->add_option("-d,--dtype,--datatype", a->dtype, "Data type of the simulated calls (float)");
  cmd->add_option("--op", a->op, "Reduction op of the simulated calls (sum)");
  cmd->add_option("--net-model", a->model, "Network model: flow (link sharing) or alpha-beta");
  cmd->add_option("--launch", a->launch,
                  "How calls are launched, as collkit simulate: proc (default) or group:G");
  cmd->add_flag("--quiet", a->quiet, "No progress on standard error");
  cmd->callback([a] { run_tuner(*a); });
}

}  // namespace collkit::cli
