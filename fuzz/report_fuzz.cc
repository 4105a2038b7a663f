// Fuzzes the report reader (reports/report.cc): any text either reads as a
// Report or throws FileError; a report that reads writes back (to_json) to a
// JSON form that reads as the same report, and its CSV, best table and
// crossovers can be computed.
#include "fuzz/fuzz_support.h"
#include "reports/report.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace collkit;
  Report r;
  try {
    r = parse_report(fuzz::text(data, size), "fuzz.json");
  } catch (const FileError& e) {
    fuzz::check_message(e);
    return 0;
  }
  const std::string written = report_json_text(r);
  Report again;
  try {
    again = parse_report(written, "written.json");
  } catch (const FileError& e) {
    fuzz::property_failed(std::string("a report that was read does not read back: ") + e.what());
  }
  if (!(again == r)) fuzz::property_failed("report changed in a write/read round trip");
  (void)to_csv(r);
  (void)compute_crossovers(compute_best(r.results));
  return 0;
}
