// The report page's structure (one chart per group, a line per series, dashes
// for measurements, exact hover titles, no external references, escaping) and
// the CSV/Markdown forms of the same points.
#include "reports/html_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace collkit {
namespace {

ResultRow row(Collective c, const std::string& algo, std::int64_t bytes, double time_us,
              double busbw, bool in_place = false) {
  ResultRow r;
  r.collective = c;
  r.algorithm = algo;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.in_place = in_place;
  r.time_us = time_us;
  r.algbw_gbps = busbw / 2;
  r.busbw_gbps = busbw;
  return r;
}

Report simulated() {
  Report r;
  r.collkit_version = "0.1.0";
  r.mode = ReportMode::simulate;
  r.topology = TopologyInfo{"fc-8", "fc-8.json", ""};
  r.ranks = 8;
  r.results = {row(Collective::all_reduce, "ring", 1024, 10, 1.5),
               row(Collective::all_reduce, "ring", 1048576, 20, 80),
               row(Collective::all_reduce, "tree", 1024, 5, 3.0),
               row(Collective::all_reduce, "tree", 1048576, 40, 40),
               row(Collective::all_gather, "ring", 4096, 7, 2.0)};
  r.best = compute_best(r.results);
  return r;
}

Report measured() {
  Report r;
  r.collkit_version = "0.1.0";
  r.mode = ReportMode::measure;
  r.backend = Backend::mpi;
  r.ranks = 8;
  // In-place first: the out-of-place row of a size must still be plotted.
  r.results = {row(Collective::all_reduce, "ring", 1024, 12.345678901234567, 1.25, true),
               row(Collective::all_reduce, "ring", 1024, 11.5, 1.3),
               row(Collective::all_reduce, "ring", 1048576, 25, 64)};
  ResultRow dbl = row(Collective::all_reduce, "ring", 2048, 9, 3);
  dbl.dtype = DataType::float64;  // bench -d all: its own chart
  r.results.push_back(dbl);
  r.best = compute_best(r.results);
  return r;
}

std::vector<NamedReport> inputs() { return {{"s.json", simulated()}, {"m.json", measured()}}; }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(ChartGroups, GroupsByCollectiveDtypeAndOpNeverMixing) {
  const auto groups = build_chart_groups(inputs());
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].collective, Collective::all_reduce);
  EXPECT_EQ(groups[0].dtype, "float");
  EXPECT_EQ(groups[0].op, "sum");
  EXPECT_EQ(groups[1].collective, Collective::all_gather);
  EXPECT_EQ(groups[1].op, "none");  // all_gather does not reduce
  EXPECT_EQ(groups[2].collective, Collective::all_reduce);
  EXPECT_EQ(groups[2].dtype, "double");
  ASSERT_EQ(groups[0].series.size(), 3u);  // ring and tree simulated, ring measured
  EXPECT_EQ(groups[0].series[2].mode, ReportMode::measure);
  EXPECT_EQ(groups[0].series[2].label, "ring (measured)");
  EXPECT_EQ(groups[0].sizes, (std::vector<std::int64_t>{1024, 1048576}));
  EXPECT_EQ(groups[0].ranks, (std::vector<int>{8}));
}

TEST(ChartGroups, PlotsTheOutOfPlaceRowOfASize) {
  const auto groups = build_chart_groups(inputs());
  const ChartSeries& m = groups[0].series[2];
  ASSERT_EQ(m.points.size(), 2u);
  EXPECT_FALSE(m.points[0].in_place);
  EXPECT_DOUBLE_EQ(m.points[0].time_us, 11.5);
}

TEST(ChartGroups, BandsNameTheBestOfEachMode) {
  const auto groups = build_chart_groups(inputs());
  const ChartGroup& g = groups[0];
  ASSERT_EQ(g.bands.size(), 2u);
  EXPECT_EQ(g.bands[0].first, ReportMode::simulate);
  ASSERT_EQ(g.bands[0].second.size(), 2u);
  EXPECT_EQ(g.series[g.bands[0].second[0].series].algorithm, "tree");  // 3.0 > 1.5 GB/s
  EXPECT_EQ(g.series[g.bands[0].second[1].series].algorithm, "ring");  // 80 > 40 GB/s
  EXPECT_EQ(g.bands[1].first, ReportMode::measure);
  EXPECT_EQ(g.bands[1].second.size(), 2u);
}

TEST(ChartGroups, ColoursFollowTheAlgorithmAcrossCharts) {
  const auto groups = build_chart_groups(inputs());
  EXPECT_EQ(groups[0].series[0].colour, groups[0].series[2].colour);  // ring sim and measured
  EXPECT_NE(groups[0].series[0].colour, groups[0].series[1].colour);
  EXPECT_EQ(groups[1].series[0].colour, groups[0].series[0].colour);  // ring in all_gather
}

// Twenty-one algorithms over two collectives: globally the 1st and 21st
// share a palette slot, but no chart holds both, so each chart's colours are
// all different; where they would clash inside one chart, the later one
// moves (issue 40: colours repeated after ten series).
TEST(ChartGroups, ColoursWithinAChartNeverRepeatUpToTwenty) {
  Report s = simulated();
  s.results.clear();
  for (int a = 0; a < 21; ++a)
    s.results.push_back(row(a < 11 ? Collective::broadcast : Collective::reduce,
                            "algo" + std::to_string(a), 1024, 1, 1));
  // algo20 also runs broadcast, where algo0 has its slot.
  s.results.push_back(row(Collective::broadcast, "algo20", 2048, 1, 1));
  const auto groups = build_chart_groups({{"s.json", s}});
  ASSERT_EQ(groups.size(), 2u);
  for (const ChartGroup& g : groups) {
    std::set<int> slots;
    for (const ChartSeries& sr : g.series) slots.insert(sr.colour % 20);
    EXPECT_EQ(slots.size(), g.series.size()) << to_string(g.collective);
    for (const ChartSeries& sr : g.series) EXPECT_LT(sr.colour, 20) << "no other shapes below 20";
  }
  EXPECT_EQ(groups[0].series[0].colour, 0);  // algo0 keeps its global colour
  EXPECT_EQ(groups[0].series[11].algorithm, "algo20");
  EXPECT_EQ(groups[0].series[11].colour, 11);  // slot 0 taken: next free after 10
  EXPECT_EQ(groups[1].series[9].algorithm, "algo20");
  EXPECT_EQ(groups[1].series[9].colour, 0);  // free in the reduce chart
}

TEST(ChartGroups, NamesTheFileWhenAChartHasTwoOfAMode) {
  std::vector<NamedReport> in = {{"dir/a.json", simulated()}, {"b.json", simulated()}};
  const auto groups = build_chart_groups(in);
  ASSERT_EQ(groups[0].series.size(), 4u);
  EXPECT_EQ(groups[0].series[0].label, "ring (simulated, a.json)");
  EXPECT_EQ(groups[0].series[2].label, "ring (simulated, b.json)");
}

TEST(HtmlReport, TwoSvgsPerGroupAndAPathPerSeries) {
  const std::string html = render_html_report(inputs());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // busbw and time per group.
  EXPECT_EQ(count(html, "<svg"), 6u);
  EXPECT_EQ(count(html, "</svg>"), 6u);
  EXPECT_EQ(count(html, "<path "), 2 * (3u + 1u + 1u));  // all_reduce float, all_gather, double
  EXPECT_EQ(count(html, "<table>"), 3u + 1u);            // and the summary's
  EXPECT_EQ(count(html, "<section id=\"chart-"), 3u);
}

TEST(HtmlReport, MeasuredLinesAreDashedSimulatedSolid) {
  const std::string html = render_html_report(inputs());
  std::size_t dashed = 0, solid = 0;
  for (auto pos = html.find("<path "); pos != std::string::npos;
       pos = html.find("<path ", pos + 1)) {
    const std::string tag = html.substr(pos, html.find('>', pos) - pos);
    const std::string title = html.substr(pos, html.find("</path>", pos) - pos);
    const bool is_dashed = tag.find("stroke-dasharray") != std::string::npos;
    if (title.find("(measured)") != std::string::npos) {
      EXPECT_TRUE(is_dashed) << tag;
      ++dashed;
    } else {
      EXPECT_FALSE(is_dashed) << tag;
      ++solid;
    }
  }
  EXPECT_EQ(dashed, 2 * 2u);  // in the busbw and in the time chart
  EXPECT_EQ(solid, 2 * 3u);
}

// Hover titles print figures as the tables do (issue 40: raw doubles).
TEST(HtmlReport, TitlesCarryReadableValuesAxesUnitsAndALegend) {
  const std::string html = render_html_report(inputs());
  EXPECT_NE(
      html.find("<title>ring (measured): 2 KiB (2048 B), busbw 3.00 GB/s, time 9.00 us</title>"),
      std::string::npos);
  EXPECT_NE(html.find("busbw 80.00 GB/s, time 20.00 us"), std::string::npos);
  EXPECT_NE(html.find("busbw (GB/s)"), std::string::npos);
  EXPECT_NE(html.find("message size (bytes, log2 scale)"), std::string::npos);
  EXPECT_NE(html.find(">1 KiB</text>"), std::string::npos);
  EXPECT_NE(html.find(">1 MiB</text>"), std::string::npos);
  EXPECT_NE(html.find("class=\"legend\""), std::string::npos);
  EXPECT_NE(html.find("best, simulated"), std::string::npos);
  EXPECT_NE(html.find("best, measured"), std::string::npos);
}

TEST(HtmlReport, InPlaceOnlySizeShowsItsTime) {
  Report m = measured();
  m.results.erase(m.results.begin() + 1);  // leave 1 KiB in-place only
  const std::string html = render_html_report({{"m.json", m}});
  EXPECT_NE(html.find("1 KiB (1024 B, in-place), busbw 1.25 GB/s, time 12.35 us"),
            std::string::npos);
  EXPECT_EQ(html.find("12.345678"), std::string::npos) << "raw doubles on hover";
}

TEST(HtmlReport, SelfContainedWithoutScriptsOrLinks) {
  const std::string html = render_html_report(inputs());
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
}

TEST(HtmlReport, EscapesNamesFromTheFiles) {
  Report s = simulated();
  s.results[0].algorithm = "a<b>&\"c'";
  const std::string html = render_html_report({{"x<y>.json", s}});
  EXPECT_EQ(html.find("a<b>"), std::string::npos);
  EXPECT_EQ(html.find("x<y>"), std::string::npos);
  EXPECT_NE(html.find("a&lt;b&gt;&amp;&quot;c&#39;"), std::string::npos);
  EXPECT_NE(html.find("x&lt;y&gt;.json"), std::string::npos);
}

TEST(HtmlReport, ZeroByteRowsStayInTheTableOnly) {
  Report s = simulated();
  s.results = {row(Collective::barrier, "dissemination", 0, 3, 0)};
  const std::string html = render_html_report({{"s.json", s}});
  EXPECT_EQ(count(html, "<svg"), 2u);  // busbw and time, both empty
  EXPECT_EQ(count(html, "<path "), 0u);
  EXPECT_NE(html.find("no sizes above 0 bytes"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num best\" title=\"busbw 0.00 GB/s, time 3.00 us\">"),
            std::string::npos);
}

TEST(HtmlReport, ManySeriesGetAllPathsAndATallerChart) {
  Report s = simulated();
  s.results.clear();
  for (int a = 0; a < 30; ++a)
    s.results.push_back(row(Collective::all_reduce, "algo" + std::to_string(a), 1024, 1, 1));
  const std::string html = render_html_report({{"s.json", s}});
  EXPECT_EQ(count(html, "<path "), 2 * 30u);                  // busbw and time charts
  EXPECT_NE(html.find("height=\"588\""), std::string::npos);  // 20 + 28 + 30 x 18
  EXPECT_NE(html.find("<rect "), std::string::npos);          // squares past twenty colours
  // The legend draws each series' marker on its line: 30 per chart, and the
  // squares of series 20..29 among them.
  const std::size_t legend = html.find("<g class=\"legend\">");
  ASSERT_NE(legend, std::string::npos);
  const std::string first = html.substr(legend, html.find("</g>", legend) - legend);
  EXPECT_EQ(count(first, "<circle ") + count(first, "<rect "), 30u);
  EXPECT_EQ(count(first, "<rect "), 10u);
}

TEST(HtmlEscape, EscapesEveryMarkupCharacter) {
  EXPECT_EQ(html_escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

TEST(SizeLabel, UsesBinaryUnits) {
  EXPECT_EQ(size_label(512), "512 B");
  EXPECT_EQ(size_label(65536), "64 KiB");
  EXPECT_EQ(size_label(1 << 20), "1 MiB");
  EXPECT_EQ(size_label(std::int64_t{1} << 30), "1 GiB");
}

TEST(CsvReport, OneLinePerPointWithTheBestMarked) {
  const std::string csv = render_csv_report(inputs());
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "collective,dtype,op,file,mode,algorithm,bytes,in_place,time_us,busbw_gbps,best");
  EXPECT_NE(csv.find("\nall_reduce,float,sum,s.json,simulate,ring,1048576,false,20.0,80.0,1\n"),
            std::string::npos);
  EXPECT_NE(csv.find("\nall_reduce,float,sum,s.json,simulate,tree,1048576,false,40.0,40.0,0\n"),
            std::string::npos);
  EXPECT_NE(csv.find("\nall_reduce,float,sum,m.json,measure,ring,1024,false,11.5,1.3,1\n"),
            std::string::npos);
  EXPECT_NE(csv.find("\nall_gather,float,none,s.json,simulate,ring,4096,false,7.0,2.0,1\n"),
            std::string::npos);
  EXPECT_NE(csv.find("\nall_reduce,double,sum,m.json,measure,ring,2048,false,9.0,3.0,1\n"),
            std::string::npos);
  EXPECT_EQ(count(csv, "\n"), 1u + 4u + 2u + 1u + 1u);
}

TEST(MarkdownReport, AHeadingAndTablePerGroup) {
  const std::string md = render_markdown_report(inputs());
  EXPECT_EQ(count(md, "\n## "), 3u);
  EXPECT_NE(
      md.find("| size | bytes | ring (simulated) busbw (GB/s) | tree (simulated) busbw (GB/s) "
              "| ring (measured) busbw (GB/s) | best simulated | best measured |"),
      std::string::npos);
  EXPECT_NE(md.find("| 1 KiB | 1024 | 1.50 | 3.00 | 1.30 | tree | ring |"), std::string::npos);
  EXPECT_NE(md.find("| 1 MiB | 1048576 | 80.00 | 40.00 | 64.00 | ring | ring |"),
            std::string::npos);
}

}  // namespace
}  // namespace collkit

namespace collkit {
namespace {

std::vector<std::pair<double, double>> path_points(const std::string& d) {
  std::vector<std::pair<double, double>> out;
  std::istringstream in(d);
  std::string cmd;
  double x = 0, y = 0;
  while (in >> cmd >> y) {
    x = std::stod(cmd.substr(1));
    out.emplace_back(x, y);
  }
  return out;
}

// The time chart is log-log: a series whose time is proportional to size
// (1 us at 1 KiB, 1 ms at 1 MiB, 1 s at 1 GiB) is one straight line with
// the same slope between every pair of points, rising to the right; the y
// axis has a tick per power of ten from 10^0 to 10^6 us.
TEST(HtmlReport, TimeChartIsLogLog) {
  Report r;
  r.mode = ReportMode::simulate;
  r.ranks = 8;
  r.results = {row(Collective::all_reduce, "ring", 1024, 1, 1),
               row(Collective::all_reduce, "ring", 1 << 20, 1000, 1),
               row(Collective::all_reduce, "ring", 1 << 30, 1e6, 1)};
  const std::string html = render_html_report({{"s.json", r}});
  const std::size_t second = html.find("<svg", html.find("<svg") + 1);
  ASSERT_NE(second, std::string::npos);
  const std::string svg = html.substr(second, html.find("</svg>", second) - second);
  EXPECT_NE(svg.find("time (us, log10 scale)"), std::string::npos);
  for (const char* tick : {">1</text>", ">10</text>", ">1e+06</text>"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  const std::size_t d = svg.find("<path d=\"");
  ASSERT_NE(d, std::string::npos);
  const auto pts = path_points(svg.substr(d + 9, svg.find('"', d + 9) - d - 9));
  ASSERT_EQ(pts.size(), 3u);
  const double s1 = (pts[1].second - pts[0].second) / (pts[1].first - pts[0].first);
  const double s2 = (pts[2].second - pts[1].second) / (pts[2].first - pts[1].first);
  EXPECT_NEAR(s1, s2, 1e-3 * std::abs(s1));
  EXPECT_LT(pts[1].second, pts[0].second);  // more time is higher up
  // Both x steps are 10 powers of two; both y steps 3 decades: equal.
  EXPECT_NEAR(pts[1].first - pts[0].first, pts[2].first - pts[1].first, 0.02);
  EXPECT_NEAR(pts[0].second - pts[1].second, pts[1].second - pts[2].second, 0.02);
}

// Coinciding series stay visible: the series drawn first is wider with
// larger points than the one drawn over it.
TEST(HtmlReport, CoincidingSeriesShowAroundEachOther) {
  Report r;
  r.mode = ReportMode::simulate;
  r.ranks = 8;
  r.results = {row(Collective::all_reduce, "rabenseifner", 1024, 10, 1),
               row(Collective::all_reduce, "rabenseifner:blocks", 1024, 10, 1),
               row(Collective::all_reduce, "rabenseifner", 2048, 10, 2),
               row(Collective::all_reduce, "rabenseifner:blocks", 2048, 10, 2)};
  const std::string html = render_html_report({{"s.json", r}});
  const std::size_t first = html.find("stroke-width=\"5.00\"><title>rabenseifner (simulated)");
  const std::size_t second =
      html.find("stroke-width=\"2.00\"><title>rabenseifner:blocks (simulated)");
  EXPECT_NE(first, std::string::npos);
  EXPECT_NE(second, std::string::npos);
  EXPECT_LT(first, second);
  EXPECT_NE(html.find("r=\"6.00\""), std::string::npos);
  EXPECT_NE(html.find("r=\"3.50\""), std::string::npos);
}

}  // namespace
}  // namespace collkit

namespace collkit {
namespace {

// Several charts: a summary first, a row per chart linking to it, with the
// best of each mode at the smallest and largest size and the crossovers
// (from inputs(): simulated tree 3.0 > ring 1.5 at 1 KiB, ring 80 > tree 40
// at 1 MiB, so one simulated crossover; measured ring alone).
TEST(HtmlReport, ManyChartsGetASummaryFirst) {
  const std::string html = render_html_report(inputs());
  const std::size_t summary = html.find("<h2>Summary</h2>");
  ASSERT_NE(summary, std::string::npos);
  EXPECT_LT(summary, html.find("<svg"));
  for (const char* link : {"href=\"#chart-0\"", "href=\"#chart-1\"", "href=\"#chart-2\""})
    EXPECT_NE(html.find(link), std::string::npos) << link;
  EXPECT_NE(html.find("<section id=\"chart-2\">"), std::string::npos);
  EXPECT_NE(html.find("<td>tree (simulated, 3.00 GB/s); ring (measured, 1.30 GB/s)</td>"
                      "<td>ring (simulated, 80.00 GB/s); ring (measured, 64.00 GB/s)</td>"
                      "<td>1 simulated; 0 measured</td>"),
            std::string::npos)
      << html;
  // One chart with few series: no summary.
  Report one = simulated();
  one.results.resize(4);  // all_reduce only
  EXPECT_EQ(render_html_report({{"s.json", one}}).find("<h2>Summary</h2>"), std::string::npos);
}

// The legend toggles series without scripts: a checkbox per series before
// the charts, its label in the legend, and a rule that hides that series'
// lines and points in both charts while it is unchecked.
TEST(HtmlReport, LegendTogglesEverySeries) {
  const std::string html = render_html_report(inputs());
  EXPECT_EQ(count(html, "<input type=\"checkbox\" class=\"toggle\""), 5u);  // 3 + 1 + 1 series
  EXPECT_NE(html.find("#t0-1:not(:checked)~.charts .s1{display:none}"), std::string::npos);
  EXPECT_NE(html.find("<label for=\"t0-1\">"), std::string::npos);
  EXPECT_EQ(count(html, "<g class=\"series s1 simulated\">"), 2u);  // busbw and time
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // The rules sit in the head's style sheet.
  EXPECT_LT(html.find("#t0-0:not(:checked)"), html.find("</head>"));
}

// A measured row that failed its check (#wrong > 0) is a red cross titled
// with its count, not a point, and the input's line says how many failed;
// rows that passed stay ordinary points.
TEST(HtmlReport, FailedRowsAreMarked) {
  Report m = measured();
  m.results[1].wrong = 3;  // the out-of-place 1 KiB row: the one plotted
  const std::string page = render_html_report({{"m.json", m}});
  EXPECT_EQ(count(page, "class=\"failed\""), 2u) << "one cross per chart (busbw, time)";
  EXPECT_NE(page.find("FAILED its check: 3 wrong elements"), std::string::npos);
  EXPECT_NE(page.find("1 row(s) FAILED their check (#wrong &gt; 0)"), std::string::npos);
  const std::string clean = render_html_report({{"m.json", measured()}});
  EXPECT_EQ(count(clean, "class=\"failed\""), 0u);
  EXPECT_EQ(clean.find("FAILED their check"), std::string::npos);
}

}  // namespace
}  // namespace collkit
