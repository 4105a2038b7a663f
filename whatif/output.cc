#include "whatif/output.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "core/collective.h"
#include "reports/heatmap.h"
#include "reports/html_report.h"

namespace collkit {
namespace {

std::string text_of(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The figure a machine is judged by at a point, and whether more is better.
std::optional<double> score(const Grid& grid, const Json& row, bool& higher_is_better) {
  if (grid.kind == GridKind::simulate) {
    higher_is_better = row.at("collective") != "barrier";
    return row.at(higher_is_better ? "busbw_gbps" : "time_us").get<double>();
  }
  higher_is_better = false;
  if (!row.at("fits").get<bool>()) return std::nullopt;
  return row.at("step_time_s").get<double>();
}

std::string simulate_caption(const Grid& grid) {
  std::string algs;
  for (const std::string& a : grid.algorithms) algs += (algs.empty() ? "" : ", ") + a;
  return "Each cell: the bus bandwidth (GB/s, nccl-tests' busbw) of the fastest of " + algs +
         " on that machine at that size, its name when several were timed; hover for the time "
         "and what ran. Shaded by column, darkest = best; the best machine per size is starred.";
}

}  // namespace

void mark_best_machines(const Grid& grid, std::vector<Json>& rows) {
  const std::size_t per = grid.per_machine();
  std::vector<std::optional<std::size_t>> best(per);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::size_t k = rows[i].at("point").get<std::size_t>() % per;
    bool higher = true;
    const std::optional<double> s = score(grid, rows[i], higher);
    if (!s) continue;
    if (best[k]) {
      bool unused = true;
      const double b = *score(grid, rows[*best[k]], unused);
      if (higher ? *s <= b : *s >= b) continue;
    }
    best[k] = i;
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::size_t k = rows[i].at("point").get<std::size_t>() % per;
    rows[i]["best_machine"] = best[k] && *best[k] == i;
  }
}

std::string sweep_json(const Grid& grid, const std::vector<Json>& rows) {
  Json doc;
  doc["sweep"] = grid.kind == GridKind::simulate ? "simulate" : "plan";
  doc["grid"] = grid.file;
  doc["topology"] = grid.topology_file;
  Json axes = Json::array();
  for (const GridAxis& a : grid.axes) {
    Json axis;
    axis["name"] = a.name;
    if (!a.pointer.empty()) axis["sets"] = a.pointer;
    axis["values"] = a.values;
    axes.push_back(axis);
  }
  doc["vary"] = axes;
  doc["machines"] = grid.machines();
  doc["points"] = grid.points();
  doc["rows"] = rows;
  return doc.dump(2) + "\n";
}

std::string sweep_csv(const Grid& grid, const std::vector<Json>& rows) {
  std::vector<std::string> head = {"point"};
  for (const GridAxis& a : grid.axes) head.push_back(a.name);
  std::vector<std::string> keys;
  if (grid.kind == GridKind::simulate) {
    keys = {"ranks", "collective", "bytes", "best", "time_us", "busbw_gbps", "best_machine"};
  } else {
    keys = {"ranks",       "model",          "batch",         "fits",       "step_time_s",
            "comm_time_s", "compute_time_s", "bubble_time_s", "tp",         "pp",
            "dp",          "micro_batch",    "micro_batches", "memory_gib", "best_machine",
            "no_plan"};
  }
  for (const std::string& k : keys) head.push_back(k);
  if (grid.kind == GridKind::simulate)
    for (const std::string& a : grid.algorithms)
      for (const char* k : {"time_us", "busbw_gbps", "ran"}) head.push_back(a + "." + k);
  std::string out;
  for (std::size_t i = 0; i < head.size(); ++i) out += (i ? "," : "") + csv_field(head[i]);
  out += "\n";
  for (const Json& row : rows) {
    std::string line = text_of(row.at("point"));
    for (const GridAxis& a : grid.axes) line += "," + csv_field(text_of(row.at(a.name)));
    for (const std::string& k : keys) {
      line += ",";
      if (row.contains(k)) line += csv_field(text_of(row.at(k)));
    }
    if (grid.kind == GridKind::simulate)
      for (const Json& r : row.at("algorithms"))
        for (const char* k : {"time_us", "busbw_gbps", "ran"})
          line += "," + (r.contains(k) ? csv_field(text_of(r.at(k))) : std::string());
    out += line + "\n";
  }
  return out;
}

std::string sweep_html(const Grid& grid, const std::vector<Json>& rows) {
  std::string o = html_page_start("collkit sweep", kHeatmapCss);
  std::string axes;
  for (const GridAxis& a : grid.axes) {
    axes += (axes.empty() ? "" : "; ") + a.name + " (";
    for (std::size_t i = 0; i < a.values.size(); ++i)
      axes += (i ? ", " : "") + text_of(a.values[i]);
    axes += ")";
  }
  o += "<p>" +
       html_escape(grid.file + ": " + std::to_string(grid.points()) + " points on " +
                   std::to_string(grid.machines()) + " machines from " + grid.topology_file +
                   (axes.empty() ? std::string() : ", varying " + axes)) +
       ".</p>\n";
  const std::size_t per = grid.per_machine();
  const std::size_t columns =
      grid.kind == GridKind::simulate ? grid.sizes.size() : grid.batches.size();
  const std::size_t maps = per / columns;
  for (std::size_t m = 0; m < maps; ++m) {
    Heatmap map;
    map.corner = "machine";
    if (grid.kind == GridKind::simulate) {
      const Collective c = grid.collectives[m];
      map.title = std::string(to_string(c));
      map.higher_is_better = c != Collective::barrier;
      map.caption = map.higher_is_better
                        ? simulate_caption(grid)
                        : "Each cell: the time (us) of the fastest algorithm; the best machine "
                          "is starred.";
      for (std::int64_t b : grid.sizes) map.columns.push_back(size_label(b));
    } else {
      map.title = grid.model_names[m];
      map.higher_is_better = false;
      map.caption =
          "Each cell: the step time (ms: compute, communication and pipeline bubble) of the "
          "planner's layout for that global batch, and the layout (tp x pp x dp); grey: no "
          "layout fits in device memory. The best machine per batch is starred.";
      for (std::int64_t b : grid.batches) map.columns.push_back("batch " + std::to_string(b));
    }
    for (std::size_t machine = 0; machine < grid.machines(); ++machine) {
      map.rows.push_back(machine_label(grid, machine));
      std::vector<HeatmapCell> line;
      for (std::size_t col = 0; col < columns; ++col) {
        const Json& row = rows[machine * per + m * columns + col];
        HeatmapCell cell;
        bool higher = true;
        cell.value = score(grid, row, higher);
        if (grid.kind == GridKind::simulate) {
          const bool several = grid.algorithms.size() > 1;
          cell.text = map.higher_is_better ? fixed(row.at("busbw_gbps").get<double>(), 1)
                                           : fixed(row.at("time_us").get<double>(), 1);
          if (several) cell.text += " " + row.at("best").get<std::string>();
          for (const Json& r : row.at("algorithms"))
            cell.detail += (cell.detail.empty() ? "" : "; ") +
                           r.at("algorithm").get<std::string>() + ": " +
                           fixed(r.at("time_us").get<double>(), 2) + " us" +
                           (r.contains("ran") ? " (" + r.at("ran").get<std::string>() + ")" : "");
        } else if (row.contains("step_time_s")) {
          const std::string layout =
              text_of(row.at("tp")) + "x" + text_of(row.at("pp")) + "x" + text_of(row.at("dp"));
          cell.text = fixed(row.at("step_time_s").get<double>() * 1e3, 1) + " (" + layout + ")";
          if (!row.at("fits").get<bool>()) cell.text = "no fit " + cell.text;
          cell.detail = "communication " + fixed(row.at("comm_time_s").get<double>() * 1e3, 1) +
                        " ms, compute " + fixed(row.at("compute_time_s").get<double>() * 1e3, 1) +
                        " ms, " + fixed(row.at("memory_gib").get<double>(), 1) + " GiB per device";
        } else {
          cell.text = "no plan";
          cell.detail = row.at("no_plan").get<std::string>();
        }
        line.push_back(cell);
      }
      map.cells.push_back(line);
    }
    o += render_heatmap_html(map);
  }
  o += "</body>\n</html>\n";
  return o;
}

std::string sweep_table(const Grid& grid, const std::vector<Json>& rows) {
  std::vector<std::string> head = {"point"};
  for (const GridAxis& a : grid.axes) head.push_back(a.name);
  if (grid.kind == GridKind::simulate) {
    for (const char* k : {"ranks", "collective", "size", "best", "time_us", "busbw", "ran"})
      head.emplace_back(k);
  } else {
    for (const char* k :
         {"ranks", "model", "batch", "fits", "step_ms", "comm_ms", "tp", "pp", "dp"})
      head.emplace_back(k);
  }
  head.emplace_back("best_machine");
  std::vector<std::vector<std::string>> cells = {head};
  for (const Json& row : rows) {
    std::vector<std::string> line = {text_of(row.at("point"))};
    for (const GridAxis& a : grid.axes) line.push_back(text_of(row.at(a.name)));
    line.push_back(text_of(row.at("ranks")));
    if (grid.kind == GridKind::simulate) {
      line.push_back(text_of(row.at("collective")));
      line.push_back(size_label(row.at("bytes").get<std::int64_t>()));
      line.push_back(text_of(row.at("best")));
      line.push_back(fixed(row.at("time_us").get<double>(), 2));
      line.push_back(fixed(row.at("busbw_gbps").get<double>(), 2));
      std::string ran = "-";
      for (const Json& r : row.at("algorithms"))
        if (r.at("algorithm") == row.at("best") && r.contains("ran")) ran = text_of(r.at("ran"));
      line.push_back(ran);
    } else {
      line.push_back(text_of(row.at("model")));
      line.push_back(text_of(row.at("batch")));
      line.emplace_back(row.at("fits").get<bool>() ? "yes" : "no");
      if (row.contains("step_time_s")) {
        line.push_back(fixed(row.at("step_time_s").get<double>() * 1e3, 1));
        line.push_back(fixed(row.at("comm_time_s").get<double>() * 1e3, 1));
        for (const char* k : {"tp", "pp", "dp"}) line.push_back(text_of(row.at(k)));
      } else {
        for (int i = 0; i < 5; ++i) line.emplace_back("-");
      }
    }
    line.emplace_back(row.at("best_machine").get<bool>() ? "*" : "");
    cells.push_back(line);
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& line : cells)
    for (std::size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  std::string out;
  for (std::size_t r = 0; r < cells.size(); ++r) {
    std::string line = r == 0 ? "#" : " ";
    for (std::size_t i = 0; i < cells[r].size(); ++i) {
      const std::string& c = cells[r][i];
      line += " " + std::string(width[i] - c.size(), ' ') + c;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace collkit
