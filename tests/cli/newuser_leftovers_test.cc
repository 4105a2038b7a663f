// Issue 40, what was still there from the last trial: dubious inputs taken,
// the wrong problem named, silent mismatches, the HTML page's legend.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/json.h"
#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;
using testing_cli::RunResult;
using testing_cli::slurp;

const fs::path kSource = COLLKIT_SOURCE_DIR;
const std::string kRing8 = (kSource / "topologies/ring-8.json").string();

class NewUserLeftovers : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_newuser_leftovers_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }
  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  static void expect_error(const RunResult& r, const std::string& text) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("collkit: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  // A simulated report, edited.
  Json report() {
    EXPECT_EQ(
        run("simulate --topology " + kRing8 +
            " --collective all_reduce --algorithm ring -b 1K -e 4K -f 2 --json " + p("s.json"))
            .exit_code,
        0);
    return Json::parse(slurp(dir_ / "s.json"));
  }
  fs::path dir_;
};

TEST_F(NewUserLeftovers, DubiousInputsAreRefused) {
  // A key given twice: JSON parsers keep one silently.
  write("dup.json", R"({"name": "a", "generator": {"kind": "ring", "ranks": 4,
      "bandwidth_gbps": 10, "latency_us": 1, "bandwidth_gbps": 20}})");
  expect_error(run("simulate --collective all_reduce --topology " + p("dup.json")),
               "dup.json: key \"bandwidth_gbps\" twice in one object (at generator): JSON keeps "
               "one of the two silently; give it once");
  Json j = report();
  std::string text = j.dump(1);
  text.insert(text.find("\"ranks\""), "\"ranks\": 8,\n ");
  write("dupr.json", text);
  expect_error(run("report " + p("dupr.json") + " -o " + p("x.html")),
               "dupr.json: key \"ranks\" twice in one object (at the top level)");
  // A layer without a name.
  Json model = Json::parse(slurp(kSource / "models/gpt2-124m.json"));
  model["layers"][0]["name"] = "";
  write("m.json", model.dump());
  expect_error(run("plan --model " + p("m.json") + " --topology " + kRing8 + " --batch 8"),
               "m.json: layers[0].name: empty; every layer needs a name");
  // Figures that do not agree with each other, and a time no run takes.
  j["results"][1]["busbw_gbps"] = 1.0;
  write("busbw.json", j.dump());
  expect_error(run("report " + p("busbw.json") + " -o " + p("x.html")),
               "busbw.json: results[1].busbw_gbps: 1 GB/s, but algbw_gbps x 1.75 (all_reduce, "
               "8 ranks) = ");
  j = report();
  j["results"][0]["time_us"] = 1e308;
  j["results"][0]["algbw_gbps"] = 0.0;
  j["results"][0]["busbw_gbps"] = 0.0;
  write("long.json", j.dump());
  expect_error(run("report " + p("long.json") + " -o " + p("x.html")),
               "long.json: results[0].time_us: 1e+308 us is longer than any run (at most 1e12 us");
  // A link of 1e-300 GB/s.
  write("slow.json", R"({"generator": {"kind": "ring", "ranks": 4, "bandwidth_gbps": 1e-300,
      "latency_us": 1}})");
  expect_error(run("simulate --collective all_reduce --topology " + p("slow.json")),
               "slow.json: generator.bandwidth_gbps: must be at least 1e-06 GB/s (1 kB/s)");
  EXPECT_FALSE(fs::exists(dir_ / "x.html"));
}

// The problem named is the one there is: a directory, a YAML file without
// astra:, a topology given as a model and the other way round, a missing
// file with the system's reason.
TEST_F(NewUserLeftovers, TheRightProblemIsNamed) {
  const std::string dgx = (kSource / "topologies/dgx-h100.json").string();
  const std::string yml = (kSource / "tests/golden/astra-3d.yml").string();
  const std::string model = (kSource / "models/gpt2-124m.json").string();
  expect_error(run("simulate --collective all_reduce --topology " + dir_.string()),
               dir_.string() + ": is a directory, not a topology file");
  expect_error(run("simulate --collective all_reduce --topology " + yml),
               yml +
                   ": not JSON, and the name says YAML: an ASTRA-sim network YAML is read as "
                   "--topology astra:" +
                   yml);
  expect_error(run("plan --model " + dgx + " --topology " + dgx + " --batch 8"),
               dgx + ": a topology file (it has \"generator\"), not a model");
  expect_error(run("simulate --collective all_reduce --topology " + model),
               model + ": a model file (it has \"layers\"), not a topology");
  report();
  expect_error(run("simulate --collective all_reduce --topology " + p("s.json")),
               "s.json: a report (it has \"collkit_version\"), not a topology");
  for (const std::string& cmd : {"simulate --collective all_reduce --topology " + p("none.json"),
                                 "plan --topology " + dgx + " --batch 8 --model " + p("none.json"),
                                 "report " + p("none.json") + " -o " + p("x.html"),
                                 "simulate --collective all_reduce --topology " + dgx +
                                     " --algorithm msccl:" + p("none.xml")})
    expect_error(run(cmd), ": cannot open the ");
  for (const std::string& cmd : {"simulate --collective all_reduce --topology " + p("none.json"),
                                 "plan --topology " + dgx + " --batch 8 --model " + p("none.json"),
                                 "report " + p("none.json") + " -o " + p("x.html")})
    EXPECT_NE(run(cmd).err.find(": No such file or directory\n"), std::string::npos) << cmd;
}

// Silent mismatches: --segments-as of another run, sizes that round alike,
// --collective with --markdown, a .csv name given HTML.
TEST_F(NewUserLeftovers, MismatchesAreNotSilent) {
  ASSERT_EQ(run("simulate --topology " + kRing8 +
                " --collective broadcast --algorithm linear -b 1K -e 1K --json " + p("bc.json"))
                .exit_code,
            0);
  expect_error(run("simulate --topology " + kRing8 + " --collective all_reduce --segments-as " +
                   p("bc.json")),
               "bc.json: a run of broadcast, but this simulation is all_reduce");
  expect_error(run("simulate --topology " + kRing8 +
                   " --collective broadcast --ranks 4 --segments-as " + p("bc.json")),
               "bc.json: a run on 8 ranks, but this simulation has 4 (--ranks 8?)");
  // 1 and 2 bytes of float are both 0 bytes: two rows, as bench prints them.
  RunResult r = run("simulate --topology " + kRing8 +
                    " --collective all_reduce --algorithm ring -b 1 -e 8 -f 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::size_t rows = 0;
  for (std::size_t at = r.out.find("\n           0             0"); at != std::string::npos;
       at = r.out.find("\n           0             0", at + 1))
    ++rows;
  EXPECT_EQ(rows, 2u) << r.out;
  r = run("algorithms --collective barrier --markdown");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("## barrier\n", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("## all_reduce"), std::string::npos);
  report();
  expect_error(run("report " + p("s.json") + " -o " + p("x.csv")),
               "x.csv: the name says csv, but the format is html (the default); give --format csv");
  EXPECT_FALSE(fs::exists(dir_ / "x.csv"));
  r = run("report " + p("s.json") + " -o " + p("x.csv") + " --format csv");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(dir_ / "x.csv").rfind("collective,", 0), 0u);
}

}  // namespace
}  // namespace collkit
