#include "calibration/repeats.h"

#include <algorithm>
#include <cmath>

#include "calibration/format.h"

namespace collkit {

RepeatSelection::RepeatSelection(const std::vector<CalibrationInput>& inputs, bool fastest,
                                 int leave_out)
    : fastest_(fastest), leave_out_(leave_out) {
  if (!fastest_) return;
  for (const CalibrationInput& in : inputs)
    for (const ResultRow& row : in.report.results) {
      std::vector<const CalibrationInput*>& f = files_of_row_[row_key(in.report, row)];
      if (f.empty() || f.back() != &in) f.push_back(&in);
    }
  for (const CalibrationInput& in : inputs)
    for (const ResultRow& row : in.report.results) {
      const RowKey key = row_key(in.report, row);
      if (!(row.time_us > 0) || row.wrong > 0 || left_out(in, key)) continue;
      const auto [it, fresh] = best_.try_emplace(key, row.time_us, false);
      if (!fresh) it->second.first = std::min(it->second.first, row.time_us);
    }
}

bool RepeatSelection::left_out(const CalibrationInput& in, const RowKey& key) const {
  if (leave_out_ < 0) return false;
  const std::vector<const CalibrationInput*>& f = files_of_row_.at(key);
  return f.size() >= 2 && static_cast<std::size_t>(leave_out_) < f.size() &&
         f[static_cast<std::size_t>(leave_out_)] == &in;
}

RepeatSelection::Verdict RepeatSelection::take(const CalibrationInput& in, const ResultRow& row) {
  if (!fastest_) return Verdict::take;
  const RowKey key = row_key(in.report, row);
  if (left_out(in, key)) return Verdict::left_out;
  std::pair<double, bool>& best = best_.at(key);
  if (best.second || row.time_us > best.first) return Verdict::slower;
  best.second = true;
  return Verdict::take;
}

std::size_t RepeatSelection::repeats() const {
  std::size_t repeats = 0;
  for (const auto& [key, files] : files_of_row_) repeats = std::max(repeats, files.size());
  return repeats;
}

std::vector<std::vector<char>> repeat_members(const std::vector<std::size_t>& same_as,
                                              const std::vector<std::string>& file) {
  std::map<std::size_t, std::vector<std::string>> files_of;
  for (std::size_t i = 0; i < same_as.size(); ++i) {
    std::vector<std::string>& f = files_of[same_as[i]];
    if (std::find(f.begin(), f.end(), file[i]) == f.end()) f.push_back(file[i]);
  }
  std::size_t repeats = 0;
  for (const auto& [first, files] : files_of) repeats = std::max(repeats, files.size());
  std::vector<std::vector<char>> out;
  if (repeats < 2) return out;
  for (std::size_t rep = 0; rep < repeats; ++rep) {
    std::vector<char>& in = out.emplace_back(same_as.size(), 0);
    for (std::size_t i = 0; i < same_as.size(); ++i) {
      const std::vector<std::string>& f = files_of[same_as[i]];
      const auto at = static_cast<std::size_t>(std::find(f.begin(), f.end(), file[i]) - f.begin());
      in[i] = at == rep % f.size() ? 1 : 0;
    }
  }
  return out;
}

double Quantity::value(const LmVector& theta) const {
  double sum = 0;
  for (std::size_t k : members) sum += series ? std::exp(-theta[k]) : std::exp(theta[k]);
  return series ? 1 / sum : sum;
}

// Times (latencies, the overhead) are compared as what one message pays on
// each kind of route, `routes`: the overhead plus the latencies of the
// route's links. Only those sums reach a prediction, and a base whose
// routes share links can move latency between its classes without changing
// any of them: a route through a core that costs 5 + 3.4 + 0 us in one fit
// and 0 + 8.8 + 0 in another costs the same.
std::vector<Quantity> determined_quantities(const std::vector<FittedParam>& params,
                                            const std::vector<std::size_t>& group,
                                            const std::vector<bool>& unused,
                                            const std::vector<Quantity>& routes) {
  std::vector<Quantity> out;
  for (const Quantity& route : routes) {
    const bool depended = std::any_of(route.members.begin(), route.members.end(),
                                      [&](std::size_t k) { return !unused[k]; });
    if (depended) out.push_back(route);
  }
  for (std::size_t root = 0; root < params.size(); ++root) {
    Quantity q;
    for (std::size_t k = 0; k < params.size(); ++k)
      if (group[k] == root && !unused[k] && !is_route_time(params[k].kind)) q.members.push_back(k);
    if (q.members.empty()) continue;
    // A group that also holds a time mixes times with rates or factors.
    bool mixed = false;
    for (std::size_t k = 0; k < params.size(); ++k)
      mixed = mixed || (group[k] == root && !unused[k] && is_route_time(params[k].kind));
    if (mixed) continue;
    if (q.members.size() == 1) {
      q.name = params[q.members.front()].name;
      out.push_back(std::move(q));
      continue;
    }
    if (!std::all_of(q.members.begin(), q.members.end(),
                     [&](std::size_t k) { return is_rate(params[k].kind); }))
      continue;
    q.series = true;
    std::string list;
    for (std::size_t k : q.members) {
      const std::string& name = params[k].name;
      list += (list.empty() ? "" : " + ") + name.substr(0, name.find(" ("));
    }
    q.name = "series bandwidth of " + list;
    out.push_back(std::move(q));
  }
  return out;
}

std::vector<ParamSpread> spreads(const std::vector<Quantity>& quantities,
                                 const std::vector<FittedParam>& params, const LmVector& joint,
                                 const std::vector<const LmVector*>& others) {
  std::vector<ParamSpread> out;
  for (const Quantity& q : quantities) {
    ParamSpread s;
    s.name = q.name;
    s.scale = display_scale(params[q.members.front()].kind);
    s.fitted = q.value(joint);
    s.lowest = s.highest = s.fitted;
    for (const LmVector* fit : others) {
      const double v = q.value(*fit);
      s.values.push_back(v);
      s.lowest = std::min(s.lowest, v);
      s.highest = std::max(s.highest, v);
    }
    s.spread = s.lowest > 0 ? s.highest / s.lowest - 1 : 0;
    out.push_back(std::move(s));
  }
  return out;
}

std::string disagreements(const std::vector<ParamSpread>& spreads) {
  std::string list;
  for (const ParamSpread& s : spreads)
    if (s.spread > kStabilityTolerance)
      list += (list.empty() ? "" : "; ") + s.name + " " + fmt("%.4g", s.lowest * s.scale) + ".." +
              fmt("%.4g", s.highest * s.scale) + " (" + fmt("%.0f", 100 * s.spread) + "%)";
  return list;
}

}  // namespace collkit
