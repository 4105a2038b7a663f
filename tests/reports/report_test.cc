#include "reports/report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"

namespace collkit {
namespace {

Report sample_report() {
  Report rep;
  rep.collkit_version = "0.1.0";
  rep.topology = TopologyInfo{"fc-8", "topologies/fc-8.json", "ab12"};
  rep.ranks = 8;
  rep.root = 0;
  rep.results.push_back(make_row(Collective::all_reduce, "ring",
                                 map_size(Collective::all_reduce, 8388608, 4, 8), 8, 160.8));
  rep.results.push_back(make_row(Collective::all_reduce, "rabenseifner",
                                 map_size(Collective::all_reduce, 8388608, 4, 8), 8, 150.25));
  ResultRow checked = make_row(Collective::all_reduce, "ring",
                               map_size(Collective::all_reduce, 1024, 4, 8), 8, 3.5, true, 0);
  checked.dtype = DataType::float64;
  checked.op = RedOp::max;
  checked.root = 3;
  checked.extra["stddev_us"] = 0.25;
  rep.results.push_back(checked);
  rep.best = compute_best(rep.results);
  rep.extra["model"] = "flow";
  rep.extra["hosts"] = Json::array({"a", "b"});
  return rep;
}

TEST(Report, MakeRowDerivesBandwidths) {
  const ResultRow r =
      make_row(Collective::all_reduce, "ring", {8388608, 2097152, 2097152}, 8, 160.8);
  EXPECT_EQ(r.bytes, 8388608);
  EXPECT_EQ(r.count, 2097152);
  EXPECT_DOUBLE_EQ(r.algbw_gbps, 8388608 / 160.8e-6 / 1e9);
  EXPECT_DOUBLE_EQ(r.busbw_gbps, r.algbw_gbps * 1.75);
  EXPECT_EQ(r.wrong, -1);
  EXPECT_FALSE(r.in_place);
}

TEST(Report, JsonRoundTrip) {
  const Report rep = sample_report();
  const Json j = to_json(rep);
  EXPECT_EQ(report_from_json(j, "x.json"), rep);
  // Through text too, as files are.
  EXPECT_EQ(report_from_json(Json::parse(report_json_text(rep)), "x.json"), rep);
}

TEST(Report, JsonFollowsTheContract) {
  const Json j = to_json(sample_report());
  EXPECT_EQ(j["mode"], "simulate");
  EXPECT_EQ(j["backend"], "sim");
  EXPECT_EQ(j["topology"]["name"], "fc-8");
  EXPECT_EQ(j["ranks"], 8);
  EXPECT_EQ(j["dtype"], "float");
  EXPECT_EQ(j["op"], "sum");
  const Json& r0 = j["results"][0];
  EXPECT_EQ(r0["collective"], "all_reduce");
  EXPECT_EQ(r0["bytes"], 8388608);
  EXPECT_EQ(r0["count"], 2097152);
  EXPECT_EQ(r0["in_place"], false);
  EXPECT_TRUE(r0["wrong"].is_null());
  EXPECT_FALSE(r0.contains("dtype"));
  const Json& r2 = j["results"][2];
  EXPECT_EQ(r2["wrong"], 0);
  EXPECT_EQ(r2["dtype"], "double");
  EXPECT_EQ(r2["stddev_us"], 0.25);
  EXPECT_EQ(j["model"], "flow");
  EXPECT_EQ(j["best"][0]["algorithm"], "rabenseifner");
  EXPECT_EQ(j["best"][0]["bytes"], 8388608);
}

TEST(Report, ExtraMustNotShadowFixedKeys) {
  Report rep = sample_report();
  rep.extra["ranks"] = 3;
  EXPECT_THROW(to_json(rep), std::logic_error);
}

// Removes or replaces one key and checks the reader's message.
std::string read_error(const std::function<void(Json&)>& edit) {
  Json j = to_json(sample_report());
  edit(j);
  try {
    report_from_json(j, "m.json");
  } catch (const FileError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Report, ReaderNamesTheMissingOrIllTypedField) {
  EXPECT_EQ(read_error([](Json& j) { j["results"][2].erase("time_us"); }),
            "m.json: results[2].time_us: missing");
  EXPECT_EQ(read_error([](Json& j) { j["results"][1]["bytes"] = "big"; }),
            "m.json: results[1].bytes: expected an integer, got a string");
  EXPECT_EQ(read_error([](Json& j) { j["results"][0]["bytes"] = 1.5; }),
            "m.json: results[0].bytes: expected an integer, got a number");
  EXPECT_EQ(read_error([](Json& j) { j["results"][0]["wrong"] = "no"; }),
            "m.json: results[0].wrong: expected an integer or null, got a string");
  EXPECT_EQ(read_error([](Json& j) { j["results"][0]["time_us"] = -1; }),
            "m.json: results[0].time_us: must be >= 0 (got -1)");
  EXPECT_EQ(read_error([](Json& j) { j["results"][0]["in_place"] = 0; }),
            "m.json: results[0].in_place: expected a boolean, got an integer");
  EXPECT_EQ(read_error([](Json& j) {
              j["results"][0]["collective"] = "allreduc";
            }).rfind("m.json: results[0].collective: unknown collective 'allreduc'", 0),
            0u);
  EXPECT_EQ(read_error([](Json& j) { j["best"][0].erase("algorithm"); }),
            "m.json: best[0].algorithm: missing");
  EXPECT_EQ(read_error([](Json& j) { j.erase("ranks"); }), "m.json: ranks: missing");
  EXPECT_EQ(read_error([](Json& j) { j["mode"] = "guess"; }),
            "m.json: mode: unknown mode 'guess'; valid: simulate, measure");
  EXPECT_EQ(read_error([](Json& j) {
              j["dtype"] = "fp8";
            }).rfind("m.json: dtype: unknown data type 'fp8'", 0),
            0u);
  EXPECT_EQ(read_error([](Json& j) { j.erase("topology"); }), "m.json: topology: missing");
  EXPECT_EQ(read_error([](Json& j) { j["topology"].erase("sha256"); }),
            "m.json: topology.sha256: missing");
  EXPECT_EQ(read_error([](Json& j) { j["results"] = Json::object(); }),
            "m.json: results: expected an array, got an object");
  EXPECT_EQ(read_error([](Json& j) { j["results"][0] = 3; }),
            "m.json: results[0]: expected an object, got an integer");
}

TEST(Report, MeasuredReportsNeedNoTopology) {
  Report rep = sample_report();
  rep.mode = ReportMode::measure;
  rep.backend = Backend::mpi;
  rep.topology.reset();
  EXPECT_EQ(report_from_json(to_json(rep), "b.json"), rep);
}

TEST(Report, RejectsFilesThatAreNotReports) {
  EXPECT_EQ(read_error([](Json& j) { j = Json::array(); }),
            "m.json: not a collkit report (no \"collkit_version\" key)");
  EXPECT_EQ(read_error([](Json& j) {
              j = Json{{"config", Json::object()}, {"results", Json::array()}};
            }),
            "m.json: not a collkit report (no \"collkit_version\" key; this looks like an "
            "nccl-tests -J file)");
}

TEST(Report, ReadReportNamesTheFile) {
  const auto dir = std::filesystem::temp_directory_path() / "collkit_report_test";
  std::filesystem::create_directories(dir);
  const std::string bad = (dir / "bad.json").string();
  std::ofstream(bad) << "{\"collkit_version\": ";
  try {
    read_report(bad);
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad + ": malformed JSON:", 0), 0u) << e.what();
  }
  try {
    read_report((dir / "absent.json").string());
    FAIL();
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "absent.json").string() +
                                         ": cannot open the report: No such file or directory");
  }
  const std::string good = (dir / "good.json").string();
  std::ofstream(good) << report_json_text(sample_report());
  EXPECT_EQ(read_report(good), sample_report());
  std::filesystem::remove_all(dir);
}

BestEntry best_entry(Collective c, std::int64_t bytes, const char* algorithm, double time_us) {
  BestEntry b;
  b.collective = c;
  b.bytes = bytes;
  b.algorithm = algorithm;
  b.time_us = time_us;
  return b;
}

TEST(Best, LowestTimePerCollectiveAndSize) {
  auto r = [](Collective c, const char* alg, std::int64_t bytes, double t) {
    return make_row(c, alg, {bytes, bytes / 4, bytes / 4}, 4, t);
  };
  const std::vector<ResultRow> rows = {
      r(Collective::all_reduce, "ring", 8, 10),       r(Collective::all_reduce, "ring", 1024, 20),
      r(Collective::all_reduce, "ring", 65536, 50),   r(Collective::all_reduce, "tree", 8, 5),
      r(Collective::all_reduce, "tree", 1024, 20),    r(Collective::all_reduce, "tree", 65536, 80),
      r(Collective::all_reduce, "rabens", 8, 7),      r(Collective::all_reduce, "rabens", 1024, 15),
      r(Collective::all_reduce, "rabens", 65536, 60), r(Collective::broadcast, "tree", 8, 1)};
  const std::vector<BestEntry> best = compute_best(rows);
  ASSERT_EQ(best.size(), 4u);
  EXPECT_EQ(best[0], best_entry(Collective::all_reduce, 8, "tree", 5));
  // At 1024 ring and tree tie, and rabens beats both.
  EXPECT_EQ(best[1], best_entry(Collective::all_reduce, 1024, "rabens", 15));
  EXPECT_EQ(best[2], best_entry(Collective::all_reduce, 65536, "ring", 50));
  EXPECT_EQ(best[3], best_entry(Collective::broadcast, 8, "tree", 1));

  const std::vector<Crossover> cross = compute_crossovers(best);
  ASSERT_EQ(cross.size(), 2u);
  EXPECT_EQ(cross[0], (Crossover{Collective::all_reduce, 1024, "tree", "rabens"}));
  EXPECT_EQ(cross[1], (Crossover{Collective::all_reduce, 65536, "rabens", "ring"}));
}

TEST(Best, TiesGoToTheEarlierRow) {
  const std::vector<ResultRow> rows = {
      make_row(Collective::all_gather, "ring", {64, 4, 16}, 4, 3.0),
      make_row(Collective::all_gather, "bruck", {64, 4, 16}, 4, 3.0)};
  EXPECT_EQ(compute_best(rows)[0].algorithm, "ring");
  EXPECT_TRUE(compute_crossovers(compute_best(rows)).empty());
}

TEST(Best, RowsWithTheirOwnDtypeAreRankedApart) {
  ResultRow f = make_row(Collective::all_reduce, "ring", {64, 16, 16}, 2, 3.0);
  ResultRow d = make_row(Collective::all_reduce, "tree", {64, 8, 8}, 2, 1.0);
  d.dtype = DataType::float64;
  const std::vector<BestEntry> best = compute_best({f, d});
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].algorithm, "ring");
  EXPECT_EQ(best[1].algorithm, "tree");
  EXPECT_EQ(best[1].dtype, DataType::float64);
  EXPECT_TRUE(compute_crossovers(best).empty());
}

TEST(Csv, OneLinePerRowWithTableConventions) {
  Report rep;
  rep.results = {make_row(Collective::all_reduce, "ring", {16, 4, 4}, 2, 2.0),
                 make_row(Collective::broadcast, "a,b", {16, 4, 4}, 2, 4.0, true, 0)};
  EXPECT_EQ(to_csv(rep),
            "collective,algorithm,bytes,count,dtype,op,root,in_place,time_us,algbw_gbps,"
            "busbw_gbps,wrong\n"
            "all_reduce,ring,16,4,float,sum,-1,false,2,0.008,0.008,\n"
            "broadcast,\"a,b\",16,4,float,none,0,true,4,0.004,0.004,0\n");
}

}  // namespace
}  // namespace collkit
