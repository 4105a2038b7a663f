// Fuzzes the nccl-tests text log reader (reports/nccl_tests.cc) through the
// one entry point every command uses (parse_runs): any text either reads as
// runs or throws FileError naming the file; every run read has rows whose
// figures are finite and non-negative, one origin per row, a rank count of at
// least 1, and writes as a report (to_json) and as an nccl-tests -J file.
// Each input is read twice: as it is, and with --collective (chosen by the
// input's length) and --ranks 8, so tables that do not name their binary are
// explored too.
#include <cmath>

#include "fuzz/fuzz_support.h"
#include "reports/inputs.h"
#include "reports/nccl_tests.h"
#include "reports/report.h"

namespace {

void check_runs(const std::vector<collkit::InputRun>& runs) {
  using namespace collkit;
  if (runs.empty()) fuzz::property_failed("no run and no error");
  for (const InputRun& run : runs) {
    const Report& r = run.report;
    if (r.ranks < 1) fuzz::property_failed("a run of " + std::to_string(r.ranks) + " ranks");
    if (r.results.empty()) fuzz::property_failed("a run without rows");
    if (run.format != InputFormat::collkit && run.row_origins.size() != r.results.size())
      fuzz::property_failed("row origins do not match the rows");
    for (const ResultRow& row : r.results) {
      for (double v : {row.time_us, row.algbw_gbps, row.busbw_gbps})
        if (!std::isfinite(v) || v < 0) fuzz::property_failed("a figure that is not >= 0");
      if (row.bytes < 0 || row.count < 0) fuzz::property_failed("a negative size or count");
    }
    (void)report_json_text(r);
    (void)nccl_tests_json(r, r.results[0].collective, r.results[0].algorithm);
  }
}

void read(const std::string& text, const collkit::ReadOptions& options) {
  using namespace collkit;
  std::vector<InputRun> runs;
  try {
    runs = parse_runs(text, "fuzz.txt", options);
  } catch (const FileError& e) {
    fuzz::check_message(e);
    if (std::string(e.what()).rfind("fuzz.txt", 0) != 0)
      fuzz::property_failed(std::string("an error that does not name the file: ") + e.what());
    return;
  }
  check_runs(runs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace collkit;
  const std::string text = fuzz::text(data, size);
  read(text, {});
  ReadOptions options;
  options.collective = kAllCollectives[size % std::size(kAllCollectives)];
  options.ranks = 8;
  read(text, options);
  return 0;
}
