// Inputs the fuzzer (fuzz/, docs/QUALITY.md) found crashing the report
// reader, kept as regression tests: each must now fail with a FileError naming
// the file and the field. The raw fuzzer inputs live in
// tests/regressions/report/; every one of them must load or throw FileError.
#include <gtest/gtest.h>

#include <filesystem>

#include "../common/regression_support.h"
#include "core/error.h"
#include "reports/report.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

using testing_regression::expect_file_error;
using testing_regression::read;

TEST(FuzzRegressions, CommittedInputsLoadOrThrowFileError) {
  const fs::path root = fs::path(COLLKIT_SOURCE_DIR) / "tests" / "regressions";
  int n = 0;
  for (const auto& e : fs::directory_iterator(root / "report")) {
    SCOPED_TRACE(e.path().string());
    try {
      parse_report(read(e.path()), e.path().filename().string());
    } catch (const FileError&) {
    }
    ++n;
  }
  EXPECT_GT(n, 0);
}

// nlohmann throws out_of_range (not parse_error) for a number a double cannot
// hold (47.9E9998); the reader let it escape.
TEST(FuzzRegressions, JsonNumberOverflow) {
  expect_file_error([] { parse_report(R"({"collkit_version": 47.9E9998})", "r.json"); },
                    {"r.json", "malformed JSON", "number overflow"});
}

}  // namespace
}  // namespace collkit
