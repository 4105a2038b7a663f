// Runs the built `collkit report` and `collkit compare` as a user would:
// exit codes, messages and the files they leave (or do not leave) behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "reports/report.h"
#include "tests/cli/cli_runner.h"

namespace collkit {
namespace {

namespace fs = std::filesystem;

using testing_cli::RunResult;
using testing_cli::slurp;

ResultRow row(Collective c, const std::string& algo, std::int64_t bytes, double time_us,
              bool in_place = false) {
  SizeMapping size{bytes, bytes / 4, bytes / 4};
  return make_row(c, algo, size, 4, time_us, in_place);
}

// A row measured again: its time and the bandwidths that follow from it
// (a report's figures must agree, reports/report.h).
void refigure(ResultRow& r, int ranks, double time_us) {
  r.time_us = time_us;
  r.algbw_gbps = algbw_gbps(r.bytes, time_us);
  r.busbw_gbps = r.algbw_gbps * busbw_factor(r.collective, ranks);
}
void refigure(Report& m) {
  for (ResultRow& r : m.results) refigure(r, m.ranks, r.time_us);
}

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("collkit_report_cli_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Report s;
    s.collkit_version = "0.1.0";
    s.topology = TopologyInfo{"fc-4", "fc-4.json", ""};
    s.ranks = 4;
    s.results = {row(Collective::all_reduce, "ring", 1024, 10),
                 row(Collective::all_reduce, "ring", 65536, 20),
                 row(Collective::all_reduce, "recursive_doubling", 1024, 5),
                 row(Collective::all_gather, "ring", 4096, 6)};
    s.best = compute_best(s.results);
    write("s.json", report_json_text(s));
    Report m = s;
    m.mode = ReportMode::measure;
    m.backend = Backend::mpi;
    m.topology.reset();
    m.results = {row(Collective::all_reduce, "ring", 1024, 8),
                 row(Collective::all_reduce, "ring", 1024, 9, true),
                 row(Collective::all_reduce, "ring", 65536, 25)};
    m.best = compute_best(m.results);
    write("m.json", report_json_text(m));
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::string path(const std::string& name) const { return "'" + (dir_ / name).string() + "'"; }
  RunResult run(const std::string& args) { return testing_cli::run_collkit(args, dir_); }

  fs::path dir_;
};

TEST_F(ReportCli, WritesOneSelfContainedHtmlPage) {
  const RunResult r =
      run("report " + path("s.json") + " " + path("m.json") + " -o " + path("r.html"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = slurp(dir_ / "r.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("stroke-dasharray"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("all_gather"), std::string::npos);
}

TEST_F(ReportCli, CsvAndMarkdownFormats) {
  RunResult r = run("report " + path("s.json") + " --format csv -o " + path("r.csv"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string csv = slurp(dir_ / "r.csv");
  EXPECT_EQ(csv.rfind("collective,dtype,op,file,mode,algorithm,bytes,", 0), 0u);
  EXPECT_NE(csv.find(",simulate,recursive_doubling,1024,false,5.0,"), std::string::npos) << csv;
  r = run("report " + path("s.json") + " " + path("m.json") + " --format md -o " + path("r.md"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = slurp(dir_ / "r.md");
  EXPECT_NE(md.find("## all_reduce"), std::string::npos);
  EXPECT_NE(md.find("## all_gather"), std::string::npos);
  EXPECT_NE(md.find("| best simulated | best measured |"), std::string::npos);
}

TEST_F(ReportCli, NotAReportExitsTwoNamingTheFileAndWritesNothing) {
  write("other.json", R"({"results": []})");
  const RunResult r =
      run("report " + path("s.json") + " " + path("other.json") + " -o " + path("r.html"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("other.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("collkit_version"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "r.html"));
}

TEST_F(ReportCli, MissingFieldIsNamed) {
  std::string text = slurp(dir_ / "m.json");
  const auto pos = text.find("\"time_us\"");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 9, "\"time_xx\"");
  write("bad.json", text);
  const RunResult r = run("report " + path("bad.json") + " -o " + path("r.html"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.json: results[0].time_us: missing"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "r.html"));
}

TEST_F(ReportCli, BrokenJsonAndMissingFilesExitTwo) {
  write("broken.json", "{\"collkit_version\": ");
  RunResult r = run("report " + path("broken.json") + " -o " + path("r.html"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;
  r = run("report " + path("absent.json") + " -o " + path("r.html"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("absent.json"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "r.html"));
}

TEST_F(ReportCli, BadFormatAndOutputDirectoryExitTwo) {
  RunResult r = run("report " + path("s.json") + " --format pdf -o " + path("r.pdf"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--format 'pdf'"), std::string::npos) << r.err;
  r = run("report " + path("s.json") + " -o " + path("nodir/r.html"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "r.pdf"));
}

TEST_F(ReportCli, ExistingOutputSurvivesAFailedRun) {
  write("r.html", "old");
  write("other.json", "[]");
  const RunResult r = run("report " + path("other.json") + " -o " + path("r.html"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(slurp(dir_ / "r.html"), "old");
}

TEST_F(ReportCli, ComparePrintsRowsSummaryAndJson) {
  const RunResult r =
      run("compare " + path("s.json") + " " + path("m.json") + " --json " + path("c.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // ring 1 KiB: (10 - 8) / 8 = +25%, in-place (10 - 9) / 9 = +11.1%; 64 KiB
  // (20 - 25) / 25 = -20%. Median of 0.25, 0.111, 0.2 = 20%.
  EXPECT_NE(r.out.find("+25.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("+11.1%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-20.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("median |error| 20.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# Unmatched, only in"), std::string::npos) << r.out;
  const Json j = Json::parse(slurp(dir_ / "c.json"));
  EXPECT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["predicted_only"].size(), 2u);  // recursive_doubling, all_gather
  EXPECT_DOUBLE_EQ(j["summary"]["median_abs_error"].get<double>(), 0.2);
}

// Three repeats: each measured time is the median of its three.
TEST_F(ReportCli, CompareTakesTheMedianOfRepeats) {
  Report m = read_report((dir_ / "m.json").string());
  m.results[0].time_us = 2;    // ring 1 KiB out of place: 8, 2, 12 -> 8
  m.results[1].time_us = 100;  // in place: 9, 100, 10 -> 10
  m.results[2].time_us = 30;   // 64 KiB: 25, 30, 40 -> 30
  refigure(m);
  write("m2.json", report_json_text(m));
  m.results[0].time_us = 12;
  m.results[1].time_us = 10;
  m.results[2].time_us = 40;
  refigure(m);
  write("m3.json", report_json_text(m));
  const RunResult r = run("compare " + path("s.json") + " " + path("m.json") + " " +
                          path("m2.json") + " " + path("m3.json") + " --json " + path("c.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("median of 3 ("), std::string::npos) << r.out;
  const Json j = Json::parse(slurp(dir_ / "c.json"));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["rows"][0]["measured_us"].get<double>(), 8);
  EXPECT_DOUBLE_EQ(j["rows"][1]["measured_us"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(j["rows"][2]["measured_us"].get<double>(), 30);
  // A repeat of another run is refused by name, and nothing is written.
  fs::remove(dir_ / "c.json");
  m.results.pop_back();
  write("m4.json", report_json_text(m));
  const RunResult bad = run("compare " + path("s.json") + " " + path("m.json") + " " +
                            path("m4.json") + " --json " + path("c.json"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("m4.json: results: 2 rows"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(dir_ / "c.json"));
}

TEST_F(ReportCli, CompareNotesSwappedArguments) {
  const RunResult r = run("compare " + path("m.json") + " " + path("s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("the order is PREDICTED MEASURED"), std::string::npos) << r.err;
}

TEST_F(ReportCli, CompareMinBytes) {
  const RunResult r = run("compare " + path("s.json") + " " + path("m.json") + " --min-bytes 64K");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# Summary: 1 matched rows"), std::string::npos) << r.out;
}

TEST_F(ReportCli, CompareWithNothingInCommonSaysWhy) {
  Report m = read_report((dir_ / "m.json").string());
  for (ResultRow& row : m.results) row.collective = Collective::broadcast;
  refigure(m);
  m.best = compute_best(m.results);
  write("b.json", report_json_text(m));
  const RunResult r =
      run("compare " + path("s.json") + " " + path("b.json") + " --json " + path("c.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("has broadcast [ring]"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "c.json"));
}

TEST_F(ReportCli, CompareRefusesDifferentRanksAndBadFiles) {
  Report m = read_report((dir_ / "m.json").string());
  m.ranks = 8;
  refigure(m);
  write("m8.json", report_json_text(m));
  RunResult r = run("compare " + path("s.json") + " " + path("m8.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("for 4 ranks"), std::string::npos) << r.err;
  write("other.json", "{}");
  r = run("compare " + path("other.json") + " " + path("m.json") + " --json " + path("c.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("other.json"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "c.json"));
  r = run("compare " + path("s.json") + " " + path("m.json") + " --min-bytes 12X");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--min-bytes"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace collkit
