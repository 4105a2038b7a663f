#include "tuner/tuner_model.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string>

#include "core/error.h"

namespace collkit {
namespace {

constexpr std::array<std::string_view, kTunerCollectives> kCollNames = {
    "broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
constexpr std::array<std::string_view, kTunerAlgorithms> kAlgoNames = {
    "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
constexpr std::array<std::string_view, kTunerProtocols> kProtoNames = {"ll", "ll128", "simple"};

template <std::size_t N>
int find_name(const std::array<std::string_view, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

template <std::size_t N>
std::string list_names(const std::array<std::string_view, N>& names) {
  std::string s;
  for (std::string_view n : names) s += (s.empty() ? "" : " ") + std::string(n);
  return s;
}

// A value shown in an error: at most 40 characters, non-printable bytes as '?'.
std::string shown(std::string_view v) {
  std::string s(v.substr(0, 40));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return "'" + s + (v.size() > 40 ? "...'" : "'");
}

class Reader {
 public:
  Reader(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  // The next line that is neither empty nor a comment, split on blanks;
  // false at the end. Comments before the first other line are kept.
  bool next(std::vector<std::string_view>& words, std::vector<std::string>* comments) {
    while (pos_ < text_.size()) {
      std::size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view line = text_.substr(pos_, end - pos_);
      pos_ = end + 1;
      ++line_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find('\0') != std::string_view::npos) fail("line", "contains a NUL byte");
      std::size_t i = 0;
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i == line.size()) continue;
      if (line[i] == '#') {
        if (comments) {
          // One space after '#' and any trailing blanks or CRs are not part
          // of the comment: written back as "# <comment>", it reads the same.
          std::string_view c = line.substr(i + 1);
          if (!c.empty() && c.front() == ' ') c.remove_prefix(1);
          while (!c.empty() && (c.back() == ' ' || c.back() == '\t' || c.back() == '\r'))
            c.remove_suffix(1);
          comments->emplace_back(c);
        }
        continue;
      }
      words.clear();
      while (i < line.size()) {
        std::size_t j = i;
        while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
        words.push_back(line.substr(i, j - i));
        i = j;
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      }
      return true;
    }
    return false;
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw FileError(name_ + ":" + std::to_string(line_) + ": " + field + ": " + what);
  }

  // Numbers are read with std::from_chars: the plugin runs inside programs
  // that may have set a locale with another decimal point.
  std::uint64_t unsigned_value(const std::string& field, std::string_view v, std::uint64_t lo,
                               std::uint64_t hi) const {
    bool digits = !v.empty();
    for (char c : v) digits = digits && c >= '0' && c <= '9';
    if (!digits) fail(field, shown(v) + " is not a non-negative integer");
    std::uint64_t x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi)
      fail(field, shown(v) + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
    return x;
  }

  double time_value(const std::string& field, std::string_view v) const {
    double x = -1;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || !std::isfinite(x) ||
        x < 0 || x > 1e15)
      fail(field, shown(v) + " is not a time in microseconds (finite, 0..1e15)");
    return x;
  }

 private:
  std::string_view text_;
  const std::string& name_;
  std::size_t pos_ = 0;
  int line_ = 0;
};

}  // namespace

std::string_view tuner_collective_name(int id) {
  return id >= 0 && id < kTunerCollectives ? kCollNames[id] : std::string_view();
}
std::string_view tuner_algorithm_name(int id) {
  return id >= 0 && id < kTunerAlgorithms ? kAlgoNames[id] : std::string_view();
}
std::string_view tuner_protocol_name(int id) {
  return id >= 0 && id < kTunerProtocols ? kProtoNames[id] : std::string_view();
}
int tuner_collective_id(std::string_view name) { return find_name(kCollNames, name); }
int tuner_algorithm_id(std::string_view name) { return find_name(kAlgoNames, name); }
int tuner_protocol_id(std::string_view name) { return find_name(kProtoNames, name); }

double TunerTable::time_at(std::uint64_t bytes) const {
  if (points.empty()) return -1;
  const TunerPoint& first = points.front();
  const TunerPoint& last = points.back();
  if (bytes <= first.bytes) return first.time_us;
  if (bytes >= last.bytes)
    return last.time_us * (static_cast<double>(bytes) / static_cast<double>(last.bytes));
  // The first grid size above `bytes`; points[i - 1].bytes <= bytes.
  const auto it =
      std::upper_bound(points.begin(), points.end(), bytes,
                       [](std::uint64_t b, const TunerPoint& p) { return b < p.bytes; });
  const TunerPoint& hi = *it;
  const TunerPoint& lo = *(it - 1);
  if (bytes == lo.bytes) return lo.time_us;
  const double x = static_cast<double>(bytes);
  const double x0 = static_cast<double>(lo.bytes);
  const double x1 = static_cast<double>(hi.bytes);
  if (lo.time_us > 0 && hi.time_us > 0) {
    const double f = std::log(x / x0) / std::log(x1 / x0);
    return std::exp(std::log(lo.time_us) + f * std::log(hi.time_us / lo.time_us));
  }
  return lo.time_us + (hi.time_us - lo.time_us) * (x - x0) / (x1 - x0);
}

int TunerTable::channels_at(std::uint64_t bytes) const {
  if (points.empty()) return 0;
  const auto it =
      std::upper_bound(points.begin(), points.end(), bytes,
                       [](std::uint64_t b, const TunerPoint& p) { return b < p.bytes; });
  return it == points.begin() ? points.front().channels : (it - 1)->channels;
}

const TunerTable* TunerComm::find(int collective, int algorithm, int protocol) const {
  for (const TunerTable& t : tables)
    if (t.collective == collective && t.algorithm == algorithm && t.protocol == protocol) return &t;
  return nullptr;
}

const TunerComm* TunerModel::find(int ranks, int nodes) const {
  for (const TunerComm& c : comms)
    if (c.ranks == ranks && c.nodes == nodes) return &c;
  return nullptr;
}

TunerChoice tuner_best(const TunerComm& comm, int collective, std::uint64_t bytes,
                       const bool* allowed) {
  TunerChoice best;
  float best_f = 0;
  for (int a = 0; a < kTunerAlgorithms; ++a)
    for (int p = 0; p < kTunerProtocols; ++p) {
      if (allowed && !allowed[a * kTunerProtocols + p]) continue;
      const TunerTable* t = comm.find(collective, a, p);
      if (!t) continue;
      const double time = t->time_at(bytes);
      const auto f = static_cast<float>(time);
      if (best.algorithm < 0 || f < best_f) {
        best = TunerChoice{a, p, t->channels_at(bytes), time};
        best_f = f;
      }
    }
  return best;
}

TunerModel parse_tuner_model(std::string_view text, const std::string& name) {
  Reader in(text, name);
  TunerModel model;
  std::vector<std::string_view> w;
  if (!in.next(w, &model.comments))
    throw FileError(name + ": empty: expected the first line '" + std::string(kTunerModelMagic) +
                    "' (a model written by collkit tuner, docs/TUNER.md)");
  if (w.size() != 2 || w[0] != "collkit-nccl-tuner" || w[1] != "1")
    in.fail("header", "expected '" + std::string(kTunerModelMagic) + "' (collkit tuner's model)");
  while (in.next(w, nullptr)) {
    if (w[0] == "comm") {
      if (w.size() != 3) in.fail("comm", "expected 'comm <ranks> <nodes>'");
      TunerComm c;
      c.ranks = static_cast<int>(in.unsigned_value("comm ranks", w[1], 1, 1u << 24));
      c.nodes = static_cast<int>(
          in.unsigned_value("comm nodes", w[2], 1, static_cast<std::uint64_t>(c.ranks)));
      if (model.find(c.ranks, c.nodes))
        in.fail("comm", std::to_string(c.ranks) + " ranks on " + std::to_string(c.nodes) +
                            " nodes given twice");
      model.comms.push_back(std::move(c));
    } else if (w[0] == "table") {
      if (model.comms.empty()) in.fail("table", "before the first 'comm' line");
      if (w.size() != 5)
        in.fail("table", "expected 'table <collective> <algorithm> <protocol> <points>'");
      TunerTable t;
      t.collective = tuner_collective_id(w[1]);
      if (t.collective < 0)
        in.fail("table collective", shown(w[1]) + " is not one of " + list_names(kCollNames));
      t.algorithm = tuner_algorithm_id(w[2]);
      if (t.algorithm < 0)
        in.fail("table algorithm", shown(w[2]) + " is not one of " + list_names(kAlgoNames));
      t.protocol = tuner_protocol_id(w[3]);
      if (t.protocol < 0)
        in.fail("table protocol", shown(w[3]) + " is not one of " + list_names(kProtoNames));
      const auto n = static_cast<int>(in.unsigned_value("table points", w[4], 1, kTunerMaxPoints));
      TunerComm& comm = model.comms.back();
      if (comm.find(t.collective, t.algorithm, t.protocol))
        in.fail("table", std::string(w[1]) + " " + std::string(w[2]) + " " + std::string(w[3]) +
                             " given twice for " + std::to_string(comm.ranks) + " ranks");
      t.points.reserve(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) {
        if (!in.next(w, nullptr))
          in.fail("table",
                  "ends after " + std::to_string(i) + " of its " + std::to_string(n) + " points");
        if (w.size() != 3) in.fail("point", "expected '<bytes> <time_us> <channels>'");
        TunerPoint p;
        p.bytes = in.unsigned_value("point bytes", w[0], 1, UINT64_MAX);
        if (!t.points.empty() && p.bytes <= t.points.back().bytes)
          in.fail("point bytes", shown(w[0]) + " is not larger than the previous point's " +
                                     std::to_string(t.points.back().bytes));
        p.time_us = in.time_value("point time_us", w[1]);
        p.channels =
            static_cast<int>(in.unsigned_value("point channels", w[2], 1, kTunerMaxChannels));
        t.points.push_back(p);
      }
      comm.tables.push_back(std::move(t));
    } else {
      in.fail("line", shown(w[0]) + " is not 'comm' or 'table'");
    }
  }
  if (model.comms.empty()) throw FileError(name + ": no 'comm' section: the model is empty");
  return model;
}

std::string tuner_model_text(const TunerModel& model) {
  std::string out;
  for (const std::string& c : model.comments) out += "# " + c + "\n";
  out += std::string(kTunerModelMagic) + "\n";
  char buf[96];
  for (const TunerComm& comm : model.comms) {
    out += "comm " + std::to_string(comm.ranks) + " " + std::to_string(comm.nodes) + "\n";
    for (const TunerTable& t : comm.tables) {
      out += "table " + std::string(tuner_collective_name(t.collective)) + " " +
             std::string(tuner_algorithm_name(t.algorithm)) + " " +
             std::string(tuner_protocol_name(t.protocol)) + " " + std::to_string(t.points.size()) +
             "\n";
      for (const TunerPoint& p : t.points) {
        out += std::to_string(p.bytes) + " ";
        const auto r =
            std::to_chars(buf, buf + sizeof buf, p.time_us, std::chars_format::general, 17);
        out.append(buf, r.ptr);
        out += " " + std::to_string(p.channels) + "\n";
      }
    }
  }
  return out;
}

}  // namespace collkit
