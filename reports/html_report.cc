#include "reports/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>

#include "reports/report_extra.h"
#include "reports/table.h"

namespace collkit {
namespace {

// Tableau 10 (qualitative, distinguishable for most colour-vision
// deficiencies, readable on white), then ten darker companions: twenty
// series of a chart differ by colour; past twenty the marker's shape tells
// them apart (circle, square, triangle, diamond), in the legend too.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
                                    "#1f3b73", "#a0522d", "#7b2d26", "#2e7d6b", "#33691e",
                                    "#8d6e00", "#5e3c7a", "#c2185b", "#4e342e", "#424242"};
constexpr int kPaletteSize = 20;
constexpr int kShapes = 4;

// Shortest round-trip decimal, as the JSON reports print numbers (the CSV).
std::string exact(double v) { return Json(v).dump(); }

// A figure as a reader wants it on hover: a time as the tables print it
// (2 decimals below 100 us, 1 below 10000, none above), a bandwidth with 2.
std::string readable_time(double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", us < 100 ? 2 : us < 10000 ? 1 : 0, us);
  return buf;
}
std::string readable_gbps(double gbps) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", gbps);
  return buf;
}

std::string fixed(double v, int digits);

// One marker: a circle, square, triangle or diamond of radius `r` at (x, y).
std::string marker(int shape, double x, double y, double r, const std::string& fill,
                   const std::string& stroke, const std::string& title) {
  const std::string paint = "fill=\"" + fill + "\" stroke=\"" + stroke + "\" stroke-width=\"1.5\"";
  const std::string t = title.empty() ? "/>\n" : "><title>" + title + "</title>";
  switch (shape % kShapes) {
    case 1:
      return "<rect x=\"" + fixed(x - r, 2) + "\" y=\"" + fixed(y - r, 2) + "\" width=\"" +
             fixed(2 * r, 2) + "\" height=\"" + fixed(2 * r, 2) + "\" " + paint + t +
             (title.empty() ? "" : "</rect>\n");
    case 2:
      return "<path d=\"M" + fixed(x, 2) + " " + fixed(y - 1.2 * r, 2) + " L" +
             fixed(x + 1.1 * r, 2) + " " + fixed(y + 0.8 * r, 2) + " L" + fixed(x - 1.1 * r, 2) +
             " " + fixed(y + 0.8 * r, 2) + " Z\" class=\"marker\" " + paint + t +
             (title.empty() ? "" : "</path>\n");
    case 3:
      return "<path d=\"M" + fixed(x, 2) + " " + fixed(y - 1.3 * r, 2) + " L" +
             fixed(x + 1.3 * r, 2) + " " + fixed(y, 2) + " L" + fixed(x, 2) + " " +
             fixed(y + 1.3 * r, 2) + " L" + fixed(x - 1.3 * r, 2) + " " + fixed(y, 2) +
             " Z\" class=\"marker\" " + paint + t + (title.empty() ? "" : "</path>\n");
    default:
      return "<circle cx=\"" + fixed(x, 2) + "\" cy=\"" + fixed(y, 2) + "\" r=\"" + fixed(r, 2) +
             "\" " + paint + t + (title.empty() ? "" : "</circle>\n");
  }
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string mode_word(ReportMode m) { return m == ReportMode::simulate ? "simulated" : "measured"; }

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const ChartPoint* point_at(const ChartSeries& s, std::int64_t bytes) {
  for (const ChartPoint& p : s.points)
    if (p.bytes == bytes) return &p;
  return nullptr;
}

std::string group_title(const ChartGroup& g) {
  std::string t = std::string(to_string(g.collective)) + " \xC2\xB7 " + g.dtype;
  if (g.op != "none") t += " \xC2\xB7 " + g.op;
  t += " \xC2\xB7 ";
  for (std::size_t i = 0; i < g.ranks.size(); ++i) t += (i ? "/" : "") + std::to_string(g.ranks[i]);
  t += " ranks";
  return t;
}

// Per (group, series) the best algorithm's series index at each size, by mode.
std::vector<BandCell> band_for(const ChartGroup& g, ReportMode mode) {
  std::vector<BandCell> cells;
  for (std::int64_t bytes : g.sizes) {
    std::size_t best = g.series.size();
    double best_bw = -1;
    for (std::size_t i = 0; i < g.series.size(); ++i) {
      if (g.series[i].mode != mode) continue;
      const ChartPoint* p = point_at(g.series[i], bytes);
      if (p && p->busbw_gbps > best_bw) {
        best_bw = p->busbw_gbps;
        best = i;
      }
    }
    if (best < g.series.size()) cells.push_back({bytes, best});
  }
  return cells;
}

bool is_best(const ChartGroup& g, std::size_t series, std::int64_t bytes) {
  for (const auto& [mode, cells] : g.bands)
    for (const BandCell& c : cells)
      if (c.bytes == bytes && c.series == series) return true;
  return false;
}

// Round up to 1, 2 or 5 x 10^k so the y ticks land on readable numbers.
double nice_ceiling(double v) {
  if (v <= 0) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= v) return m * mag;
  return 10 * mag;
}

// Chart geometry in SVG user units.
struct Frame {
  double width = 980, height = 460;
  double left = 70, right = 280, top = 20, bottom = 60;  // legend sits in `right`
  double band_h = 14;
  int bands = 0;
  double lo = 0, hi = 1;  // log2 of the smallest and largest plotted size
  double ymax = 1;
  // The time chart: y on a log10 scale from 10^ylo to 10^yhi microseconds.
  bool log_y = false;
  double ylo = 0, yhi = 1;
  double plot_w() const { return width - left - right; }
  double plot_bottom() const { return height - bottom - bands * (band_h + 4); }
  double plot_h() const { return plot_bottom() - top; }
  double x(std::int64_t bytes) const {
    const double l = std::log2(static_cast<double>(bytes));
    return hi > lo ? left + (l - lo) / (hi - lo) * plot_w() : left + plot_w() / 2;
  }
  double y(double v) const {
    if (log_y) return plot_bottom() - (std::log10(v) - ylo) / (yhi - ylo) * plot_h();
    return plot_bottom() - v / ymax * plot_h();
  }
};

// What a chart plots against size: busbw (linear axis, with the best
// bands under it) or time (log-log, where every size of a sweep is visible
// and a line's slope says whether latency or bandwidth dominates).
enum class ChartKind : std::uint8_t { busbw, time };

double value_of(const ChartPoint& p, ChartKind kind) {
  return kind == ChartKind::time ? p.time_us : p.busbw_gbps;
}

// The chart's frame: its height for the legend, the plotted sizes' log2
// span, the y range (busbw from 0, or time in decades).
Frame chart_frame(const ChartGroup& g, ChartKind kind, std::vector<std::int64_t>& plotted) {
  Frame f;
  const bool time = kind == ChartKind::time;
  f.log_y = time;
  f.bands = time ? 0 : static_cast<int>(g.bands.size());
  // A long legend makes the chart taller rather than running off the bottom.
  f.height = std::max(f.height, f.top + 28 + 18.0 * static_cast<double>(g.series.size()));
  double ymax = 0;
  for (std::int64_t b : g.sizes)
    if (b > 0) plotted.push_back(b);
  double tmin = 0, tmax = 0;
  for (const ChartSeries& s : g.series)
    for (const ChartPoint& p : s.points) {
      ymax = std::max(ymax, p.busbw_gbps);
      if (p.bytes > 0 && p.time_us > 0) {
        tmin = tmin == 0 ? p.time_us : std::min(tmin, p.time_us);
        tmax = std::max(tmax, p.time_us);
      }
    }
  f.ymax = nice_ceiling(ymax);
  if (time && tmax > 0) {
    f.ylo = std::floor(std::log10(tmin));
    f.yhi = std::max(f.ylo + 1, std::ceil(std::log10(tmax)));
  }
  if (!plotted.empty()) {
    f.lo = std::floor(std::log2(static_cast<double>(plotted.front())));
    f.hi = std::ceil(std::log2(static_cast<double>(plotted.back())));
  }
  return f;
}

// The grid, ticks, axes and their labels.
void draw_axes(const Frame& f, ChartKind kind, bool any_plotted, std::string& o) {
  const bool time = kind == ChartKind::time;
  const double pb = f.plot_bottom();
  o += "<g class=\"grid\">\n";
  const int yticks = time ? static_cast<int>(f.yhi - f.ylo) : 5;
  for (int i = 0; i <= yticks; ++i) {
    const double v = time ? std::pow(10.0, f.ylo + i) : f.ymax * i / 5;
    const double y = f.y(v);
    o += "<line x1=\"" + fixed(f.left, 1) + "\" y1=\"" + fixed(y, 1) + "\" x2=\"" +
         fixed(f.left + f.plot_w(), 1) + "\" y2=\"" + fixed(y, 1) + "\"/>\n";
    char label[32];
    std::snprintf(label, sizeof label, "%g", v);
    o += "<text class=\"ytick\" x=\"" + fixed(f.left - 6, 1) + "\" y=\"" + fixed(y + 4, 1) +
         "\" text-anchor=\"end\">" + label + "</text>\n";
  }
  if (any_plotted) {
    // At most ~12 labelled powers of two so labels never overlap.
    const int span = static_cast<int>(f.hi - f.lo);
    const int step = std::max(1, (span + 11) / 12);
    for (int e = static_cast<int>(f.lo); e <= static_cast<int>(f.hi); e += step) {
      const std::int64_t b = std::int64_t{1} << e;
      const double x = f.x(b);
      o += "<line x1=\"" + fixed(x, 1) + "\" y1=\"" + fixed(f.top, 1) + "\" x2=\"" + fixed(x, 1) +
           "\" y2=\"" + fixed(pb, 1) + "\"/>\n";
      o += "<text class=\"xtick\" x=\"" + fixed(x, 1) + "\" y=\"" + fixed(pb + 16, 1) +
           "\" text-anchor=\"middle\">" + html_escape(size_label(b)) + "</text>\n";
    }
  }
  o += "</g>\n";
  o += "<line class=\"axis\" x1=\"" + fixed(f.left, 1) + "\" y1=\"" + fixed(pb, 1) + "\" x2=\"" +
       fixed(f.left + f.plot_w(), 1) + "\" y2=\"" + fixed(pb, 1) + "\"/>\n";
  o += "<line class=\"axis\" x1=\"" + fixed(f.left, 1) + "\" y1=\"" + fixed(f.top, 1) + "\" x2=\"" +
       fixed(f.left, 1) + "\" y2=\"" + fixed(pb, 1) + "\"/>\n";
  o += "<text class=\"axis-label\" x=\"" + fixed(f.left + f.plot_w() / 2, 1) + "\" y=\"" +
       fixed(f.height - 8, 1) +
       "\" text-anchor=\"middle\">message size (bytes, log2 scale)</text>\n";
  o += "<text class=\"axis-label\" transform=\"translate(16 " + fixed(f.top + f.plot_h() / 2, 1) +
       ") rotate(-90)\" text-anchor=\"middle\">" +
       (time ? "time (us, log10 scale)" : "busbw (GB/s)") + "</text>\n";
  if (!any_plotted)
    o += "<text x=\"" + fixed(f.left + f.plot_w() / 2, 1) + "\" y=\"" +
         fixed(f.top + f.plot_h() / 2, 1) +
         "\" text-anchor=\"middle\">no sizes above 0 bytes to plot; see the table</text>\n";
}

// Every series: its line and a marker per point (a red cross where the
// check failed).
void draw_series(const ChartGroup& g, const Frame& f, ChartKind kind, std::string& o) {
  const bool time = kind == ChartKind::time;
  // Series drawn earlier are wider and have larger points, so a series
  // that coincides with a later one (rabenseifner and rabenseifner:blocks)
  // still shows around it.
  const std::size_t n_series = g.series.size();
  for (std::size_t si = 0; si < n_series; ++si) {
    const ChartSeries& s = g.series[si];
    const double spread =
        n_series > 1 ? static_cast<double>(n_series - 1 - si) / static_cast<double>(n_series - 1)
                     : 0.0;
    const double width = 2 + 3 * spread;
    const double radius = 3.5 + 2.5 * spread;
    const char* colour = kPalette[s.colour % kPaletteSize];
    auto plotted_point = [&](const ChartPoint& p) {
      return p.bytes > 0 && (!time || p.time_us > 0);
    };
    std::string d;
    for (const ChartPoint& p : s.points) {
      if (!plotted_point(p)) continue;
      d += (d.empty() ? "M" : " L") + fixed(f.x(p.bytes), 2) + " " +
           fixed(f.y(value_of(p, kind)), 2);
    }
    o += "<g class=\"series s" + std::to_string(si) + " " +
         std::string(s.mode == ReportMode::simulate ? "simulated" : "measured") + "\">\n";
    if (!d.empty())
      o += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"" +
           fixed(width, 2) + "\"" +
           (s.mode == ReportMode::measure ? " stroke-dasharray=\"6 4\"" : "") + "><title>" +
           html_escape(s.label) + "</title></path>\n";
    for (const ChartPoint& p : s.points) {
      if (!plotted_point(p)) continue;
      const std::string title =
          html_escape(s.label + ": " + size_label(p.bytes) + " (" + std::to_string(p.bytes) + " B" +
                      (p.in_place ? ", in-place" : "") + "), busbw " + readable_gbps(p.busbw_gbps) +
                      " GB/s, time " + readable_time(p.time_us) + " us");
      const double x = f.x(p.bytes), y = f.y(value_of(p, kind));
      if (p.wrong > 0) {
        // A failed check: a red cross, titled with the count.
        const std::string r = fixed(radius + 1, 2);
        o += "<path class=\"failed\" d=\"M" + fixed(x, 2) + " " + fixed(y, 2) + " m-" + r + " -" +
             r + " l" + fixed(2 * (radius + 1), 2) + " " + fixed(2 * (radius + 1), 2) + " m0 -" +
             fixed(2 * (radius + 1), 2) + " l-" + fixed(2 * (radius + 1), 2) + " " +
             fixed(2 * (radius + 1), 2) + "\" stroke=\"#d00\" stroke-width=\"2.5\"><title>" +
             title + ", FAILED its check: " + std::to_string(p.wrong) +
             " wrong elements</title></path>\n";
        continue;
      }
      // Past twenty series colours repeat; the shape tells them apart.
      o += marker(s.colour / kPaletteSize, x, y, radius,
                  s.mode == ReportMode::measure ? std::string("white") : std::string(colour),
                  colour, title);
    }
    o += "</g>\n";
  }
}

// Best-algorithm bands under the x axis (busbw charts).
void draw_bands(const ChartGroup& g, const Frame& f, std::string& o) {
  const double pb = f.plot_bottom();
  // Each cell spans half-way to its neighbours, so a change of colour
  // marks the crossover.
  for (std::size_t b = 0; b < g.bands.size(); ++b) {
    const auto& [mode, cells] = g.bands[b];
    const double y = pb + 28 + static_cast<double>(b) * (f.band_h + 4);
    // Labelled right of the plot, where the legend column leaves room.
    o += "<g class=\"band\">\n<text x=\"" + fixed(f.left + f.plot_w() + 8, 1) + "\" y=\"" +
         fixed(y + f.band_h - 3, 1) + "\">best, " + mode_word(mode) + "</text>\n";
    std::vector<BandCell> pos;
    for (const BandCell& c : cells)
      if (c.bytes > 0) pos.push_back(c);
    for (std::size_t i = 0; i < pos.size(); ++i) {
      const double x = f.x(pos[i].bytes);
      const double x0 = i == 0 ? f.left : (f.x(pos[i - 1].bytes) + x) / 2;
      const double x1 = i + 1 == pos.size() ? f.left + f.plot_w() : (x + f.x(pos[i + 1].bytes)) / 2;
      const ChartSeries& s = g.series[pos[i].series];
      const ChartPoint* p = point_at(s, pos[i].bytes);
      o += "<rect x=\"" + fixed(x0, 2) + "\" y=\"" + fixed(y, 1) + "\" width=\"" +
           fixed(std::max(x1 - x0, 0.5), 2) + "\" height=\"" + fixed(f.band_h, 1) + "\" fill=\"" +
           kPalette[s.colour % kPaletteSize] + "\"><title>" +
           html_escape("best " + mode_word(mode) + " at " + size_label(pos[i].bytes) + " (" +
                       std::to_string(pos[i].bytes) + " B): " + s.label + ", busbw " +
                       readable_gbps(p->busbw_gbps) + " GB/s, time " + readable_time(p->time_us) +
                       " us") +
           "</title></rect>\n";
    }
    o += "</g>\n";
  }
}

// The legend: colour (and past twenty, shape) per algorithm, dash per
// mode, the series' marker on its line.
void draw_legend(const ChartGroup& g, const Frame& f, std::string& o) {
  const double lx = f.width - f.right + 16;
  o += "<g class=\"legend\">\n";
  for (std::size_t i = 0; i < g.series.size(); ++i) {
    const ChartSeries& s = g.series[i];
    const double y = f.top + 8 + static_cast<double>(i) * 18;
    o += "<line x1=\"" + fixed(lx, 1) + "\" y1=\"" + fixed(y, 1) + "\" x2=\"" + fixed(lx + 24, 1) +
         "\" y2=\"" + fixed(y, 1) + "\" stroke=\"" + kPalette[s.colour % kPaletteSize] +
         "\" stroke-width=\"2\"" +
         (s.mode == ReportMode::measure ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
    const std::string colour = kPalette[s.colour % kPaletteSize];
    o += marker(s.colour / kPaletteSize, lx + 12, y, 3.5,
                s.mode == ReportMode::measure ? std::string("white") : colour, colour, "");
    o += "<text x=\"" + fixed(lx + 30, 1) + "\" y=\"" + fixed(y + 4, 1) + "\">" +
         html_escape(s.label) + "</text>\n";
  }
}

std::string render_svg(const ChartGroup& g, ChartKind kind) {
  const bool time = kind == ChartKind::time;
  std::vector<std::int64_t> plotted;
  const Frame f = chart_frame(g, kind, plotted);
  const std::string what = time ? "time against message size" : "busbw against message size";
  std::string o;
  o += "<svg class=\"chart\" viewBox=\"0 0 " + fixed(f.width, 0) + " " + fixed(f.height, 0) +
       "\" width=\"" + fixed(f.width, 0) + "\" height=\"" + fixed(f.height, 0) +
       "\" role=\"img\" aria-label=\"" + html_escape(what + ": " + group_title(g)) + "\">\n";
  o += "<title>" +
       html_escape((time ? "time (us, log scale)" : "busbw (GB/s)") +
                   std::string(" against message size: ") + group_title(g)) +
       "</title>\n";
  draw_axes(f, kind, !plotted.empty(), o);
  draw_series(g, f, kind, o);
  if (!time) draw_bands(g, f, o);
  draw_legend(g, f, o);
  o += "</g>\n</svg>\n";
  return o;
}

// The table under a chart (and the Markdown table): a row per size, a column
// per series, the best of each mode marked.
struct TableCells {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

TableCells table_cells(const ChartGroup& g) {
  TableCells t;
  t.header = {"size", "bytes"};
  for (const ChartSeries& s : g.series) t.header.push_back(s.label + " busbw (GB/s)");
  for (const auto& [mode, cells] : g.bands) t.header.push_back("best " + mode_word(mode));
  for (std::int64_t bytes : g.sizes) {
    std::vector<std::string> row = {size_label(bytes), std::to_string(bytes)};
    for (const ChartSeries& s : g.series) {
      const ChartPoint* p = point_at(s, bytes);
      row.push_back(p ? fixed(p->busbw_gbps, 2) : "");
    }
    for (const auto& [mode, cells] : g.bands) {
      std::string name;
      for (const BandCell& c : cells)
        if (c.bytes == bytes) name = g.series[c.series].algorithm;
      row.push_back(name);
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string render_table_html(const ChartGroup& g) {
  std::string o = "<table>\n<thead><tr>";
  const TableCells t = table_cells(g);
  for (const std::string& h : t.header) o += "<th>" + html_escape(h) + "</th>";
  o += "</tr></thead>\n<tbody>\n";
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    o += "<tr>";
    const std::int64_t bytes = g.sizes[r];
    for (std::size_t c = 0; c < t.rows[r].size(); ++c) {
      const std::size_t si = c - 2;
      if (c >= 2 && si < g.series.size()) {
        // Exact figures on hover; the best of its mode in bold.
        const ChartPoint* p = point_at(g.series[si], bytes);
        if (!p) {
          o += "<td></td>";
          continue;
        }
        o += std::string("<td class=\"num") + (is_best(g, si, bytes) ? " best" : "") +
             "\" title=\"" +
             html_escape("busbw " + readable_gbps(p->busbw_gbps) + " GB/s, time " +
                         readable_time(p->time_us) + " us") +
             "\">" + html_escape(t.rows[r][c]) + "</td>";
      } else {
        o += std::string(c < 2 ? "<td class=\"num\">" : "<td>") + html_escape(t.rows[r][c]) +
             "</td>";
      }
    }
    o += "</tr>\n";
  }
  return o + "</tbody>\n</table>\n";
}

// Past this many series in one chart the page starts with a summary.
constexpr std::size_t kSummarySeries = 8;

// One row per chart: series, sizes, the best algorithm of each mode at the
// smallest and the largest size, and where the best changes.
std::string render_summary(const std::vector<ChartGroup>& groups) {
  std::string o =
      "<section class=\"summary\">\n<h2>Summary</h2>\n<table>\n<thead><tr><th>chart</th>"
      "<th>series</th><th>sizes</th><th>best at the smallest size</th><th>best at the largest "
      "size</th><th>crossovers</th></tr></thead>\n<tbody>\n";
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const ChartGroup& g = groups[k];
    std::string sizes = std::to_string(g.sizes.size());
    if (!g.sizes.empty())
      sizes += " (" + size_label(g.sizes.front()) +
               (g.sizes.size() > 1 ? " to " + size_label(g.sizes.back()) : std::string()) + ")";
    std::string small, large, cross;
    for (const auto& [band_mode, cells] : g.bands) {
      if (cells.empty()) continue;
      const ReportMode mode = band_mode;  // a lambda may not capture a binding (C++17)
      const auto name = [&](const BandCell& c) {
        const ChartPoint* p = point_at(g.series[c.series], c.bytes);
        return g.series[c.series].algorithm + " (" + mode_word(mode) + ", " +
               fixed(p ? p->busbw_gbps : 0, 2) + " GB/s)";
      };
      small += (small.empty() ? "" : "; ") + name(cells.front());
      large += (large.empty() ? "" : "; ") + name(cells.back());
      int changes = 0;
      for (std::size_t i = 1; i < cells.size(); ++i)
        changes += g.series[cells[i].series].algorithm != g.series[cells[i - 1].series].algorithm;
      cross += (cross.empty() ? "" : "; ") + std::to_string(changes) + " " + mode_word(mode);
    }
    o += "<tr><td><a href=\"#chart-" + std::to_string(k) + "\">" + html_escape(group_title(g)) +
         "</a></td><td class=\"num\">" + std::to_string(g.series.size()) + "</td><td>" +
         html_escape(sizes) + "</td><td>" + html_escape(small) + "</td><td>" + html_escape(large) +
         "</td><td>" + html_escape(cross) + "</td></tr>\n";
  }
  return o + "</tbody>\n</table>\n</section>\n";
}

std::string markdown_cell(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
  return o;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string o;
  o.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string size_label(std::int64_t bytes) { return format_bytes_human(bytes); }

std::vector<ChartGroup> build_chart_groups(const std::vector<NamedReport>& inputs) {
  // Colours by algorithm over all inputs, so "ring" is one colour everywhere.
  std::map<std::string, int> colour_of;
  for (const NamedReport& in : inputs) {
    for (const ResultRow& r : in.report.results)
      colour_of.emplace(r.algorithm, static_cast<int>(colour_of.size()));
  }
  std::vector<ChartGroup> groups;
  auto group_for = [&](Collective c, const std::string& dtype,
                       const std::string& op) -> ChartGroup& {
    for (ChartGroup& g : groups)
      if (g.collective == c && g.dtype == dtype && g.op == op) return g;
    ChartGroup g;
    g.collective = c;
    g.dtype = dtype;
    g.op = op;
    groups.push_back(std::move(g));
    return groups.back();
  };
  for (const NamedReport& in : inputs) {
    const Report& rep = in.report;
    for (const ResultRow& r : rep.results) {
      const std::string dtype(to_string(r.dtype.value_or(rep.dtype)));
      const std::string op = redop_column(r.collective, r.op.value_or(rep.op));
      ChartGroup& g = group_for(r.collective, dtype, op);
      if (std::find(g.ranks.begin(), g.ranks.end(), rep.ranks) == g.ranks.end())
        g.ranks.push_back(rep.ranks);
      auto it = std::find_if(g.series.begin(), g.series.end(), [&](const ChartSeries& s) {
        return s.algorithm == r.algorithm && s.file == in.file && s.mode == rep.mode;
      });
      if (it == g.series.end()) {
        ChartSeries s;
        s.algorithm = r.algorithm;
        s.mode = rep.mode;
        s.file = in.file;
        s.label = r.algorithm + " (" + mode_word(rep.mode) + ")";
        s.colour = colour_of.at(r.algorithm);
        g.series.push_back(std::move(s));
        it = g.series.end() - 1;
      }
      auto p = std::find_if(it->points.begin(), it->points.end(),
                            [&](const ChartPoint& q) { return q.bytes == r.bytes; });
      const ChartPoint point{r.bytes, r.time_us, r.busbw_gbps, r.in_place, r.wrong};
      if (p == it->points.end())
        it->points.push_back(point);
      else if (p->in_place && !r.in_place)
        *p = point;  // out-of-place is the primary figure, as in nccl-tests
    }
  }
  for (ChartGroup& g : groups) {
    std::sort(g.ranks.begin(), g.ranks.end());
    // Within a chart every algorithm needs its own colour. Each keeps its
    // global colour where no other algorithm of the chart has it; a clash
    // takes the next free colour; only past twenty algorithms in one chart
    // do colours repeat (with other marker shapes, see render_svg).
    {
      std::set<int> globals;
      for (const ChartSeries& s : g.series) globals.insert(s.colour);
      std::map<int, int> chart_colour;
      std::vector<bool> used(kPaletteSize, false);
      int round = 0, in_round = 0;
      for (int global : globals) {
        if (in_round == kPaletteSize) {
          used.assign(kPaletteSize, false);
          ++round;
          in_round = 0;
        }
        int slot = global % kPaletteSize;
        while (used[static_cast<std::size_t>(slot)]) slot = (slot + 1) % kPaletteSize;
        used[static_cast<std::size_t>(slot)] = true;
        ++in_round;
        chart_colour[global] = slot + kPaletteSize * round;
      }
      for (ChartSeries& s : g.series) s.colour = chart_colour.at(s.colour);
    }
    // The file names a series only where one chart has several files of a
    // mode; otherwise it would only lengthen the legend.
    std::map<ReportMode, std::set<std::string>> files;
    for (const ChartSeries& s : g.series) files[s.mode].insert(s.file);
    for (ChartSeries& s : g.series)
      if (files[s.mode].size() > 1)
        s.label = s.algorithm + " (" + mode_word(s.mode) + ", " + base_name(s.file) + ")";
    std::set<std::int64_t> sizes;
    for (ChartSeries& s : g.series) {
      std::sort(s.points.begin(), s.points.end(),
                [](const ChartPoint& a, const ChartPoint& b) { return a.bytes < b.bytes; });
      for (const ChartPoint& p : s.points) sizes.insert(p.bytes);
    }
    g.sizes.assign(sizes.begin(), sizes.end());
    for (ReportMode m : {ReportMode::simulate, ReportMode::measure}) {
      const bool present = std::any_of(g.series.begin(), g.series.end(),
                                       [m](const ChartSeries& s) { return s.mode == m; });
      if (present) g.bands.emplace_back(m, band_for(g, m));
    }
  }
  return groups;
}

std::string html_page_start(const std::string& title, const std::string& extra_css) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         html_escape(title) +
         "</title>\n<style>\n"
         "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}\n"
         "svg.chart{display:block;max-width:100%;height:auto;font-size:12px}\n"
         ".grid line{stroke:#e4e4e4}\n.axis{stroke:#444}\n"
         ".axis-label{font-size:13px;fill:#333}\n"
         "circle:hover,rect:hover{stroke:#000;stroke-width:2}\n"
         "table{border-collapse:collapse;margin:8px 0 32px;font-size:13px}\n"
         "th,td{border:1px solid #ccc;padding:3px 8px}\nth{background:#f3f3f3}\n"
         "td.num{text-align:right;font-variant-numeric:tabular-nums}\ntd.best{font-weight:bold}\n"
         "input.toggle{position:absolute;opacity:0;pointer-events:none}\n"
         ".toggles{font-size:13px;margin:4px 0 8px}\n"
         ".toggles label{cursor:pointer;margin-right:14px;white-space:nowrap}\n"
         ".swatch{display:inline-block;width:22px;margin-right:5px;vertical-align:middle;"
         "border-top:3px solid}\n.swatch.dashed{border-top-style:dashed}\n" +
         extra_css + "</style>\n</head>\n<body>\n<h1>" + html_escape(title) + "</h1>\n";
}

std::string render_html_report(const std::vector<NamedReport>& inputs) {
  const std::vector<ChartGroup> groups = build_chart_groups(inputs);
  std::string o = html_page_start("collkit report");

  o += "<p>Per chart: busbw against message size, then time against message size on "
       "log-log axes (every size visible; a slope of 1 means bandwidth-bound, 0 "
       "latency-bound). Solid lines and filled points are "
       "simulated, dashed lines and hollow points measured; the bands under each busbw chart show "
       "the fastest algorithm per size. Hover a point for its exact figures. Where a size has "
       "an out-of-place row it is plotted, else the in-place one. Lines drawn first are wider, "
       "so a series hidden under another one shows around it.</p>\n<ul class=\"inputs\">\n";
  for (const NamedReport& in : inputs) {
    const Report& r = in.report;
    std::string desc = in.file + ": " + mode_word(r.mode) + ", backend " +
                       std::string(to_string(r.backend)) + ", " + std::to_string(r.ranks) +
                       " ranks";
    if (r.topology) desc += ", topology " + r.topology->name;
    if (!r.collkit_version.empty()) {
      desc += ", collkit " + r.collkit_version;
    } else if (const std::optional<std::string> format = extra_string(r, "source_format")) {
      // Another tool's file (nccl-tests): say which, and its versions.
      desc += ", " + *format;
      for (const auto& [key, label] :
           {std::pair<const char*, const char*>{"nccl_tests_version", " version "},
            {"nccl_version", ", NCCL "}})
        if (const std::optional<std::string> v = extra_string(r, key)) desc += label + *v;
    }
    std::int64_t failed = 0;
    for (const ResultRow& row : r.results) failed += row.wrong > 0 ? 1 : 0;
    if (failed > 0)
      desc += "; " + std::to_string(failed) + " row(s) FAILED their check (#wrong > 0): drawn " +
              "as red crosses, left out of compare and calibrate";
    o += "<li>" + html_escape(desc) + "</li>\n";
  }
  o += "</ul>\n";
  if (groups.empty()) o += "<p>The inputs hold no result rows.</p>\n";
  // Many charts, or many series in one: a summary first, one row per chart
  // with a link to it.
  bool many_series = false;
  for (const ChartGroup& g : groups) many_series = many_series || g.series.size() > kSummarySeries;
  if (groups.size() > 1 || many_series) o += render_summary(groups);
  // Legend toggles without scripts: a hidden checkbox per series precedes
  // the charts, its label is the legend entry, and a CSS rule per series
  // hides its lines and points while unchecked.
  std::string css;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const ChartGroup& g = groups[k];
    const std::string id = "chart-" + std::to_string(k);
    o += "<section id=\"" + id + "\">\n<h2>" + html_escape(group_title(g)) + "</h2>\n";
    std::string labels;
    for (std::size_t i = 0; i < g.series.size(); ++i) {
      const std::string t = "t" + std::to_string(k) + "-" + std::to_string(i);
      o += "<input type=\"checkbox\" class=\"toggle\" id=\"" + t + "\" checked>\n";
      const ChartSeries& s = g.series[i];
      labels += "<label for=\"" + t + "\"><span class=\"swatch" +
                (s.mode == ReportMode::measure ? std::string(" dashed") : std::string()) +
                "\" style=\"border-color:" + kPalette[s.colour % kPaletteSize] + "\"></span>" +
                html_escape(s.label) + "</label>\n";
      css += "#" + t + ":not(:checked)~.charts .s" + std::to_string(i) + "{display:none}\n#" + t +
             ":not(:checked)~.toggles label[for=" + t +
             "]{opacity:.45;text-decoration:line-through}\n";
    }
    o += "<div class=\"toggles\">show: " + labels + "</div>\n";
    o += "<div class=\"charts\">\n";
    o += render_svg(g, ChartKind::busbw);
    o += render_svg(g, ChartKind::time);
    o += "</div>\n";
    o += render_table_html(g);
    o += "</section>\n";
  }
  o += "</body>\n</html>\n";
  const std::size_t head = o.find("</style>");
  o.insert(head, css);
  return o;
}

std::string render_csv_report(const std::vector<NamedReport>& inputs) {
  std::string o =
      "collective,dtype,op,file,mode,algorithm,bytes,in_place,time_us,busbw_gbps,best\n";
  for (const ChartGroup& g : build_chart_groups(inputs)) {
    for (std::size_t i = 0; i < g.series.size(); ++i) {
      const ChartSeries& s = g.series[i];
      for (const ChartPoint& p : s.points) {
        o += std::string(to_string(g.collective)) + "," + g.dtype + "," + g.op + "," +
             csv_field(s.file) + "," + std::string(to_string(s.mode)) + "," +
             csv_field(s.algorithm) + "," + std::to_string(p.bytes) + "," +
             (p.in_place ? "true" : "false") + "," + exact(p.time_us) + "," + exact(p.busbw_gbps) +
             "," + (is_best(g, i, p.bytes) ? "1" : "0") + "\n";
      }
    }
  }
  return o;
}

std::string render_markdown_report(const std::vector<NamedReport>& inputs) {
  std::string o = "# collkit report\n\n";
  for (const NamedReport& in : inputs)
    o += "- " + markdown_cell(in.file) + ": " + mode_word(in.report.mode) + ", backend " +
         std::string(to_string(in.report.backend)) + ", " + std::to_string(in.report.ranks) +
         " ranks\n";
  o += "\nbusbw in GB/s; the best columns name the fastest algorithm per size and mode.\n";
  for (const ChartGroup& g : build_chart_groups(inputs)) {
    o += "\n## " + group_title(g) + "\n\n";
    const TableCells t = table_cells(g);
    o += "|";
    for (const std::string& h : t.header) o += " " + markdown_cell(h) + " |";
    o += "\n|";
    for (std::size_t c = 0; c < t.header.size(); ++c)
      o += c < 2 + g.series.size() ? " ---: |" : " --- |";
    o += "\n";
    for (const auto& row : t.rows) {
      o += "|";
      for (const std::string& cell : row) o += " " + markdown_cell(cell) + " |";
      o += "\n";
    }
  }
  return o;
}

}  // namespace collkit
