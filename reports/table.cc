#include "reports/table.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace collkit {
namespace {

// vsnprintf keeps the format checked (attribute) without gcc's
// -Wformat-truncation false positives on a two-pass snprintf.
__attribute__((format(printf, 1, 2))) std::string printf_string(const char* fmt, ...) {
  char buf[256];
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  if (n < static_cast<int>(sizeof buf)) return std::string(buf, static_cast<size_t>(n));
  std::string s(static_cast<size_t>(n) + 1, '\0');
  va_start(args, fmt);
  std::vsnprintf(s.data(), s.size(), fmt, args);
  va_end(args);
  s.resize(static_cast<size_t>(n));
  return s;
}

std::string result_columns(const ResultRow& r) {
  std::string s = printf_string("  %7s  %6.2f  %6.2f", format_time_us(r.time_us).c_str(),
                                r.algbw_gbps, r.busbw_gbps);
  s += r.wrong < 0 ? printf_string("  %6s", "N/A")
                   : printf_string("  %6g", static_cast<double>(r.wrong));
  return s;
}

std::string algorithm_label(const Report& report, Collective c, const std::string& algorithm) {
  std::string s = "# collkit " + std::string(to_string(report.mode)) + " (" +
                  std::string(to_string(report.backend)) + "): " + std::string(to_string(c)) +
                  ", algorithm " + algorithm + ", " + std::to_string(report.ranks) + " ranks";
  if (report.topology) s += ", topology " + report.topology->name;
  return s + "\n";
}

}  // namespace

std::string table_header() {
  return "#                                                              out-of-place          "
         "             in-place\n"
         "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
         "     time   algbw   busbw  #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)        "
         "     (us)  (GB/s)  (GB/s)\n";
}

std::string format_time_us(double time_us) {
  if (time_us >= 10000.0) return printf_string("%7.0f", time_us);
  if (time_us >= 100.0) return printf_string("%7.1f", time_us);
  return printf_string("%7.2f", time_us);
}

std::string format_table_row(const ResultRow& out_of_place, const ResultRow& in_place,
                             const std::string& type, const std::string& redop, int root) {
  return printf_string("%12li  %12li  %8s  %6s  %6s", static_cast<long>(out_of_place.bytes),
                       static_cast<long>(out_of_place.count), type.c_str(), redop.c_str(),
                       std::to_string(root).c_str()) +
         result_columns(out_of_place) + result_columns(in_place) + "\n";
}

std::string format_table(const Report& report, Collective collective,
                         const std::string& algorithm) {
  struct Line {
    const ResultRow* out_of_place = nullptr;
    const ResultRow* in_place = nullptr;
  };
  std::vector<Line> lines;
  // Rows of one size pair up in order; a size that repeats (1 and 2 bytes of
  // float both map to 0) is a line of its own each time, as bench prints it.
  std::map<std::tuple<std::int64_t, int, int, int>, std::vector<size_t>> index;
  for (const ResultRow& row : report.results) {
    if (row.collective != collective || row.algorithm != algorithm) continue;
    const auto key = std::make_tuple(row.bytes, static_cast<int>(row.dtype.value_or(report.dtype)),
                                     static_cast<int>(row.op.value_or(report.op)),
                                     row.root.value_or(report.root));
    std::vector<size_t>& at = index[key];
    const auto free = std::find_if(at.begin(), at.end(), [&](size_t i) {
      return (row.in_place ? lines[i].in_place : lines[i].out_of_place) == nullptr;
    });
    size_t i = 0;
    if (free != at.end()) {
      i = *free;
    } else {
      i = lines.size();
      lines.emplace_back();
      at.push_back(i);
    }
    (row.in_place ? lines[i].in_place : lines[i].out_of_place) = &row;
  }
  if (lines.empty()) return "";

  std::string out = algorithm_label(report, collective, algorithm) + "#\n" + table_header();
  double busbw_sum = 0;
  int busbw_n = 0;
  std::int64_t wrong = 0;
  for (const Line& line : lines) {
    const ResultRow& oop = line.out_of_place ? *line.out_of_place : *line.in_place;
    const ResultRow& ip = line.in_place ? *line.in_place : *line.out_of_place;
    out += format_table_row(oop, ip, std::string(to_string(oop.dtype.value_or(report.dtype))),
                            redop_column(collective, oop.op.value_or(report.op)),
                            root_column(collective, oop.root.value_or(report.root)));
    busbw_sum += oop.busbw_gbps + ip.busbw_gbps;
    busbw_n += 2;
    for (const ResultRow* r : {line.out_of_place, line.in_place})
      if (r && r->wrong > 0) wrong += r->wrong;
  }
  out += printf_string("# Out of bounds values : %li %s\n", static_cast<long>(wrong),
                       wrong == 0 ? "OK" : "FAILED");
  out += printf_string("# Avg bus bandwidth    : %g\n", busbw_sum / busbw_n);
  // What ran, where the algorithm's name leaves it open (the nccl family's
  // choice of algorithm, protocol and channels): one line per run of sizes
  // with the same choice, after the table so nccl-tests' columns stay as
  // they are.
  std::string ran_lines;
  std::string last;
  std::int64_t from = 0, to = 0;
  const auto flush = [&] {
    if (last.empty()) return;
    ran_lines += printf_string("#   %12lld .. %12lld  %s\n", static_cast<long long>(from),
                               static_cast<long long>(to), last.c_str());
  };
  for (const Line& line : lines) {
    const ResultRow& oop = line.out_of_place ? *line.out_of_place : *line.in_place;
    const std::string ran = oop.extra.contains("ran") && oop.extra["ran"].is_string()
                                ? oop.extra["ran"].get<std::string>()
                                : std::string();
    if (ran != last) {
      flush();
      last = ran;
      from = oop.bytes;
    }
    to = oop.bytes;
  }
  flush();
  if (!ran_lines.empty())
    out += "# What ran (size range in bytes, algorithm/protocol/channels)\n" + ran_lines;
  return out;
}

std::string format_tables(const Report& report) {
  std::vector<std::pair<Collective, std::string>> seen;
  for (const ResultRow& row : report.results) {
    const std::pair<Collective, std::string> key{row.collective, row.algorithm};
    bool found = false;
    for (const auto& s : seen) found = found || s == key;
    if (!found) seen.push_back(key);
  }
  std::string out;
  for (size_t i = 0; i < seen.size(); ++i)
    out += (i ? "#\n" : "") + format_table(report, seen[i].first, seen[i].second);
  return out;
}

std::string format_bytes_human(std::int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 6) {
    v /= 1024.0;
    ++unit;
  }
  return printf_string("%g %s", v, kUnits[unit]);
}

std::string format_best_summary(const Report& report) {
  if (report.best.empty()) return "";
  // Where the tables hold in-place rows too (bench), say which times compete.
  const bool any_in_place = std::any_of(report.results.begin(), report.results.end(),
                                        [](const ResultRow& r) { return r.in_place; });
  std::string out = any_in_place
                        ? "# Best algorithm per size, by out-of-place time (as nccl-tests users "
                          "compare; (in-place): a size measured in place only)\n"
                        : "# Best algorithm per size\n";
  out += printf_string("#%11s  %12s  %-14s  %-24s  %7s  %6s  %6s\n", "size", "count", "collective",
                       "algorithm", "time", "algbw", "busbw");
  out += printf_string("#%11s  %12s  %-14s  %-24s  %7s  %6s  %6s\n", "(B)", "(elements)", "", "",
                       "(us)", "(GB/s)", "(GB/s)");
  for (const BestEntry& b : report.best) {
    // The winning row, for its count and bandwidths.
    const ResultRow* win = nullptr;
    for (const ResultRow& r : report.results)
      if (!win && r.collective == b.collective && r.bytes == b.bytes &&
          r.algorithm == b.algorithm && r.time_us == b.time_us && r.dtype == b.dtype &&
          r.op == b.op && r.root == b.root && r.in_place == b.in_place)
        win = &r;
    const std::string algorithm = b.algorithm + (b.in_place ? " (in-place)" : "");
    out += printf_string("#%11li  %12li  %-14s  %-24s  %7s  %6.2f  %6.2f\n",
                         static_cast<long>(b.bytes), static_cast<long>(win ? win->count : 0),
                         std::string(to_string(b.collective)).c_str(), algorithm.c_str(),
                         format_time_us(b.time_us).c_str(), win ? win->algbw_gbps : 0.0,
                         win ? win->busbw_gbps : 0.0);
  }
  const std::vector<Crossover> cross = compute_crossovers(report.best);
  if (cross.empty()) {
    out += "# Crossovers: none (one algorithm is best at every size)\n";
  } else {
    out += "# Crossovers (the best algorithm changes at)\n";
    for (const Crossover& c : cross)
      out +=
          printf_string("#%11li  %-10s  %s: %s -> %s\n", static_cast<long>(c.bytes),
                        format_bytes_human(c.bytes).c_str(),
                        std::string(to_string(c.collective)).c_str(), c.from.c_str(), c.to.c_str());
  }
  return out;
}

}  // namespace collkit
