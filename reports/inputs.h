// The one way every command reads a report it is given (compare, report,
// calibrate, simulate --segments-as): a collkit report JSON, an nccl-tests
// text log or an nccl-tests -J file, told apart by their content, never by
// the file name. A text log may hold several runs; each is its own
// InputRun, and each command says what it does with several
// (docs/REPORTS.md, "Inputs").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reports/nccl_tests.h"
#include "reports/report.h"

namespace collkit {

enum class InputFormat : std::uint8_t { collkit, nccl_tests_text, nccl_tests_json };

// "collkit report", "nccl-tests log", "nccl-tests JSON".
std::string_view to_string(InputFormat f);

// --collective and --ranks, for nccl-tests files that do not say.
using ReadOptions = NcclTestsOptions;

struct InputRun {
  std::string file;  // the path as given
  // The file, or "FILE:LINE" (the run's table) when the file holds several runs.
  std::string name;
  InputFormat format = InputFormat::collkit;
  Report report;
  // Where each row came from ("FILE:LINE", "FILE: results[3].in_place"), for
  // nccl-tests inputs; empty for collkit reports (their rows are results[i]).
  std::vector<std::string> row_origins;
};

// The runs `text` holds; `file` names it in errors. JSON (the first
// non-blank character is '{' or '[', unless a launcher's rank label such as
// "[1,0]<stdout>:" or "[0] " starts the line) is a collkit report when it has
// "collkit_version", an nccl-tests -J file when it looks like one
// (looks_like_nccl_tests_json), and otherwise read as a collkit report, whose
// reader says why it is not one. Anything else is read as an nccl-tests
// text log. Throws FileError naming the file (and line or field).
std::vector<InputRun> parse_runs(const std::string& text, const std::string& file,
                                 const ReadOptions& options = {});

// Reads `path` (FileError "PATH: cannot open for reading") and parse_runs it.
std::vector<InputRun> read_runs(const std::string& path, const ReadOptions& options = {});

// The runs of one file as one report, for commands that take a file as one
// measurement (compare): runs with the same rows (the same test run again,
// e.g. on every node of a Slurm job) are repeats whose times are medians
// (median_of_repeats); runs with different rows (several collectives, sizes)
// are put side by side. They must have one rank count, and runs that are not
// repeats must not share a row; otherwise FileError naming both runs. One run
// is returned as it is.
Report combine_runs(const std::vector<InputRun>& runs);

}  // namespace collkit
