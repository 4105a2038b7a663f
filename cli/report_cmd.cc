#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "reports/html_report.h"
#include "reports/inputs.h"

namespace collkit::cli {

void add_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "Draw reports as busbw-against-size charts (self-contained HTML), CSV or Markdown");
  struct Args {
    std::vector<std::string> inputs;
    std::string output;
    std::string format = "html";
    std::string collective;
    int ranks = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("inputs", a->inputs,
                  "Reports: simulate and bench --json, nccl-tests logs (every run a series) and "
                  "-J files")
      ->required();
  cmd->add_option("-o,--output", a->output, "Output file; - = standard output")->required();
  cmd->add_option("--format", a->format, "html (default), csv or md");
  cmd->add_option("--collective", a->collective, kCollectiveHelp);
  cmd->add_option("--ranks", a->ranks, kRanksHelp)->check(CLI::NonNegativeNumber);
  auto* format_option = cmd->get_option("--format");
  cmd->callback([a, format_option] {
    if (a->format != "html" && a->format != "csv" && a->format != "md")
      throw UsageError("--format '" + a->format + "': valid: html, csv, md");
    // A file named for one format gets that format or an error, never HTML
    // under a .csv name.
    const std::string ext = std::filesystem::path(a->output).extension().string();
    const std::string named = ext == ".csv"                     ? "csv"
                              : ext == ".md"                    ? "md"
                              : ext == ".html" || ext == ".htm" ? "html"
                                                                : "";
    if (!named.empty() && named != a->format)
      throw UsageError("-o " + a->output + ": the name says " + named + ", but the format is " +
                       a->format + (format_option->count() == 0 ? " (the default)" : "") +
                       "; give --format " + named + " or another name");
    // Reject a bad output path before reading anything, and read every input
    // before writing, so a bad input leaves no output file.
    const ReadOptions read = read_options(a->collective, a->ranks);
    std::vector<PathArg> input_paths;
    for (const std::string& path : a->inputs) input_paths.push_back({"input", path});
    prepare_outputs({{"-o", a->output}}, input_paths);
    std::vector<NamedReport> inputs;
    for (const std::string& path : a->inputs)
      for (InputRun& run : read_runs(path, read))
        inputs.push_back({std::move(run.name), std::move(run.report)});
    const std::string text = a->format == "html"  ? render_html_report(inputs)
                             : a->format == "csv" ? render_csv_report(inputs)
                                                  : render_markdown_report(inputs);
    write_file_atomic(a->output, text);
  });
}

}  // namespace collkit::cli
