// Fuzzes the nccl-tests -J reader (reports/nccl_tests.cc): any JSON either
// reads as a run or throws FileError naming the file; a run that reads is
// written back as an nccl-tests -J document (nccl_tests_json) that reads as
// the same rows (in any order), so collkit's writer and reader agree on every
// file the reader accepts.
#include <algorithm>
#include <tuple>

#include "fuzz/fuzz_support.h"
#include "reports/nccl_tests.h"
#include "reports/report.h"

namespace {

using Key = std::tuple<int, std::string, std::int64_t, std::int64_t, bool, double, double, double,
                       std::int64_t, int, int, int>;

std::vector<Key> keys(const collkit::Report& r) {
  using namespace collkit;
  std::vector<Key> out;
  for (const ResultRow& x : r.results)
    out.emplace_back(static_cast<int>(x.collective), x.algorithm, x.bytes, x.count, x.in_place,
                     x.time_us, x.algbw_gbps, x.busbw_gbps, x.wrong,
                     static_cast<int>(x.dtype.value_or(r.dtype)),
                     is_reduction(x.collective) ? static_cast<int>(x.op.value_or(r.op)) : -1,
                     root_column(x.collective, x.root.value_or(r.root)));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace collkit;
  Json j;
  try {
    j = Json::parse(fuzz::text(data, size));
  } catch (const Json::exception&) {
    return 0;  // not JSON: the entry point's error, not this reader's
  }
  NcclTestsOptions options;
  if (size % 3 == 1) options.collective = kAllCollectives[size % std::size(kAllCollectives)];
  if (size % 5 == 2) options.ranks = static_cast<int>(size % 17) + 1;
  NcclTestsRun run;
  try {
    run = nccl_tests_run_from_json(j, "fuzz.json", options);
  } catch (const FileError& e) {
    fuzz::check_message(e);
    if (std::string(e.what()).rfind("fuzz.json", 0) != 0)
      fuzz::property_failed(std::string("an error that does not name the file: ") + e.what());
    return 0;
  }
  const Report& r = run.report;
  if (r.results.empty() || r.ranks < 1) fuzz::property_failed("a run without rows or ranks");
  if (run.row_origins.size() != r.results.size()) fuzz::property_failed("row origins");
  const Json written = nccl_tests_json(r, r.results[0].collective, r.results[0].algorithm);
  NcclTestsRun again;
  try {
    again = nccl_tests_run_from_json(Json::parse(written.dump()), "written.json");
  } catch (const std::exception& e) {
    fuzz::property_failed(std::string("a run that was read does not read back: ") + e.what());
  }
  if (keys(again.report) != keys(r))
    fuzz::property_failed("rows changed in a write/read round trip");
  if (again.report.ranks != r.ranks) fuzz::property_failed("ranks changed in a round trip");
  return 0;
}
