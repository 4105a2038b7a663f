// Calibration against a synthetic ground truth: reports simulated with known
// parameters, fitted starting from a wrong base, must give the known
// parameters back (exactly without noise, closely with noise).
#include "calibration/calibrate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/registry.h"
#include "core/error.h"
#include "reports/sweep_report.h"

namespace collkit {
namespace {

// The classic algorithms: these tests fit measurements of them (the nccl
// family is resolved on a topology, tests/sim and tests/cli cover it).
std::vector<std::string> classic(Collective c, const std::string& list) {
  std::vector<std::string> out = expand_algorithms(c, list, false);
  std::erase_if(out, [](const std::string& a) { return a.rfind("nccl", 0) == 0; });
  return out;
}

std::string slurp_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A 4-rank ring: the opposite rank is two hops away, so link latency and
// endpoint overhead are told apart by algorithms that talk to it.
// A copy bandwidth of 0 leaves copy_gbps out (local copies are free).
std::string ring_text(double bw_gbps, double lat_us, double overhead_us, double reduce_gbps,
                      double copy_gbps = 0) {
  return R"({"name": "ring4", "endpoint": {"overhead_us": )" + std::to_string(overhead_us) +
         R"(, "reduce_gbps": )" + std::to_string(reduce_gbps) +
         (copy_gbps > 0 ? R"(, "copy_gbps": )" + std::to_string(copy_gbps) : std::string()) +
         R"(}, "generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": )" +
         std::to_string(bw_gbps) + R"(, "latency_us": )" + std::to_string(lat_us) + "}}";
}

constexpr double kBw = 50e9, kLat = 2e-6, kOverhead = 0.7e-6, kReduce = 200e9, kCopy = 30e9;

// Measured reports made by simulating on the truth; `noise` scales each time
// by a deterministic factor in [1 - noise, 1 + noise].
std::vector<CalibrationInput> truth_reports(double noise, NetModel model,
                                            std::vector<std::int64_t> sizes = {1024, 16384, 262144,
                                                                               4 << 20}) {
  const std::unique_ptr<Topology> truth = parse_topology(
      ring_text(kBw / 1e9, kLat * 1e6, kOverhead * 1e6, kReduce / 1e9, kCopy / 1e9), "truth.json");
  std::vector<CalibrationInput> out;
  int k = 0;
  for (auto [c, algos] : std::vector<std::pair<Collective, std::string>>{
           {Collective::all_reduce, "ring,recursive_doubling"},
           {Collective::all_gather, "ring,recursive_doubling"},
           {Collective::all_to_all, "all"}}) {
    SweepSpec sweep;
    sweep.collective = c;
    sweep.algorithms = classic(c, algos);
    sweep.ranks = 4;
    sweep.sizes = sizes;
    // Segment sizes as calibrate picks them: from the base it starts with.
    sweep.model = cost_params_of(*parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json"), 4);
    SimOptions options;
    options.model = model;
    Report r = simulate_report(sweep, *truth, options);
    r.mode = ReportMode::measure;
    r.backend = Backend::mpi;
    r.topology.reset();
    r.extra = Json::object();
    for (ResultRow& row : r.results) row.time_us *= 1.0 + noise * std::sin(1.7 * ++k);
    out.push_back({"m" + std::to_string(out.size()) + ".json", "0", r});
  }
  return out;
}

double fitted(const CalibrationResult& r, ParamKind kind) {
  for (const FittedParam& p : r.params)
    if (p.kind == kind) return p.fitted;
  ADD_FAILURE() << "no parameter of that kind";
  return 0;
}

TEST(Calibrate, RecoversTruthExactlyWithoutNoise) {
  for (NetModel model : {NetModel::alpha_beta, NetModel::flow}) {
    const std::unique_ptr<Topology> base =
        parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
    CalibrateOptions options;
    options.model = model;
    const CalibrationResult r = calibrate(truth_reports(0, model), *base, options);
    // Bruck all_to_all and the first copy of every out-of-place schedule
    // copy locally: copy_gbps is fitted, as the base prices copies.
    ASSERT_EQ(r.params.size(), 5u);
    EXPECT_NEAR(fitted(r, ParamKind::bandwidth) / kBw, 1, 1e-6) << to_string(model);
    EXPECT_NEAR(fitted(r, ParamKind::latency) / kLat, 1, 1e-6) << to_string(model);
    EXPECT_NEAR(fitted(r, ParamKind::overhead) / kOverhead, 1, 1e-6) << to_string(model);
    EXPECT_NEAR(fitted(r, ParamKind::reduce_bw) / kReduce, 1, 1e-6) << to_string(model);
    EXPECT_NEAR(fitted(r, ParamKind::copy_bw) / kCopy, 1, 1e-6) << to_string(model);
    EXPECT_LT(r.max_abs_error, 1e-7);
    EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
    ASSERT_EQ(r.classes.size(), 1u);
    EXPECT_NEAR(r.classes[0].bandwidth / kBw, 1, 1e-6);
    EXPECT_NEAR(r.endpoint.reduce_bw / kReduce, 1, 1e-6);
    EXPECT_NEAR(r.endpoint.copy_bw / kCopy, 1, 1e-6);
  }
}

TEST(Calibrate, RecoversTruthCloselyWithNoise) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  // Ten sizes: the noise averages out over more points than parameters.
  const CalibrationResult r = calibrate(
      truth_reports(0.02, NetModel::flow,
                    {256, 1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20}),
      *base);
  EXPECT_NEAR(fitted(r, ParamKind::bandwidth) / kBw, 1, 0.02);
  EXPECT_NEAR(fitted(r, ParamKind::latency) / kLat, 1, 0.05);
  EXPECT_NEAR(fitted(r, ParamKind::overhead) / kOverhead, 1, 0.05);
  // Reductions are a quarter of the transfer time at most: the weakest fit.
  EXPECT_NEAR(fitted(r, ParamKind::reduce_bw) / kReduce, 1, 0.05);
  EXPECT_LE(r.median_abs_error, 0.02);
  EXPECT_LE(r.p90_abs_error, 0.025);
}

// The same measurements three times over (m0.json, m0.2.json, m0.3.json,
// ...): three repeats whose separate fits agree exactly.
std::vector<CalibrationInput> repeated(const std::vector<CalibrationInput>& once, int times) {
  std::vector<CalibrationInput> out;
  for (int k = 1; k <= times; ++k)
    for (CalibrationInput in : once) {
      if (k > 1) in.file.insert(in.file.size() - 5, "." + std::to_string(k));
      out.push_back(std::move(in));
    }
  return out;
}

TEST(Calibrate, RepeatsEachFittedAloneAgreeOnTheSameMeasurements) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  const CalibrationResult r = calibrate(repeated(truth_reports(0.02, NetModel::flow), 3), *base);
  EXPECT_EQ(r.repeats, 3);
  ASSERT_EQ(r.repeat_median_abs_error.size(), 3u);
  // Every parameter is determined here (a ring: latency and overhead apart).
  ASSERT_EQ(r.repeat_spread.size(), r.params.size());
  for (const ParamSpread& s : r.repeat_spread) {
    EXPECT_LT(s.spread, 1e-6) << s.name;
    ASSERT_EQ(s.values.size(), 3u);
  }
  for (const std::string& w : r.warnings) EXPECT_EQ(w.find("repeats"), std::string::npos) << w;
  EXPECT_NE(format_calibration(r).find("# repeats: 3 (the k-th file"), std::string::npos);
  // One file per point: no repeats, nothing compared.
  const CalibrationResult once = calibrate(truth_reports(0.02, NetModel::flow), *base);
  EXPECT_EQ(once.repeats, 0);
  EXPECT_TRUE(once.repeat_spread.empty());
}

// --jobs: the starts, the Jacobian's columns, the points, the repeats'
// fits and the cache candidates run on several threads; the fit is the
// same, bit for bit, and the progress lines come from the passes that ran.
TEST(Calibrate, TheFitIsTheSameWhateverTheThreadCount) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  std::string text = ring_text(10, 5, 0.1, 1000, 100);
  text.insert(text.find(R"("endpoint": {)") + 13, R"("cache_mb": 2, "dram_factor": 1.2, )");
  const std::unique_ptr<Topology> cached = parse_topology(text, "cached.json");
  const std::vector<CalibrationInput> noisy = repeated(truth_reports(0.05, NetModel::flow), 2);
  for (const Topology* net : {base.get(), cached.get()})
    for (bool fastest : {false, true}) {
      CalibrateOptions o;
      o.fastest_repeat = fastest;
      o.max_iterations = 6;
      o.jobs = 1;
      std::vector<std::string> lines;
      std::mutex m;
      o.progress = [&](const std::string& line) {
        const std::lock_guard<std::mutex> lock(m);
        lines.push_back(line);
      };
      const CalibrationResult one = calibrate(noisy, *net, o);
      for (int jobs : {2, 3, 0}) {
        o.jobs = jobs;
        const CalibrationResult many = calibrate(noisy, *net, o);
        EXPECT_EQ(format_calibration(many), format_calibration(one)) << jobs;
        ASSERT_EQ(many.params.size(), one.params.size());
        for (std::size_t k = 0; k < one.params.size(); ++k)
          EXPECT_EQ(many.params[k].fitted, one.params[k].fitted) << one.params[k].name;
        EXPECT_EQ(many.loss, one.loss);
      }
      ASSERT_FALSE(lines.empty());
      EXPECT_NE(lines.front().find(": start 1/"), std::string::npos) << lines.front();
      EXPECT_NE(lines.front().find("rms error"), std::string::npos) << lines.front();
      if (net == cached.get()) {
        EXPECT_TRUE(std::any_of(lines.begin(), lines.end(),
                                [](const std::string& l) { return l.rfind("cache ", 0) == 0; }));
      }
    }
}

// A base whose links declare their line rate: the fit never goes above it.
// Measured on links 5x faster than the base's line rate allows, the fit
// ends on it, says so, and names the points no fit of this base reaches.
TEST(Calibrate, LineRateBoundsTheFitAndNamesWhatNoFitReaches) {
  std::string text = ring_text(10, 5, 0.1, 1000, 100);
  text.insert(text.find(R"("latency_us")"), R"("line_rate_gbps": 12, )");
  const std::unique_ptr<Topology> base = parse_topology(text, "base.json");
  ASSERT_EQ(base->link(0).line_rate, 12e9);
  const CalibrationResult r = calibrate(truth_reports(0, NetModel::flow), *base);
  for (const FittedParam& p : r.params)
    if (p.kind == ParamKind::bandwidth) {
      EXPECT_EQ(p.upper, 12e9);
      EXPECT_LE(p.fitted, 12e9 * (1 + 1e-12));
      EXPECT_TRUE(p.at_bound);
    }
  bool named = false;
  for (const std::string& p : r.problems)
    named = named || (p.find("bandwidth_gbps (") != std::string::npos &&
                      p.find("ended on its line rate (12 GB/s") != std::string::npos);
  EXPECT_TRUE(named) << (r.problems.empty() ? "" : r.problems.front());
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.front().find("points are faster than this network can be with every "
                                    "link at its line rate"),
            std::string::npos)
      << r.warnings.front();
  EXPECT_NE(r.warnings.front().find("at best"), std::string::npos);
  // The same measurements on a base without line rates: a fit reaches them.
  const std::unique_ptr<Topology> open =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  const CalibrationResult free = calibrate(truth_reports(0, NetModel::flow), *open);
  for (const std::string& w : free.warnings)
    EXPECT_EQ(w.find("faster than this network can be"), std::string::npos) << w;
  EXPECT_TRUE(free.problems.empty());
}

// Two repeats of one network whose links ran at different speeds (the
// second at 1.5x): each repeat's fit finds its own bandwidth, the spread
// is 50% and the warning names the bandwidth, not the latency.
TEST(Calibrate, RepeatsThatDisagreeAreNamedWithTheirSpread) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  const std::vector<CalibrationInput> first = truth_reports(0, NetModel::flow);
  std::vector<CalibrationInput> in = first;
  const std::unique_ptr<Topology> faster = parse_topology(
      ring_text(1.5 * kBw / 1e9, kLat * 1e6, kOverhead * 1e6, kReduce / 1e9, kCopy / 1e9),
      "faster.json");
  for (CalibrationInput second : first) {
    SweepSpec sweep;
    const Report& r = second.report;
    sweep.collective = r.results.front().collective;
    for (const ResultRow& row : r.results)
      if (std::find(sweep.algorithms.begin(), sweep.algorithms.end(), row.algorithm) ==
          sweep.algorithms.end())
        sweep.algorithms.push_back(row.algorithm);
    sweep.ranks = 4;
    sweep.sizes = {1024, 16384, 262144, 4 << 20};
    sweep.model = cost_params_of(*parse_topology(ring_text(10, 5, 0.1, 1000, 100), "b.json"), 4);
    second.report = simulate_report(sweep, *faster, SimOptions{});
    second.report.mode = ReportMode::measure;
    second.report.topology.reset();
    second.report.extra = Json::object();
    second.file.insert(second.file.size() - 5, ".2");
    in.push_back(std::move(second));
  }
  const CalibrationResult r = calibrate(in, *base);
  ASSERT_EQ(r.repeats, 2);
  bool named = false;
  for (const ParamSpread& s : r.repeat_spread) {
    if (s.name.find("bandwidth_gbps") != std::string::npos) {
      ASSERT_EQ(s.values.size(), 2u);
      EXPECT_NEAR(s.values[0] / kBw, 1, 1e-4);
      EXPECT_NEAR(s.values[1] / kBw, 1.5, 1.5e-4);
      EXPECT_NEAR(s.spread, 0.5, 1e-3);
      named = true;
    }
    if (s.name.find("latency_us") != std::string::npos) {
      EXPECT_LT(s.spread, 1e-2) << s.name;
    }
  }
  EXPECT_TRUE(named);
  std::string warning;
  for (const std::string& w : r.warnings)
    if (w.find("the 2 repeats") != std::string::npos) warning = w;
  EXPECT_NE(warning.find("bandwidth_gbps"), std::string::npos) << warning;
  EXPECT_EQ(warning.find("latency_us"), std::string::npos) << warning;
  EXPECT_NE(format_calibration(r).find("(over the tolerance)"), std::string::npos);
}

// A machine whose repeats are slowed by interference (a row 2.5x slower in
// two of its three repeats, clean in the third, a different one per row):
// the median of every row is a slowed time, so fitting every point cannot
// find the network; fitting the fastest repeat of each row (--repeats
// fastest) recovers it exactly and counts the slower repeats it left out.
// Its stability check leaves each repeat out in turn.
TEST(Calibrate, FastestRepeatFitsTheMachineAtItsBest) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  std::vector<CalibrationInput> in = repeated(truth_reports(0, NetModel::flow), 3);
  const std::size_t files = in.size() / 3;
  std::size_t rows = 0;
  for (std::size_t f = 0; f < in.size(); ++f) {
    const std::size_t rep = f / files;
    std::vector<ResultRow>& results = in[f].report.results;
    for (std::size_t i = 0; i < results.size(); ++i)
      if ((i + f % files) % 3 != rep) results[i].time_us *= 2.5;
    if (rep == 0) rows += results.size();
  }
  CalibrateOptions fastest;
  fastest.fastest_repeat = true;
  const CalibrationResult best = calibrate(in, *base, fastest);
  EXPECT_LT(best.median_abs_error, 1e-6);
  EXPECT_NEAR(fitted(best, ParamKind::bandwidth) / kBw, 1, 1e-4);
  EXPECT_NEAR(fitted(best, ParamKind::latency) / kLat, 1, 1e-3);
  EXPECT_EQ(best.skipped_slower, 2 * rows);
  EXPECT_EQ(best.points.size(), rows);
  EXPECT_NE(format_calibration(best).find("# fitted the fastest repeat of each row; left out " +
                                          std::to_string(2 * rows) + " slower repeats"),
            std::string::npos);
  // Each row is clean in one repeat only: leaving that repeat out leaves the
  // row slowed, so the three fits without one repeat disagree, and say so.
  EXPECT_EQ(best.repeats, 3);
  EXPECT_TRUE(best.repeats_left_out);
  std::string warning;
  for (const std::string& w : best.warnings)
    if (w.find("fits that each leave one repeat out") != std::string::npos) warning = w;
  EXPECT_NE(warning.find("the 3 fits that each leave one repeat out disagree"), std::string::npos)
      << warning;
  EXPECT_NE(format_calibration(best).find("each left out in turn"), std::string::npos);
  // Three clean repeats: each fit without one finds the same network.
  const CalibrationResult same =
      calibrate(repeated(truth_reports(0, NetModel::flow), 3), *base, fastest);
  EXPECT_EQ(same.repeats, 3);
  ASSERT_FALSE(same.repeat_spread.empty());
  for (const ParamSpread& sp : same.repeat_spread) EXPECT_LT(sp.spread, 1e-6) << sp.name;
  for (const std::string& w : same.warnings)
    EXPECT_EQ(w.find("leave one repeat out"), std::string::npos) << w;
  // Every point fitted: two of every row's three times are slowed.
  const CalibrationResult all = calibrate(in, *base);
  EXPECT_GT(all.median_abs_error, 0.1);
  EXPECT_EQ(all.skipped_slower, 0u);
  EXPECT_EQ(all.points.size(), 3 * rows);
}

// More starts never fit worse than the base alone, and the same inputs give
// the same fit every time (the starts are a fixed sequence, not random).
TEST(Calibrate, StartsAreTheSameEveryRunAndNeverFitWorse) {
  const std::string path = std::string(COLLKIT_SOURCE_DIR) + "/topologies/bases/host-bus-4.json";
  // The shared host without the cache model (one fit per start, no
  // cache-size candidates: a cheap test).
  Json base_json = Json::parse(slurp_file(path));
  base_json["endpoint"].erase("cache_mb");
  base_json["endpoint"].erase("dram_factor");
  const std::unique_ptr<Topology> base = parse_topology(base_json.dump(), "base.json");
  Json truth_json = Json::parse(slurp_file(path));
  truth_json["endpoint"] = {
      {"overhead_us", 2.0}, {"reduce_gbps", 6.0}, {"copy_gbps", 9.0}, {"host_cores", 1.3}};
  const std::unique_ptr<Topology> truth = parse_topology(truth_json.dump(), "truth.json");
  SweepSpec sweep;
  sweep.collective = Collective::all_reduce;
  sweep.algorithms = classic(Collective::all_reduce, "ring,recursive_doubling,linear");
  sweep.ranks = 4;
  sweep.sizes = {4096, 65536, 262144, 1 << 20};
  sweep.model = cost_params_of(*base, 4);
  Report m = simulate_report(sweep, *truth, {});
  m.mode = ReportMode::measure;
  m.topology.reset();
  int k = 0;
  for (ResultRow& row : m.results) row.time_us *= 1.0 + 0.1 * std::sin(2.3 * ++k);
  const std::vector<CalibrationInput> in = {{"m.json", "0", m}};
  CalibrateOptions one;
  one.starts = 1;
  one.host_cores_limit = 2;
  CalibrateOptions four = one;
  four.starts = 4;
  const CalibrationResult a = calibrate(in, *base, one);
  const CalibrationResult b = calibrate(in, *base, four);
  const CalibrationResult c = calibrate(in, *base, four);
  EXPECT_EQ(a.starts, 1);
  EXPECT_EQ(b.starts, 4);
  EXPECT_LE(b.loss, a.loss * (1 + 1e-12));
  ASSERT_EQ(b.params.size(), c.params.size());
  for (std::size_t i = 0; i < b.params.size(); ++i)
    EXPECT_EQ(b.params[i].fitted, c.params[i].fitted) << b.params[i].name;
  EXPECT_EQ(b.best_start, c.best_start);
  EXPECT_NE(format_calibration(b).find("# search: 4 starts"), std::string::npos);
  CalibrateOptions none = one;
  none.starts = 0;
  EXPECT_THROW(calibrate(in, *base, none), UsageError);
}

// With a cache-model base the final search starts from the chosen cache
// size's fit; a parameter that fit moved (a send link) but that no longer
// limits at the end must be written as fitted, not reset to the base: the
// fitted file simulates every point to the fit's own time.
TEST(Calibrate, FittedFileOfACacheBaseGivesTheFitsTimes) {
  const std::string path = std::string(COLLKIT_SOURCE_DIR) + "/topologies/bases/host-bus-4.json";
  const std::string base_text = slurp_file(path);
  const std::unique_ptr<Topology> base = parse_topology(base_text, path);
  Json truth_json = Json::parse(base_text);
  // Send and receive links that never limit: the bus (8 GB/s) does.
  for (Json& link : truth_json["links"])
    link["bandwidth_gbps"] = link["a"] == "bus_in" ? 8.0 : 50.0;
  const std::unique_ptr<Topology> truth = parse_topology(truth_json.dump(), "truth.json");
  SweepSpec sweep;
  sweep.collective = Collective::all_reduce;
  sweep.algorithms = classic(Collective::all_reduce, "ring,recursive_doubling,linear");
  sweep.ranks = 4;
  sweep.sizes = {4096, 65536, 262144, 1 << 20, 8 << 20};
  sweep.model = cost_params_of(*base, 4);
  Report m = simulate_report(sweep, *truth, {});
  m.mode = ReportMode::measure;
  m.topology.reset();
  CalibrateOptions options;
  options.starts = 2;
  options.host_cores_limit = 2;
  const CalibrationResult r = calibrate({{"m.json", "0", m}}, *base, options);
  const std::unique_ptr<Topology> fitted =
      parse_topology(fitted_topology_text(base_text, path, *base, r, "test"), "fitted.json");
  Report again = simulate_report(sweep, *fitted, {});
  std::size_t checked = 0;
  for (const PointFit& f : r.points)
    for (const ResultRow& row : again.results)
      if (row.algorithm == f.algorithm && row.bytes == f.bytes && row.in_place == f.in_place) {
        EXPECT_NEAR(row.time_us / f.fitted_us, 1, 1e-9) << f.algorithm << " " << f.bytes;
        ++checked;
      }
  EXPECT_EQ(checked, r.points.size());
}

// Routes take the lowest total latency: on a base where a message can also
// pass through other ranks (two cores, each pair of ranks behind one core
// link, cross-core links between them), fitted latencies of 0 everywhere but
// the core links make the detour the shortest route. The fit kept the
// base's routes, so the file would predict other times: refused, naming the
// pair.
// Fits `base` to its own simulated ring, recursive doubling and linear
// all_reduce on 4 ranks at `sizes` (one start): the base's values fit exactly.
CalibrationResult fit_own_all_reduce(const Topology& base, std::vector<std::int64_t> sizes) {
  SweepSpec sweep;
  sweep.collective = Collective::all_reduce;
  sweep.algorithms = classic(Collective::all_reduce, "ring,recursive_doubling,linear");
  sweep.ranks = 4;
  sweep.sizes = std::move(sizes);
  sweep.model = cost_params_of(base, 4);
  Report m = simulate_report(sweep, base, {});
  m.mode = ReportMode::measure;
  m.topology.reset();
  CalibrateOptions options;
  options.starts = 1;
  return calibrate({{"m.json", "0", m}}, base, options);
}

TEST(Calibrate, FittedFileThatWouldRerouteIsRefused) {
  Json t = {{"name", "two-cores"}, {"endpoint", {{"overhead_us", 1}, {"reduce_gbps", 5}}}};
  t["nodes"] = Json::array();
  for (const char* id : {"r0", "r1", "r2", "r3"}) t["nodes"].push_back({{"id", id}});
  for (const char* id : {"k0_in", "k0_out", "k1_in", "k1_out"})
    t["nodes"].push_back({{"id", id}, {"switch", true}});
  t["links"] = Json::array();
  const auto link = [&](const std::string& a, const std::string& b, double bw, double lat) {
    t["links"].push_back(
        {{"a", a}, {"b", b}, {"bandwidth_gbps", bw}, {"latency_us", lat}, {"directed", true}});
  };
  for (int r = 0; r < 4; ++r) {
    link("r" + std::to_string(r), "k" + std::to_string(r % 2) + "_in", 5, 2);
    link("k" + std::to_string(r % 2) + "_out", "r" + std::to_string(r), 6, 3);
  }
  link("k0_in", "k0_out", 10, 1);
  link("k1_in", "k1_out", 10, 1);
  link("k0_in", "k1_out", 8, 1.5);
  link("k1_in", "k0_out", 8, 1.5);
  t["ranks"] = {"r0", "r1", "r2", "r3"};
  const std::string text = t.dump();
  const std::unique_ptr<Topology> base = parse_topology(text, "two-cores.json");
  CalibrationResult r = fit_own_all_reduce(*base, {4096, 65536, 1 << 20, 4 << 20});
  // The base's own values fit exactly and keep every route.
  EXPECT_NO_THROW(fitted_topology_text(text, "two-cores.json", *base, r, "d"));
  const int core = base->link_class([&] {
    for (LinkId id = 0; id < base->num_links(); ++id)
      if (base->link_name(id) == "k0_in->k0_out") return id;
    return LinkId{0};
  }());
  for (std::size_t c = 0; c < r.classes.size(); ++c)
    r.classes[c].latency = static_cast<int>(c) == core ? 1e-6 : 0.0;
  try {
    fitted_topology_text(text, "two-cores.json", *base, r, "d");
    ADD_FAILURE() << "a file whose routes differ from the fit's was written";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("route rank 0 -> 2 over 6 links instead of the base's 3"),
              std::string::npos)
        << e.what();
  }
}

// The shipped per-core base says endpoints do not forward: the same fitted
// latencies as above (the same-core hop the only one that costs) keep every
// route of the base, and the file is written.
TEST(Calibrate, ShippedPinnedBaseKeepsItsRoutesWhateverTheLatencies) {
  const std::string path = std::string(COLLKIT_SOURCE_DIR) + "/topologies/bases/host-pinned-4.json";
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::unique_ptr<Topology> base = parse_topology(text, path);
  ASSERT_EQ(base->num_ranks(), 4);
  // Ranks 0 and 2 share core 0, 1 and 3 core 1.
  EXPECT_EQ(base->endpoint(0).host, base->endpoint(2).host);
  EXPECT_EQ(base->endpoint(1).host, base->endpoint(3).host);
  EXPECT_NE(base->endpoint(0).host, base->endpoint(1).host);
  CalibrationResult r = fit_own_all_reduce(*base, {4096, 16384, 65536, 262144, 1 << 20, 4 << 20});
  LinkId same_core = -1;
  for (LinkId id = 0; id < base->num_links(); ++id)
    if (base->link_name(id) == "k0_in->k0_out") same_core = id;
  ASSERT_GE(same_core, 0);
  for (std::size_t c = 0; c < r.classes.size(); ++c)
    r.classes[c].latency = static_cast<int>(c) == base->link_class(same_core) ? 1e-6 : 0.0;
  const std::string fitted = fitted_topology_text(text, path, *base, r, "d");
  const std::unique_ptr<Topology> check = parse_topology(fitted, "fitted.json");
  std::vector<LinkId> route;
  check->route(0, 2, route);
  ASSERT_EQ(route.size(), 3u);
  EXPECT_EQ(check->link_name(route[1]), "k0_in->k0_out");
}

// collkit bench runs the nccl family's schedules with their default
// channel plan on any machine (it knows no topology): such rows are fitted
// as those schedules, even where NCCL itself would not run the variant (no
// NVLS switch on a ring), and simulate_sweep with nccl_as_bench predicts
// the same times.
TEST(Calibrate, NcclVariantRowsOfABenchAreTheSchedulesThatRan) {
  const std::unique_ptr<Topology> truth = parse_topology(
      ring_text(kBw / 1e9, kLat * 1e6, kOverhead * 1e6, kReduce / 1e9, kCopy / 1e9), "truth.json");
  SweepSpec sweep;
  sweep.collective = Collective::all_reduce;
  sweep.algorithms = {"nccl:ring", "nccl:nvls", "nccl:tree", "ring"};
  sweep.ranks = 4;
  sweep.sizes = {1024, 16384, 262144, 4 << 20};
  sweep.model = cost_params_of(*truth, 4);  // segments as calibrate cuts them on this base
  sweep.nccl_as_bench = true;
  Report m = simulate_report(sweep, *truth, SimOptions{});
  m.mode = ReportMode::measure;
  m.topology.reset();
  m.extra = Json::object();
  // On the truth as the base, every row is predicted exactly before any
  // fitting: the rows were rebuilt as the schedules that produced them.
  CalibrateOptions options;
  options.starts = 1;
  options.max_iterations = 1;
  const CalibrationResult r = calibrate({{"m.json", "0", m}}, *truth, options);
  EXPECT_LT(r.base_p90_abs_error, 1e-9);
  EXPECT_EQ(r.points.size(), m.results.size());
  // Without nccl_as_bench the ring has no NVLS: NCCL's own choice refuses.
  sweep.nccl_as_bench = false;
  EXPECT_THROW(simulate_report(sweep, *truth, SimOptions{}), UsageError);
}

TEST(Calibrate, FittedFileLoadsAsTheFittedNetwork) {
  const std::string base_text = ring_text(10, 5, 0.1, 1000, 100);
  const std::unique_ptr<Topology> base = parse_topology(base_text, "base.json");
  const CalibrationResult r = calibrate(truth_reports(0, NetModel::flow), *base);
  const std::string text = fitted_topology_text(base_text, "base.json", *base, r, "fitted from m");
  const Json j = Json::parse(text);
  EXPECT_EQ(j["description"], "fitted from m");
  EXPECT_EQ(j["name"], "ring4-fitted");
  EXPECT_TRUE(j.contains("generator"));  // the base's form is kept
  const std::unique_ptr<Topology> fit = parse_topology(text, "fit.json");
  EXPECT_NEAR(fit->link(0).bandwidth / kBw, 1, 1e-6);
  EXPECT_NEAR(fit->link(0).latency / kLat, 1, 1e-6);
  EXPECT_NEAR(fit->endpoint(3).overhead / kOverhead, 1, 1e-6);
  EXPECT_NEAR(fit->endpoint(3).reduce_bw / kReduce, 1, 1e-6);
  EXPECT_NEAR(fit->endpoint(3).copy_bw / kCopy, 1, 1e-6);
  EXPECT_NEAR(j["endpoint"]["copy_gbps"].get<double>() / (kCopy / 1e9), 1, 1e-6);
  EXPECT_NE(format_calibration(r).find("median"), std::string::npos);
}

TEST(Calibrate, ExplicitBaseKeepsItsFormAndFitsTwoClasses) {
  // Two classes: host links and a slower trunk between two switches.
  const auto text = [](double host_bw, double trunk_bw, double lat) {
    return R"({"name": "db", "endpoint": {"overhead_us": 0.5}, "nodes": [{"id": "h0"}, {"id": "h1"},
      {"id": "h2"}, {"id": "h3"}, {"id": "s0", "switch": true}, {"id": "s1", "switch": true}],
      "links": [{"a": "h0", "b": "s0", "bandwidth_gbps": )" +
           std::to_string(host_bw) + R"(, "latency_us": )" + std::to_string(lat) + R"(},
      {"a": "h1", "b": "s0", "bandwidth_gbps": )" +
           std::to_string(host_bw) + R"(, "latency_us": )" + std::to_string(lat) + R"(},
      {"a": "h2", "b": "s1", "bandwidth_gbps": )" +
           std::to_string(host_bw) + R"(, "latency_us": )" + std::to_string(lat) + R"(},
      {"a": "h3", "b": "s1", "bandwidth_gbps": )" +
           std::to_string(host_bw) + R"(, "latency_us": )" + std::to_string(lat) + R"(},
      {"a": "s0", "b": "s1", "bandwidth_gbps": )" +
           std::to_string(trunk_bw) + R"(, "latency_us": 3}]})";
  };
  const std::unique_ptr<Topology> truth = parse_topology(text(40, 12, 1), "t.json");
  SweepSpec sweep;
  sweep.collective = Collective::all_gather;
  sweep.algorithms = classic(Collective::all_gather, "all");
  sweep.ranks = 4;
  sweep.sizes = {4096, 65536, 1 << 20, 8 << 20};
  const std::string base_text = text(100, 100, 2);
  const std::unique_ptr<Topology> base = parse_topology(base_text, "b.json");
  sweep.model = cost_params_of(*base, 4);
  Report m = simulate_report(sweep, *truth, {});
  m.mode = ReportMode::measure;
  m.topology.reset();
  const CalibrationResult r = calibrate({{"m.json", "0", m}}, *base);
  EXPECT_LT(r.max_abs_error, 1e-6);
  // The base has no copy_gbps: copies stay free and are not a parameter.
  for (const FittedParam& p : r.params) EXPECT_NE(p.kind, ParamKind::copy_bw) << p.name;
  EXPECT_EQ(r.endpoint.copy_bw, 0);
  const std::unique_ptr<Topology> fit =
      parse_topology(fitted_topology_text(base_text, "b.json", *base, r, "d"), "fit.json");
  EXPECT_NEAR(fit->link(0).bandwidth / 40e9, 1, 1e-6);  // h0 -> s0
  EXPECT_NEAR(fit->link(8).bandwidth / 12e9, 1, 1e-6);  // s0 -> s1
}

// The shipped calibration base for one shared-memory host: every route is
// send link -> bus -> receive link, so the three latencies and the overhead
// only ever appear as one sum. The fit still reproduces every time and the
// shared bus's bandwidth, and one warning (not six pairwise ones) names the
// four parameters it cannot split.
TEST(Calibrate, HostBusBaseFitsTheBusAndGroupsItsCollinearLatencies) {
  const std::string path = std::string(COLLKIT_SOURCE_DIR) + "/topologies/bases/host-bus-4.json";
  const std::unique_ptr<Topology> base = load_topology(path);
  ASSERT_EQ(base->num_ranks(), 4);
  Json truth_json = Json::parse(slurp_file(path));
  for (Json& l : truth_json["links"]) {
    const bool bus = l["a"] == "bus_in";
    l["bandwidth_gbps"] = bus ? 7.5 : 4.0;
    l["latency_us"] = bus ? 1.5 : 0.8;
  }
  // The base's cache model and shared cores, at other values: local work of
  // the four ranks shares 1.3 cores' worth, and ranks past 4 MiB of buffers
  // run 1.4x slower.
  truth_json["endpoint"] = {{"overhead_us", 2.0}, {"reduce_gbps", 6.0}, {"copy_gbps", 9.0},
                            {"host_cores", 1.3},  {"cache_mb", 4},      {"dram_factor", 1.4}};
  const std::unique_ptr<Topology> truth = parse_topology(truth_json.dump(), "truth.json");
  std::vector<CalibrationInput> in;
  for (auto [c, algos] : std::vector<std::pair<Collective, std::string>>{
           {Collective::all_reduce, "ring,recursive_doubling,binomial_tree,linear"},
           {Collective::all_gather, "ring,recursive_doubling,gather_broadcast"}}) {
    SweepSpec sweep;
    sweep.collective = c;
    sweep.algorithms = classic(c, algos);
    sweep.ranks = 4;
    sweep.sizes = {4096, 65536, 1 << 20, 8 << 20};
    sweep.model = cost_params_of(*base, 4);
    Report m = simulate_report(sweep, *truth, {});
    m.mode = ReportMode::measure;
    m.topology.reset();
    in.push_back({"m" + std::to_string(in.size()) + ".json", "0", m});
  }
  // The reports say the measured host had 2 CPUs (collkit bench's
  // devices[].host_cpus): host_cores is bounded by them, not by the CPUs of
  // the machine that fits.
  for (CalibrationInput& i : in)
    i.report.extra["devices"] = Json::array({{{"rank", 0}, {"host", "h"}, {"host_cpus", 2}},
                                             {{"rank", 1}, {"host", "h"}, {"host_cpus", 2}}});
  const CalibrationResult r = calibrate(in, *base);
  EXPECT_EQ(r.host_cores_limit, 2);
  EXPECT_EQ(r.host_cores_source, "the measured hosts' online CPUs (devices[].host_cpus)");
  EXPECT_NE(format_calibration(r).find("# host_cores bounded by 2 (the measured hosts'"),
            std::string::npos);
  EXPECT_LT(r.max_abs_error, 1e-6);
  EXPECT_NEAR(fitted(r, ParamKind::host_cores) / 1.3, 1, 1e-5);
  EXPECT_NEAR(fitted(r, ParamKind::dram_factor) / 1.4, 1, 1e-5);
  // No row's working set lies between 3 and 10 MiB (the 1 MiB all_reduce
  // rows hold up to 3 MiB: input, output and a 1 MiB temp area for recursive
  // doubling's reducing receives; the 8 MiB all_gather rows hold 10): every
  // cache size there fits exactly, and the first tried of them, 4 MiB, is
  // kept (at 2 MiB the 1 MiB rows would be past it).
  EXPECT_EQ(r.endpoint.cache_bytes, 4.0 * 1048576);
  for (const FittedParam& p : r.params)
    if (p.kind == ParamKind::bandwidth && p.name.find("bus_in->bus_out") != std::string::npos) {
      EXPECT_NEAR(p.fitted / 7.5e9, 1, 1e-5);
    }
  // Two warnings: the collinear latencies, and the send or the receive
  // links: as slow as each other in the truth (4 GB/s), whichever of the
  // two limits a transfer the other never does, so starts that end with
  // one of them at 4 GB/s and the other anywhere above fit equally well.
  ASSERT_EQ(r.warnings.size(), 2u) << r.warnings.back();
  for (const char* name :
       {"class 0 latency_us", "class 1 latency_us", "class 2 latency_us", "endpoint overhead_us"})
    EXPECT_NE(r.warnings[0].find(name), std::string::npos) << r.warnings[0];
  const std::string starts =
      "starts end within 1% of the lowest loss but disagree by more than "
      "10% on class ";
  EXPECT_TRUE(
      r.warnings[1].find(starts + "0 bandwidth_gbps (r0->bus_in, 4 links)") != std::string::npos ||
      r.warnings[1].find(starts + "2 bandwidth_gbps (bus_out->r0, 4 links)") != std::string::npos)
      << r.warnings[1];
  EXPECT_EQ(r.warnings[1].find("bus_in->bus_out"), std::string::npos) << r.warnings[1];
}

TEST(Calibrate, InPlaceRowsAreFittedButCountOnceAsDistinct) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  std::vector<CalibrationInput> in = truth_reports(0, NetModel::alpha_beta);
  std::size_t rows = 0;
  for (CalibrationInput& i : in) {
    const std::vector<ResultRow> out_of_place = i.report.results;
    for (ResultRow row : out_of_place) {
      row.in_place = true;
      i.report.results.push_back(row);
    }
    rows += i.report.results.size();
  }
  CalibrateOptions options;
  options.model = NetModel::alpha_beta;
  const CalibrationResult r = calibrate(in, *base, options);
  EXPECT_EQ(r.points.size(), rows);
  EXPECT_EQ(r.distinct_points, rows / 2);
  EXPECT_NEAR(fitted(r, ParamKind::bandwidth) / kBw, 1, 1e-6);
}

// --min-bytes: rows below the size are left out of the fit, so small rows
// that the model gets wrong (here: ten times too slow) cannot pull it off.
TEST(Calibrate, MinBytesLeavesSmallRowsOutOfTheFit) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  std::vector<CalibrationInput> in =
      truth_reports(0, NetModel::flow, {1024, 16384, 262144, 1 << 20, 4 << 20});
  std::size_t small = 0;
  for (CalibrationInput& i : in)
    for (ResultRow& row : i.report.results)
      if (row.bytes < 16384) {
        row.time_us *= 10;
        ++small;
      }
  ASSERT_GT(small, 0u);
  CalibrateOptions options;
  options.min_bytes = 16384;
  const CalibrationResult r = calibrate(in, *base, options);
  EXPECT_EQ(r.skipped_small, small);
  EXPECT_LT(r.max_abs_error, 1e-6);
  EXPECT_NEAR(fitted(r, ParamKind::bandwidth) / kBw, 1, 1e-6);
  EXPECT_NE(format_calibration(r).find("rows below 16384 bytes (--min-bytes)"), std::string::npos);
  // Without the option the slow small rows spoil the fit.
  EXPECT_GT(calibrate(in, *base).median_abs_error, 0.01);
}

// Rows the model cannot express (here one in eight measured 2.5x slow, as a
// stall or a cache miss would) drag a least-squares fit; Huber's loss weighs
// them linearly, so the other rows are fitted almost exactly again.
TEST(Calibrate, HuberLossResistsOutliers) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  std::vector<CalibrationInput> in = truth_reports(
      0, NetModel::flow, {1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20});
  std::size_t outliers = 0, k = 0;
  for (CalibrationInput& i : in)
    for (ResultRow& row : i.report.results)
      if (++k % 8 == 3) {
        row.time_us *= 2.5;
        ++outliers;
      }
  ASSERT_GT(outliers, 5u);
  const CalibrationResult ls = calibrate(in, *base);
  CalibrateOptions options;
  options.huber = 0.02;
  const CalibrationResult hub = calibrate(in, *base, options);
  // The fraction of rows fitted within 1%: all but the outliers under Huber.
  const auto within = [](const CalibrationResult& r, double tol) {
    std::size_t n = 0;
    for (const PointFit& f : r.points) n += std::abs(f.rel_error) <= tol ? 1 : 0;
    return n;
  };
  const std::size_t rows = hub.points.size();
  EXPECT_GE(within(hub, 0.01), rows - outliers - rows / 20) << "of " << rows;
  EXPECT_LT(within(ls, 0.01), rows / 2) << "of " << rows;
  // The bandwidth: close under Huber, several times further off without.
  const double hub_off = std::abs(fitted(hub, ParamKind::bandwidth) / kBw - 1);
  const double ls_off = std::abs(fitted(ls, ParamKind::bandwidth) / kBw - 1);
  EXPECT_LT(hub_off, 0.005);
  EXPECT_GT(ls_off, 3 * hub_off);
  EXPECT_LT(hub.median_abs_error, ls.median_abs_error / 5);
  // The reported errors are the plain relative errors, not the loss.
  for (const PointFit& f : hub.points)
    EXPECT_NEAR(f.fitted_us / f.measured_us - 1, f.rel_error, 1e-9);
}

// The cache model: a truth whose ranks slow down 1.7x past 1 MiB of
// buffers. The base guesses 4 MiB and no slowdown; calibrate tries the cache
// sizes and must find 1 MiB (the only one that fits every row exactly) and
// the factor.
TEST(Calibrate, FindsTheCacheSizeAndFitsTheDramFactor) {
  const auto with_cache = [](std::string text, double mb, double factor) {
    const std::string at = R"("endpoint": {)";
    return text.insert(text.find(at) + at.size(), R"("cache_mb": )" + std::to_string(mb) +
                                                      R"(, "dram_factor": )" +
                                                      std::to_string(factor) + ", ");
  };
  const std::unique_ptr<Topology> truth = parse_topology(
      with_cache(ring_text(kBw / 1e9, kLat * 1e6, kOverhead * 1e6, kReduce / 1e9, kCopy / 1e9), 1,
                 1.7),
      "truth.json");
  const std::string base_text = with_cache(ring_text(10, 5, 0.1, 1000, 100), 4, 1);
  const std::unique_ptr<Topology> base = parse_topology(base_text, "base.json");
  std::vector<CalibrationInput> in;
  for (auto [c, algos] : std::vector<std::pair<Collective, std::string>>{
           {Collective::all_reduce, "ring,recursive_doubling"},
           {Collective::all_gather, "ring,recursive_doubling,bruck"}}) {
    SweepSpec sweep;
    sweep.collective = c;
    sweep.algorithms = classic(c, algos);
    sweep.ranks = 4;
    sweep.sizes = {16384, 262144, 1 << 20, 4 << 20, 16 << 20};
    sweep.model = cost_params_of(*base, 4);
    Report m = simulate_report(sweep, *truth, {});
    m.mode = ReportMode::measure;
    m.topology.reset();
    in.push_back({"m" + std::to_string(in.size()) + ".json", "0", m});
  }
  const CalibrationResult r = calibrate(in, *base);
  EXPECT_EQ(r.endpoint.cache_bytes, 1048576.0);
  EXPECT_NEAR(fitted(r, ParamKind::dram_factor) / 1.7, 1, 1e-6);
  EXPECT_NEAR(fitted(r, ParamKind::bandwidth) / kBw, 1, 1e-6);
  EXPECT_LT(r.max_abs_error, 1e-6);
  // The base's own value is tried first, then the powers of two.
  ASSERT_GE(r.cache_candidates.size(), 4u);
  EXPECT_EQ(r.cache_candidates[0].first, 4.0 * 1048576);
  for (const auto& [bytes, loss] : r.cache_candidates)
    if (bytes != 1048576.0) {
      EXPECT_GT(loss, r.loss) << bytes;
    }
  const std::string text = fitted_topology_text(base_text, "base.json", *base, r, "d");
  const Json j = Json::parse(text);
  EXPECT_EQ(j["endpoint"]["cache_mb"].get<double>(), 1.0);
  EXPECT_NEAR(j["endpoint"]["dram_factor"].get<double>(), 1.7, 1e-5);
  EXPECT_NE(format_calibration(r).find("# cache_mb 1 chosen"), std::string::npos);
}

// Pipelined schedules cut their segments by a cost model; a measured report
// names the one its run used (segment_model), and the fit must simulate
// those schedules, not the ones the base's own model would cut.
TEST(Calibrate, RebuildsTheSchedulesWithTheRunsSegmentModel) {
  const std::unique_ptr<Topology> truth = parse_topology(
      ring_text(kBw / 1e9, kLat * 1e6, kOverhead * 1e6, kReduce / 1e9, kCopy / 1e9), "truth.json");
  const std::unique_ptr<Topology> base = parse_topology(ring_text(10, 5, 0.1, 1000, 100), "b.json");
  const CostParams run_model{20e-6, 1.0 / 1e9, 0};  // far from the base's: other segments
  SweepSpec sweep;
  sweep.collective = Collective::broadcast;
  sweep.algorithms =
      expand_algorithms(Collective::broadcast, "pipelined_chain,binomial_tree,linear");
  sweep.ranks = 4;
  sweep.sizes = {4096, 65536, 1 << 20, 4 << 20, 16 << 20};
  sweep.model = run_model;
  Report m = simulate_report(sweep, *truth, {});
  m.mode = ReportMode::measure;
  m.topology.reset();
  m.extra = Json::object();
  const CalibrationResult blind = calibrate({{"m.json", "0", m}}, *base);
  m.extra["segment_model"] = segment_model_json(run_model);
  const CalibrationResult told = calibrate({{"m.json", "0", m}}, *base);
  EXPECT_LT(told.max_abs_error, 1e-6);
  EXPECT_GT(blind.max_abs_error, 1e-3);
  // A malformed key is an error naming the file and the field.
  m.extra["segment_model"]["beta"] = "fast";
  try {
    calibrate({{"m.json", "0", m}}, *base);
    FAIL() << "expected an error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("m.json: segment_model.beta: expected a number"),
              std::string::npos)
        << e.what();
  }
}

TEST(Calibrate, TooFewPointsSaysHowManyMore) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  std::vector<CalibrationInput> in = truth_reports(0, NetModel::flow, {1024});
  in.resize(1);  // all_reduce ring + recursive_doubling at one size: 2 points, 5 parameters
  try {
    calibrate(in, *base);
    FAIL() << "expected an error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("2 distinct measured points for 5 parameters"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("add 4 more"), std::string::npos) << e.what();
  }
}

TEST(Calibrate, RejectsSimulatedReportsAndOtherRankCounts) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  std::vector<CalibrationInput> in = truth_reports(0, NetModel::flow);
  in[1].report.mode = ReportMode::simulate;
  EXPECT_THROW(
      {
        try {
          calibrate(in, *base);
        } catch (const FileError& e) {
          EXPECT_EQ(std::string(e.what()).rfind("m1.json: mode:", 0), 0u) << e.what();
          throw;
        }
      },
      FileError);
  in = truth_reports(0, NetModel::flow);
  in[0].report.ranks = 8;
  EXPECT_THROW(
      {
        try {
          calibrate(in, *base);
        } catch (const FileError& e) {
          EXPECT_EQ(std::string(e.what()).rfind("m0.json: ranks:", 0), 0u) << e.what();
          throw;
        }
      },
      FileError);
}

// nccl-tests rows (algorithm "nccl", NCCL's own choice) have no schedule of
// their own: --match names the collkit algorithm that stands for them. Rows
// simulated as ring on the truth and relabelled "nccl" fit back to the truth.
TEST(Calibrate, MatchStandsForNcclRows) {
  const std::unique_ptr<Topology> base =
      parse_topology(ring_text(10, 5, 0.1, 1000, 100), "base.json");
  std::vector<CalibrationInput> in;
  for (CalibrationInput& c :
       truth_reports(0, NetModel::flow, {1024, 16384, 65536, 262144, 1 << 20, 4 << 20})) {
    std::vector<ResultRow> rows;
    for (ResultRow& r : c.report.results)
      if (r.algorithm == "ring") {
        r.algorithm = "nccl";
        rows.push_back(r);
      }
    if (rows.empty()) continue;
    c.report.results = rows;
    c.report.backend = Backend::nccl;
    for (std::size_t i = 0; i < rows.size(); ++i)
      c.row_names.push_back(c.file + ":" + std::to_string(10 + i));
    in.push_back(c);
  }
  ASSERT_EQ(in.size(), 2u);  // all_reduce and all_gather rings
  // Without --match: the registered algorithm named "nccl" when there is
  // one, else an error naming the row by its line and saying what to do.
  bool nccl_registered = false;
  for (const AlgorithmDef* def : algorithms_for(Collective::all_reduce))
    nccl_registered = nccl_registered || def->name == "nccl";
  if (nccl_registered) {
    EXPECT_NO_THROW(calibrate(in, *base));
  } else {
    try {
      calibrate(in, *base);
      FAIL() << "expected FileError";
    } catch (const FileError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("m0.json:10: algorithm: 'nccl'", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("give --match ALGO"), std::string::npos) << e.what();
    }
  }
  CalibrateOptions options;
  options.match = "ring";
  const CalibrationResult r = calibrate(in, *base, options);
  EXPECT_EQ(r.points.size(), 12u);
  EXPECT_EQ(r.points[0].algorithm, "nccl as ring");
  // Ring rows alone cannot tell the link from the copy and reduction
  // bandwidths apart, but the fit of the times is exact: the rows were
  // simulated as the ring schedules they came from.
  EXPECT_LT(r.max_abs_error, 1e-7);
  EXPECT_NE(format_calibration(r).find("# rows of algorithm nccl or native simulated as ring"),
            std::string::npos);
  // Another algorithm standing for them does not fit: the choice matters.
  options.match = "recursive_doubling";
  EXPECT_GT(calibrate(in, *base, options).max_abs_error, 1e-3);
  // An unknown --match names the flag.
  options.match = "nosuch";
  try {
    calibrate(in, *base, options);
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--match nosuch: unknown algorithm", 0), 0u) << e.what();
  }
}

// Measured on a host of one CPU, four ranks' local work cannot have more
// than one core's worth: the truth's 1.3 is out of reach, the fit stays at
// the bound; a report without host_cpus falls back to this machine's CPUs
// and says so.
TEST(Calibrate, HostCoresBoundComesFromTheMeasuredHost) {
  const std::string path = std::string(COLLKIT_SOURCE_DIR) + "/topologies/bases/host-bus-4.json";
  const std::unique_ptr<Topology> base = load_topology(path);
  Json truth_json = Json::parse(slurp_file(path));
  truth_json["endpoint"] = {
      {"overhead_us", 2.0}, {"reduce_gbps", 6.0}, {"copy_gbps", 9.0}, {"host_cores", 1.3}};
  const std::unique_ptr<Topology> truth = parse_topology(truth_json.dump(), "truth.json");
  SweepSpec sweep;
  sweep.collective = Collective::all_reduce;
  sweep.algorithms =
      classic(Collective::all_reduce, "ring,recursive_doubling,binomial_tree,linear");
  sweep.ranks = 4;
  sweep.sizes = {4096, 65536, 1 << 20, 4 << 20};
  sweep.model = cost_params_of(*base, 4);
  Report m = simulate_report(sweep, *truth, {});
  m.mode = ReportMode::measure;
  m.topology.reset();
  std::vector<CalibrationInput> in = {{"m.json", "0", m}};
  // The bound is set before the search and holds in every descent: one start
  // at the base's cache size shows it (four starts over every cache size took
  // most of this program's time under ASan).
  CalibrateOptions options;
  options.starts = 1;
  options.search_cache = false;
  const CalibrationResult unknown = calibrate(in, *base, options);
  EXPECT_EQ(unknown.host_cores_limit,
            std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  EXPECT_NE(unknown.host_cores_source.find("this machine's CPUs"), std::string::npos);
  in[0].report.extra["devices"] =
      Json::array({{{"rank", 0}, {"host_cpus", 1}}, {{"rank", 1}, {"host_cpus", 1}}});
  const CalibrationResult one = calibrate(in, *base, options);
  EXPECT_EQ(one.host_cores_limit, 1);
  EXPECT_LE(fitted(one, ParamKind::host_cores), 1.0);
}

}  // namespace
}  // namespace collkit
