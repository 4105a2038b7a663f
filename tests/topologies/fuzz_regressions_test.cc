// Inputs the fuzzers (fuzz/, docs/QUALITY.md) found crashing the topology
// loaders, kept as regression tests: each must now fail with a FileError that
// names the file and the field. The raw fuzzer inputs live in
// tests/regressions/<target>/; every one of them must load or throw FileError.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "../common/regression_support.h"
#include "core/error.h"
#include "topologies/astra.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

using testing_regression::expect_file_error;
using testing_regression::read;

void expect_json_error(const std::string& json, std::initializer_list<const char*> parts) {
  expect_file_error([&] { parse_topology(json, "bad.json"); }, parts);
}

void expect_yaml_error(const std::string& yaml, std::initializer_list<const char*> parts) {
  expect_file_error([&] { parse_astra_dims(yaml, "bad.yml"); }, parts);
}

// Every committed fuzzer input loads or fails with FileError (any other
// exception, a crash or a sanitizer report fails the test).
TEST(FuzzRegressions, CommittedInputsLoadOrThrowFileError) {
  const fs::path root = fs::path(COLLKIT_SOURCE_DIR) / "tests" / "regressions";
  int n = 0;
  for (const auto& e : fs::directory_iterator(root / "topology_json")) {
    SCOPED_TRACE(e.path().string());
    try {
      parse_topology(read(e.path()), e.path().filename().string());
    } catch (const FileError&) {
    }
    ++n;
  }
  for (const auto& e : fs::directory_iterator(root / "topology_astra")) {
    SCOPED_TRACE(e.path().string());
    try {
      parse_astra_dims(read(e.path()), e.path().filename().string());
    } catch (const FileError&) {
    }
    ++n;
  }
  EXPECT_GT(n, 0);
}

// yaml-cpp threw TypedBadConversion<std::string> for a key that is a list.
TEST(FuzzRegressions, AstraKeyThatIsNotAScalar) {
  expect_yaml_error("topology: [Ring]\n? [a, b]\n: 1\n", {"bad.yml", "[a, b]", "unknown key"});
  expect_yaml_error("{[topology]: 1}", {"bad.yml", "unknown key"});
}

// NaN or a huge npus_count was converted to an integer before its range check
// (undefined behaviour); infinite bandwidth or latency were accepted.
TEST(FuzzRegressions, AstraNumbersOutOfRange) {
  const std::string tail = "bandwidth: [1]\nlatency: [1]\n";
  expect_yaml_error("topology: [Ring]\nnpus_count: [.nan]\n" + tail,
                    {"npus_count[0]", "integer >= 1", ".nan"});
  expect_yaml_error("topology: [Ring]\nnpus_count: [1e300]\n" + tail,
                    {"npus_count[0]", "more than 2^30"});
  expect_yaml_error(
      "topology: [Ring, Ring]\nnpus_count: [65536, 65536]\n"
      "bandwidth: [1, 1]\nlatency: [1, 1]\n",
      {"npus_count[1]", "more than 2^30"});
  expect_yaml_error("topology: [Ring]\nnpus_count: [4]\nbandwidth: [.inf]\nlatency: [1]\n",
                    {"bandwidth[0]", "finite", ".inf"});
  expect_yaml_error("topology: [Ring]\nnpus_count: [4]\nbandwidth: [1]\nlatency: [.inf]\n",
                    {"latency[0]", "at most 1e9"});
}

// nlohmann throws out_of_range (not parse_error) for a number a double cannot
// hold; the loader let it escape.
TEST(FuzzRegressions, JsonNumberOverflow) {
  expect_json_error(R"({"generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": 1e999}})",
                    {"bad.json", "malformed JSON", "number overflow"});
}

// A bandwidth finite in GB/s but infinite in bytes per second; an overhead of
// 1e300 microseconds.
TEST(FuzzRegressions, JsonValuesThatOverflowUnits) {
  expect_json_error(R"({"generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": 1e300}})",
                    {"bad.json", "generator.bandwidth_gbps", "finite", "1e+300"});
  expect_json_error(R"({"endpoint": {"overhead_us": 1e300},
                        "generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": 1}})",
                    {"bad.json", "endpoint.overhead_us", "at most 1e6"});
}

// Graph generators allocated the whole graph however large: 2^30 devices ran
// out of memory (std::bad_alloc), a 2^30-rank shortest-path torus or a
// 65536-device fully connected node ran for minutes.
TEST(FuzzRegressions, GraphGeneratorsTooLarge) {
  expect_json_error(R"({"generator": {"kind": "hierarchical", "nodes": 32768,
      "devices_per_node": 32768, "intra": {"kind": "switch", "bandwidth_gbps": 100},
      "inter": {"kind": "switch", "bandwidth_gbps": 10}}})",
                    {"bad.json", "generator:", "directed links", "2^22"});
  expect_json_error(R"({"generator": {"kind": "hierarchical", "nodes": 1,
      "devices_per_node": 65536, "intra": {"kind": "fully_connected", "bandwidth_gbps": 100}}})",
                    {"generator:", "4294901760 directed links", "2^22"});
  expect_json_error(R"({"generator": {"kind": "torus", "shape": [1024, 1024, 1024],
      "routing": "shortest", "bandwidth_gbps": 10}})",
                    {"generator.shape", "1073741824 nodes", "2^22"});
  // The same torus with dimension-order routing is implicit and loads.
  auto t = parse_topology(R"({"generator": {"kind": "torus", "shape": [1024, 1024, 1024],
      "bandwidth_gbps": 10}})",
                          "big.json");
  EXPECT_EQ(t->num_ranks(), 1 << 30);
}

}  // namespace
}  // namespace collkit
