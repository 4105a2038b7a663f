// Golden outputs: `collkit simulate` on shipped topologies must print the same
// table and write the same JSON and CSV reports, byte for byte, as the files
// committed next to this test, and two runs must agree with each other. A
// change of any simulated figure, of the report format or of the table layout
// fails here; when the change is intended, regenerate the files on purpose:
//
//   COLLKIT_REGENERATE_GOLDEN=1 ctest --preset default -R golden
//   (or bash scripts/regen-golden.sh), then review `git diff tests/golden`.
//
// Reports carry no timestamp or host name; the fields that could differ
// between machines are the topology path (given relative to the source tree,
// where ctest runs) and collkit_version (a version bump regenerates them).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

namespace fs = std::filesystem;
using collkit::testing_cli::run_collkit;
using collkit::testing_cli::slurp;

namespace {

struct Case {
  const char* name;
  const char* args;  // simulate arguments, without --json/--csv
};

// Small size ranges keep the files short; together they cover the flow model
// with contention (fat tree, cluster), alpha-beta, explicit and generated
// graphs, product topologies, an ASTRA-sim YAML, rooted and rooted-elsewhere
// collectives, every algorithm of each collective and several dtypes.
const Case kCases[] = {
    {"dgx-h100-all_reduce",
     "--topology topologies/dgx-h100.json --collective all_reduce --algorithm all -b 8 -e 1M -f "
     "32"},
    {"h100-cluster-4x8-broadcast",
     "--topology topologies/h100-cluster-4x8.json --collective broadcast --algorithm all --root 5 "
     "-b 64 -e 4M -f 64"},
    {"fat-tree-k8-2to1-all_to_all",
     "--topology topologies/fat-tree-k8-2to1.json --ranks 16 --collective all_to_all "
     "--algorithm all -b 1K -e 256K -f 16 --dtype double"},
    {"torus-4x4-reduce_scatter-alpha_beta",
     "--topology topologies/torus-4x4.json --collective reduce_scatter --algorithm all "
     "--net-model alpha-beta -b 256 -e 1M -f 64 --op max --dtype int32"},
    {"dumbbell-all_gather",
     "--topology topologies/dumbbell.json --collective all_gather --algorithm all -b 32 -e 512K "
     "-f 128"},
    {"astra-3d-reduce",
     "--topology astra:tests/golden/astra-3d.yml --collective reduce "
     "--algorithm all --root 3 -b 4 -e 64K -f 64"},
};

// gtest prints a failing parameter with this instead of its raw bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const char* const kExtensions[] = {".txt", ".json", ".csv"};

bool regenerate() {
  const char* v = std::getenv("COLLKIT_REGENERATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// "" when equal, else the first differing line with two lines of context and
// how many lines differ.
std::string describe_difference(const std::string& expected, const std::string& actual) {
  if (expected == actual) return "";
  const auto e = lines(expected);
  const auto a = lines(actual);
  std::size_t first = 0;
  while (first < e.size() && first < a.size() && e[first] == a[first]) ++first;
  std::size_t differing = 0;
  for (std::size_t i = 0; i < std::max(e.size(), a.size()); ++i)
    if (i >= e.size() || i >= a.size() || e[i] != a[i]) ++differing;
  std::ostringstream msg;
  msg << differing << " line(s) differ (expected " << e.size() << " lines, got " << a.size()
      << "); first at line " << first + 1 << ":\n";
  const std::size_t from = first >= 2 ? first - 2 : 0;
  for (std::size_t i = from; i < std::min(first + 3, std::max(e.size(), a.size())); ++i) {
    const bool same = i < e.size() && i < a.size() && e[i] == a[i];
    if (same) {
      msg << "    " << e[i] << "\n";
      continue;
    }
    if (i < e.size()) msg << "  - " << e[i] << "\n";
    if (i < a.size()) msg << "  + " << a[i] << "\n";
  }
  if (expected.size() != actual.size() && differing == 0) msg << "  (trailing newline differs)\n";
  return msg.str();
}

struct Output {
  std::string files[3];  // .txt (stdout), .json, .csv
};

Output simulate(const Case& c, const fs::path& dir) {
  const fs::path json = dir / "out.json";
  const fs::path csv = dir / "out.csv";
  const auto r = run_collkit(std::string("simulate ") + c.args + " --json '" + json.string() +
                                 "' --csv '" + csv.string() + "'",
                             dir);
  EXPECT_EQ(r.exit_code, 0) << c.name << ": " << r.err;
  Output o{{r.out, slurp(json), slurp(csv)}};
  fs::remove(json);
  fs::remove(csv);
  return o;
}

class Golden : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("collkit_golden_" + std::to_string(::getpid()) + "_" + GetParam().name);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(Golden, MatchesCommittedOutputAndIsDeterministic) {
  const Case& c = GetParam();
  const Output first = simulate(c, dir_);
  const Output second = simulate(c, dir_);
  for (int i = 0; i < 3; ++i) {
    ASSERT_FALSE(first.files[i].empty()) << c.name << kExtensions[i] << " is empty";
    EXPECT_EQ(describe_difference(first.files[i], second.files[i]), "")
        << c.name << kExtensions[i] << ": two runs of the same command differ";
  }
  const fs::path golden_dir = fs::path(COLLKIT_SOURCE_DIR) / "tests" / "golden";
  for (int i = 0; i < 3; ++i) {
    const fs::path golden = golden_dir / (std::string(c.name) + kExtensions[i]);
    if (regenerate()) {
      std::ofstream(golden, std::ios::binary) << first.files[i];
      std::printf("regenerated %s\n", golden.string().c_str());
      continue;
    }
    ASSERT_TRUE(fs::exists(golden))
        << golden << " is missing; create it with COLLKIT_REGENERATE_GOLDEN=1 (docs/QUALITY.md)";
    std::ifstream in(golden, std::ios::binary);
    std::stringstream expected;
    expected << in.rdbuf();
    EXPECT_EQ(describe_difference(expected.str(), first.files[i]), "")
        << golden.string() << " differs from `collkit simulate " << c.args
        << "`.\nIf the change is intended, regenerate: COLLKIT_REGENERATE_GOLDEN=1 ctest -R "
           "golden (docs/QUALITY.md)";
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, Golden, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = info.param.name;
                           std::replace_if(
                               n.begin(), n.end(), [](char ch) { return !std::isalnum(ch); }, '_');
                           return n;
                         });

TEST(GoldenDiff, NamesTheFirstDifferingLine) {
  EXPECT_EQ(describe_difference("a\nb\n", "a\nb\n"), "");
  const std::string d = describe_difference("a\nb\nc\n", "a\nB\nc\n");
  EXPECT_NE(d.find("1 line(s) differ"), std::string::npos) << d;
  EXPECT_NE(d.find("first at line 2"), std::string::npos) << d;
  EXPECT_NE(d.find("  - b\n  + B"), std::string::npos) << d;
}

}  // namespace
