// Inputs the fuzzers (fuzz/nccl_tests_text_fuzz.cc, fuzz/nccl_tests_json_fuzz.cc)
// found crashing the nccl-tests readers, kept as regression tests. Every raw
// input in tests/regressions/nccl_tests_text/ and nccl_tests_json/ must read
// or throw FileError, and what reads must write as a report and as -J JSON.
#include <gtest/gtest.h>

#include <filesystem>

#include "../common/regression_support.h"
#include "core/error.h"
#include "reports/inputs.h"
#include "reports/nccl_tests.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

using testing_regression::read;

void read_and_write(const fs::path& p) {
  SCOPED_TRACE(p.string());
  std::vector<InputRun> runs;
  try {
    runs = parse_runs(read(p), p.filename().string());
  } catch (const FileError&) {
    return;
  }
  for (const InputRun& run : runs) {
    EXPECT_NO_THROW(report_json_text(run.report));
    EXPECT_NO_THROW(nccl_tests_json(run.report, run.report.results[0].collective,
                                    run.report.results[0].algorithm)
                        .dump());
  }
}

TEST(NcclTestsFuzzRegressions, CommittedInputsReadOrThrowFileError) {
  const fs::path root = fs::path(COLLKIT_SOURCE_DIR) / "tests" / "regressions";
  int n = 0;
  for (const char* target : {"nccl_tests_text", "nccl_tests_json"}) {
    if (!fs::exists(root / target)) continue;
    for (const auto& e : fs::directory_iterator(root / target)) {
      read_and_write(e.path());
      ++n;
    }
  }
  EXPECT_GT(n, 0);
}

// A host name with a byte that is not UTF-8 (0xC8) went into the report's
// devices as it was; writing the report threw nlohmann's type_error 316.
// Text from a log is kept as printable ASCII, other bytes as '?'.
TEST(NcclTestsFuzzRegressions, InvalidUtf8InAHostName) {
  const fs::path p = fs::path(COLLKIT_SOURCE_DIR) / "tests" / "regressions" / "nccl_tests_text" /
                     "invalid-utf8-hostname.txt";
  const std::vector<InputRun> runs = parse_runs(read(p), "log.txt");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].report.extra["devices"][0]["host"], "dgx?");
  EXPECT_NO_THROW(report_json_text(runs[0].report));
}

}  // namespace
}  // namespace collkit
