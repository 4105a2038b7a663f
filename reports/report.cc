#include "reports/report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json.h"

namespace collkit {
namespace {

constexpr const char* kReportKeys[] = {
    "collkit_version", "mode",     "ranks",   "dtype", "op", "root",
    "backend",         "topology", "results", "best"};
constexpr const char* kRowKeys[] = {"collective", "algorithm", "bytes",      "count",
                                    "in_place",   "time_us",   "algbw_gbps", "busbw_gbps",
                                    "wrong",      "dtype",     "op",         "root"};

template <size_t N>
bool is_fixed_key(const std::string& key, const char* const (&keys)[N]) {
  for (const char* k : keys)
    if (key == k) return true;
  return false;
}

// Shortest text that reads back as the same double (CSV is compared and
// diffed by users; %g would lose digits).
std::string format_double(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

// RFC 4180 quoting, needed only if a backend ever names an algorithm with a
// comma or quote.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string type_name(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// Reads fields of one JSON object, naming `file: path.key` in every error.
class Reader {
 public:
  Reader(const Json& obj, std::string file, std::string path)
      : obj_(obj), file_(std::move(file)), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw FileError(file_ + ": " + field(key) + ": " + what);
  }
  std::string field(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  bool has(const std::string& key) const { return obj_.contains(key); }
  const Json& get(const std::string& key) const {
    auto it = obj_.find(key);
    if (it == obj_.end()) fail(key, "missing");
    return *it;
  }
  [[noreturn]] void ill_typed(const std::string& key, const char* expected) const {
    fail(key, std::string("expected ") + expected + ", got " + type_name(get(key)));
  }
  std::string string(const std::string& key) const {
    const Json& v = get(key);
    if (!v.is_string()) ill_typed(key, "a string");
    return v.get<std::string>();
  }
  std::string nonempty_string(const std::string& key) const {
    std::string s = string(key);
    if (s.empty()) fail(key, "must not be empty");
    return s;
  }
  std::int64_t integer(const std::string& key, std::int64_t min) const {
    const Json& v = get(key);
    if (!v.is_number_integer()) ill_typed(key, "an integer");
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX) fail(key, "out of range");
    const std::int64_t x = v.get<std::int64_t>();
    if (x < min)
      fail(key, "must be >= " + std::to_string(min) + " (got " + std::to_string(x) + ")");
    return x;
  }
  double number(const std::string& key) const {
    const Json& v = get(key);
    if (!v.is_number()) ill_typed(key, "a number");
    const double x = v.get<double>();
    if (x < 0) fail(key, "must be >= 0 (got " + format_double(x) + ")");
    return x;
  }
  bool boolean(const std::string& key) const {
    const Json& v = get(key);
    if (!v.is_boolean()) ill_typed(key, "a boolean");
    return v.get<bool>();
  }
  const Json& array(const std::string& key) const {
    const Json& v = get(key);
    if (!v.is_array()) ill_typed(key, "an array");
    return v;
  }
  // Parses a name with `parse` (which throws UsageError listing valid names)
  // and re-throws as a FileError at this field.
  template <typename F>
  auto named(const std::string& key, F parse) const {
    const std::string s = string(key);
    try {
      return parse(s);
    } catch (const UsageError& e) {
      fail(key, e.what());
    }
  }
  template <typename F>
  auto optional_named(const std::string& key, F parse) const
      -> std::optional<decltype(parse(std::string()))> {
    if (!has(key)) return std::nullopt;
    return named(key, parse);
  }

 private:
  const Json& obj_;
  std::string file_;
  std::string path_;
};

ReportMode parse_mode(const std::string& s) {
  if (s == "simulate") return ReportMode::simulate;
  if (s == "measure") return ReportMode::measure;
  throw UsageError("unknown mode '" + s + "'; valid: simulate, measure");
}

Backend parse_backend(const std::string& s) {
  for (Backend b : {Backend::sim, Backend::mpi, Backend::nccl, Backend::cuda})
    if (to_string(b) == s) return b;
  throw UsageError("unknown backend '" + s + "'; valid: sim, mpi, nccl, cuda");
}

void put_overrides(Json& j, const std::optional<DataType>& dtype, const std::optional<RedOp>& op,
                   const std::optional<int>& root) {
  if (dtype) j["dtype"] = std::string(to_string(*dtype));
  if (op) j["op"] = std::string(to_string(*op));
  if (root) j["root"] = *root;
}

ResultRow read_row(const Json& j, const std::string& file, const std::string& path) {
  if (!j.is_object())
    throw FileError(file + ": " + path + ": expected an object, got " + type_name(j));
  Reader r(j, file, path);
  ResultRow row;
  row.collective = r.named("collective", [](const std::string& s) { return parse_collective(s); });
  row.algorithm = r.nonempty_string("algorithm");
  row.bytes = r.integer("bytes", 0);
  row.count = r.integer("count", 0);
  row.in_place = r.boolean("in_place");
  row.time_us = r.number("time_us");
  row.algbw_gbps = r.number("algbw_gbps");
  row.busbw_gbps = r.number("busbw_gbps");
  if (r.get("wrong").is_null())
    row.wrong = -1;
  else if (!r.get("wrong").is_number_integer())
    r.ill_typed("wrong", "an integer or null");
  else
    row.wrong = r.integer("wrong", 0);
  row.dtype = r.optional_named("dtype", [](const std::string& s) { return parse_data_type(s); });
  row.op = r.optional_named("op", [](const std::string& s) { return parse_red_op(s); });
  if (r.has("root")) row.root = static_cast<int>(r.integer("root", -1));
  for (const auto& [key, value] : j.items())
    if (!is_fixed_key(key, kRowKeys)) row.extra[key] = value;
  return row;
}

BestEntry read_best(const Json& j, const std::string& file, const std::string& path) {
  if (!j.is_object())
    throw FileError(file + ": " + path + ": expected an object, got " + type_name(j));
  Reader r(j, file, path);
  BestEntry b;
  b.collective = r.named("collective", [](const std::string& s) { return parse_collective(s); });
  b.bytes = r.integer("bytes", 0);
  b.algorithm = r.nonempty_string("algorithm");
  b.time_us = r.number("time_us");
  b.dtype = r.optional_named("dtype", [](const std::string& s) { return parse_data_type(s); });
  b.op = r.optional_named("op", [](const std::string& s) { return parse_red_op(s); });
  if (r.has("root")) b.root = static_cast<int>(r.integer("root", -1));
  if (r.has("in_place")) b.in_place = r.boolean("in_place");
  return b;
}

// The (dtype, op, root) a row was run with, for grouping.
using Context = std::tuple<int, int, int>;
Context context_of(const std::optional<DataType>& dtype, const std::optional<RedOp>& op,
                   const std::optional<int>& root) {
  return {dtype ? static_cast<int>(*dtype) : -1, op ? static_cast<int>(*op) : -1,
          root ? *root : -2};
}

}  // namespace

std::string_view to_string(ReportMode m) {
  return m == ReportMode::simulate ? "simulate" : "measure";
}

ResultRow make_row(Collective collective, std::string algorithm, const SizeMapping& size, int ranks,
                   double time_us, bool in_place, std::int64_t wrong) {
  ResultRow row;
  row.collective = collective;
  row.algorithm = std::move(algorithm);
  row.bytes = size.bytes;
  row.count = size.count;
  row.in_place = in_place;
  row.time_us = time_us;
  row.algbw_gbps = algbw_gbps(size.bytes, time_us);
  row.busbw_gbps = row.algbw_gbps * busbw_factor(collective, ranks);
  row.wrong = wrong;
  return row;
}

std::vector<BestEntry> compute_best(const std::vector<ResultRow>& rows) {
  std::vector<BestEntry> best;
  std::map<std::tuple<int, std::int64_t, Context>, size_t> index;
  for (const ResultRow& row : rows) {
    const auto key = std::make_tuple(static_cast<int>(row.collective), row.bytes,
                                     context_of(row.dtype, row.op, row.root));
    auto [it, inserted] = index.try_emplace(key, best.size());
    if (inserted) {
      best.push_back({row.collective, row.bytes, row.algorithm, row.time_us, row.dtype, row.op,
                      row.root, row.in_place});
      continue;
    }
    // Out-of-place times are what nccl-tests users compare: an in-place row
    // wins only among in-place rows, where its size has no out-of-place one.
    BestEntry& b = best[it->second];
    if (row.in_place && !b.in_place) continue;
    if ((b.in_place && !row.in_place) || row.time_us < b.time_us) {
      b.algorithm = row.algorithm;
      b.time_us = row.time_us;
      b.in_place = row.in_place;
    }
  }
  return best;
}

std::vector<Crossover> compute_crossovers(const std::vector<BestEntry>& best) {
  // Groups keep their first-appearance order; sizes within a group are sorted.
  std::vector<std::vector<const BestEntry*>> groups;
  std::map<std::tuple<int, Context>, size_t> index;
  for (const BestEntry& b : best) {
    const auto key =
        std::make_tuple(static_cast<int>(b.collective), context_of(b.dtype, b.op, b.root));
    auto [it, inserted] = index.try_emplace(key, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&b);
  }
  std::vector<Crossover> out;
  for (auto& g : groups) {
    std::stable_sort(g.begin(), g.end(),
                     [](const BestEntry* a, const BestEntry* b) { return a->bytes < b->bytes; });
    for (size_t i = 1; i < g.size(); ++i)
      if (g[i]->algorithm != g[i - 1]->algorithm)
        out.push_back({g[i]->collective, g[i]->bytes, g[i - 1]->algorithm, g[i]->algorithm});
  }
  return out;
}

Json to_json(const Report& report) {
  Json j = Json::object();
  j["collkit_version"] = report.collkit_version;
  j["mode"] = std::string(to_string(report.mode));
  j["backend"] = std::string(to_string(report.backend));
  if (report.topology)
    j["topology"] = Json{{"name", report.topology->name},
                         {"file", report.topology->file},
                         {"sha256", report.topology->sha256}};
  j["ranks"] = report.ranks;
  j["dtype"] = std::string(to_string(report.dtype));
  j["op"] = std::string(to_string(report.op));
  j["root"] = report.root;
  Json results = Json::array();
  for (const ResultRow& row : report.results) {
    Json r = Json::object();
    r["collective"] = std::string(to_string(row.collective));
    r["algorithm"] = row.algorithm;
    r["bytes"] = row.bytes;
    r["count"] = row.count;
    r["in_place"] = row.in_place;
    r["time_us"] = row.time_us;
    r["algbw_gbps"] = row.algbw_gbps;
    r["busbw_gbps"] = row.busbw_gbps;
    r["wrong"] = row.wrong < 0 ? Json(nullptr) : Json(row.wrong);
    put_overrides(r, row.dtype, row.op, row.root);
    for (const auto& [key, value] : row.extra.items()) {
      if (is_fixed_key(key, kRowKeys))
        throw std::logic_error("report row extra key '" + key + "' reuses a fixed key");
      r[key] = value;
    }
    results.push_back(std::move(r));
  }
  j["results"] = std::move(results);
  Json best = Json::array();
  for (const BestEntry& b : report.best) {
    Json e = Json::object();
    e["collective"] = std::string(to_string(b.collective));
    e["bytes"] = b.bytes;
    e["algorithm"] = b.algorithm;
    e["time_us"] = b.time_us;
    put_overrides(e, b.dtype, b.op, b.root);
    if (b.in_place) e["in_place"] = true;
    best.push_back(std::move(e));
  }
  j["best"] = std::move(best);
  for (const auto& [key, value] : report.extra.items()) {
    if (is_fixed_key(key, kReportKeys))
      throw std::logic_error("report extra key '" + key + "' reuses a fixed key");
    j[key] = value;
  }
  return j;
}

namespace {

// The longest time a report row may hold: 11.6 days, beyond any collective.
constexpr double kMaxReportTimeUs = 1e12;

// A row's three figures say one thing: algbw = bytes / time, busbw = algbw x
// the collective's factor (as every collkit writer computes them), and the
// time is one a run can take. An edited or corrupted row is named, not
// drawn or compared.
void check_figures(const ResultRow& row, int ranks, const std::string& file,
                   const std::string& path) {
  const auto fail = [&](const std::string& key, const std::string& what) {
    throw FileError(file + ": " + path + "." + key + ": " + what);
  };
  if (row.time_us > kMaxReportTimeUs)
    fail("time_us",
         format_double(row.time_us) + " us is longer than any run (at most 1e12 us, 11.6 days)");
  const auto near = [](double a, double b) {
    return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)) + 1e-9;
  };
  const double algbw = algbw_gbps(row.bytes, row.time_us);
  if (!near(row.algbw_gbps, algbw))
    fail("algbw_gbps", format_double(row.algbw_gbps) +
                           " GB/s, but bytes / time_us = " + std::to_string(row.bytes) + " B / " +
                           format_double(row.time_us) + " us = " + format_double(algbw) + " GB/s");
  const double factor = busbw_factor(row.collective, ranks);
  if (!near(row.busbw_gbps, row.algbw_gbps * factor))
    fail("busbw_gbps", format_double(row.busbw_gbps) + " GB/s, but algbw_gbps x " +
                           format_double(factor) + " (" + std::string(to_string(row.collective)) +
                           ", " + std::to_string(ranks) +
                           " ranks) = " + format_double(row.algbw_gbps * factor) + " GB/s");
}

}  // namespace

Report report_from_json(const Json& j, const std::string& file) {
  if (!j.is_object() || !j.contains("collkit_version")) {
    const bool nccl_tests = j.is_object() && j.contains("config") && j.contains("results");
    throw FileError(file + ": not a collkit report (no \"collkit_version\" key" +
                    (nccl_tests ? "; this looks like an nccl-tests -J file)" : ")"));
  }
  Reader r(j, file, "");
  Report rep;
  rep.collkit_version = r.nonempty_string("collkit_version");
  rep.mode = r.named("mode", parse_mode);
  rep.backend = r.named("backend", parse_backend);
  if (r.has("topology") || rep.mode == ReportMode::simulate) {
    const Json& t = r.get("topology");
    if (!t.is_object()) r.ill_typed("topology", "an object");
    Reader tr(t, file, "topology");
    rep.topology = TopologyInfo{tr.string("name"), tr.string("file"), tr.string("sha256")};
  }
  rep.ranks = static_cast<int>(r.integer("ranks", 1));
  rep.dtype = r.named("dtype", [](const std::string& s) { return parse_data_type(s); });
  rep.op = r.named("op", [](const std::string& s) { return parse_red_op(s); });
  rep.root = static_cast<int>(r.integer("root", -1));
  const Json& results = r.array("results");
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string path = "results[" + std::to_string(i) + "]";
    rep.results.push_back(read_row(results[i], file, path));
    check_figures(rep.results.back(), rep.ranks, file, path);
  }
  const Json& best = r.array("best");
  for (size_t i = 0; i < best.size(); ++i)
    rep.best.push_back(read_best(best[i], file, "best[" + std::to_string(i) + "]"));
  for (const auto& [key, value] : j.items())
    if (!is_fixed_key(key, kReportKeys)) rep.extra[key] = value;
  return rep;
}

Report parse_report(const std::string& text, const std::string& file) {
  Json j;
  try {
    j = parse_json_unique<Json>(text);
  } catch (const DuplicateJsonKey& e) {
    throw FileError(file + ": " + e.what() + ": JSON keeps one of the two silently; give it once");
  } catch (const Json::exception& e) {
    // parse_error, or out_of_range for a number a double cannot hold (1e999).
    throw FileError(file + ": malformed JSON: " + e.what());
  }
  return report_from_json(j, file);
}

Report read_report(const std::string& path) {
  return parse_report(read_input_file(path, "report"), path);
}

std::string redop_column(Collective c, RedOp op) {
  return is_reduction(c) ? std::string(to_string(op)) : "none";
}

int root_column(Collective c, int root) { return is_rooted(c) ? root : -1; }

std::string to_csv(const Report& report) {
  std::string out =
      "collective,algorithm,bytes,count,dtype,op,root,in_place,time_us,algbw_gbps,busbw_gbps,"
      "wrong\n";
  for (const ResultRow& row : report.results) {
    out += std::string(to_string(row.collective)) + ',';
    out += csv_field(row.algorithm) + ',';
    out += std::to_string(row.bytes) + ',' + std::to_string(row.count) + ',';
    out += std::string(to_string(row.dtype.value_or(report.dtype))) + ',';
    out += redop_column(row.collective, row.op.value_or(report.op)) + ',';
    out += std::to_string(root_column(row.collective, row.root.value_or(report.root))) + ',';
    out += row.in_place ? "true," : "false,";
    out += format_double(row.time_us) + ',' + format_double(row.algbw_gbps) + ',' +
           format_double(row.busbw_gbps) + ',';
    if (row.wrong >= 0) out += std::to_string(row.wrong);
    out += '\n';
  }
  return out;
}

std::string report_json_text(const Report& report) { return to_json(report).dump(1) + "\n"; }

Json segment_model_json(const CostParams& m) {
  return Json{{"alpha", m.alpha}, {"beta", m.beta}, {"gamma", m.gamma}};
}

std::optional<CostParams> segment_model_of(const Report& r, const std::string& file) {
  if (!r.extra.is_object() || !r.extra.contains("segment_model")) return std::nullopt;
  const Json& j = r.extra["segment_model"];
  const std::string field = file + ": segment_model";
  if (!j.is_object()) throw FileError(field + ": expected an object {alpha, beta, gamma}");
  CostParams m;
  for (const auto& [key, slot] : {std::pair<const char*, double*>{"alpha", &m.alpha},
                                  {"beta", &m.beta},
                                  {"gamma", &m.gamma}}) {
    if (!j.contains(key) || !j[key].is_number())
      throw FileError(field + "." + key + ": expected a number (seconds" +
                      (std::string(key) == "alpha" ? "" : " per byte") + ")");
    *slot = j[key].get<double>();
    if (!(*slot >= 0) || !std::isfinite(*slot))
      throw FileError(field + "." + key + ": must be finite and >= 0, got " + j[key].dump());
  }
  return m;
}

}  // namespace collkit
