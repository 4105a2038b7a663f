// The one entry point for reading reports (reports/inputs.h): the format is
// told from the content, every format gives the same kind of runs, and the
// runs of one file combine as one measurement (repeats as medians, other
// runs side by side) or fail naming both runs.
#include "reports/inputs.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"

namespace collkit {
namespace {

const char kTable[] =
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     "
    "time   algbw   busbw  #wrong\n"
    "     1048576        262144     float     sum      -1    44.38   23.63   41.35       0    "
    "43.46   24.13   42.22       0\n";

Report collkit_report() {
  Report r;
  r.collkit_version = "0.1.0";
  r.mode = ReportMode::measure;
  r.backend = Backend::mpi;
  r.ranks = 8;
  r.results.push_back(
      make_row(Collective::all_reduce, "ring", map_size(Collective::all_reduce, 1024, 4, 8), 8, 5));
  r.best = compute_best(r.results);
  return r;
}

std::string error_of(const std::string& text, const ReadOptions& o = {}) {
  try {
    parse_runs(text, "in.txt", o);
  } catch (const FileError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Inputs, TheFormatComesFromTheContent) {
  // A collkit report, after a byte order mark and blank lines.
  std::vector<InputRun> runs =
      parse_runs("\xEF\xBB\xBF\n  " + report_json_text(collkit_report()), "m.json");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].format, InputFormat::collkit);
  EXPECT_EQ(runs[0].name, "m.json");
  EXPECT_EQ(runs[0].report, collkit_report());
  EXPECT_TRUE(runs[0].row_origins.empty());
  // An nccl-tests log, whatever its name.
  runs = parse_runs("./all_reduce_perf -g 8\n" + std::string(kTable), "m.json", {std::nullopt, 8});
  EXPECT_EQ(runs[0].format, InputFormat::nccl_tests_text);
  EXPECT_EQ(runs[0].report.results.size(), 2u);
  EXPECT_EQ(runs[0].row_origins[1], "m.json:3");
  // An nccl-tests -J file.
  const std::string j =
      R"({"version": 2, "args": ["./build/all_reduce_perf"], "config": {"nthreads": 1, "ngpus": 8,
      "devices": [{"rank": 0}]}, "results": [{"size": 1024, "count": 256, "type": "float",
      "redop": "sum", "root": "    -1", "out_of_place": {"time": 10.0, "alg_bw": 0.1024,
      "bus_bw": 0.1792, "nwrong": 0.0}, "in_place": null}]})";
  runs = parse_runs(j, "r.json");
  EXPECT_EQ(runs[0].format, InputFormat::nccl_tests_json);
  EXPECT_EQ(runs[0].report.ranks, 8);
  EXPECT_EQ(runs[0].report.results.size(), 1u);
  EXPECT_EQ(to_string(InputFormat::nccl_tests_json), "nccl-tests JSON");
}

TEST(Inputs, BadInputIsOneLineNamingTheFile) {
  EXPECT_EQ(error_of("{\"collkit_version\": ").rfind("in.txt: malformed JSON:", 0), 0u);
  EXPECT_EQ(error_of("{\"hello\": 1}"),
            "in.txt: not a collkit report (no \"collkit_version\" key)");
  // Shaped like an nccl-tests file: its reader says what is missing.
  EXPECT_EQ(error_of(R"({"config": {}, "results": []})"),
            "in.txt: args[0]: does not name an nccl-tests binary (e.g. all_reduce_perf); give "
            "--collective");
  EXPECT_EQ(error_of(""), "in.txt: empty file");
  EXPECT_NE(error_of("just text\n").find("in.txt: no nccl-tests table"), std::string::npos);
  try {
    read_runs("/nonexistent/m.json");
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/m.json: cannot open the report: No such file or directory");
  }
}

InputRun run_of(const std::string& name, std::vector<std::pair<std::int64_t, double>> rows,
                Collective c = Collective::all_reduce, int ranks = 8) {
  InputRun run;
  run.file = "log.txt";
  run.name = name;
  run.format = InputFormat::nccl_tests_text;
  run.report.mode = ReportMode::measure;
  run.report.ranks = ranks;
  for (const auto& [bytes, t] : rows)
    run.report.results.push_back(make_row(c, "nccl", map_size(c, bytes, 4, ranks), ranks, t));
  return run;
}

TEST(Inputs, RunsOfOneFileCombine) {
  // Two collectives side by side.
  const Report both = combine_runs({run_of("log.txt:4", {{1024, 10}, {4096, 20}}),
                                    run_of("log.txt:30", {{1024, 8}}, Collective::all_gather)});
  ASSERT_EQ(both.results.size(), 3u);
  EXPECT_EQ(both.results[2].collective, Collective::all_gather);
  EXPECT_EQ(both.extra["runs"], Json({"log.txt:4", "log.txt:30"}));
  // The same test on three nodes: repeats, each row the median.
  const Report nodes =
      combine_runs({run_of("a", {{1024, 10}, {4096, 20}}), run_of("b", {{1024, 30}, {4096, 22}}),
                    run_of("c", {{1024, 12}, {4096, 90}})});
  ASSERT_EQ(nodes.results.size(), 2u);
  EXPECT_DOUBLE_EQ(nodes.results[0].time_us, 12);
  EXPECT_DOUBLE_EQ(nodes.results[1].time_us, 22);
  // Both at once: two nodes of all_reduce, one all_gather.
  const Report mixed =
      combine_runs({run_of("a", {{1024, 10}}), run_of("g", {{1024, 5}}, Collective::all_gather),
                    run_of("b", {{1024, 20}})});
  ASSERT_EQ(mixed.results.size(), 2u);
  EXPECT_DOUBLE_EQ(mixed.results[0].time_us, 15);
  EXPECT_DOUBLE_EQ(mixed.results[1].time_us, 5);
  // Runs that share rows but are not repeats, or differ in ranks.
  try {
    combine_runs(
        {run_of("log.txt:4", {{1024, 10}, {4096, 20}}), run_of("log.txt:30", {{1024, 8}})});
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("log.txt:30: row all_reduce nccl 1024 B out-of-place "
                                          "float sum root -1 is also in log.txt:4",
                                          0),
              0u)
        << e.what();
  }
  try {
    combine_runs(
        {run_of("a", {{1024, 10}}), run_of("b", {{1024, 10}}, Collective::all_gather, 16)});
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("b: ranks: 16, but a has 8", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace collkit
