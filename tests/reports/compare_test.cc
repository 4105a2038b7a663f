// compare_reports on hand-made reports whose errors are known, so the median,
// p90 and worst rows can be checked against figures worked out by hand.
#include "reports/compare.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace collkit {
namespace {

ResultRow row(const std::string& algo, std::int64_t bytes, double time_us, bool in_place = false,
              Collective c = Collective::all_reduce) {
  ResultRow r;
  r.collective = c;
  r.algorithm = algo;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.in_place = in_place;
  r.time_us = time_us;
  return r;
}

Report report(ReportMode mode, std::vector<ResultRow> rows, int ranks = 4) {
  Report r;
  r.collkit_version = "0.1.0";
  r.mode = mode;
  r.ranks = ranks;
  r.results = std::move(rows);
  return r;
}

// Errors +0.1, -0.2, +0.25, -0.5, +1.0 (measured 100 us each).
Report predicted5() {
  return report(ReportMode::simulate,
                {row("ring", 1024, 110), row("ring", 2048, 80), row("ring", 4096, 125),
                 row("ring", 8192, 50), row("ring", 16384, 200)});
}
Report measured5() {
  return report(ReportMode::measure,
                {row("ring", 1024, 100), row("ring", 2048, 100), row("ring", 4096, 100),
                 row("ring", 8192, 100), row("ring", 16384, 100)});
}

// Three repeats of one run, rows in different orders: ring out of place
// 10, 40, 20 us (the first at 2.0 / 3.0 GB/s, the third at 1.0 / 1.5), ring
// in place 30, 20, 60, tree 7, 9, 8.
std::vector<Report> three_repeats() {
  std::vector<ResultRow> a{row("ring", 1024, 10), row("ring", 1024, 30, true),
                           row("tree", 1024, 7)};
  a[0].algbw_gbps = 2.0;
  a[0].busbw_gbps = 3.0;
  std::vector<ResultRow> c{row("ring", 1024, 20), row("ring", 1024, 60, true),
                           row("tree", 1024, 8)};
  c[0].algbw_gbps = 1.0;
  c[0].busbw_gbps = 1.5;
  return {report(ReportMode::measure, a),
          report(ReportMode::measure,
                 {row("tree", 1024, 9), row("ring", 1024, 40), row("ring", 1024, 20, true)}),
          report(ReportMode::measure, c)};
}

// Each row's time is the median of its three times, bandwidths follow the
// time.
TEST(MedianOfRepeats, EachRowTakesItsMedianTime) {
  std::vector<Report> reps = three_repeats();
  // The median is the third repeat's time: without its own figures the
  // bandwidths can only come from scaling the first repeat's.
  reps[2].results[0].algbw_gbps = 0;
  reps[2].results[0].busbw_gbps = 0;
  const Report& r1 = reps[0];
  const Report& r2 = reps[1];
  const Report& r3 = reps[2];
  const Report m = median_of_repeats({r1, r2, r3}, {"a.json", "b.json", "c.json"});
  ASSERT_EQ(m.results.size(), 3u);
  EXPECT_EQ(m.results[0].time_us, 20);  // of 10, 40, 20
  EXPECT_DOUBLE_EQ(m.results[0].algbw_gbps, 1.0);
  EXPECT_DOUBLE_EQ(m.results[0].busbw_gbps, 1.5);
  EXPECT_EQ(m.results[1].time_us, 30);  // in place: of 30, 20, 60
  EXPECT_EQ(m.results[2].time_us, 8);   // of 7, 9, 8
  // Two repeats: the mean of the two.
  EXPECT_EQ(median_of_repeats({r1, r2}, {"a", "b"}).results[2].time_us, 8);
  // One report comes back as it is.
  EXPECT_EQ(median_of_repeats({r2}, {"b"}).results[0].time_us, 9);
}

// --repeats fastest: the same three repeats, each row the least of its
// times, bandwidths following it; the flag's words are checked.
TEST(MedianOfRepeats, FastestTakesEachRowsLeastTime) {
  const std::vector<Report> reps = three_repeats();
  const Report& r1 = reps[0];
  const Report& r2 = reps[1];
  const Report& r3 = reps[2];
  const Report m =
      median_of_repeats({r3, r2, r1}, {"c.json", "b.json", "a.json"}, RepeatStat::fastest);
  ASSERT_EQ(m.results.size(), 3u);
  EXPECT_EQ(m.results[0].time_us, 10);             // ring out of place: of 20, 40, 10
  EXPECT_DOUBLE_EQ(m.results[0].algbw_gbps, 2.0);  // c.json's 1.0 at 20 us
  EXPECT_DOUBLE_EQ(m.results[0].busbw_gbps, 3.0);
  EXPECT_EQ(m.results[1].time_us, 20);  // in place: of 60, 20, 30
  EXPECT_EQ(m.results[2].time_us, 7);   // tree: of 8, 9, 7
  EXPECT_EQ(parse_repeat_stat("--repeats", "fastest"), RepeatStat::fastest);
  EXPECT_EQ(parse_repeat_stat("--repeats", "median"), RepeatStat::median);
  EXPECT_THROW(parse_repeat_stat("--repeats", "min"), UsageError);
}

TEST(MedianOfRepeats, RepeatsOfAnotherRunAreRefusedByName) {
  const Report r1 = report(ReportMode::measure, {row("ring", 1024, 10), row("ring", 2048, 20)});
  const auto message = [&](const Report& other) {
    try {
      median_of_repeats({r1, other}, {"a.json", "b.json"});
    } catch (const FileError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(report(ReportMode::measure, {row("ring", 1024, 10), row("ring", 4096, 20)}))
                .find("b.json: results: row all_reduce ring 4096 B out-of-place"),
            std::string::npos);
  EXPECT_NE(
      message(report(ReportMode::measure, {row("ring", 1024, 10)})).find("b.json: results: 1 rows"),
      std::string::npos);
  EXPECT_NE(message(report(ReportMode::measure, {row("ring", 1024, 10), row("ring", 2048, 20)}, 8))
                .find("b.json: ranks: 8"),
            std::string::npos);
  // The same row twice in one repeat (and another missing) is no repeat either.
  EXPECT_NE(message(report(ReportMode::measure, {row("ring", 1024, 10), row("ring", 1024, 20)}))
                .find("more than once or not in every repeat"),
            std::string::npos);
}

TEST(Quantile, InterpolatesBetweenClosestRanks) {
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0);
  EXPECT_DOUBLE_EQ(quantile({3}, 0.9), 3);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5}, 0.9), 4.6);  // position 3.6
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3}, 1.0), 3);
}

TEST(Compare, ErrorsMedianP90AndWorstByHand) {
  const CompareResult r = compare_reports(predicted5(), measured5());
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_DOUBLE_EQ(*r.rows[0].rel_error, 0.1);
  EXPECT_DOUBLE_EQ(*r.rows[1].rel_error, -0.2);
  EXPECT_DOUBLE_EQ(*r.rows[3].rel_error, -0.5);
  // |errors| sorted: 0.1 0.2 0.25 0.5 1.0 -> median 0.25; p90 at position
  // 0.9 x 4 = 3.6: 0.5 + 0.6 x (1.0 - 0.5) = 0.8.
  EXPECT_DOUBLE_EQ(r.median_abs_error, 0.25);
  EXPECT_DOUBLE_EQ(r.p90_abs_error, 0.8);
  EXPECT_EQ(r.worst, (std::vector<std::size_t>{4, 3, 2, 1, 0}));
  EXPECT_TRUE(r.predicted_only.empty());
  EXPECT_TRUE(r.measured_only.empty());
}

TEST(Compare, EvenCountAndAtMostFiveWorst) {
  Report p = predicted5(), m = measured5();
  p.results.push_back(row("ring", 32768, 70));  // -0.3
  m.results.push_back(row("ring", 32768, 100));
  const CompareResult r = compare_reports(p, m);
  // 0.1 0.2 0.25 0.3 0.5 1.0: median (0.25 + 0.3) / 2; p90 at 4.5: 0.75.
  EXPECT_DOUBLE_EQ(r.median_abs_error, 0.275);
  EXPECT_DOUBLE_EQ(r.p90_abs_error, 0.75);
  EXPECT_EQ(r.worst, (std::vector<std::size_t>{4, 3, 5, 2, 1}));
}

TEST(Compare, SimulatedOutOfPlaceStandsInForMeasuredInPlace) {
  const Report p = report(ReportMode::simulate, {row("ring", 1024, 10)});
  const Report m =
      report(ReportMode::measure, {row("ring", 1024, 8), row("ring", 1024, 12.5, true)});
  const CompareResult r = compare_reports(p, m);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_FALSE(r.rows[0].key.in_place);
  EXPECT_TRUE(r.rows[1].key.in_place);
  EXPECT_DOUBLE_EQ(r.rows[1].predicted_us, 10);
  EXPECT_DOUBLE_EQ(*r.rows[0].rel_error, 0.25);
  EXPECT_DOUBLE_EQ(*r.rows[1].rel_error, -0.2);
  EXPECT_TRUE(r.predicted_only.empty());
}

TEST(Compare, InPlaceMatchesInPlaceWhereBothHaveIt) {
  const Report p =
      report(ReportMode::measure, {row("ring", 1024, 10), row("ring", 1024, 20, true)});
  const Report m =
      report(ReportMode::measure, {row("ring", 1024, 10), row("ring", 1024, 10, true)});
  const CompareResult r = compare_reports(p, m);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(r.rows[1].predicted_us, 20);
  EXPECT_DOUBLE_EQ(*r.rows[1].rel_error, 1.0);
}

TEST(Compare, ListsRowsFoundInOnlyOneFile) {
  Report p = predicted5(), m = measured5();
  p.results.push_back(row("tree", 1024, 5));
  m.results.push_back(row("ring", 1 << 20, 50));
  m.results.push_back(row("ring", 1024, 50, false, Collective::all_gather));
  const CompareResult r = compare_reports(p, m);
  EXPECT_EQ(r.rows.size(), 5u);
  ASSERT_EQ(r.predicted_only.size(), 1u);
  EXPECT_EQ(r.predicted_only[0].algorithm, "tree");
  ASSERT_EQ(r.measured_only.size(), 2u);
  EXPECT_EQ(r.measured_only[0].bytes, 1 << 20);
  EXPECT_EQ(r.measured_only[1].collective, Collective::all_gather);
}

TEST(Compare, RowDtypesKeepRowsApart) {
  Report p = predicted5();
  Report m = measured5();
  ResultRow dbl = row("ring", 1024, 55);
  dbl.dtype = DataType::float64;
  m.results.push_back(dbl);
  const CompareResult r = compare_reports(p, m);
  EXPECT_EQ(r.rows.size(), 5u);
  ASSERT_EQ(r.measured_only.size(), 1u);
  EXPECT_EQ(r.measured_only[0].dtype, "double");
}

TEST(Compare, MinBytesLeavesSmallRowsOut) {
  const CompareResult r = compare_reports(predicted5(), measured5(), 4096);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].key.bytes, 4096);
  // 0.25 0.5 1.0
  EXPECT_DOUBLE_EQ(r.median_abs_error, 0.5);
}

TEST(Compare, ZeroMeasuredTimeHasNoError) {
  const Report p = report(ReportMode::simulate, {row("ring", 0, 3), row("ring", 8, 2)});
  const Report m = report(ReportMode::measure, {row("ring", 0, 0), row("ring", 8, 4)});
  const CompareResult r = compare_reports(p, m);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_FALSE(r.rows[0].rel_error.has_value());
  EXPECT_EQ(r.with_error, 1u);
  EXPECT_DOUBLE_EQ(r.median_abs_error, 0.5);
}

// nccl-tests prints every size below one element per rank as a 0 B row
// (here four, out of place and in place, 0.9 us each: its own loop), and
// the nccl family predicts such a call at 0 us (NCCL discards it). The n-th
// measured row of a repeated key meets the n-th predicted one, so no
// predicted row is left over, and none of them gets an error.
TEST(Compare, RowsPredictedAtNoTimeHaveNoErrorAndRepeatsPairInOrder) {
  std::vector<ResultRow> pred, meas;
  for (int i = 0; i < 4; ++i) pred.push_back(row("nccl", 0, 0));
  pred.push_back(row("nccl", 128, 30));
  for (int i = 0; i < 4; ++i) {
    meas.push_back(row("nccl", 0, 0.9));
    meas.push_back(row("nccl", 0, 0.8, true));
  }
  meas.push_back(row("nccl", 128, 40));
  meas.push_back(row("nccl", 128, 20, true));
  const CompareResult r =
      compare_reports(report(ReportMode::simulate, pred), report(ReportMode::measure, meas));
  ASSERT_EQ(r.rows.size(), 10u);
  EXPECT_TRUE(r.predicted_only.empty());
  EXPECT_TRUE(r.measured_only.empty());
  EXPECT_EQ(r.predicted_no_time, 8u);
  EXPECT_EQ(r.with_error, 2u);
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(r.rows[static_cast<std::size_t>(i)].rel_error);
  EXPECT_DOUBLE_EQ(*r.rows[8].rel_error, -0.25);  // 30 against 40
  EXPECT_DOUBLE_EQ(*r.rows[9].rel_error, 0.5);    // 30 against 20
  EXPECT_DOUBLE_EQ(r.median_abs_error, 0.375);
  EXPECT_NE(format_comparison(r, "p", "m").find("8 matched row(s) have no error"),
            std::string::npos);
  EXPECT_EQ(comparison_to_json(r, "p", "m", 0)["summary"]["predicted_no_time"], 8);

  // Two predicted rows of one key, three measured: first with first, second
  // with second, and the third with the last (a prediction with fewer rows
  // lends its last).
  const Report p2 = report(ReportMode::simulate, {row("ring", 64, 10), row("ring", 64, 20)});
  const Report m2 =
      report(ReportMode::measure, {row("ring", 64, 20), row("ring", 64, 10), row("ring", 64, 40)});
  const CompareResult r2 = compare_reports(p2, m2);
  ASSERT_EQ(r2.rows.size(), 3u);
  EXPECT_DOUBLE_EQ(*r2.rows[0].rel_error, -0.5);
  EXPECT_DOUBLE_EQ(*r2.rows[1].rel_error, 1.0);
  EXPECT_DOUBLE_EQ(*r2.rows[2].rel_error, -0.5);
  EXPECT_TRUE(r2.predicted_only.empty());
}

TEST(Compare, DifferentRankCountsAreRefused) {
  Report m = measured5();
  m.ranks = 8;
  try {
    compare_reports(predicted5(), m, 0, "p.json", "m.json");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("p.json is for 4 ranks, m.json for 8"), std::string::npos)
        << e.what();
  }
}

TEST(Compare, NothingMatchingSaysWhatEachFileHolds) {
  const Report m =
      report(ReportMode::measure, {row("ring", 1024, 10, false, Collective::all_gather)});
  try {
    compare_reports(predicted5(), m, 0, "p.json", "m.json");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("p.json has all_reduce [ring], dtype float, 1 KiB..16 KiB"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("m.json has all_gather [ring]"), std::string::npos) << what;
  }
}

TEST(Compare, TextAndJsonForms) {
  Report p = predicted5(), m = measured5();
  p.results.push_back(row("tree", 1024, 5));
  const CompareResult r = compare_reports(p, m, 0, "p.json", "m.json");
  const std::string text = format_comparison(r, "p.json", "m.json");
  EXPECT_NE(text.find("median |error| 25.0%, p90 |error| 80.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("+100.0%"), std::string::npos);
  EXPECT_NE(text.find("# Unmatched, only in p.json (1):"), std::string::npos);
  const Json j = comparison_to_json(r, "p.json", "m.json", 0);
  EXPECT_EQ(j["rows"].size(), 5u);
  EXPECT_DOUBLE_EQ(j["rows"][1]["rel_error"].get<double>(), -0.2);
  EXPECT_DOUBLE_EQ(j["summary"]["median_abs_error"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["summary"]["p90_abs_error"].get<double>(), 0.8);
  EXPECT_EQ(j["summary"]["worst"].size(), 5u);
  EXPECT_EQ(j["summary"]["worst"][0]["bytes"], 16384);
  EXPECT_EQ(j["predicted_only"].size(), 1u);
  EXPECT_EQ(j["measured_only"].size(), 0u);
}

// --match: the simulated ring against NCCL's own rows, per size band. Errors
// chosen by hand: 512 KiB +10% and -30% (in place), 1 MiB +20%, 32 MiB -5%,
// 64 MiB +2%, 1 GiB -1%.
TEST(CompareMatch, PredictedAlgorithmAgainstNcclRowsPerBand) {
  const Report p =
      report(ReportMode::simulate,
             {row("ring", 512 << 10, 110), row("tree", 512 << 10, 1), row("ring", 1 << 20, 120),
              row("ring", 32 << 20, 95), row("ring", 64 << 20, 102), row("ring", 1 << 30, 99),
              row("ring", std::int64_t{4} << 30, 7)});
  const Report m =
      report(ReportMode::measure,
             {row("nccl", 512 << 10, 100), row("nccl", 512 << 10, 110 / 0.7, true),
              row("nccl", 1 << 20, 100), row("native", 32 << 20, 100), row("nccl", 64 << 20, 100),
              row("nccl", 1 << 30, 100), row("ring", 1 << 30, 1)});
  CompareOptions o;
  o.match = "ring";
  o.bands = true;
  const CompareResult r = compare_reports(p, m, o, "s.json", "log.txt");
  ASSERT_EQ(r.rows.size(), 6u);  // the measured ring row is not NCCL's: left out
  EXPECT_EQ(r.rows[0].key.algorithm, "ring");
  EXPECT_EQ(r.rows[0].measured_algorithm, "nccl");
  EXPECT_EQ(r.rows[3].measured_algorithm, "native");
  EXPECT_NEAR(*r.rows[1].rel_error, -0.3, 1e-12);
  EXPECT_TRUE(r.rows[1].key.in_place);
  EXPECT_NEAR(*r.rows[3].rel_error, -0.05, 1e-12);
  // The 4 GiB ring row has no NCCL row; the tree row is not asked for.
  ASSERT_EQ(r.predicted_only.size(), 1u);
  EXPECT_EQ(r.predicted_only[0].bytes, std::int64_t{4} << 30);
  EXPECT_TRUE(r.measured_only.empty());
  ASSERT_EQ(r.bands.size(), 4u);
  EXPECT_EQ(r.bands[0].name, "< 1 MiB");
  EXPECT_EQ(r.bands[0].rows, 2u);  // |+10%|, |-30%|
  EXPECT_NEAR(r.bands[0].median_abs_error, 0.2, 1e-12);
  EXPECT_NEAR(r.bands[0].worst_abs_error, 0.3, 1e-12);
  EXPECT_EQ(r.bands[1].rows, 2u);  // 1 MiB +20%, 32 MiB -5%
  EXPECT_NEAR(r.bands[1].median_abs_error, 0.125, 1e-12);
  EXPECT_NEAR(r.bands[1].worst_abs_error, 0.2, 1e-12);
  EXPECT_EQ(r.bands[2].rows, 2u);  // 64 MiB +2%, 1 GiB -1%
  EXPECT_NEAR(r.bands[2].median_abs_error, 0.015, 1e-12);
  EXPECT_NEAR(r.bands[2].worst_abs_error, 0.02, 1e-12);
  EXPECT_EQ(r.bands[3].rows, 6u);
  EXPECT_NEAR(r.bands[3].median_abs_error, 0.075, 1e-12);  // (5% + 10%) / 2
  EXPECT_NEAR(r.bands[3].worst_abs_error, 0.3, 1e-12);
  const std::string text = format_comparison(r, "s.json", "log.txt");
  EXPECT_NE(text.find("ring vs nccl"), std::string::npos) << text;
  EXPECT_NE(text.find("ring vs native"), std::string::npos) << text;
  EXPECT_NE(text.find("# --match ring:"), std::string::npos) << text;
  EXPECT_NE(text.find("< 1 MiB               2     20.0%     30.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("all                   6      7.5%     30.0%"), std::string::npos) << text;
  const Json j = comparison_to_json(r, "s.json", "log.txt", 0);
  EXPECT_EQ(j["match"], "ring");
  EXPECT_EQ(j["rows"][0]["algorithm"], "ring");
  EXPECT_EQ(j["rows"][0]["measured_algorithm"], "nccl");
  ASSERT_EQ(j["bands"].size(), 4u);
  EXPECT_EQ(j["bands"][1]["min_bytes"], 1 << 20);
  EXPECT_EQ(j["bands"][1]["max_bytes"], 64 << 20);
  EXPECT_EQ(j["bands"][2]["max_bytes"], nullptr);
  EXPECT_DOUBLE_EQ(j["bands"][2]["worst_abs_error"].get<double>(), r.bands[2].worst_abs_error);
  // Without --match nothing of the above shows: the output of earlier uses.
  const CompareResult plain = compare_reports(predicted5(), measured5(), 0, "p.json", "m.json");
  EXPECT_TRUE(plain.bands.empty());
  EXPECT_EQ(format_comparison(plain, "p.json", "m.json").find("--match"), std::string::npos);
  EXPECT_FALSE(comparison_to_json(plain, "p.json", "m.json", 0).contains("bands"));
}

TEST(CompareMatch, AnEmptyBandPrintsADash) {
  CompareOptions o;
  o.match = "ring";
  o.bands = true;
  const CompareResult r =
      compare_reports(report(ReportMode::simulate, {row("ring", 1024, 11)}),
                      report(ReportMode::measure, {row("nccl", 1024, 10)}), o, "s.json", "m.json");
  EXPECT_EQ(r.bands[1].rows, 0u);
  const std::string text = format_comparison(r, "s.json", "m.json");
  EXPECT_NE(text.find("1 MiB - 64 MiB        0         -         -"), std::string::npos) << text;
}

TEST(CompareMatch, SaysWhatIsMissing) {
  CompareOptions o;
  o.match = "tree";
  try {
    compare_reports(predicted5(), measured5(), o, "s.json", "m.json");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--match tree: s.json has no row of algorithm 'tree'"),
              std::string::npos)
        << e.what();
  }
  o.match = "ring";
  try {
    compare_reports(predicted5(), measured5(), o, "s.json", "m.json");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--match ring: m.json has no row of algorithm 'nccl' or "
                                         "'native'"),
              std::string::npos)
        << e.what();
  }
}

// nccl-tests prints several rows of 0 bytes (all_gather of 8..64 B on 8
// ranks): repeats pair them by occurrence.
TEST(MedianOfRepeats, RepeatedRowsPairByOccurrence) {
  const Report a =
      report(ReportMode::measure, {row("nccl", 0, 1), row("nccl", 0, 10), row("nccl", 1024, 5)});
  const Report b =
      report(ReportMode::measure, {row("nccl", 0, 3), row("nccl", 0, 30), row("nccl", 1024, 7)});
  const Report m = median_of_repeats({a, b}, {"a.txt", "b.txt"});
  EXPECT_DOUBLE_EQ(m.results[0].time_us, 2);
  EXPECT_DOUBLE_EQ(m.results[1].time_us, 20);
  EXPECT_DOUBLE_EQ(m.results[2].time_us, 6);
}

}  // namespace
}  // namespace collkit
