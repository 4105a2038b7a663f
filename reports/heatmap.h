// A heatmap as an HTML table: rows x columns of figures, each cell shaded by
// its figure relative to the others of its column, the best of each column
// marked. `collkit sweep` draws its grids with it (docs/SWEEP.md); the page
// around it is the report page's (html_page_start in html_report.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace collkit {

struct HeatmapCell {
  std::optional<double> value;  // none: no figure (drawn grey, never best)
  std::string text;             // what the cell shows
  std::string detail;           // its tooltip
};

struct Heatmap {
  std::string title;
  std::string caption;  // one paragraph under the title
  std::string corner;   // the header above the row labels
  std::vector<std::string> columns;
  std::vector<std::string> rows;
  std::vector<std::vector<HeatmapCell>> cells;  // [row][column]
  bool higher_is_better = true;
};

// The index of each column's best row (the first on a tie), none where the
// column has no figure.
std::vector<std::optional<std::size_t>> heatmap_best(const Heatmap& map);

// The stylesheet rules of heatmap tables (html_page_start's extra_css).
inline constexpr char kHeatmapCss[] =
    "table.heat td.best{outline:2px solid #c60;outline-offset:-2px}\n"
    "table.heat th.row{text-align:left;font-weight:normal}\n";

// One <section>: the title, the caption, and the table; the best cell of
// each column is bold, outlined and starred.
std::string render_heatmap_html(const Heatmap& map);

}  // namespace collkit
