// Inputs the fuzzer (fuzz/, docs/QUALITY.md) found crashing the model loader,
// kept as regression tests: each must now fail with a FileError naming the
// file and the field. The raw fuzzer inputs live in tests/regressions/model/;
// every one of them must load or throw FileError.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "../common/regression_support.h"
#include "core/error.h"
#include "planner/planner_model.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

using testing_regression::expect_file_error;
using testing_regression::read;

void expect_model_error(const std::string& json, std::initializer_list<const char*> parts) {
  expect_file_error([&] { parse_model(json, "bad.json"); }, parts);
}

std::string one_layer(const std::string& layer) {
  return R"({"name": "m", "layers": [)" + layer + "]}";
}

TEST(FuzzRegressions, CommittedInputsLoadOrThrowFileError) {
  const fs::path root = fs::path(COLLKIT_SOURCE_DIR) / "tests" / "regressions";
  int n = 0;
  for (const auto& e : fs::directory_iterator(root / "model")) {
    SCOPED_TRACE(e.path().string());
    try {
      parse_model(read(e.path()), e.path().filename().string());
    } catch (const FileError&) {
    }
    ++n;
  }
  EXPECT_GT(n, 0);
}

// nlohmann throws out_of_range (not parse_error) for a number a double cannot
// hold (2E8672); the reader let it escape.
TEST(FuzzRegressions, JsonNumberOverflow) {
  expect_model_error(R"({"name": "m", "params": 2E8672, "layers": []})",
                     {"bad.json", "malformed JSON", "number overflow"});
}

// Shape products were computed without overflow checks (signed overflow is
// undefined behaviour): input^2 of a conv2d, 9 mid^2 of a bottleneck, ...
TEST(FuzzRegressions, ModelShapeProductsOverflow) {
  expect_model_error(one_layer(R"({"name": "c", "kind": "conv2d", "shape": {"in_channels": 64,
      "out_channels": 192, "kernel": 5, "input": 27333333333333333, "padding": 2}})"),
                     {"bad.json", "layers[0] (c).shape", "overflow 64-bit"});
  expect_model_error(one_layer(R"({"name": "c", "kind": "conv2d", "shape": {"in_channels": 1,
      "out_channels": 1, "kernel": 4000000000, "input": 1, "padding": 4611686018427387904}})"),
                     {"layers[0] (c).shape", "overflow 64-bit"});
  expect_model_error(one_layer(R"({"name": "b", "kind": "bottleneck", "shape": {"in_channels": 1,
      "mid_channels": 4000000000, "out_channels": 1, "input": 7}})"),
                     {"layers[0] (b).shape", "overflow 64-bit"});
  expect_model_error(one_layer(R"({"name": "t", "kind": "transformer_block", "shape": {
      "hidden": 4294967296, "heads": 1, "seq": 4294967296, "ffn": 1}})"),
                     {"layers[0] (t).shape", "overflow 64-bit"});
}

// The model total (params x repeat summed over layers) overflowed.
TEST(FuzzRegressions, ModelTotalOverflows) {
  expect_model_error(
      R"({"name": "m", "layers": [
          {"name": "a", "kind": "norm", "params": 4611686018427387904, "act_in": 1, "act_out": 1,
           "flops": 0, "repeat": 2},
          {"name": "b", "kind": "norm", "params": 4611686018427387904, "act_in": 1, "act_out": 1,
           "flops": 0}]})",
      {"bad.json", "overflow 64-bit"});
}

// An integer beyond int64 read back as a negative number.
TEST(FuzzRegressions, ModelIntegerBeyondInt64) {
  expect_model_error(one_layer(R"({"name": "a", "kind": "norm", "params": 18446744073709551615,
      "act_in": 1, "act_out": 1, "flops": 0})"),
                     {"layers[0] (a).params", "18446744073709551615", "2^63"});
}

}  // namespace
}  // namespace collkit
