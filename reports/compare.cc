#include "reports/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "reports/table.h"

namespace collkit {
namespace {}  // namespace

RowKey row_key(const Report& rep, const ResultRow& r) {
  RowKey k;
  k.collective = r.collective;
  k.algorithm = r.algorithm;
  k.bytes = r.bytes;
  k.in_place = r.in_place;
  k.dtype = std::string(to_string(r.dtype.value_or(rep.dtype)));
  k.op = redop_column(r.collective, r.op.value_or(rep.op));
  k.root = root_column(r.collective, r.root.value_or(rep.root));
  return k;
}

namespace {

RowKey key_of(const Report& rep, const ResultRow& r) { return row_key(rep, r); }

// "all_reduce [ring, tree] float, 8 B..1 GiB": what a report covers, for
// the error that explains why nothing matched.
std::string coverage(const Report& rep, std::int64_t min_bytes) {
  std::map<Collective, std::set<std::string>> algos;
  std::set<std::string> dtypes;
  std::int64_t lo = -1, hi = -1;
  for (const ResultRow& r : rep.results) {
    if (r.bytes < min_bytes) continue;
    algos[r.collective].insert(r.algorithm);
    dtypes.insert(std::string(to_string(r.dtype.value_or(rep.dtype))));
    lo = lo < 0 ? r.bytes : std::min(lo, r.bytes);
    hi = std::max(hi, r.bytes);
  }
  if (algos.empty()) return "no rows";
  std::string s;
  for (const auto& [c, names] : algos) {
    s += (s.empty() ? "" : "; ") + std::string(to_string(c)) + " [";
    bool first = true;
    for (const std::string& n : names) {
      s += (first ? "" : ", ") + n;
      first = false;
    }
    s += "]";
  }
  s += ", dtype";
  for (const std::string& d : dtypes) s += " " + d;
  s += ", " + format_bytes_human(lo) + ".." + format_bytes_human(hi);
  return s;
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v * 100);
  return buf;
}

std::string key_line(const RowKey& k) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-14s %-26s %12lld  %-3s  %-8s %-4s %3d",
                std::string(to_string(k.collective)).c_str(), k.algorithm.c_str(),
                static_cast<long long>(k.bytes), k.in_place ? "in" : "out", k.dtype.c_str(),
                k.op.c_str(), k.root);
  return buf;
}

std::string row_line(const MatchedRow& r) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "  %12.2f  %12.2f  %9s", r.predicted_us, r.measured_us,
                r.rel_error ? percent(*r.rel_error).c_str() : "n/a");
  if (r.measured_algorithm.empty()) return key_line(r.key) + buf;
  RowKey k = r.key;
  k.algorithm += " vs " + r.measured_algorithm;
  return key_line(k) + buf;
}

bool is_native(const std::string& algorithm) {
  return algorithm == "nccl" || algorithm == "native";
}

std::string band_percent(const BandSummary& b, double v) {
  if (b.rows == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v * 100);
  return buf;
}

std::vector<BandSummary> band_summaries(const std::vector<MatchedRow>& rows) {
  std::vector<BandSummary> bands = {
      {"< 1 MiB", 0, kBandEdges[0]},
      {"1 MiB - 64 MiB", kBandEdges[0], kBandEdges[1]},
      {">= 64 MiB", kBandEdges[1], -1},
      {"all", 0, -1},
  };
  for (BandSummary& b : bands) {
    std::vector<double> errors;
    for (const MatchedRow& r : rows)
      if (r.rel_error && r.key.bytes >= b.lo && (b.hi < 0 || r.key.bytes < b.hi))
        errors.push_back(std::fabs(*r.rel_error));
    b.rows = errors.size();
    b.median_abs_error = quantile(errors, 0.5);
    b.worst_abs_error = errors.empty() ? 0 : *std::max_element(errors.begin(), errors.end());
  }
  return bands;
}

Json key_json(const RowKey& k) {
  Json j = Json::object();
  j["collective"] = std::string(to_string(k.collective));
  j["algorithm"] = k.algorithm;
  j["bytes"] = k.bytes;
  j["in_place"] = k.in_place;
  j["dtype"] = k.dtype;
  j["op"] = k.op;
  j["root"] = k.root;
  return j;
}

Json row_json(const MatchedRow& r) {
  Json j = key_json(r.key);
  if (!r.measured_algorithm.empty()) j["measured_algorithm"] = r.measured_algorithm;
  j["predicted_us"] = r.predicted_us;
  j["measured_us"] = r.measured_us;
  j["rel_error"] = r.rel_error ? Json(*r.rel_error) : Json(nullptr);
  return j;
}

}  // namespace

RepeatStat parse_repeat_stat(const std::string& flag, const std::string& text) {
  if (text == "median") return RepeatStat::median;
  if (text == "fastest") return RepeatStat::fastest;
  throw UsageError(flag + " '" + text + "': expected median or fastest");
}

Report median_of_repeats(const std::vector<Report>& repeats, const std::vector<std::string>& names,
                         RepeatStat stat) {
  if (repeats.empty()) throw UsageError("no measured report given");
  Report out = repeats[0];
  if (repeats.size() == 1) return out;
  const auto row_name = [](const RowKey& k) {
    return std::string(to_string(k.collective)) + " " + k.algorithm + " " +
           std::to_string(k.bytes) + " B " + (k.in_place ? "in-place" : "out-of-place") + " " +
           k.dtype + " " + k.op + " root " + std::to_string(k.root);
  };
  // Per key, per occurrence in a run (nccl-tests prints several rows of 0
  // bytes), the time of every repeat.
  std::map<RowKey, std::vector<std::vector<double>>> times;
  for (const ResultRow& r : out.results) times[key_of(out, r)].emplace_back();
  for (std::size_t i = 0; i < repeats.size(); ++i) {
    const Report& rep = repeats[i];
    if (rep.ranks != out.ranks)
      throw FileError(names[i] + ": ranks: " + std::to_string(rep.ranks) + ", but " + names[0] +
                      " has " + std::to_string(out.ranks) + ": repeats must be of one run");
    if (rep.results.size() != out.results.size())
      throw FileError(names[i] + ": results: " + std::to_string(rep.results.size()) +
                      " rows, but " + names[0] + " has " + std::to_string(out.results.size()) +
                      ": repeats must be of one run");
    std::map<RowKey, std::size_t> seen;
    for (const ResultRow& r : rep.results) {
      const RowKey k = key_of(rep, r);
      auto it = times.find(k);
      if (it == times.end())
        throw FileError(names[i] + ": results: row " + row_name(k) + " is not in " + names[0] +
                        ": repeats must be of one run");
      const std::size_t occurrence = seen[k]++;
      if (occurrence >= it->second.size())
        throw FileError(names[0] + ": results: row " + row_name(k) +
                        " appears more than once or not in every repeat");
      it->second[occurrence].push_back(r.time_us);
    }
  }
  std::map<RowKey, std::size_t> seen;
  for (ResultRow& r : out.results) {
    const RowKey k = key_of(out, r);
    const std::vector<double>& t = times[k][seen[k]++];
    if (t.size() != repeats.size())
      throw FileError(names[0] + ": results: row " + row_name(k) +
                      " appears more than once or not in every repeat");
    const double time =
        stat == RepeatStat::fastest ? *std::min_element(t.begin(), t.end()) : quantile(t, 0.5);
    if (r.time_us > 0 && time > 0) {
      r.algbw_gbps *= r.time_us / time;
      r.busbw_gbps *= r.time_us / time;
    }
    r.time_us = time;
  }
  out.best = compute_best(out.results);
  return out;
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(pos));
  if (i + 1 >= values.size()) return values.back();
  return values[i] + (pos - static_cast<double>(i)) * (values[i + 1] - values[i]);
}

CompareResult compare_reports(const Report& predicted, const Report& measured,
                              std::int64_t min_bytes, const std::string& predicted_name,
                              const std::string& measured_name) {
  CompareOptions options;
  options.min_bytes = min_bytes;
  return compare_reports(predicted, measured, options, predicted_name, measured_name);
}

CompareResult compare_reports(const Report& predicted, const Report& measured,
                              const CompareOptions& options, const std::string& predicted_name,
                              const std::string& measured_name) {
  const std::int64_t min_bytes = options.min_bytes;
  const std::string& match = options.match;
  if (predicted.ranks != measured.ranks)
    throw UsageError(predicted_name + " is for " + std::to_string(predicted.ranks) + " ranks, " +
                     measured_name + " for " + std::to_string(measured.ranks) +
                     ": a prediction compares only with a measurement on as many ranks");
  // With --match the algorithm is not part of the match: the predicted rows
  // of ALGO stand against the measured rows of nccl/native.
  const auto match_key = [&](RowKey k) {
    if (!match.empty()) k.algorithm.clear();
    return k;
  };
  const auto predicted_row = [&](const ResultRow& r) {
    return r.bytes >= min_bytes && (match.empty() || r.algorithm == match);
  };
  const auto measured_row = [&](const ResultRow& r) {
    return r.bytes >= min_bytes && (match.empty() || is_native(r.algorithm));
  };
  if (!match.empty()) {
    if (std::none_of(predicted.results.begin(), predicted.results.end(), predicted_row))
      throw UsageError("--match " + match + ": " + predicted_name + " has no row of algorithm '" +
                       match + "'" + (min_bytes > 0 ? " at or above --min-bytes" : "") +
                       " (it has " + coverage(predicted, min_bytes) + ")");
    if (std::none_of(measured.results.begin(), measured.results.end(), measured_row))
      throw UsageError("--match " + match + ": " + measured_name +
                       " has no row of algorithm 'nccl' or 'native' (a library's own "
                       "collective) to compare with" +
                       (min_bytes > 0 ? " at or above --min-bytes" : "") + " (it has " +
                       coverage(measured, min_bytes) + ")");
  }
  // A key can repeat (nccl-tests prints one row per size, and sizes below
  // one element per rank all print as 0 B): the n-th measured row of a key
  // stands against the n-th predicted row of it, the last one where the
  // prediction has fewer.
  std::map<RowKey, std::vector<std::size_t>> pred_index;
  for (std::size_t i = 0; i < predicted.results.size(); ++i) {
    const ResultRow& r = predicted.results[i];
    if (!predicted_row(r)) continue;
    pred_index[match_key(key_of(predicted, r))].push_back(i);
  }
  std::map<RowKey, std::size_t> seen;
  std::vector<bool> used(predicted.results.size(), false);
  CompareResult out;
  out.match = match;
  for (const ResultRow& m : measured.results) {
    if (!measured_row(m)) continue;
    RowKey k = key_of(measured, m);
    if (m.wrong > 0) {
      // A row whose check failed measured something else: never compared.
      out.failed_check.emplace_back(k, m.wrong);
      continue;
    }
    auto it = pred_index.find(match_key(k));
    if (it == pred_index.end()) {
      RowKey other = k;
      other.in_place = !k.in_place;
      it = pred_index.find(match_key(other));
    }
    if (it == pred_index.end()) {
      out.measured_only.push_back(k);
      continue;
    }
    const std::vector<std::size_t>& rows_of_key = it->second;
    const std::size_t p = rows_of_key[std::min(seen[k]++, rows_of_key.size() - 1)];
    used[p] = true;
    MatchedRow row;
    row.key = k;
    if (!match.empty()) {
      row.key.algorithm = match;
      row.measured_algorithm = m.algorithm;
    }
    row.predicted_us = predicted.results[p].time_us;
    row.measured_us = m.time_us;
    // A prediction of no time (NCCL discards a call of no elements) has no
    // relative error: the measured time is then only the caller's own loop.
    if (row.predicted_us == 0 && m.time_us > 0) ++out.predicted_no_time;
    if (m.time_us > 0 && row.predicted_us > 0)
      row.rel_error = (row.predicted_us - row.measured_us) / row.measured_us;
    out.rows.push_back(std::move(row));
  }
  for (std::size_t i = 0; i < predicted.results.size(); ++i)
    if (!used[i] && predicted_row(predicted.results[i]))
      out.predicted_only.push_back(key_of(predicted, predicted.results[i]));

  if (out.rows.empty()) {
    std::string why =
        "no row of " + predicted_name + " matches a row of " + measured_name +
        (match.empty() ? " by (collective, algorithm, bytes, dtype, op, root)"
                       : " by (collective, bytes, dtype, op, root) with --match " + match);
    if (min_bytes > 0) why += " at or above --min-bytes " + std::to_string(min_bytes);
    throw UsageError(why + ": " + predicted_name + " has " + coverage(predicted, min_bytes) + "; " +
                     measured_name + " has " + coverage(measured, min_bytes));
  }

  std::vector<double> abs_errors;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    if (!out.rows[i].rel_error) continue;
    abs_errors.push_back(std::fabs(*out.rows[i].rel_error));
    order.push_back(i);
  }
  out.with_error = abs_errors.size();
  out.median_abs_error = quantile(abs_errors, 0.5);
  out.p90_abs_error = quantile(abs_errors, 0.9);
  // Stable, so equal errors keep the measured report's order.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::fabs(*out.rows[a].rel_error) > std::fabs(*out.rows[b].rel_error);
  });
  order.resize(std::min<std::size_t>(order.size(), 5));
  out.worst = order;
  if (options.bands) out.bands = band_summaries(out.rows);
  return out;
}

std::string format_comparison(const CompareResult& result, const std::string& predicted_name,
                              const std::string& measured_name) {
  std::string o = "# collkit compare: predicted " + predicted_name + " vs measured " +
                  measured_name + "; error = (predicted - measured) / measured\n";
  if (!result.match.empty())
    o += "# --match " + result.match + ": predicted rows of " + result.match +
         " against measured rows of nccl or native\n";
  char head[256];
  std::snprintf(head, sizeof head, "#%-13s %-26s %12s  %-3s  %-8s %-4s %3s  %12s  %12s  %9s\n",
                "collective", "algorithm", "bytes", "ip", "dtype", "op", "rt", "predicted_us",
                "measured_us", "error");
  o += head;
  for (const MatchedRow& r : result.rows) o += row_line(r) + "\n";
  char summary[256];
  std::snprintf(summary, sizeof summary,
                "# Summary: %zu matched rows (%zu with an error); median |error| %.1f%%, p90 "
                "|error| %.1f%%\n",
                result.rows.size(), result.with_error, result.median_abs_error * 100,
                result.p90_abs_error * 100);
  o += summary;
  if (result.predicted_no_time > 0)
    o += "# " + std::to_string(result.predicted_no_time) +
         " matched row(s) have no error: the prediction takes no time (a call of no "
         "elements, which NCCL discards), so the measured time is only the caller's loop\n";
  if (!result.bands.empty()) {
    char line[160];
    std::snprintf(line, sizeof line, "# By size (nccl-tests size column): %-16s %6s %9s %9s\n",
                  "band", "rows", "median", "worst");
    o += line;
    for (const BandSummary& b : result.bands) {
      std::snprintf(line, sizeof line, "#%35s %-16s %6zu %9s %9s\n", "", b.name.c_str(), b.rows,
                    band_percent(b, b.median_abs_error).c_str(),
                    band_percent(b, b.worst_abs_error).c_str());
      o += line;
    }
  }
  if (!result.failed_check.empty()) {
    o += "# warning: left out " + std::to_string(result.failed_check.size()) + " row(s) of " +
         measured_name + " whose check failed (#wrong > 0):\n";
    for (const auto& [k, wrong] : result.failed_check)
      o += "#  " + key_line(k) + "  (" + std::to_string(wrong) + " wrong)\n";
  }
  if (!result.worst.empty()) {
    o += "# Worst rows:\n";
    for (std::size_t i : result.worst) o += "#  " + row_line(result.rows[i]) + "\n";
  }
  if (!result.predicted_only.empty()) {
    o += "# Unmatched, only in " + predicted_name + " (" +
         std::to_string(result.predicted_only.size()) + "):\n";
    for (const RowKey& k : result.predicted_only) o += "#  " + key_line(k) + "\n";
  }
  if (!result.measured_only.empty()) {
    o += "# Unmatched, only in " + measured_name + " (" +
         std::to_string(result.measured_only.size()) + "):\n";
    for (const RowKey& k : result.measured_only) o += "#  " + key_line(k) + "\n";
  }
  return o;
}

Json comparison_to_json(const CompareResult& result, const std::string& predicted_name,
                        const std::string& measured_name, std::int64_t min_bytes) {
  Json j = Json::object();
  j["predicted"] = predicted_name;
  j["measured"] = measured_name;
  j["min_bytes"] = min_bytes;
  Json rows = Json::array();
  for (const MatchedRow& r : result.rows) rows.push_back(row_json(r));
  j["rows"] = std::move(rows);
  Json summary = Json::object();
  summary["matched"] = result.rows.size();
  summary["with_error"] = result.with_error;
  summary["predicted_no_time"] = result.predicted_no_time;
  summary["median_abs_error"] = result.median_abs_error;
  summary["p90_abs_error"] = result.p90_abs_error;
  Json worst = Json::array();
  for (std::size_t i : result.worst) worst.push_back(row_json(result.rows[i]));
  summary["worst"] = std::move(worst);
  j["summary"] = std::move(summary);
  if (!result.match.empty()) j["match"] = result.match;
  if (!result.bands.empty()) {
    Json bands = Json::array();
    for (const BandSummary& b : result.bands) {
      Json e = Json::object();
      e["band"] = b.name;
      e["min_bytes"] = b.lo;
      e["max_bytes"] = b.hi < 0 ? Json(nullptr) : Json(b.hi);
      e["rows"] = b.rows;
      e["median_abs_error"] = b.rows ? Json(b.median_abs_error) : Json(nullptr);
      e["worst_abs_error"] = b.rows ? Json(b.worst_abs_error) : Json(nullptr);
      bands.push_back(std::move(e));
    }
    j["bands"] = std::move(bands);
  }
  Json pred_only = Json::array(), meas_only = Json::array();
  for (const RowKey& k : result.predicted_only) pred_only.push_back(key_json(k));
  for (const RowKey& k : result.measured_only) meas_only.push_back(key_json(k));
  j["predicted_only"] = std::move(pred_only);
  j["measured_only"] = std::move(meas_only);
  return j;
}

}  // namespace collkit
