// The measure -> calibrate -> simulate -> compare -> report pipeline end to
// end at small scale, as a user runs it (scripts/calibration-e2e.sh is the
// full-scale run, docs/results/calibration.md its figures):
//
//   mpirun -np 4 collkit bench --backend mpi ... --json m-C.json
//   collkit calibrate m-*.json --topology BASE -o fit.json
//   collkit simulate --topology fit.json ... --json s-C.json
//   collkit compare s-C.json m-C.json --json cmp-C.json
//   collkit report s-*.json m-*.json -o report.html
//
// Timings on a shared 2-core machine are too noisy for an accuracy target in
// a test; the test checks that every stage's output is what the next stage
// needs, that every measured schedule is matched, and that the fit predicts
// better than the deliberately wrong base it started from (which the fit's
// least-squares objective guarantees on the points it saw).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "reports/report.h"
#include "topologies/topology.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::run_collkit;
using testing_cli::slurp;

class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef COLLKIT_MPIEXEC
    GTEST_SKIP() << "collkit was built without MPI: no measurement to calibrate from";
#else
    dir_ =
        fs::temp_directory_path() /
        ("collkit-pipeline-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
#endif
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }

  fs::path dir_;
};

#ifdef COLLKIT_MPIEXEC
// Runs a shell command line in `dir`; returns the exit code, output in `out`.
int shell(const std::string& cmd, const fs::path& dir, std::string& out) {
  const fs::path log = dir / ".shell";
  const int status = std::system((cmd + " >'" + log.string() + "' 2>&1").c_str());
  out = slurp(log);
  fs::remove(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
#endif

TEST_F(PipelineTest, MeasureCalibrateSimulateCompareReport) {
#ifdef COLLKIT_MPIEXEC
  const std::string sizes = " -b 4K -e 1M -f 4 ";  // 4K 16K 64K 256K 1M
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"all_reduce", "ring,recursive_doubling,binomial_tree,native"},
      {"all_gather", "ring,recursive_doubling,native"}};

  // 1. Measure on 4 ranks.
  for (const auto& [c, algos] : runs) {
    std::string out;
    const int rc =
        shell(std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 '") +
                  COLLKIT_MPIEXEC + "' --oversubscribe --bind-to none -np 4 '" + COLLKIT_BINARY +
                  "' bench --backend mpi --collective " + c + " --algorithm " + algos + sizes +
                  "-n 5 -w 1 --json " + path("m-" + c + ".json"),
              dir_, out);
    ASSERT_EQ(rc, 0) << out;
    const Report m = read_report((dir_ / ("m-" + c + ".json")).string());
    EXPECT_EQ(m.mode, ReportMode::measure);
    EXPECT_EQ(m.ranks, 4);
  }

  // The plain collkit commands below never start MPI: under the asan-mpi test
  // preset they get the fast unwinder back (the slow one, which LeakSanitizer
  // needs only to match Open MPI's frames, made calibrate alone take minutes;
  // docs/QUALITY.md).
  if (const char* asan = std::getenv("ASAN_OPTIONS")) {
    std::string options = asan;
    const std::string slow = "fast_unwind_on_malloc=0";
    if (const auto at = options.find(slow); at != std::string::npos) {
      options.replace(at, slow.size(), "fast_unwind_on_malloc=1");
      ::setenv("ASAN_OPTIONS", options.c_str(), 1);
    }
  }

  // 2. Calibrate from a base that is deliberately far off: the shipped host
  // base with 100x the bandwidth and 1/100 of the latencies.
  Json base = Json::parse(slurp(fs::path(COLLKIT_SOURCE_DIR) / "topologies/bases/host-bus-4.json"));
  for (Json& l : base["links"]) {
    l["bandwidth_gbps"] = l["bandwidth_gbps"].get<double>() * 100;
    l["latency_us"] = l["latency_us"].get<double>() / 100;
  }
  std::ofstream(dir_ / "base.json") << base.dump(1) << "\n";
  const auto cal =
      run_collkit("calibrate " + path("m-all_reduce.json") + " " + path("m-all_gather.json") +
                      " --topology " + path("base.json") + " -o " + path("fit.json") +
                      // A real run on a shared VM may ask for free reductions (a
                      // parameter on its bound): accepted here, printed either way.
                      " --accept",
                  dir_);
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  EXPECT_NE(cal.out.find("# parameter"), std::string::npos);
  EXPECT_NE(cal.out.find("# error before (base): median "), std::string::npos) << cal.out;
  EXPECT_NE(cal.out.find("bus_in->bus_out"), std::string::npos) << cal.out;
  const std::unique_ptr<Topology> fit = load_topology((dir_ / "fit.json").string());
  EXPECT_EQ(fit->num_ranks(), 4);
  const Json fit_json = Json::parse(slurp(dir_ / "fit.json"));
  const std::string description = fit_json["description"];
  EXPECT_NE(description.find("m-all_reduce.json"), std::string::npos) << description;
  EXPECT_NE(description.find("m-all_gather.json"), std::string::npos) << description;

  // 3-4. Simulate on the fitted and on the base network; compare both.
  for (const auto& [c, algos] : runs) {
    std::string schedules = algos.substr(0, algos.rfind(','));  // native is not a schedule
    for (const char* topo : {"fit", "base"}) {
      const auto sim = run_collkit("simulate --topology " + path(std::string(topo) + ".json") +
                                       " --collective " + c + " --algorithm " + schedules + sizes +
                                       "--json " + path("s-" + c + "-" + topo + ".json"),
                                   dir_);
      ASSERT_EQ(sim.exit_code, 0) << sim.err;
      const auto cmp = run_collkit("compare " + path("s-" + c + "-" + topo + ".json") + " " +
                                       path("m-" + c + ".json") + " --json " +
                                       path("cmp-" + c + "-" + topo + ".json"),
                                   dir_);
      ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
      EXPECT_NE(cmp.out.find("# Summary"), std::string::npos) << cmp.out;
    }
    const Json fitted = Json::parse(slurp(dir_ / ("cmp-" + c + "-fit.json")));
    const Json based = Json::parse(slurp(dir_ / ("cmp-" + c + "-base.json")));
    // Every measured schedule row (5 sizes x out/in place) found its
    // prediction; only native is measured-only.
    const auto algorithms = std::count(schedules.begin(), schedules.end(), ',') + 1;
    EXPECT_EQ(fitted["summary"]["matched"], algorithms * 5 * 2) << c;
    for (const Json& row : fitted["measured_only"]) EXPECT_EQ(row["algorithm"], "native");
    EXPECT_TRUE(fitted["predicted_only"].empty());
    const double fit_median = fitted["summary"]["median_abs_error"];
    const double base_median = based["summary"]["median_abs_error"];
    EXPECT_LT(fit_median, base_median) << c;
    EXPECT_TRUE(std::isfinite(fit_median));
  }

  // 5. One page with both collectives, simulated and measured.
  const auto rep = run_collkit("report " + path("s-all_reduce-fit.json") + " " +
                                   path("m-all_reduce.json") + " " + path("s-all_gather-fit.json") +
                                   " " + path("m-all_gather.json") + " -o " + path("report.html"),
                               dir_);
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const std::string html = slurp(dir_ / "report.html");
  std::size_t svgs = 0;
  for (std::size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
    ++svgs;
  EXPECT_EQ(svgs, 4u);  // two charts, each as busbw and as time against size
  EXPECT_NE(html.find("ring (measured)"), std::string::npos);
  EXPECT_NE(html.find("ring (simulated)"), std::string::npos);
  EXPECT_NE(html.find("native (measured)"), std::string::npos);
#endif
}

}  // namespace
}  // namespace collkit
