#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/atomic_file.h"
#include "core/sizes.h"
#include "reports/compare.h"

namespace collkit::cli {

void add_compare_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compare", "Predicted (simulate) against measured (bench) times, with relative errors");
  struct Args {
    std::string predicted, json, min_bytes = "0";
    std::vector<std::string> measured;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("predicted", a->predicted, "Predicted report JSON (collkit simulate)")
      ->required();
  cmd->add_option("measured", a->measured,
                  "Measured report JSON (collkit bench); several = repeats of one run, each row's "
                  "time the median over them")
      ->required();
  cmd->add_option("--json", a->json, "Write the comparison as JSON");
  cmd->add_option("--min-bytes", a->min_bytes, "Leave out rows below this size (K/M/G suffixes)");
  cmd->callback([a] {
    const std::int64_t min_bytes =
        a->min_bytes == "0" ? 0 : parse_size("--min-bytes", a->min_bytes);
    if (!a->json.empty()) check_writable(a->json);
    const Report predicted = read_report(a->predicted);
    std::vector<Report> repeats;
    for (const std::string& path : a->measured) repeats.push_back(read_report(path));
    const Report measured = median_of_repeats(repeats, a->measured);
    std::string measured_name = a->measured[0];
    if (a->measured.size() > 1)
      measured_name = "median of " + std::to_string(a->measured.size()) + " (" + [&] {
        std::string s;
        for (const std::string& m : a->measured) s += (s.empty() ? "" : ", ") + m;
        return s;
      }() + ")";
    // Swapped arguments still compare, but the sign of every error flips;
    // say so rather than let a user read the errors backwards.
    if (predicted.mode == ReportMode::measure && measured.mode == ReportMode::simulate)
      std::fprintf(stderr,
                   "collkit: note: %s is measured and %s simulated; the order is PREDICTED "
                   "MEASURED\n",
                   a->predicted.c_str(), measured_name.c_str());
    const CompareResult result =
        compare_reports(predicted, measured, min_bytes, a->predicted, measured_name);
    if (!a->json.empty())
      write_file_atomic(
          a->json,
          comparison_to_json(result, a->predicted, measured_name, min_bytes).dump(1) + "\n");
    std::fputs(format_comparison(result, a->predicted, measured_name).c_str(), stdout);
  });
}

}  // namespace collkit::cli
