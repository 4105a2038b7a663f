// Each subcommand registers itself on the app; its callback calls library code.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/collective.h"
#include "core/error.h"
#include "reports/inputs.h"

namespace collkit::cli {

void add_algorithms_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_calibrate_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_tuner_command(CLI::App& app);
void add_sweep_command(CLI::App& app);

// The command line as the process got it (set once by main): what a report
// and a -J file record under "args", so that every setting that changed a
// number can be read back, whatever its spelling.
inline std::vector<std::string>& command_line() {
  static std::vector<std::string> args;
  return args;
}

// --collective and --ranks as the readers take them (reports/inputs.h):
// for nccl-tests logs that do not name the binary or list the ranks.
inline ReadOptions read_options(const std::string& collective, int ranks) {
  ReadOptions o;
  if (!collective.empty()) o.collective = parse_collective(collective);
  o.ranks = ranks;
  return o;
}

// --launch group:G launches on G devices of the run: more devices than the
// run has ranks is not a launch that can happen (it only adds G launch
// floors to every call), so it is refused, naming both counts.
inline void check_launch_fits(const std::string& launch, int devices, int ranks) {
  if (devices > ranks)
    throw UsageError("--launch " + launch + ": one thread launching on " + std::to_string(devices) +
                     " devices, but the run has " + std::to_string(ranks) +
                     " ranks; G is at most the rank count");
}

// The help text of those two options, shared by the commands that read reports.
inline constexpr char kCollectiveHelp[] =
    "nccl-tests logs that do not name the binary (all_reduce_perf, ...): their collective";
inline constexpr char kRanksHelp[] =
    "nccl-tests logs without '# Rank' lines: their rank count (default: nThread x nGpus)";

// simulate and calibrate called the network model --model, as plan calls
// its model file; it is --net-model everywhere now, and the old spelling is
// an error that names the new one.
inline std::string renamed_model_message(const std::string& value) {
  return "--model " + value +
         ": the network model is --net-model now (plan --model is the model file); use "
         "--net-model " +
         value;
}

}  // namespace collkit::cli
