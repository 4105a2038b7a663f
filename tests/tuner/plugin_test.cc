// The built libnccl-tuner-collkit.so, loaded with dlopen and called through
// ncclTuner_v5_t as NCCL calls it, against figures computed elsewhere:
// `collkit simulate --algorithm nccl:<variant>` and `--algorithm nccl` (the
// command line, not the tuner's code) at the grid sizes and between them, the
// simulator run directly for every (variant, protocol), and the config file
// read as NCCL's example plugin reads it. Then every fallback: no model file,
// an unreadable or malformed one, another rank count, a collective the model
// lacks, pairs NCCL has ruled out.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "core/nccl_sizes.h"
#include "sim/engine.h"
#include "sim/nccl.h"
#include "sim/sweep.h"
#include "tests/cli/cli_runner.h"
#include "topologies/topology.h"
#include "tuner/nccl_tuner_v5.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::run_collkit;
using testing_cli::slurp;

// ---- NCCL's side -----------------------------------------------------------

struct LogLine {
  int level;
  std::string text;
};
std::vector<LogLine>& logged() {
  static std::vector<LogLine> lines;
  return lines;
}
void test_logger(ncclDebugLogLevel level, unsigned long /*flags*/, const char* /*file*/,
                 int /*line*/, const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  logged().push_back({static_cast<int>(level), buf});
}
int count_level(int level) {
  int n = 0;
  for (const LogLine& l : logged()) n += l.level == level;
  return n;
}
std::string all_logged() {
  std::string s;
  for (const LogLine& l : logged()) s += std::to_string(l.level) + ": " + l.text + "\n";
  return s;
}

// NCCL's cost table as enqueue.cc declares it.
struct Table {
  float t[7][3];
  explicit Table(float fill = 0) {
    for (auto& row : t)
      for (float& x : row) x = fill;
  }
  float** raw() { return reinterpret_cast<float**>(t); }
  bool operator==(const Table& o) const {
    for (int a = 0; a < 7; ++a)
      for (int p = 0; p < 3; ++p)
        if (t[a][p] != o.t[a][p]) return false;
    return true;
  }
  // NCCL's pick: the smallest non-negative entry, first in (algo, proto) order.
  std::pair<int, int> best() const {
    std::pair<int, int> b{-1, -1};
    for (int a = 0; a < 7; ++a)
      for (int p = 0; p < 3; ++p)
        if (t[a][p] >= 0 && (b.first < 0 || t[a][p] < t[b.first][b.second])) b = {a, p};
    return b;
  }
};

// A table NCCL filled with figures of its own (all pairs runnable).
Table distinct_table() {
  Table t;
  for (int a = 0; a < 7; ++a)
    for (int p = 0; p < 3; ++p) t.t[a][p] = 100.0f + static_cast<float>(a * 3 + p);
  return t;
}

class Plugin {
 public:
  Plugin() {
    handle_ = dlopen(COLLKIT_TUNER_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (handle_) api_ = static_cast<ncclTuner_v5_t*>(dlsym(handle_, "ncclTunerPlugin_v5"));
  }
  ~Plugin() {
    if (handle_) dlclose(handle_);
  }
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;
  const ncclTuner_v5_t* api() const { return api_; }
  void* handle() const { return handle_; }

 private:
  void* handle_ = nullptr;
  ncclTuner_v5_t* api_ = nullptr;
};

// One communicator's plugin context, model named by COLLKIT_TUNER_MODEL.
class Comm {
 public:
  Comm(const Plugin& plugin, const std::string& model, std::size_t ranks, std::size_t nodes)
      : api_(plugin.api()) {
    if (model.empty())
      unsetenv("COLLKIT_TUNER_MODEL");
    else
      setenv("COLLKIT_TUNER_MODEL", model.c_str(), 1);
    ncclNvlDomainInfo_v5_t nvl{1, static_cast<int>(ranks), static_cast<int>(ranks)};
    ncclTunerConstants_v5_t constants{};
    constants.baseLatencies[1][2] = 8.4;
    init_result_ = api_->init(&ctx_, 42, ranks, nodes, test_logger, &nvl, &constants);
    constants_untouched_ = constants.baseLatencies[1][2] == 8.4;
  }
  ~Comm() { api_->finalize(ctx_); }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ncclResult_t init_result() const { return init_result_; }
  bool constants_untouched() const { return constants_untouched_; }
  // getCollInfo; returns the channels it set (0: left to NCCL).
  int call(ncclFunc_t f, std::size_t bytes, Table& table) const {
    int channels = 0;
    EXPECT_EQ(api_->getCollInfo(ctx_, f, bytes, 1, table.raw(), 7, 3, 0, &channels), ncclSuccess);
    return channels;
  }

 private:
  const ncclTuner_v5_t* api_;
  void* ctx_ = nullptr;
  ncclResult_t init_result_ = ncclInternalError;
  bool constants_untouched_ = false;
};

// ---- the other side: collkit's command line and simulator -----------------

// NCCL's names, written out here rather than taken from tuner/.
int nccl_algo(const std::string& variant) {
  static const std::map<std::string, int> m = {
      {"tree", 0},      {"ring", 1}, {"collnet_direct", 2}, {"collnet_chain", 3}, {"nvls", 4},
      {"nvls_tree", 5}, {"pat", 6}};
  return m.at(variant);
}
int nccl_proto(const std::string& name) {
  static const std::map<std::string, int> m = {{"LL", 0}, {"LL128", 1}, {"Simple", 2}};
  return m.at(name);
}
struct Coll {
  const char* collkit;
  const char* nccl;
  ncclFunc_t func;
  Collective c;
};
const Coll kColls[] = {
    {"broadcast", "broadcast", ncclFuncBroadcast, Collective::broadcast},
    {"reduce", "reduce", ncclFuncReduce, Collective::reduce},
    {"all_gather", "allgather", ncclFuncAllGather, Collective::all_gather},
    {"reduce_scatter", "reducescatter", ncclFuncReduceScatter, Collective::reduce_scatter},
    {"all_reduce", "allreduce", ncclFuncAllReduce, Collective::all_reduce},
};

// One row of `collkit simulate --json` for the nccl family.
struct SimRow {
  std::string algorithm;  // nccl, nccl:ring, ...
  std::uint64_t bytes;
  double time_us;
  std::string variant;  // what ran, from the row's "ran"
  int proto;
  int channels;
};

std::vector<SimRow> simulate_rows(const std::string& topology, const Coll& c,
                                  const std::string& algorithms, const std::string& sizes,
                                  const fs::path& dir) {
  const fs::path json =
      dir / (std::string(c.collkit) + "-" + std::to_string(std::rand()) + ".json");
  const auto r =
      run_collkit("simulate --topology " + topology + " --collective " + c.collkit +
                      " --algorithm " + algorithms + " " + sizes + " --json " + json.string(),
                  dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<SimRow> rows;
  const auto j = nlohmann::json::parse(slurp(json));
  for (const auto& row : j.at("results")) {
    SimRow s;
    s.algorithm = row.at("algorithm").get<std::string>();
    s.bytes = row.at("bytes").get<std::uint64_t>();
    s.time_us = row.at("time_us").get<double>();
    const std::string ran = row.at("ran").get<std::string>();  // ring/LL/24ch
    const std::size_t a = ran.find('/'), b = ran.rfind('/');
    s.variant = ran.substr(0, a);
    s.proto = nccl_proto(ran.substr(a + 1, b - a - 1));
    s.channels = std::stoi(ran.substr(b + 1));
    rows.push_back(s);
  }
  fs::remove(json);
  return rows;
}

// Float rounding of a time NCCL's table holds.
void expect_float_equal(double table, double expect, const std::string& what) {
  EXPECT_NEAR(table, expect, 1e-6 * expect + 1e-9) << what;
}

class TunerPlugin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / "collkit_tuner_plugin_test");
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    for (const auto& [topo, out] : {std::pair<std::string, std::string>{kOneNode, "one"},
                                    std::pair<std::string, std::string>{kTwoNodes, "two"}}) {
      const auto r = run_collkit(
          "tuner --topology " + topo + " " + kGrid + " -o " + (*dir_ / out).string(), *dir_);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    ASSERT_NE(plugin_.handle(), nullptr) << dlerror();
    ASSERT_NE(plugin_.api(), nullptr) << "no symbol ncclTunerPlugin_v5";
    logged().clear();
  }
  static std::string model(const std::string& which) {
    return (*dir_ / which / "collkit-tuner.model").string();
  }

  // Every grid size: the plugin's entries against `collkit simulate`, NCCL's
  // choice, and the simulator for every (variant, protocol).
  void check_grid(const std::string& topo, const std::string& which, int ranks, int nodes,
                  bool nvls_tree) {
    Comm comm(plugin_, model(which), static_cast<std::size_t>(ranks),
              static_cast<std::size_t>(nodes));
    ASSERT_EQ(comm.init_result(), ncclSuccess);
    EXPECT_TRUE(comm.constants_untouched());
    EXPECT_EQ(count_level(NCCL_LOG_WARN), 0) << all_logged();
    const std::unique_ptr<Topology> topology = load_topology(topo, ranks);
    const NcclContext ctx = nccl_context(*topology, ranks);
    int checked = 0, differs = 0, ties = 0;
    for (const Coll& c : kColls) {
      std::string algos = "nccl";
      for (const std::string& v : {std::string("ring"), std::string("tree"),
                                   std::string(nvls_tree ? "nvls_tree" : "nvls")})
        if (c.c == Collective::all_reduce || v == "ring") algos += ",nccl:" + v;
      const std::vector<SimRow> rows = simulate_rows(topo, c, algos, kGrid, *dir_);
      for (const SimRow& row : rows) {
        Table t;
        const int channels = comm.call(c.func, row.bytes, t);
        const std::string what = std::string(c.nccl) + " " + row.algorithm + " " +
                                 std::to_string(row.bytes) + " ran " + row.variant;
        const int a = nccl_algo(row.variant);
        // The entry of what simulate ran equals its time, to float rounding.
        expect_float_equal(t.t[a][row.proto], row.time_us, what);
        ++checked;
        if (row.algorithm == "nccl") {
          // collkit's minimum is never slower than NCCL's choice...
          const auto [ba, bp] = t.best();
          EXPECT_LE(t.t[ba][bp], t.t[a][row.proto]) << what;
          // ... and is NCCL's choice, with its channels, where it ties.
          if (ba == a && bp == row.proto) {
            EXPECT_EQ(channels, row.channels) << what;
          } else if (t.t[ba][bp] < t.t[a][row.proto]) {
            ++differs;
          } else {
            ++ties;  // equal times: NCCL's scan takes the lower ids
          }
        }
      }
      // Every (variant, protocol) against the simulator run here, and -1
      // exactly where NCCL's model has no such pair.
      for (const SimRow& row : rows) {
        if (row.algorithm != "nccl") continue;
        Table t;
        comm.call(c.func, row.bytes, t);
        const std::string vs[] = {"tree",      "ring", "collnet_direct", "collnet_chain", "nvls",
                                  "nvls_tree", "pat"};
        for (const std::string& v : vs)
          for (int p = 0; p < 3; ++p) {
            const NcclVariant variant = parse_nccl_variant(v).value();
            const Protocol pr = p == 0 ? Protocol::ll : p == 1 ? Protocol::ll128 : Protocol::simple;
            const auto bytes = static_cast<std::int64_t>(row.bytes);
            // Pairs NCCL's model weighs but collkit has no schedule for
            // (NVLS all_gather / reduce_scatter) are not in the model file.
            if (!nccl_model_time(ctx, c.c, variant, pr, bytes, DataType::float32, RedOp::sum) ||
                !nccl_has_schedule(c.c, variant)) {
              EXPECT_EQ(t.t[nccl_algo(v)][p], -1.0f) << c.nccl << " " << v << p << " " << bytes;
              continue;
            }
            const SizeMapping size = map_size(c.c, bytes, 4, ranks);
            ASSERT_EQ(size.spec_count * 4, bytes);
            ScheduleSpec spec;
            spec.collective = c.c;
            spec.ranks = ranks;
            spec.count = size.spec_count;
            spec.elem_size = 4;
            const NcclChoice choice{variant, pr, nccl_channels(ctx, c.c, bytes, variant, pr), 0};
            const double us =
                simulate(*make_schedule(nccl_schedule_spec(spec, ctx, choice, *topology)),
                         *topology)
                    .time *
                1e6;
            expect_float_equal(t.t[nccl_algo(v)][p], us,
                               std::string(c.nccl) + " " + v + " " + std::to_string(p));
          }
      }
    }
    std::printf(
        "[ %s: %d entries equal to collkit simulate; collkit's minimum differs from "
        "NCCL's choice at %d sizes, ties it at %d ]\n",
        which.c_str(), checked, differs, ties);
    EXPECT_GT(checked, 50);
  }

  static constexpr const char* kOneNode = "topologies/dgx-h100.json";
  static constexpr const char* kTwoNodes = "topologies/h100-cluster-2x8.json";
  static constexpr const char* kGrid = "-b 1K -e 64M -f 2";
  static fs::path* dir_;
  Plugin plugin_;
};
fs::path* TunerPlugin::dir_ = nullptr;

TEST_F(TunerPlugin, ExportsTheV5Table) {
  EXPECT_STREQ(plugin_.api()->name, "collkit");
  EXPECT_NE(plugin_.api()->init, nullptr);
  EXPECT_NE(plugin_.api()->getCollInfo, nullptr);
  EXPECT_NE(plugin_.api()->finalize, nullptr);
  // Nothing of collkit's own is exported (hidden visibility): the dynamic
  // symbols hold the plugin's table and no collkit name.
  const std::string cmd = std::string("nm -D --defined-only '") + COLLKIT_TUNER_PLUGIN + "'";
  FILE* nm = popen(cmd.c_str(), "r");
  ASSERT_NE(nm, nullptr);
  std::string symbols;
  char buf[512];
  while (std::fgets(buf, sizeof buf, nm)) symbols += buf;
  if (pclose(nm) != 0) GTEST_SKIP() << "nm not available";
  EXPECT_NE(symbols.find(" ncclTunerPlugin_v5\n"), std::string::npos) << symbols;
  EXPECT_EQ(symbols.find("collkit"), std::string::npos) << symbols;
}

TEST_F(TunerPlugin, OneNodeGridEqualsSimulate) { check_grid(kOneNode, "one", 8, 1, false); }

TEST_F(TunerPlugin, TwoNodesGridEqualsSimulate) { check_grid(kTwoNodes, "two", 16, 2, true); }

// Between grid sizes the plugin interpolates; against simulate at the sizes
// halfway (in log space) between grid sizes.
TEST_F(TunerPlugin, InterpolationErrorBetweenGridSizes) {
  for (const auto& [topo, which, ranks, nodes, nvls_tree] :
       {std::tuple<std::string, std::string, int, int, bool>{kOneNode, "one", 8, 1, false},
        std::tuple<std::string, std::string, int, int, bool>{kTwoNodes, "two", 16, 2, true}}) {
    Comm comm(plugin_, model(which), static_cast<std::size_t>(ranks),
              static_cast<std::size_t>(nodes));
    double worst = 0, sum = 0;
    int n = 0;
    std::string worst_what;
    for (const Coll& c : kColls) {
      std::string algos;
      for (const std::string& v : {std::string("ring"), std::string("tree"),
                                   std::string(nvls_tree ? "nvls_tree" : "nvls")})
        if (c.c == Collective::all_reduce || v == "ring")
          algos += (algos.empty() ? "" : ",") + std::string("nccl:") + v;
      for (const SimRow& row : simulate_rows(topo, c, algos, "-b 1448 -e 48M -f 2", *dir_)) {
        Table t;
        comm.call(c.func, row.bytes, t);
        const double err =
            std::abs(t.t[nccl_algo(row.variant)][row.proto] - row.time_us) / row.time_us;
        sum += err;
        ++n;
        if (err > worst) {
          worst = err;
          worst_what =
              std::string(c.nccl) + " " + row.algorithm + " " + std::to_string(row.bytes) + " B";
        }
      }
    }
    std::printf(
        "[ %s: interpolation error at %d sizes between grid sizes (x2 grid, sizes x1.41): mean "
        "%.2f%%, max %.2f%% (%s) ]\n",
        which.c_str(), n, 100 * sum / n, 100 * worst, worst_what.c_str());
    EXPECT_GT(n, 30);
    EXPECT_LT(sum / n, 0.02);
    EXPECT_LT(worst, 0.15);
  }
}

// The config file, read as NCCL's example plugin reads it, chooses what the
// plugin's table makes NCCL choose, at the grid sizes and at random sizes.
TEST_F(TunerPlugin, ConfigFileAgreesWithPlugin) {
  struct Line {
    std::string coll;
    std::uint64_t lo, hi;
    std::string algo, proto;
    int channels, nodes, ranks;
  };
  const std::map<std::string, int> algo_id = {
      {"tree", 0},      {"ring", 1}, {"collnet_direct", 2}, {"collnet_chain", 3}, {"nvls", 4},
      {"nvls_tree", 5}, {"pat", 6}};
  const std::map<std::string, int> proto_id = {{"ll", 0}, {"ll128", 1}, {"simple", 2}};
  for (const auto& [which, ranks, nodes] : {std::tuple<std::string, int, int>{"one", 8, 1},
                                            std::tuple<std::string, int, int>{"two", 16, 2}}) {
    std::ifstream in(*dir_ / which / "nccl_tuner.conf");
    std::vector<Line> lines;
    std::string s;
    while (std::getline(in, s)) {
      if (s.empty() || s[0] == '#') continue;
      std::stringstream ss(s);
      std::vector<std::string> f;
      std::string x;
      while (std::getline(ss, x, ',')) f.push_back(x);
      ASSERT_EQ(f.size(), 8u) << s;
      lines.push_back(Line{f[0], std::stoull(f[1]), std::stoull(f[2]), f[3], f[4], std::stoi(f[5]),
                           std::stoi(f[6]), std::stoi(f[7])});
      EXPECT_EQ(lines.back().ranks, ranks);
      EXPECT_EQ(lines.back().nodes, nodes);
      EXPECT_TRUE(algo_id.count(f[3])) << s;
      EXPECT_TRUE(proto_id.count(f[4])) << s;
    }
    Comm comm(plugin_, model(which), static_cast<std::size_t>(ranks),
              static_cast<std::size_t>(nodes));
    std::mt19937_64 rng(7);
    for (const Coll& c : kColls) {
      // Ranges of the collective: contiguous from 0 to 2^64-1.
      std::uint64_t next = 0;
      bool first = true;
      for (const Line& l : lines) {
        if (l.coll != c.nccl) continue;
        EXPECT_EQ(l.lo, next) << c.nccl;
        EXPECT_LE(l.lo, l.hi);
        next = l.hi + 1;
        first = false;
      }
      EXPECT_FALSE(first) << c.nccl << " has no config line";
      EXPECT_EQ(next, 0u) << c.nccl << ": the last range does not end at 2^64-1";
      std::vector<std::uint64_t> sizes;
      for (std::uint64_t b = 1024; b <= (64u << 20); b *= 2) sizes.push_back(b);
      std::uniform_real_distribution<double> log_size(0, 36);
      for (int i = 0; i < 300; ++i)
        sizes.push_back(static_cast<std::uint64_t>(std::exp2(log_size(rng))));
      for (std::uint64_t b : sizes) {
        Table t;
        const int channels = comm.call(c.func, b, t);
        const auto [a, p] = t.best();
        for (const Line& l : lines)
          if (l.coll == c.nccl && l.lo <= b && b <= l.hi) {
            EXPECT_EQ(algo_id.at(l.algo), a) << c.nccl << " " << b;
            EXPECT_EQ(proto_id.at(l.proto), p) << c.nccl << " " << b;
            EXPECT_EQ(l.channels, channels) << c.nccl << " " << b;
          }
      }
    }
  }
}

// What a call costs NCCL: printed (docs/results/tuner.md), and bounded loosely so
// that a slip into per-call file reading or allocation shows.
TEST_F(TunerPlugin, CallCost) {
  Comm comm(plugin_, model("two"), 16, 2);
  const int calls = 200000;
  float sink = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    Table t;
    comm.call(ncclFuncAllReduce, 1024u << (i % 20), t);
    sink += t.t[1][2];
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
      calls;
  std::printf("[ getCollInfo: %.0f ns per allreduce call (16 ranks, 2 nodes) ]\n", ns);
  EXPECT_GT(sink, 0);
  EXPECT_LT(ns, 50000);
}

// ---- fallbacks: NCCL's table stays as NCCL made it --------------------------

void expect_untouched(const Comm& comm, ncclFunc_t f = ncclFuncAllReduce) {
  Table t = distinct_table();
  const Table before = t;
  EXPECT_EQ(comm.call(f, 1 << 20, t), 0);
  EXPECT_TRUE(t == before);
}

TEST_F(TunerPlugin, NoModelVariableLeavesNcclAlone) {
  Comm comm(plugin_, "", 8, 1);
  EXPECT_EQ(comm.init_result(), ncclSuccess);
  expect_untouched(comm);
  expect_untouched(comm, ncclFuncBroadcast);
  EXPECT_EQ(count_level(NCCL_LOG_WARN), 1) << all_logged();
  EXPECT_NE(all_logged().find("COLLKIT_TUNER_MODEL is not set"), std::string::npos);
}

TEST_F(TunerPlugin, MissingFileLeavesNcclAlone) {
  Comm comm(plugin_, (*dir_ / "no-such.model").string(), 8, 1);
  EXPECT_EQ(comm.init_result(), ncclSuccess);
  expect_untouched(comm);
  EXPECT_EQ(count_level(NCCL_LOG_WARN), 1) << all_logged();
  EXPECT_NE(all_logged().find("no-such.model: cannot be opened"), std::string::npos);
}

TEST_F(TunerPlugin, WrongRankCountLeavesNcclAlone) {
  for (const auto& [ranks, nodes] : {std::pair<std::size_t, std::size_t>{4, 1}, {8, 2}}) {
    logged().clear();
    Comm comm(plugin_, model("one"), ranks, nodes);
    expect_untouched(comm);
    EXPECT_EQ(count_level(NCCL_LOG_WARN), 1) << all_logged();
    EXPECT_NE(all_logged().find("has no tables for " + std::to_string(ranks) + " ranks on " +
                                std::to_string(nodes) + " nodes (it has ranks/nodes 8/1)"),
              std::string::npos)
        << all_logged();
  }
}

TEST_F(TunerPlugin, MalformedFileLeavesNcclAlone) {
  const fs::path bad = *dir_ / "bad.model";
  std::ofstream(bad) << "collkit-nccl-tuner 1\ncomm 8 1\ntable allreduce ring ll 2\n1024 3 1\n";
  Comm comm(plugin_, bad.string(), 8, 1);
  expect_untouched(comm);
  EXPECT_EQ(count_level(NCCL_LOG_WARN), 1) << all_logged();
  EXPECT_NE(all_logged().find("bad.model:4: table: ends after 1 of its 2 points"),
            std::string::npos)
      << all_logged();
  // Not a model file at all, and a directory.
  for (const fs::path& p : {fs::path(COLLKIT_TUNER_PLUGIN), *dir_}) {
    logged().clear();
    Comm other(plugin_, p.string(), 8, 1);
    expect_untouched(other);
    EXPECT_EQ(count_level(NCCL_LOG_WARN), 1) << all_logged();
  }
}

TEST_F(TunerPlugin, CollectiveOutsideTheModelLeavesNcclAlone) {
  const fs::path only = *dir_ / "allreduce-only.model";
  std::ofstream(only) << "collkit-nccl-tuner 1\ncomm 8 1\ntable allreduce ring simple 2\n"
                         "1024 10 2\n1048576 100 8\n";
  Comm comm(plugin_, only.string(), 8, 1);
  EXPECT_EQ(count_level(NCCL_LOG_WARN), 0) << all_logged();
  expect_untouched(comm, ncclFuncBroadcast);
  expect_untouched(comm, ncclFuncBroadcast);
  expect_untouched(comm, ncclFuncSendRecv);
  // A value past the enumerators NCCL tunes (99 would be outside the enum's range:
  // undefined behaviour, which UBSan reports).
  expect_untouched(comm, ncclNumFuncs);
  // One INFO line for broadcast however often it is called.
  int infos = 0;
  for (const LogLine& l : logged())
    infos += l.text.find("no model table for broadcast") != std::string::npos;
  EXPECT_EQ(infos, 1) << all_logged();
  // allreduce: the model's one pair, the rest ruled out, its channels.
  Table t;
  EXPECT_EQ(comm.call(ncclFuncAllReduce, 1048576, t), 8);
  for (int a = 0; a < 7; ++a)
    for (int p = 0; p < 3; ++p) EXPECT_EQ(t.t[a][p], a == 1 && p == 2 ? 100.0f : -1.0f);
  // NCCL ruled ring/simple out (NCCL_PROTO=^Simple, say): the model has
  // nothing else, so NCCL's table stays.
  Table ruled = distinct_table();
  ruled.t[1][2] = -1;
  const Table before = ruled;
  EXPECT_EQ(comm.call(ncclFuncAllReduce, 1048576, ruled), 0);
  EXPECT_TRUE(ruled == before);
}

TEST_F(TunerPlugin, PairsNcclRuledOutStayOut) {
  Comm comm(plugin_, model("one"), 8, 1);
  Table all;
  comm.call(ncclFuncAllReduce, 1 << 20, all);
  Table t;  // NCCL cannot run ring (NCCL_ALGO=^ring)
  for (int p = 0; p < 3; ++p) t.t[1][p] = -1;
  comm.call(ncclFuncAllReduce, 1 << 20, t);
  for (int p = 0; p < 3; ++p) EXPECT_EQ(t.t[1][p], -1.0f);
  for (int p = 0; p < 3; ++p) EXPECT_EQ(t.t[0][p], all.t[0][p]);  // tree as before
}

}  // namespace
}  // namespace collkit
