#include "reports/heatmap.h"

#include <cstdio>

#include "reports/html_report.h"

namespace collkit {

std::vector<std::optional<std::size_t>> heatmap_best(const Heatmap& map) {
  std::vector<std::optional<std::size_t>> best(map.columns.size());
  for (std::size_t c = 0; c < map.columns.size(); ++c)
    for (std::size_t r = 0; r < map.rows.size(); ++r) {
      const std::optional<double>& v = map.cells[r][c].value;
      if (!v) continue;
      const std::optional<double>& b = best[c] ? map.cells[*best[c]][c].value : std::nullopt;
      if (!b || (map.higher_is_better ? *v > *b : *v < *b)) best[c] = r;
    }
  return best;
}

std::string render_heatmap_html(const Heatmap& map) {
  const std::vector<std::optional<std::size_t>> best = heatmap_best(map);
  // Shade: the column's best is the darkest, its worst the lightest.
  std::vector<double> lo(map.columns.size(), 0), hi(map.columns.size(), 0);
  for (std::size_t c = 0; c < map.columns.size(); ++c) {
    bool any = false;
    for (std::size_t r = 0; r < map.rows.size(); ++r)
      if (const std::optional<double>& v = map.cells[r][c].value) {
        lo[c] = any ? std::min(lo[c], *v) : *v;
        hi[c] = any ? std::max(hi[c], *v) : *v;
        any = true;
      }
  }
  std::string o = "<section class=\"heatmap\">\n<h2>" + html_escape(map.title) + "</h2>\n";
  if (!map.caption.empty()) o += "<p>" + html_escape(map.caption) + "</p>\n";
  o += "<table class=\"heat\">\n<tr><th>" + html_escape(map.corner) + "</th>";
  for (const std::string& c : map.columns) o += "<th>" + html_escape(c) + "</th>";
  o += "</tr>\n";
  for (std::size_t r = 0; r < map.rows.size(); ++r) {
    o += "<tr><th class=\"row\">" + html_escape(map.rows[r]) + "</th>";
    for (std::size_t c = 0; c < map.columns.size(); ++c) {
      const HeatmapCell& cell = map.cells[r][c];
      const bool is_best = best[c] && *best[c] == r;
      std::string style = "background:#eee;color:#777";
      if (cell.value) {
        double t = hi[c] > lo[c] ? (*cell.value - lo[c]) / (hi[c] - lo[c]) : 1.0;
        if (!map.higher_is_better) t = 1 - t;
        char buf[96];
        const int lightness = static_cast<int>(95 - 50 * t);
        std::snprintf(buf, sizeof buf, "background:hsl(210,70%%,%d%%);color:%s", lightness,
                      lightness < 62 ? "#fff" : "#222");
        style = buf;
      }
      o += "<td class=\"num" + std::string(is_best ? " best" : "") + "\" style=\"" + style +
           "\" title=\"" + html_escape(cell.detail) + "\">" + html_escape(cell.text) +
           (is_best ? " &#9733;" : "") + "</td>";
    }
    o += "</tr>\n";
  }
  o += "</table>\n</section>\n";
  return o;
}

}  // namespace collkit
