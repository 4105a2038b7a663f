#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "core/atomic_file.h"
#include "core/sizes.h"
#include "reports/compare.h"
#include "reports/inputs.h"
#include "reports/report_extra.h"
#include "sim/nccl_versions.h"

namespace collkit::cli {

void add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compare", "Predicted (simulate) against measured (bench) times, with relative errors");
  struct Args {
    std::string predicted, json, min_bytes = "0", match, collective, repeats = "median";
    std::vector<std::string> measured;
    int ranks = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("predicted", a->predicted, "Predicted report JSON (collkit simulate)")
      ->required();
  cmd->add_option("measured", a->measured,
                  "Measured reports: collkit bench JSON, nccl-tests logs or -J files; several = "
                  "repeats of one run, each row's time the median over them (--repeats)")
      ->required();
  cmd->add_option("--repeats", a->repeats,
                  "Which repeat stands for a row: median (default) or fastest, the machine at "
                  "its best where what varies between repeats only slows a run down");
  cmd->add_option("--json", a->json, "Write the comparison as JSON");
  cmd->add_option("--min-bytes", a->min_bytes, "Leave out rows below this size (K/M/G suffixes)");
  cmd->add_option("--match", a->match,
                  "Compare the predicted rows of this algorithm with the measured rows of "
                  "algorithm nccl or native (NCCL's or the library's own), per size band");
  cmd->add_option("--collective", a->collective, kCollectiveHelp);
  cmd->add_option("--ranks", a->ranks, kRanksHelp)->check(CLI::NonNegativeNumber);
  cmd->callback([a] {
    const std::int64_t min_bytes =
        a->min_bytes == "0" ? 0 : parse_size("--min-bytes", a->min_bytes);
    const RepeatStat stat = parse_repeat_stat("--repeats", a->repeats);
    const ReadOptions read = read_options(a->collective, a->ranks);
    std::vector<PathArg> inputs = {{"predicted", a->predicted}};
    for (const std::string& path : a->measured) inputs.push_back({"measured", path});
    prepare_outputs({{"--json", a->json}}, inputs);
    const Report predicted = combine_runs(read_runs(a->predicted, read));
    std::vector<Report> repeats;
    bool nccl_tests = false;
    for (const std::string& path : a->measured) {
      const std::vector<InputRun> runs = read_runs(path, read);
      for (const InputRun& run : runs)
        nccl_tests = nccl_tests || run.format != InputFormat::collkit;
      repeats.push_back(combine_runs(runs));
    }
    const Report measured = median_of_repeats(repeats, a->measured, stat);
    std::string measured_name = a->measured[0];
    if (a->measured.size() > 1)
      measured_name = std::string(stat == RepeatStat::fastest ? "fastest" : "median") + " of " +
                      std::to_string(a->measured.size()) + " (" +
                      [&] {
                        std::string s;
                        for (const std::string& m : a->measured) s += (s.empty() ? "" : ", ") + m;
                        return s;
                      }() +
                      ")";
    // Swapped arguments still compare, but the sign of every error flips;
    // say so rather than let a user read the errors backwards.
    if (predicted.mode == ReportMode::measure && measured.mode == ReportMode::simulate)
      std::fprintf(stderr,
                   "collkit: note: %s is measured and %s simulated; the order is PREDICTED "
                   "MEASURED\n",
                   a->predicted.c_str(), measured_name.c_str());
    // compare does not simulate: when the prediction followed another NCCL
    // version's cost model than the measured run's (its log names it), say
    // so and how to predict that version's choice (docs/NCCL.md, "Versions").
    const std::optional<NcclVersion> model = extra_nccl_model_version(predicted);
    const std::optional<NcclVersion> ran = extra_nccl_version(measured);
    if (model && ran && nccl_version_supported(*model) &&
        (!nccl_version_supported(*ran) || nccl_tuning(*model).release != nccl_tuning(*ran).release))
      std::fprintf(
          stderr, "collkit: note: %s chose as NCCL %s does, %s ran NCCL %s (from the log)%s\n",
          a->predicted.c_str(), to_string(*model).c_str(), measured_name.c_str(),
          to_string(*ran).c_str(),
          nccl_version_supported(*ran) ? ("; collkit simulate --nccl-version " + to_string(*ran) +
                                          " predicts that version's choice")
                                             .c_str()
                                       : ", outside the versions collkit models");
    CompareOptions options;
    options.min_bytes = min_bytes;
    options.match = a->match;
    options.bands = !a->match.empty() || nccl_tests;
    const CompareResult result =
        compare_reports(predicted, measured, options, a->predicted, measured_name);
    // A run launched by one thread on G devices (nccl-tests -g G) pays G
    // launches a call, which a one-process prediction leaves out: the small
    // sizes then disagree by the launch alone (issue 40). Say so, and how to
    // match. After the comparison, so that a refusal stays one line.
    const std::optional<LaunchOf> predicted_launch = extra_launch(predicted);
    for (std::size_t i = 0; i < repeats.size(); ++i) {
      const std::optional<LaunchOf> m = extra_launch(repeats[i]);
      if (!m || (predicted_launch ? predicted_launch->devices == m->devices : m->devices == 1))
        continue;
      std::fprintf(stderr,
                   "collkit: note: %s was launched as %s but %s as %s: a call's launch floor "
                   "differs, which shows at small sizes; simulate with --launch %s to match\n",
                   a->measured[i].c_str(), m->described().c_str(), a->predicted.c_str(),
                   predicted_launch ? predicted_launch->described().c_str()
                                    : "a run that does not record its launch",
                   m->flag().c_str());
    }
    if (!result.failed_check.empty())
      std::fprintf(stderr,
                   "collkit: warning: %s: %zu row(s) left out of the comparison: their check "
                   "failed (#wrong > 0; listed below the table)\n",
                   measured_name.c_str(), result.failed_check.size());
    if (!a->json.empty())
      write_file_atomic(
          a->json,
          comparison_to_json(result, a->predicted, measured_name, min_bytes).dump(1) + "\n");
    std::fputs(format_comparison(result, a->predicted, measured_name).c_str(), stdout);
  });
}

}  // namespace collkit::cli
