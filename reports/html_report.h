// `collkit report`: simulated and measured reports drawn as busbw-against-size
// charts (one self-contained HTML file with inline SVG), or the same points as
// CSV or Markdown. Charts are grouped by (collective, dtype, op) so figures of
// different operations never share axes (docs/REPORTS.md, "collkit report").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "reports/report.h"

namespace collkit {

// A report and the path it was read from (the path labels its series).
struct NamedReport {
  std::string file;
  Report report;
};

// One plotted point: a row of one input report.
struct ChartPoint {
  std::int64_t bytes = 0;
  double time_us = 0;
  double busbw_gbps = 0;
  bool in_place = false;
  // Mismatching elements the run's check found (-1 = not checked): a row
  // with wrong > 0 failed its check and is drawn as a red cross (its time
  // is not the collective's).
  std::int64_t wrong = -1;
};

// One line of a chart: an algorithm of one input file. Colour follows the
// algorithm, the dash follows the mode, so the simulated and measured lines
// of an algorithm read as a pair.
struct ChartSeries {
  std::string algorithm;
  ReportMode mode = ReportMode::simulate;
  std::string file;
  std::string label;               // "ring (simulated)", with the file when a mode has several
  int colour = 0;                  // index into the palette, fixed per algorithm over all charts
  std::vector<ChartPoint> points;  // increasing bytes, one per size
};

// The best algorithm of one mode at one size (highest busbw over the
// series of that mode; the earlier series wins a tie).
struct BandCell {
  std::int64_t bytes = 0;
  std::size_t series = 0;  // index into ChartGroup::series
};

struct ChartGroup {
  Collective collective = Collective::all_reduce;
  std::string dtype;       // nccl-tests name
  std::string op;          // "none" for collectives that do not reduce
  std::vector<int> ranks;  // distinct rank counts of the inputs, for the title
  std::vector<ChartSeries> series;
  std::vector<std::int64_t> sizes;  // every size of the group, increasing
  // One band per mode present (simulated first), cells in increasing bytes.
  std::vector<std::pair<ReportMode, std::vector<BandCell>>> bands;
};

// Groups every row of `inputs` by (collective, effective dtype, op), in order
// of first appearance. A series plots the out-of-place row of each size and
// falls back to the in-place row only where a size has no out-of-place one
// (simulate writes out-of-place rows only; bench writes both).
std::vector<ChartGroup> build_chart_groups(const std::vector<NamedReport>& inputs);

// The whole page: no scripts, no external references.
std::string render_html_report(const std::vector<NamedReport>& inputs);
// One line per plotted point: collective,dtype,op,file,mode,algorithm,bytes,
// in_place,time_us,busbw_gbps,best (best = 1 when it is its mode's best).
std::string render_csv_report(const std::vector<NamedReport>& inputs);
// Per group a heading and the same table as under the HTML chart.
std::string render_markdown_report(const std::vector<NamedReport>& inputs);

// "512 B", "64 KiB", "1.5 MiB": the axis and table labels.
std::string size_label(std::int64_t bytes);
// The start of a self-contained page: doctype, the stylesheet every collkit
// page shares, <body> and an <h1> of `title`; the caller appends sections,
// then "</body>\n</html>\n" (the report page, collkit sweep's page).
// `extra_css`: rules of the page's own sections (kHeatmapCss, heatmap.h).
std::string html_page_start(const std::string& title, const std::string& extra_css = "");
// Escapes & < > " ' for HTML text and attributes.
std::string html_escape(const std::string& text);

}  // namespace collkit
