#include "reports/nccl_tests.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/dtypes.h"
#include "core/error.h"
#include "core/nccl_sizes.h"
#include "reports/report_extra.h"
#include "sim/engine.h"

namespace collkit {
namespace {

// ---- Small text helpers -----------------------------------------------------

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const std::size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_digit);
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// At most 60 characters of a token, for messages.
std::string shown(std::string_view s) {
  std::string t(s.substr(0, 60));
  for (char& c : t)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return "'" + t + (s.size() > 60 ? "...'" : "'");
}

// Text from a log as it goes into a report: printable ASCII, anything else
// '?', so every report written from it is valid JSON (UTF-8).
std::string clean(std::string_view s) {
  std::string t(s.substr(0, 256));
  for (char& c : t)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return t;
}

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> to_double(std::string_view s) {
  double v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v, std::chars_format::general);
  if (ec != std::errc() || p != end || s.empty() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string two(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// A printed figure and half of its last printed digit: the true value lies
// within value +- half ("183.49" -> 0.005, "10340" -> 0.5, "1.2e+07" -> 5e5).
struct Printed {
  double value = 0;
  double half = 0;
};

std::optional<Printed> to_printed(std::string_view s) {
  const std::optional<double> v = to_double(s);
  if (!v) return std::nullopt;
  std::string_view mantissa = s;
  int exponent = 0;
  const std::size_t e = s.find_first_of("eE");
  if (e != std::string_view::npos) {
    mantissa = s.substr(0, e);
    std::string_view ex = s.substr(e + 1);
    if (!ex.empty() && ex.front() == '+') ex.remove_prefix(1);
    const std::optional<std::int64_t> x = to_int(ex);
    if (!x || *x < -400 || *x > 400) return std::nullopt;
    exponent = static_cast<int>(*x);
  }
  const std::size_t dot = mantissa.find('.');
  const int decimals =
      dot == std::string_view::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  return Printed{*v, 0.5 * std::pow(10.0, exponent - decimals)};
}

std::string factor_text(Collective c) {
  switch (c) {
    case Collective::all_reduce:
      return "2(p-1)/p";
    case Collective::broadcast:
    case Collective::reduce:
      return "1";
    case Collective::barrier:
      return "0";
    default:
      return "(p-1)/p";
  }
}

// ---- Consistency of one row's figures ------------------------------------

// What is wrong with (size, time, algbw, busbw) under p ranks, or "" when the
// printed figures agree with nccl-tests' arithmetic within their rounding:
// algbw = size / time (GB/s = 1e3 B/us), busbw = algbw x factor(p).
struct Figures {
  Printed time, algbw, busbw;
};

enum class Mismatch : std::uint8_t { none, algbw, busbw };

// The interval [lo, hi] of algbw that both the time and the printed algbw
// allow; empty (lo > hi) when they disagree.
std::pair<double, double> algbw_range(std::int64_t bytes, const Figures& f) {
  constexpr double kSlack = 1e-9;
  double lo = f.algbw.value - f.algbw.half;
  double hi = f.algbw.value + f.algbw.half;
  if (bytes == 0) {
    lo = std::max(lo, 0.0);
    hi = std::min(hi, 0.0);
  } else {
    const double s = static_cast<double>(bytes) / 1e3;
    const double t_hi = f.time.value + f.time.half;
    const double t_lo = f.time.value - f.time.half;
    lo = std::max(lo, t_hi > 0 ? s / t_hi : std::numeric_limits<double>::infinity());
    hi = std::min(hi, t_lo > 0 ? s / t_lo : std::numeric_limits<double>::infinity());
  }
  return {lo * (1 - kSlack) - 1e-12, hi * (1 + kSlack) + 1e-12};
}

Mismatch check_figures(std::int64_t bytes, const Figures& f, double factor) {
  const auto [lo, hi] = algbw_range(bytes, f);
  if (lo > hi) return Mismatch::algbw;
  const double b_lo = f.busbw.value - f.busbw.half;
  const double b_hi = f.busbw.value + f.busbw.half;
  if (factor * lo > b_hi * (1 + 1e-9) + 1e-12 || factor * hi < b_lo * (1 - 1e-9) - 1e-12)
    return Mismatch::busbw;
  return Mismatch::none;
}

// A rank count under which the row's busbw agrees, for the hint of an error;
// 0 when the figures cannot tell (busbw factor 1, or too small to read).
int ranks_that_fit(Collective c, std::int64_t bytes, const Figures& f) {
  if (c == Collective::broadcast || c == Collective::reduce || c == Collective::barrier) return 0;
  if (!(f.algbw.value > 0) || !(f.busbw.value > 0)) return 0;
  const double ratio = f.busbw.value / f.algbw.value;
  const double scale = c == Collective::all_reduce ? 2.0 : 1.0;
  if (!(ratio < scale)) return 0;
  const double estimate = scale / (scale - ratio);
  if (!(estimate < 1e7)) return 0;
  const int centre = static_cast<int>(std::lround(estimate));
  for (int p = std::max(1, centre - 2); p <= centre + 2; ++p)
    if (check_figures(bytes, f, busbw_factor(c, p)) == Mismatch::none) return p;
  return 0;
}

// Every rank count under which the row's figures agree, within their
// printed rounding; nullopt when the row cannot tell (busbw factor 1, a
// figure too small to read, or a ratio that allows any count). The ratio
// busbw / algbw within rounding bounds the count; each count in between is
// checked.
std::optional<std::vector<int>> ranks_fitting(Collective c, std::int64_t bytes, const Figures& f) {
  if (c == Collective::broadcast || c == Collective::reduce || c == Collective::barrier)
    return std::nullopt;
  const double a_lo = f.algbw.value - f.algbw.half, a_hi = f.algbw.value + f.algbw.half;
  const double b_lo = f.busbw.value - f.busbw.half, b_hi = f.busbw.value + f.busbw.half;
  if (!(a_lo > 0) || !(b_lo > 0)) return std::nullopt;
  const double scale = c == Collective::all_reduce ? 2.0 : 1.0;
  const double r_lo = b_lo / a_hi, r_hi = b_hi / a_lo;
  if (!(r_hi < scale)) return std::nullopt;
  const double p_lo = std::max(1.0, std::floor(scale / (scale - r_lo)));
  const double p_hi = std::ceil(scale / (scale - r_hi));
  if (!(p_hi - p_lo < 1e5)) return std::nullopt;
  std::vector<int> out;
  for (int p = static_cast<int>(p_lo); p <= static_cast<int>(p_hi); ++p)
    if (check_figures(bytes, f, busbw_factor(c, p)) == Mismatch::none) out.push_back(p);
  return out;
}

// ---- Names ----------------------------------------------------------------

struct BinaryName {
  const char* name;
  std::optional<Collective> collective;
};

// Longest first, so "reduce_scatter" wins over "scatter" and "all_reduce"
// over "reduce".
constexpr BinaryName kBinaries[] = {
    {"reduce_scatter", Collective::reduce_scatter},
    {"all_reduce", Collective::all_reduce},
    {"all_gather", Collective::all_gather},
    {"alltoallv", std::nullopt},
    {"hypercube", std::nullopt},
    {"broadcast", Collective::broadcast},
    {"sendrecv", std::nullopt},
    {"alltoall", Collective::all_to_all},
    {"scatter", Collective::scatter},
    {"gather", Collective::gather},
    {"reduce", Collective::reduce},
};

// The nccl-tests binaries a text names, as "<name>_perf" (with any prefix
// ending in '_' and any suffix, e.g. "nccl_alltoall_perf", "all_reduce_perf_mpi").
std::vector<std::string> binaries_in(std::string_view s) {
  std::vector<std::string> out;
  for (std::size_t at = s.find("_perf"); at != std::string_view::npos;
       at = s.find("_perf", at + 1)) {
    std::size_t start = at;
    while (start > 0 && is_word(s[start - 1])) --start;
    const std::string_view word = s.substr(start, at - start);
    for (const BinaryName& b : kBinaries) {
      const std::string_view name = b.name;
      if (word.size() < name.size() || word.substr(word.size() - name.size()) != name) continue;
      const std::string_view before = word.substr(0, word.size() - name.size());
      if (!before.empty() && before.back() != '_') continue;
      std::string found = std::string(name) + "_perf";
      if (std::find(out.begin(), out.end(), found) == out.end()) out.push_back(found);
      break;
    }
  }
  return out;
}

Collective collective_of_binary(const std::string& binary) {
  for (const BinaryName& b : kBinaries)
    if (binary == std::string(b.name) + "_perf") {
      if (!b.collective) {
        // Say what collkit does with such a log, not only that it cannot.
        if (std::string_view(b.name) == "sendrecv")
          throw UsageError(
              binary +
              " measures point-to-point transfers (each rank sends to the next and receives "
              "from the previous), not a collective; collkit simulates, compares and fits "
              "collectives only, so it takes no rows from this log. Its figures are a link's: "
              "the time of the smallest size is about the latency_us, the busbw of the largest "
              "the bandwidth_gbps of a topology's link (docs/TOPOLOGY.md); calibrate fits them "
              "from a collective's log (all_reduce_perf, ...)");
        throw UsageError(binary + " measures " + b.name + ", which collkit has no collective for");
      }
      return *b.collective;
    }
  throw UsageError(binary + " is not an nccl-tests binary");
}

// ---- Text logs --------------------------------------------------------------

struct Line {
  int number = 0;
  std::string_view text;  // without the launcher's label and the line end
  std::string stream;     // the launcher's label ("" when none)
  bool last_unterminated = false;
};

// Strips a launcher's per-line label, so interleaved processes are read
// apart: Open MPI --tag-output "[1,0]<stdout>:", Slurm srun --label "  3: ",
// MPICH -prepend-rank "[3] ".
std::pair<std::string, std::string_view> strip_label(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    const std::size_t close = s.find(']');
    if (close != std::string_view::npos && close > 1 && close < 24) {
      const std::string_view inside = s.substr(1, close - 1);
      const std::string_view after = s.substr(close + 1);
      const std::size_t comma = inside.find(',');
      if (comma != std::string_view::npos && all_digits(inside.substr(0, comma)) &&
          all_digits(inside.substr(comma + 1))) {
        for (const std::string_view tag : {"<stdout>:", "<stderr>:"})
          if (starts_with(after, tag))
            return {"[" + std::string(inside) + "]", after.substr(tag.size())};
      }
      if (all_digits(inside) && starts_with(after, " "))
        return {"[" + std::string(inside) + "]", after.substr(1)};
    }
  }
  std::size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  std::size_t j = i;
  while (j < s.size() && is_digit(s[j])) ++j;
  if (j > i && j - i < 8 && j + 1 < s.size() && s[j] == ':' && s[j + 1] == ' ')
    return {"srun " + std::string(s.substr(i, j - i)), s.substr(j + 2)};
  return {"", s};
}

}  // namespace

bool starts_with_bracket_label(std::string_view line) {
  return !line.empty() && line.front() == '[' && !strip_label(line).first.empty();
}

namespace {

std::vector<Line> split_lines(const std::string& text) {
  std::vector<Line> lines;
  std::size_t pos = 0;
  int number = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    const bool unterminated = end == std::string::npos;
    if (unterminated) end = text.size();
    std::string_view raw(text.data() + pos, end - pos);
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    ++number;
    auto [stream, rest] = strip_label(raw);
    lines.push_back({number, rest, std::move(stream), unterminated});
    pos = end + 1;
  }
  return lines;
}

struct RankLine {
  int line = 0;
  int rank = 0;
  Json device = Json::object();
};

// What a run printed before its table.
struct Header {
  int first_line = 0;
  Json facts = Json::object();  // nccl-tests version, NCCL version, parameters
  int params_line = 0;
  int nthreads = 0;
  int ngpus = 0;
  std::map<int, RankLine> ranks;
  bool empty() const { return first_line == 0; }
};

// The nccl-tests binary the log names before a table.
struct Context {
  int line = 0;  // 0 = none
  std::vector<std::string> binaries;
};

// The label collkit prints above each of its tables (simulate and bench:
// "# collkit simulate (sim): all_reduce, algorithm ring, 8 ranks, topology
// dgx-h100"), so that the tables a user kept read back as what they were.
struct CollkitLabel {
  int line = 0;  // 0 = none
  ReportMode mode = ReportMode::measure;
  Backend backend = Backend::nccl;
  Collective collective = Collective::all_reduce;
  std::string algorithm;
  int ranks = 0;
  std::string topology;
};

// The label's fields, or nullopt when `c` (a comment, '#' stripped) is none.
std::optional<CollkitLabel> collkit_label(std::string_view c) {
  CollkitLabel l;
  std::string_view rest;
  if (starts_with(c, "collkit simulate (")) {
    l.mode = ReportMode::simulate;
    rest = c.substr(18);
  } else if (starts_with(c, "collkit measure (")) {
    rest = c.substr(17);
  } else {
    return std::nullopt;
  }
  const std::size_t close = rest.find("): ");
  if (close == std::string_view::npos) return std::nullopt;
  const std::string_view backend = rest.substr(0, close);
  bool known = false;
  for (const Backend b : {Backend::sim, Backend::mpi, Backend::nccl, Backend::cuda})
    if (to_string(b) == backend) {
      l.backend = b;
      known = true;
    }
  if (!known) return std::nullopt;
  rest = rest.substr(close + 3);
  const std::size_t comma = rest.find(", algorithm ");
  if (comma == std::string_view::npos) return std::nullopt;
  try {
    l.collective = parse_collective(rest.substr(0, comma));
  } catch (const UsageError&) {
    return std::nullopt;
  }
  rest = rest.substr(comma + 12);
  const std::size_t ranks = rest.find(" ranks");
  if (ranks == std::string_view::npos) return std::nullopt;
  const std::size_t before = rest.rfind(", ", ranks);
  if (before == std::string_view::npos) return std::nullopt;
  l.algorithm = std::string(rest.substr(0, before));
  const std::optional<std::int64_t> n = to_int(rest.substr(before + 2, ranks - before - 2));
  if (l.algorithm.empty() || !n || *n < 1 || *n >= (1 << 24)) return std::nullopt;
  l.ranks = static_cast<int>(*n);
  const std::size_t topology = rest.find(", topology ", ranks);
  if (topology != std::string_view::npos)
    l.topology = std::string(trim(rest.substr(topology + 11)));
  return l;
}

struct Group {
  int time = -1, algbw = -1, busbw = -1, wrong = -1;  // column indices within the group
  bool wrong_is_count = true;                         // "#wrong" (not the old "error")
  int width = 0;
  bool in_place = false;
};

struct Layout {
  int line = 0;
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  int prefix = 0;
  std::vector<Group> groups;
  bool timestamp = false;
  int total = 0;
};

struct Table {
  Layout layout;
  Header header;
  CollkitLabel collkit;  // line 0: an nccl-tests table
  Collective collective = Collective::all_reduce;
  int ranks = 0;
  std::string ranks_from;
  bool ranks_from_threads = false;  // nThread x nGpus: one process assumed
  std::string collective_from;
  std::vector<ResultRow> rows;
  std::vector<std::string> origins;
  std::vector<DataType> dtypes;
  std::vector<std::string> redops;
  std::vector<int> roots;
  std::vector<Printed> busbws;
  // Per (type, redop, root): the first and the last size, to catch rows of
  // two runs interleaved without labels.
  std::map<std::tuple<std::string, std::string, int>, std::pair<std::int64_t, std::int64_t>> sizes;
  bool footer = false;
  std::optional<std::int64_t> out_of_bounds;
  std::optional<double> avg_busbw;
  // Ranks from nThread x nGpus that the rows disagree with: the first such
  // row's line and message, and the counts every informative row fits
  // (nullopt until a row tells), so the error can name the count the whole
  // table fits rather than what one rounded row allows.
  int ranks_mismatch_line = 0;
  std::string ranks_mismatch;
  std::optional<std::vector<int>> ranks_fitting;
};

struct Stream {
  Header pending;
  Context context;
  CollkitLabel collkit;  // the label above the next table
  bool summary = false;  // inside collkit's "Best algorithm per size"
  std::optional<Table> table;
  int last_table_line = 0;  // of the last table, for messages
  std::string banner;       // the last "out-of-place / in-place" banner line
};

class TextReader {
 public:
  TextReader(std::string file, const NcclTestsOptions& options)
      : file_(std::move(file)), options_(options) {}

  std::vector<NcclTestsRun> read(const std::string& text) {
    if (trim(text).empty()) throw FileError(file_ + ": empty file");
    for (const Line& line : split_lines(text)) {
      current_ = &line;
      Stream& s = streams_[line.stream];
      on_line(s, line);
    }
    current_ = nullptr;
    for (auto& [name, s] : streams_) close_table(s);
    if (runs_.empty()) {
      if (empty_table_line_ > 0)
        throw FileError(at(empty_table_line_) + "table: the nccl-tests table has no rows");
      throw FileError(file_ +
                      ": no nccl-tests table (no '#  size  count  type  redop ...' header line), "
                      "and not JSON (a collkit report or an nccl-tests -J file)");
    }
    std::stable_sort(runs_.begin(), runs_.end(),
                     [](const NcclTestsRun& a, const NcclTestsRun& b) { return a.line < b.line; });
    return std::move(runs_);
  }

 private:
  std::string at(int line) const { return file_ + ":" + std::to_string(line) + ": "; }
  [[noreturn]] void fail(int line, const std::string& what) const {
    std::string msg = at(line) + what;
    if (current_ && current_->number == line && current_->last_unterminated)
      msg += " (the file ends inside this line: truncated?)";
    throw FileError(msg);
  }

  void on_line(Stream& s, const Line& line) {
    const std::string_view t = trim(line.text);
    if (t.empty()) return;
    if (t.front() == '#') {
      on_comment(s, line, trim(t.substr(1)));
      return;
    }
    const std::vector<std::string_view> tokens = split(t);
    if (s.table && all_digits(tokens.front())) {
      on_row(s, line, tokens);
      return;
    }
    if (tokens.size() >= 8 && all_digits(tokens[0]) && all_digits(tokens[1]))
      fail(line.number,
           "row: a data row outside a table (no '#  size  count ...' header line before it in "
           "this stream)" +
               std::string(s.last_table_line
                               ? "; the previous table, at line " +
                                     std::to_string(s.last_table_line) +
                                     ", had ended: interleaved output of several runs? Label it "
                                     "(srun --label, mpirun --tag-output) or split the log"
                               : ""));
    // Context: the NCCL version NCCL prints at init (RCCL's and
    // rccl-tests' version lines), the binary a command line or a banner
    // names.
    if (note_rccl(s, line, t)) return;
    const std::size_t v = t.find("NCCL version ");
    if (v != std::string_view::npos) {
      const std::vector<std::string_view> after = split(t.substr(v + 13));
      if (!after.empty()) header_of(s, line).facts["nccl_version_line"] = clean(after[0]);
    }
    note_binaries(s, line, t);
  }

  // rccl-tests' own lines, commented or not: "rccl-tests: Version
  // develop:448c4c7" (its version, printed where nccl-tests prints its own)
  // and "RCCL version : 2.22.3-HEAD:7d8d67c" (the library, where NCCL prints
  // "NCCL version 2.26.2+cuda12.8"). True when `t` was one of them.
  bool note_rccl(Stream& s, const Line& line, std::string_view t) {
    const std::vector<std::string_view> tokens = split(t);
    if (tokens.size() >= 3 && tokens[0] == "rccl-tests:" && tokens[1] == "Version") {
      header_of(s, line).facts["rccl_tests_version"] = clean(tokens[2]);
      return true;
    }
    const std::size_t v = t.find("RCCL version");
    if (v == std::string_view::npos) return false;
    std::string_view after = trim(t.substr(v + 12));
    if (!after.empty() && after.front() == ':') after = trim(after.substr(1));
    const std::vector<std::string_view> value = split(after);
    if (!value.empty()) header_of(s, line).facts["rccl_version_line"] = clean(value[0]);
    return true;
  }

  Header& header_of(Stream& s, const Line& line) {
    if (s.pending.empty()) s.pending.first_line = line.number;
    return s.pending;
  }

  void note_binaries(Stream& s, const Line& line, std::string_view t) {
    if (t.find("test concluded") != std::string_view::npos) return;
    std::vector<std::string> names = binaries_in(t);
    if (names.empty()) return;
    s.context.line = line.number;
    s.context.binaries = std::move(names);
  }

  void on_comment(Stream& s, const Line& line, std::string_view c) {
    const std::vector<std::string_view> tokens = split(c);
    if (tokens.empty()) return;
    if (std::optional<CollkitLabel> label = collkit_label(c)) {
      close_table(s);
      s.collkit = std::move(*label);
      s.collkit.line = line.number;
      s.summary = false;
      return;
    }
    // collkit's summary after its tables: a table of its own, not a run's.
    if (starts_with(c, "Best algorithm per size")) {
      close_table(s);
      s.summary = true;
      return;
    }
    if (s.summary) return;
    if (tokens[0] == "size" && is_table_header(tokens)) {
      open_table(s, line, tokens);
      return;
    }
    if (tokens[0] == "Rank" && tokens.size() >= 2) {
      on_rank_line(s, line, tokens, c);
      return;
    }
    if (starts_with(c, "Out of bounds values")) {
      if (s.table) {
        const std::size_t colon = c.find(':');
        const std::vector<std::string_view> v = colon == std::string_view::npos
                                                    ? std::vector<std::string_view>{}
                                                    : split(c.substr(colon + 1));
        const std::optional<std::int64_t> n = v.empty() ? std::nullopt : to_int(v[0]);
        if (!n || *n < 0)
          fail(line.number, "Out of bounds values: expected a count, got " +
                                shown(v.empty() ? std::string_view() : v[0]));
        s.table->out_of_bounds = *n;
      }
      return;
    }
    if (starts_with(c, "Avg bus bandwidth")) {
      if (s.table) on_average(s, line, c);
      return;
    }
    if (tokens[0] == "nccl-tests" && tokens.size() >= 3 && tokens[1] == "version") {
      start_header(s, line);
      Header& h = s.pending;
      h.facts["nccl_tests_version"] = clean(tokens[2]);
      for (std::size_t i = 3; i < tokens.size(); ++i) {
        for (const auto& [key, name] :
             {std::pair<std::string_view, const char*>{"nccl-headers=", "nccl_headers"},
              {"nccl-library=", "nccl_library"}}) {
          if (!starts_with(tokens[i], key)) continue;
          const std::optional<std::int64_t> code = to_int(tokens[i].substr(key.size()));
          if (!code || *code < 0)
            fail(line.number, std::string(name) + ": expected an integer, got " +
                                  shown(tokens[i].substr(key.size())));
          h.facts[name] = *code;
        }
      }
      return;
    }
    if (std::any_of(tokens.begin(), tokens.end(),
                    [](std::string_view t) { return starts_with(t, "nGpus"); }) &&
        std::find(tokens.begin(), tokens.end(), "minBytes") != tokens.end()) {
      on_params(s, line, tokens);
      return;
    }
    if (c.find("out-of-place") != std::string_view::npos ||
        c.find("in-place") != std::string_view::npos) {
      s.banner = std::string(c);
      return;
    }
    if (s.table) return;  // "# in-place: N/A (...)" and the like
    if (note_rccl(s, line, c)) return;
    const std::size_t v = c.find("NCCL version ");
    if (v != std::string_view::npos) {
      const std::vector<std::string_view> after = split(c.substr(v + 13));
      if (!after.empty()) header_of(s, line).facts["nccl_version_line"] = clean(after[0]);
    }
    note_binaries(s, line, c);
  }

  static bool is_table_header(const std::vector<std::string_view>& tokens) {
    bool count = false, time = false, algbw = false, busbw = false;
    for (std::string_view t : tokens) {
      count = count || t == "count";
      time = time || t == "time" || t == "cputime";
      algbw = algbw || t == "algbw";
      busbw = busbw || t == "busbw";
    }
    return count && time && algbw && busbw;
  }

  // A new run's header starts (version or parameter line): the previous
  // run's table, if open, is over.
  void start_header(Stream& s, const Line& line) {
    close_table(s);
    if (!s.pending.empty() && (s.pending.params_line > 0 || !s.pending.ranks.empty() ||
                               s.pending.facts.contains("nccl_tests_version")))
      s.pending = Header{};  // a run that printed no table (it failed): nothing to read
    if (s.pending.empty()) s.pending.first_line = line.number;
  }

  void on_params(Stream& s, const Line& line, const std::vector<std::string_view>& tokens) {
    // A second parameter line, or one after a table, starts a new run; the
    // version line before it belongs to this one.
    if (s.pending.params_line > 0 || s.table) start_header(s, line);
    if (s.pending.empty()) s.pending.first_line = line.number;
    Header& h = s.pending;
    h.params_line = line.number;
    Json& f = h.facts;
    const auto integer = [&](std::size_t i, const char* name) -> std::int64_t {
      if (i >= tokens.size()) fail(line.number, std::string(name) + ": missing value");
      const std::optional<std::int64_t> v = to_int(tokens[i]);
      if (!v || *v < 0)
        fail(line.number, std::string(name) + ": expected an integer, got " + shown(tokens[i]));
      return *v;
    };
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const std::string_view t = tokens[i];
      const std::string_view prev = i > 0 ? tokens[i - 1] : std::string_view();
      if (starts_with(t, "nThread")) {
        h.nthreads = static_cast<int>(std::min<std::int64_t>(integer(i + 1, "nThread"), 1 << 20));
        f["nthreads"] = h.nthreads;
      } else if (starts_with(t, "nGpus")) {
        h.ngpus = static_cast<int>(std::min<std::int64_t>(integer(i + 1, "nGpus"), 1 << 20));
        f["ngpus"] = h.ngpus;
      } else if (t == "minBytes") {
        f["min_bytes"] = integer(i + 1, "minBytes");
      } else if (t == "maxBytes") {
        f["max_bytes"] = integer(i + 1, "maxBytes");
      } else if (t == "step:" && i + 1 < tokens.size()) {
        const std::string_view v = tokens[i + 1];
        const std::size_t paren = v.find('(');
        const std::optional<std::int64_t> n = to_int(v.substr(0, paren));
        if (!n || paren == std::string_view::npos)
          fail(line.number, "step: expected N(factor) or N(bytes), got " + shown(v));
        f[v.substr(paren) == "(factor)" ? "step_factor" : "step_bytes"] = *n;
      } else if (t == "iters:") {
        const char* name = prev == "warmup" ? "warmup" : prev == "agg" ? "agg_iters" : "iters";
        f[name] = integer(i + 1, name);
      } else if (t == "validation:") {
        f["validation"] = integer(i + 1, "validation");
      } else if (t == "graph:") {
        f["graph"] = integer(i + 1, "graph");
      }
    }
  }

  void on_rank_line(Stream& s, const Line& line, const std::vector<std::string_view>& tokens,
                    std::string_view c) {
    const std::optional<std::int64_t> rank = to_int(tokens[1]);
    if (!rank) return;  // "# Rank ..." of something else: not a device line
    if (s.table)
      fail(line.number, "# Rank line: inside the table of line " +
                            std::to_string(s.table->layout.line) +
                            " (interleaved output of several processes? Label it: srun "
                            "--label, mpirun --tag-output)");
    if (*rank < 0 || *rank >= (1 << 24))
      fail(line.number, "# Rank: " + std::to_string(*rank) + " is out of range");
    Header& h = header_of(s, line);
    auto [it, inserted] = h.ranks.emplace(static_cast<int>(*rank), RankLine{});
    if (!inserted)
      fail(line.number, "# Rank: rank " + std::to_string(*rank) + " is listed twice (also line " +
                            std::to_string(it->second.line) +
                            "): interleaved output of several runs? Label it (srun --label, "
                            "mpirun --tag-output) or split the log");
    RankLine& r = it->second;
    r.line = line.number;
    Json d = Json::object();
    d["rank"] = *rank;
    for (std::size_t i = 2; i + 1 < tokens.size(); ++i) {
      const std::string_view k = tokens[i];
      const std::string_view v = tokens[i + 1];
      if (k == "Group" && to_int(v)) d["group"] = *to_int(v);
      if (k == "Pid" && to_int(v)) d["pid"] = *to_int(v);
      if (k == "on") d["host"] = clean(v);
      if (k == "device" && to_int(v)) d["device"] = *to_int(v);
    }
    const std::size_t open = c.find('[');
    const std::size_t close = open == std::string_view::npos ? open : c.find(']', open);
    if (close != std::string_view::npos) {
      d["pci_bus_id"] = clean(c.substr(open + 1, close - open - 1));
      const std::string_view name = trim(c.substr(close + 1));
      if (!name.empty()) d["name"] = clean(name);
    }
    d["kind"] = "gpu";
    r.device = std::move(d);
  }

  void open_table(Stream& s, const Line& line, const std::vector<std::string_view>& tokens) {
    if (s.table) {
      if (s.table->rows.empty())
        fail(line.number, "table: a second table header before any row of the table at line " +
                              std::to_string(s.table->layout.line) +
                              ": interleaved output of several runs? Label it (srun --label, "
                              "mpirun --tag-output) or split the log");
      close_table(s);
    }
    Table t;
    t.layout = layout_of(line, tokens, s.banner);
    t.header = std::move(s.pending);
    s.pending = Header{};
    // A labelled stream that names no binary runs what the launcher's own
    // (unlabelled) lines name: "srun -l ./all_reduce_perf ...".
    const Stream* launcher = nullptr;
    if (!line.stream.empty() && s.context.line == 0) {
      auto it = streams_.find("");
      if (it != streams_.end()) launcher = &it->second;
    }
    if (s.collkit.line > 0) {
      resolve_collkit(t, s.collkit, line.number);
      s.collkit = CollkitLabel{};
    } else {
      resolve_collective(t, launcher ? launcher->context : s.context, line.number);
      resolve_ranks(t, line.number);
    }
    s.context = Context{};  // a later table does not inherit this one's binary
    s.table = std::move(t);
    s.last_table_line = line.number;
  }

  Layout layout_of(const Line& line, const std::vector<std::string_view>& tokens,
                   const std::string& banner) const {
    Layout l;
    l.line = line.number;
    std::size_t i = 0;
    for (; i < tokens.size(); ++i) {
      const std::string_view t = tokens[i];
      if (t == "time" || t == "cputime") break;
      const int col = static_cast<int>(i);
      if (t == "size") l.size = col;
      if (t == "count") l.count = col;
      if (t == "type") l.type = col;
      if (t == "redop") l.redop = col;
      if (t == "root") l.root = col;
    }
    l.prefix = static_cast<int>(i);
    if (l.size != 0 || l.count < 0 || l.type < 0 || l.redop < 0)
      fail(line.number,
           "table header: expected the columns size, count, type, redop [root] before the time");
    for (; i < tokens.size(); ++i) {
      const std::string_view t = tokens[i];
      if (t == "cputime")
        fail(line.number,
             "table header: the time column is 'cputime' (nccl-tests -C 1): the CPU time is "
             "not the collective's time; rerun without -C");
      if (t == "timestamp") {
        l.timestamp = true;
        if (i + 1 != tokens.size())
          fail(line.number, "table header: 'timestamp' must be the last column");
        break;
      }
      if (t == "time") l.groups.emplace_back();
      Group& g = l.groups.back();
      const int col = g.width++;
      if (t == "time") g.time = col;
      if (t == "algbw") g.algbw = col;
      if (t == "busbw") g.busbw = col;
      if (t == "#wrong") g.wrong = col;
      if (t == "error") {
        g.wrong = col;
        g.wrong_is_count = false;
      }
    }
    if (l.groups.empty() || l.groups.size() > 2)
      fail(line.number, "table header: expected one or two groups of time, algbw, busbw, got " +
                            std::to_string(l.groups.size()));
    for (const Group& g : l.groups)
      if (g.algbw < 0 || g.busbw < 0)
        fail(line.number, "table header: a time column without algbw and busbw after it");
    if (l.groups.size() == 2) {
      l.groups[1].in_place = true;
    } else {
      // One group: in place only when the banner says only that.
      l.groups[0].in_place = banner.find("in-place") != std::string::npos &&
                             banner.find("out-of-place") == std::string::npos;
    }
    l.total = l.prefix + (l.timestamp ? 2 : 0);
    for (const Group& g : l.groups) l.total += g.width;
    return l;
  }

  void resolve_collective(Table& t, const Context& ctx, int line) const {
    if (ctx.line > 0 && ctx.binaries.size() > 1 && !options_.collective)
      fail(line, "collective: line " + std::to_string(ctx.line) + " names " +
                     std::to_string(ctx.binaries.size()) + " nccl-tests binaries (" +
                     ctx.binaries[0] + ", " + ctx.binaries[1] +
                     "): which one printed this table? Give --collective");
    if (ctx.line > 0 && ctx.binaries.size() == 1) {
      Collective c{};
      try {
        c = collective_of_binary(ctx.binaries[0]);
      } catch (const UsageError& e) {
        fail(line,
             "collective: " + std::string(e.what()) + " (line " + std::to_string(ctx.line) + ")");
      }
      if (options_.collective && *options_.collective != c)
        fail(line, "collective: the log runs " + ctx.binaries[0] + " (line " +
                       std::to_string(ctx.line) + "), but --collective is " +
                       std::string(to_string(*options_.collective)));
      t.collective = c;
      t.collective_from = ctx.binaries[0] + " (line " + std::to_string(ctx.line) + ")";
      return;
    }
    if (!options_.collective)
      fail(line,
           "collective: the log does not name the nccl-tests binary (e.g. all_reduce_perf) "
           "before this table; give --collective");
    t.collective = *options_.collective;
    t.collective_from = "--collective";
  }

  // A collkit table: its label says the collective, algorithm and ranks.
  void resolve_collkit(Table& t, const CollkitLabel& label, int line) const {
    const std::string from = "collkit's label (line " + std::to_string(label.line) + ")";
    if (options_.collective && *options_.collective != label.collective)
      fail(line, "collective: " + from + " says " + std::string(to_string(label.collective)) +
                     ", but --collective is " + std::string(to_string(*options_.collective)));
    if (options_.ranks > 0 && options_.ranks != label.ranks)
      fail(line, "ranks: " + from + " says " + std::to_string(label.ranks) + ", but --ranks is " +
                     std::to_string(options_.ranks));
    t.collkit = label;
    t.collective = label.collective;
    t.collective_from = from;
    t.ranks = label.ranks;
    t.ranks_from = from;
  }

  void resolve_ranks(Table& t, int line) const {
    const Header& h = t.header;
    if (!h.ranks.empty()) {
      const int n = static_cast<int>(h.ranks.size());
      int expect = 0;
      for (const auto& [rank, r] : h.ranks) {
        if (rank != expect)
          fail(r.line, "# Rank: rank " + std::to_string(rank) + ", but rank " +
                           std::to_string(expect) + " is missing from the '# Rank' lines");
        ++expect;
      }
      if (options_.ranks > 0 && options_.ranks != n)
        fail(line, "ranks: the '# Rank' lines (" + std::to_string(h.ranks.begin()->second.line) +
                       "-" + std::to_string(h.ranks.rbegin()->second.line) + ") list " +
                       std::to_string(n) + " ranks, but --ranks is " +
                       std::to_string(options_.ranks));
      t.ranks = n;
      t.ranks_from = "'# Rank' lines";
      return;
    }
    if (options_.ranks > 0) {
      t.ranks = options_.ranks;
      t.ranks_from = "--ranks";
      return;
    }
    if (h.params_line > 0 && h.nthreads > 0 && h.ngpus > 0) {
      const std::int64_t n = static_cast<std::int64_t>(h.nthreads) * h.ngpus;
      if (n > (1 << 24)) fail(h.params_line, "nThread x nGpus: " + std::to_string(n) + " ranks");
      t.ranks = static_cast<int>(n);
      t.ranks_from = "nThread " + std::to_string(h.nthreads) + " x nGpus " +
                     std::to_string(h.ngpus) + " (one process)";
      t.ranks_from_threads = true;
      return;
    }
    fail(line,
         "ranks: unknown: the log has no '# Rank' lines and no '# nThread .. nGpus ..' line "
         "before this table; give --ranks");
  }

  // Keeps the counts this row fits among those every earlier row fits.
  static void narrow_ranks(Table& t, std::int64_t size, const Figures& f) {
    std::optional<std::vector<int>> fit = ranks_fitting(t.collective, size, f);
    if (!fit) return;
    if (!t.ranks_fitting) {
      t.ranks_fitting = std::move(fit);
      return;
    }
    std::vector<int> both;
    std::set_intersection(t.ranks_fitting->begin(), t.ranks_fitting->end(), fit->begin(),
                          fit->end(), std::back_inserter(both));
    t.ranks_fitting = std::move(both);
  }

  // The error of a table whose rows disagree with nThread x nGpus.
  [[noreturn]] void fail_ranks(const Table& t) const {
    std::string why =
        t.ranks_mismatch + " (p = " + std::to_string(t.ranks) + " from " + t.ranks_from + ")";
    const std::vector<int> fit = t.ranks_fitting.value_or(std::vector<int>{});
    if (fit.size() == 1)
      why += "; the rows fit p = " + std::to_string(fit.front()) + ": give --ranks " +
             std::to_string(fit.front()) +
             " (several processes, and the log has no '# Rank' lines?)";
    else if (fit.size() > 1)
      why += "; the rows fit p = " + std::to_string(fit.front()) + ".." +
             std::to_string(fit.back()) +
             ": give --ranks with the run's process count (several processes, and the log has "
             "no '# Rank' lines?)";
    else
      why += ": several processes? give --ranks with the run's process count";
    fail(t.ranks_mismatch_line, why);
  }

  std::string ranks_hint(const Table& t, int fits) const {
    std::string s = " (p = " + std::to_string(t.ranks) + " from " + t.ranks_from + ")";
    if (fits > 0 && fits != t.ranks) {
      s += "; the row fits p = " + std::to_string(fits);
      if (t.ranks_from == "--ranks")
        s += ": is --ranks right?";
      else if (t.ranks_from_threads)
        s += ": give --ranks " + std::to_string(fits) +
             " (several processes, and the log has no '# Rank' lines?)";
      else
        s += ": is the collective right (" + t.collective_from + ")?";
    }
    return s;
  }

  void on_row(Stream& s, const Line& line, const std::vector<std::string_view>& tokens) {
    Table& t = *s.table;
    const Layout& l = t.layout;
    const int n = static_cast<int>(tokens.size());
    // nccl-tests leaves the out-of-place columns blank when it ran in place
    // only; otherwise every column is there.
    std::size_t first_group = 0;
    if (n != l.total) {
      if (l.groups.size() == 2 && n == l.total - l.groups[0].width)
        first_group = 1;
      else
        fail(line.number, "row: " + std::to_string(n) + " columns, but the header (line " +
                              std::to_string(l.line) + ") has " + std::to_string(l.total));
    }
    const std::optional<std::int64_t> size = to_int(tokens[l.size]);
    if (!size || *size < 0)
      fail(line.number, "size: expected a byte count, got " + shown(tokens[l.size]));
    const std::optional<std::int64_t> count = to_int(tokens[l.count]);
    if (!count || *count < 0)
      fail(line.number, "count: expected an element count, got " + shown(tokens[l.count]));
    DataType dtype{};
    try {
      dtype = parse_data_type(tokens[l.type]);
    } catch (const UsageError& e) {
      fail(line.number, std::string("type: ") + e.what());
    }
    const std::string redop(tokens[l.redop]);
    RedOp op = RedOp::sum;
    if (redop == "none") {
      if (is_reduction(t.collective))
        fail(line.number, "redop: 'none', but " + std::string(to_string(t.collective)) +
                              " reduces (" + t.collective_from + "): is the collective right?");
    } else {
      try {
        op = parse_red_op(redop);
      } catch (const UsageError& e) {
        fail(line.number, std::string("redop: ") + e.what());
      }
    }
    int root = -1;
    if (l.root >= 0) {
      const std::optional<std::int64_t> r = to_int(tokens[l.root]);
      if (!r || *r < -1 || *r >= t.ranks)
        fail(line.number, "root: expected -1 or a rank below " + std::to_string(t.ranks) +
                              ", got " + shown(tokens[l.root]));
      root = static_cast<int>(*r);
    }
    if (is_rooted(t.collective) && root < 0)
      fail(line.number, "root: " + std::string(l.root >= 0 ? "-1" : "no root column") + ", but " +
                            std::string(to_string(t.collective)) + " has a root (" +
                            t.collective_from + ")");
    if (!is_rooted(t.collective) && root >= 0)
      fail(line.number, "root: " + std::to_string(root) + ", but " +
                            std::string(to_string(t.collective)) + " has no root (" +
                            t.collective_from + "): is the collective right?");
    // size = count x element size (x p for per-rank counts).
    const std::int64_t dsize = size_of(dtype);
    const bool per_rank = per_rank_count(t.collective);
    const std::int64_t per = per_rank ? t.ranks : 1;
    const bool fits = *count <= std::numeric_limits<std::int64_t>::max() / dsize / per;
    if (!fits || *count * dsize * per != *size) {
      std::string why = "count: " + std::to_string(*count) + " x " + std::string(to_string(dtype)) +
                        " (" + std::to_string(dsize) + " B)" +
                        (per_rank ? " x " + std::to_string(per) + " ranks" : "") + " = " +
                        (fits ? std::to_string(*count * dsize * per) + " B" : "overflow") +
                        ", but size is " + std::to_string(*size);
      if (per_rank) {
        const std::int64_t unit =
            *count <= std::numeric_limits<std::int64_t>::max() / dsize ? *count * dsize : 0;
        const int p = unit > 0 && *size % unit == 0 && *size / unit < (1 << 24)
                          ? static_cast<int>(*size / unit)
                          : 0;
        why += ranks_hint(t, p);
      }
      fail(line.number, why);
    }
    // Rows of two unlabelled runs interleaved: the size goes back to neither
    // the previous size nor the sweep's first.
    const auto key = std::make_tuple(std::string(tokens[l.type]), redop, root);
    auto [it, first] = t.sizes.emplace(key, std::make_pair(*size, *size));
    if (!first) {
      auto& [lo, last] = it->second;
      if (*size < last && *size != lo)
        fail(line.number, "size: " + std::to_string(*size) + " after " + std::to_string(last) +
                              " (the table's sizes start at " + std::to_string(lo) +
                              "): rows of several runs interleaved? Label them (srun --label, "
                              "mpirun --tag-output) or split the log");
      last = *size;
    }

    const int offset = first_group == 1 ? -l.groups[0].width : 0;
    int base = l.prefix;
    for (std::size_t g = 0; g < l.groups.size(); ++g) {
      const Group& grp = l.groups[g];
      const int at0 = base + offset;
      base += grp.width;
      if (g < first_group) continue;
      // A simulated table's in-place columns repeat its out-of-place ones
      // (simulate writes out-of-place rows only).
      if (t.collkit.line > 0 && t.collkit.mode == ReportMode::simulate && grp.in_place) continue;
      read_group(t, line, tokens, at0, grp, *size, *count, dtype, redop, op, root);
    }
  }

  void read_group(Table& t, const Line& line, const std::vector<std::string_view>& tokens, int at0,
                  const Group& grp, std::int64_t size, std::int64_t count, DataType dtype,
                  const std::string& redop, RedOp op, int root) {
    const std::string where = grp.in_place ? "in-place " : "out-of-place ";
    const auto tok = [&](int i) {
      return tokens[static_cast<std::size_t>(at0) + static_cast<std::size_t>(i)];
    };
    if (tok(grp.time) == "N/A") {
      if (tok(grp.algbw) != "N/A" || tok(grp.busbw) != "N/A")
        fail(line.number, where + "time: N/A, but algbw and busbw are not");
      return;  // not measured
    }
    Figures f;
    const auto figure = [&](int i, const char* name) {
      const std::optional<Printed> p = to_printed(tok(i));
      if (!p || p->value < 0)
        fail(line.number, where + name + ": expected a number >= 0, got " + shown(tok(i)));
      return *p;
    };
    f.time = figure(grp.time, "time");
    f.algbw = figure(grp.algbw, "algbw");
    f.busbw = figure(grp.busbw, "busbw");
    const double factor = busbw_factor(t.collective, t.ranks);
    switch (check_figures(size, f, factor)) {
      case Mismatch::algbw:
        fail(line.number,
             where + "algbw: " + std::string(tok(grp.algbw)) + " GB/s, but size / time = " +
                 std::to_string(size) + " B / " + std::string(tok(grp.time)) + " us = " +
                 two(f.time.value > 0 ? static_cast<double>(size) / (f.time.value * 1e3) : 0.0) +
                 " GB/s");
      case Mismatch::busbw: {
        const std::string why = where + "busbw: " + std::string(tok(grp.busbw)) +
                                " GB/s, but algbw " + std::string(tok(grp.algbw)) + " x " +
                                factor_text(t.collective) + " = " + two(f.algbw.value * factor) +
                                " for " + std::string(to_string(t.collective));
        if (!t.ranks_from_threads)
          fail(line.number, why + ranks_hint(t, ranks_that_fit(t.collective, size, f)));
        if (t.ranks_mismatch_line == 0) {
          t.ranks_mismatch_line = line.number;
          t.ranks_mismatch = why;
        }
        break;
      }
      case Mismatch::none:
        break;
    }
    if (t.ranks_from_threads) narrow_ranks(t, size, f);
    if (t.ranks_mismatch_line > 0) return;  // the table fails when it closes
    std::int64_t wrong = -1;
    if (grp.wrong >= 0 && grp.wrong_is_count && tok(grp.wrong) != "N/A") {
      const std::optional<double> w = to_double(tok(grp.wrong));
      if (!w || *w < 0 || *w > 9e18 || std::floor(*w) != *w)
        fail(line.number, where + "#wrong: expected a count or N/A, got " + shown(tok(grp.wrong)));
      wrong = static_cast<std::int64_t>(*w);
    }
    ResultRow row;
    row.collective = t.collective;
    row.algorithm = t.collkit.line > 0 ? t.collkit.algorithm : kNcclTestsAlgorithm;
    row.bytes = size;
    row.count = count;
    row.in_place = grp.in_place;
    row.time_us = f.time.value;
    row.algbw_gbps = f.algbw.value;
    row.busbw_gbps = f.busbw.value;
    row.wrong = wrong;
    t.rows.push_back(std::move(row));
    t.origins.push_back(file_ + ":" + std::to_string(line.number));
    t.dtypes.push_back(dtype);
    t.redops.push_back(redop == "none" ? std::string(to_string(op)) : redop);
    t.roots.push_back(root);
    t.busbws.push_back(f.busbw);
  }

  void on_average(Stream& s, const Line& line, std::string_view c) {
    Table& t = *s.table;
    if (t.ranks_mismatch_line > 0) fail_ranks(t);  // its rows were not kept
    const std::size_t colon = c.find(':');
    const std::vector<std::string_view> v = colon == std::string_view::npos
                                                ? std::vector<std::string_view>{}
                                                : split(c.substr(colon + 1));
    const std::optional<Printed> avg = v.empty() ? std::nullopt : to_printed(v[0]);
    if (!avg) {
      // nccl-tests prints nan when the table has no figure.
      if (!v.empty() && (v[0] == "nan" || v[0] == "-nan") && t.busbws.empty()) {
        t.footer = true;
        close_table(s);
        return;
      }
      fail(line.number, "Avg bus bandwidth: expected a number, got " +
                            shown(v.empty() ? std::string_view() : v[0]));
    }
    if (!t.busbws.empty()) {
      double sum = 0, half = 0;
      for (const Printed& b : t.busbws) {
        sum += b.value;
        half = std::max(half, b.half);
      }
      const double mean = sum / static_cast<double>(t.busbws.size());
      // %g keeps 6 significant digits.
      const double tol = half + std::max(avg->half, std::fabs(avg->value) * 5e-6) + 1e-9;
      if (std::fabs(mean - avg->value) > tol)
        fail(line.number, "Avg bus bandwidth: " + std::string(v[0]) +
                              ", but the mean of the table's " + std::to_string(t.busbws.size()) +
                              " busbw figures is " + num(mean) +
                              " (a row missing, added or edited?)");
    }
    t.avg_busbw = avg->value;
    t.footer = true;
    close_table(s);
  }

  void close_table(Stream& s) {
    if (!s.table) return;
    Table t = std::move(*s.table);
    s.table.reset();
    if (t.ranks_mismatch_line > 0) fail_ranks(t);
    s.banner.clear();
    if (t.rows.empty()) {
      if (empty_table_line_ == 0) empty_table_line_ = t.layout.line;
      return;
    }
    NcclTestsRun run;
    run.line = t.layout.line;
    run.row_origins = std::move(t.origins);
    Report& r = run.report;
    r.mode = ReportMode::measure;
    r.backend = Backend::nccl;
    if (t.collkit.line > 0) {
      r.mode = t.collkit.mode;
      r.backend = t.collkit.backend;
      // The table names its topology, not the file (nor its hash).
      if (!t.collkit.topology.empty())
        r.topology = TopologyInfo{t.collkit.topology, "", ""};
      else if (r.mode == ReportMode::simulate)
        r.topology = TopologyInfo{"(unknown)", "", ""};
    }
    r.ranks = t.ranks;
    r.dtype = t.dtypes.front();
    r.op = parse_red_op(t.redops.front());
    // Collectives without a root print -1; a report's root is a rank (0 there,
    // as collkit simulate stores it), so schedules can be rebuilt from it.
    r.root = std::max(0, t.roots.front());
    const bool mixed_dtype = std::any_of(t.dtypes.begin(), t.dtypes.end(),
                                         [&](DataType d) { return d != t.dtypes.front(); });
    const bool mixed_op = std::any_of(t.redops.begin(), t.redops.end(),
                                      [&](const std::string& o) { return o != t.redops.front(); });
    const bool mixed_root =
        std::any_of(t.roots.begin(), t.roots.end(), [&](int x) { return x != t.roots.front(); });
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
      if (mixed_dtype) t.rows[i].dtype = t.dtypes[i];
      if (mixed_op) t.rows[i].op = parse_red_op(t.redops[i]);
      if (mixed_root) t.rows[i].root = t.roots[i];
    }
    r.results = std::move(t.rows);
    r.best = compute_best(r.results);
    Json& x = r.extra;
    x["source_format"] = t.collkit.line > 0 ? "collkit table" : "nccl-tests text";
    x["source_line"] = t.layout.line;
    x["collective_from"] = t.collective_from;
    x["ranks_from"] = t.ranks_from;
    for (const auto& [key, value] : t.header.facts.items()) x[key] = value;
    if (t.header.facts.contains("nccl_library"))
      x["nccl_version"] = nccl_version_text(t.header.facts["nccl_library"].get<std::int64_t>());
    else if (t.header.facts.contains("nccl_version_line"))
      x["nccl_version"] = t.header.facts["nccl_version_line"];
    // An rccl-tests log: the library is RCCL, whose version is its own
    // ("2.22.3-HEAD:7d8d67c" -> "2.22.3"; RCCL's numbers follow the NCCL
    // release it is synchronised with, but its cost model is RCCL's).
    if (t.header.facts.contains("rccl_version_line") ||
        t.header.facts.contains("rccl_tests_version")) {
      x["library"] = "RCCL";
      if (t.header.facts.contains("rccl_version_line")) {
        const std::string line = t.header.facts["rccl_version_line"].get<std::string>();
        const std::optional<NcclVersion> v = parse_nccl_version(line.substr(0, line.find('-')));
        if (v) x["rccl_version"] = to_string(*v);
      }
    }
    if (!t.header.ranks.empty()) {
      Json devices = Json::array();
      std::set<std::string> hosts;
      for (const auto& [rank, rl] : t.header.ranks) {
        devices.push_back(rl.device);
        if (rl.device.contains("host")) hosts.insert(rl.device["host"].get<std::string>());
      }
      x["devices"] = std::move(devices);
      if (!hosts.empty()) x["hosts"] = hosts.size();
    }
    if (t.out_of_bounds) x["out_of_bounds"] = *t.out_of_bounds;
    if (t.avg_busbw) x["avg_busbw"] = *t.avg_busbw;
    if (!t.footer) x["complete"] = false;
    runs_.push_back(std::move(run));
  }

  std::string file_;
  NcclTestsOptions options_;
  std::map<std::string, Stream> streams_;
  std::vector<NcclTestsRun> runs_;
  int empty_table_line_ = 0;
  const Line* current_ = nullptr;
};

// ---- JSON -------------------------------------------------------------------

std::string json_type(const Json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string " + shown(v.get_ref<const std::string&>());
  if (v.is_array()) return "an array";
  return "an object";
}

class JsonReader {
 public:
  JsonReader(std::string file, const NcclTestsOptions& options)
      : file_(std::move(file)), options_(options) {}

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw FileError(file_ + ": " + path + ": " + what);
  }

  const Json& member(const Json& obj, const std::string& path, const std::string& key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path.empty() ? key : path + "." + key, "missing");
    return *it;
  }

  std::int64_t integer(const Json& v, const std::string& path, std::int64_t min) const {
    std::int64_t x = 0;
    if (v.is_number_unsigned()) {
      if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        fail(path, "out of range");
      x = static_cast<std::int64_t>(v.get<std::uint64_t>());
    } else if (v.is_number_integer()) {
      x = v.get<std::int64_t>();
    } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
               std::fabs(v.get<double>()) < 9e18) {
      x = static_cast<std::int64_t>(v.get<double>());
    } else {
      fail(path, "expected an integer, got " + json_type(v));
    }
    if (x < min) fail(path, "must be >= " + std::to_string(min) + ", got " + std::to_string(x));
    return x;
  }

  double number(const Json& v, const std::string& path) const {
    if (v.is_string() && (v.get_ref<const std::string&>() == "nan"))
      fail(path, "nan (nccl-tests wrote no figure)");
    if (!v.is_number()) fail(path, "expected a number, got " + json_type(v));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0) fail(path, "expected a number >= 0, got " + num(x));
    return x;
  }

  std::string string(const Json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, "expected a string, got " + json_type(v));
    return v.get<std::string>();
  }

  NcclTestsRun read(const Json& j) {
    if (!j.is_object()) fail("(top level)", "expected an object, got " + json_type(j));
    NcclTestsRun run;
    Report& rep = run.report;
    rep.mode = ReportMode::measure;
    rep.backend = Backend::nccl;
    Json& x = rep.extra;
    x["source_format"] = "nccl-tests JSON";
    if (j.contains("version")) {
      const std::int64_t v = integer(j["version"], "version", 0);
      if (v < 1 || v > 3)
        fail("version", std::to_string(v) + ": collkit reads nccl-tests JSON versions 1-3");
      x["json_version"] = v;
    }
    const Json* ext = nullptr;
    if (j.contains("collkit")) {
      ext = &j["collkit"];
      if (!ext->is_object()) fail("collkit", "expected an object, got " + json_type(*ext));
    }
    std::string algorithm = kNcclTestsAlgorithm;
    if (ext) read_extension(*ext, rep, algorithm);
    const Collective collective = read_collective(j, ext, x);

    const Json* config = nullptr;
    if (j.contains("config")) {
      config = &j["config"];
      if (!config->is_object()) fail("config", "expected an object, got " + json_type(*config));
      read_config(*config, x);
    }
    if (rep.ranks == 0) read_ranks(config, rep);

    const Json& results = member(j, "", "results");
    if (!results.is_array()) fail("results", "expected an array, got " + json_type(results));
    Entries entries;
    for (std::size_t i = 0; i < results.size(); ++i)
      read_result(results[i], "results[" + std::to_string(i) + "]", collective, algorithm, run,
                  entries);
    if (rep.results.empty()) fail("results", "no figures (no out_of_place or in_place entry)");
    read_trailer(j, entries, x);
    set_levels(collective, ext && ext->contains("dtype"), entries, rep);
    rep.best = compute_best(rep.results);
    return run;
  }

 private:
  // Per result row kept: its type, reduction and root (the report's levels
  // are the first row's, and rows that differ carry their own), and the
  // busbw figures read, for the file's average.
  struct Entries {
    std::vector<DataType> dtypes;
    std::vector<std::string> redops;
    std::vector<int> roots;
    double busbw_sum = 0;
    int busbw_n = 0;
  };

  // The collective: the extension, the binary (args[0]), --collective.
  Collective read_collective(const Json& j, const Json* ext, Json& x) const {
    std::optional<Collective> c;
    std::string binary;
    if (j.contains("args") && j["args"].is_array() && !j["args"].empty() &&
        j["args"][0].is_string()) {
      const std::vector<std::string> names = binaries_in(j["args"][0].get<std::string>());
      if (names.size() == 1) binary = names[0];
    }
    if (ext && ext->contains("collective")) {
      c = collective_in(*ext, "collkit.collective");
    } else if (!binary.empty()) {
      try {
        c = collective_of_binary(binary);
      } catch (const UsageError& e) {
        fail("args[0]", e.what());
      }
      if (options_.collective && *options_.collective != *c)
        fail("args[0]", "the file is of " + binary + ", but --collective is " +
                            std::string(to_string(*options_.collective)));
      x["collective_from"] = "args[0] (" + binary + ")";
    } else if (options_.collective) {
      c = options_.collective;
      x["collective_from"] = "--collective";
    } else {
      fail("args[0]",
           "does not name an nccl-tests binary (e.g. all_reduce_perf); give --collective");
    }
    return *c;
  }

  // The rank count: config.devices x nthreads x ngpus, else --ranks.
  void read_ranks(const Json* config, Report& rep) const {
    int from_devices = 0;
    if (config && config->contains("devices") && (*config)["devices"].is_array() &&
        !(*config)["devices"].empty()) {
      // Each factor is bounded before the product, so it cannot overflow.
      const auto bounded = [&](std::int64_t v, const char* path) {
        if (v > (1 << 24)) fail(path, "too large: " + std::to_string(v));
        return v;
      };
      const std::int64_t n =
          bounded(static_cast<std::int64_t>((*config)["devices"].size()), "config.devices") *
          bounded(integer(member(*config, "config", "nthreads"), "config.nthreads", 1),
                  "config.nthreads") *
          bounded(integer(member(*config, "config", "ngpus"), "config.ngpus", 1), "config.ngpus");
      if (n > (1 << 24)) fail("config.devices", "too many ranks: " + std::to_string(n));
      from_devices = static_cast<int>(n);
    }
    if (from_devices > 0 && options_.ranks > 0 && options_.ranks != from_devices)
      fail("config.devices", "lists " + std::to_string((*config)["devices"].size()) +
                                 " process(es) x nthreads x "
                                 "ngpus = " +
                                 std::to_string(from_devices) + " ranks, but --ranks is " +
                                 std::to_string(options_.ranks));
    if (from_devices > 0) {
      rep.ranks = from_devices;
      rep.extra["ranks_from"] = "config.devices x nthreads x ngpus";
    } else if (options_.ranks > 0) {
      rep.ranks = options_.ranks;
      rep.extra["ranks_from"] = "--ranks";
    } else {
      fail("config.devices", "missing or empty, so the rank count is unknown; give --ranks");
    }
  }

  // An entry's root: -1 or a rank, as the collective has one or not.
  std::int64_t read_root(const Json& rj, const std::string& path, Collective collective,
                         int ranks) const {
    std::int64_t root = 0;
    if (rj.is_string()) {
      const std::optional<std::int64_t> v = to_int(trim(rj.get<std::string>()));
      if (!v) fail(path, "expected an integer, got " + json_type(rj));
      root = *v;
    } else {
      root = integer(rj, path, -1);
    }
    if (root < -1 || root >= ranks)
      fail(path, "expected -1 or a rank below " + std::to_string(ranks) + ", got " +
                     std::to_string(root));
    if (is_rooted(collective) && root < 0)
      fail(path, "-1, but " + std::string(to_string(collective)) + " has a root");
    if (!is_rooted(collective) && root >= 0)
      fail(path,
           std::to_string(root) + ", but " + std::string(to_string(collective)) + " has none");
    return root;
  }

  // One figure set (out_of_place or in_place) of an entry, checked: the
  // algbw is size / time and the busbw algbw x the collective's factor.
  Figures read_figures(const Json& g, const std::string& gpath, Collective collective,
                       std::int64_t size, int ranks) const {
    if (!g.is_object()) fail(gpath, "expected an object or null, got " + json_type(g));
    if (g.contains("cpu_time"))
      fail(gpath + ".cpu_time",
           "the file reports CPU time (nccl-tests -C 1), not the collective's time; rerun "
           "without -C");
    Figures f;
    f.time = {number(member(g, gpath, "time"), gpath + ".time"), 5e-7};
    f.algbw = {number(member(g, gpath, "alg_bw"), gpath + ".alg_bw"), 5e-7};
    f.busbw = {number(member(g, gpath, "bus_bw"), gpath + ".bus_bw"), 5e-7};
    const double factor = busbw_factor(collective, ranks);
    switch (check_figures(size, f, factor)) {
      case Mismatch::algbw:
        fail(gpath + ".alg_bw",
             num(f.algbw.value) + " GB/s, but size / time = " + std::to_string(size) + " B / " +
                 num(f.time.value) + " us = " +
                 num(f.time.value > 0 ? static_cast<double>(size) / (f.time.value * 1e3) : 0.0) +
                 " GB/s");
      case Mismatch::busbw: {
        const int fits = ranks_that_fit(collective, size, f);
        fail(gpath + ".bus_bw",
             num(f.busbw.value) + " GB/s, but alg_bw x " + factor_text(collective) + " = " +
                 num(f.algbw.value * factor) + " with p = " + std::to_string(ranks) +
                 (fits > 0 && fits != ranks ? "; the row fits p = " + std::to_string(fits) +
                                                  ": give --ranks " + std::to_string(fits)
                                            : ""));
      }
      case Mismatch::none:
        break;
    }
    return f;
  }

  // One entry of results[]: its size, count, type, reduction and root, and
  // a row for each of its figure sets (an in_place that collkit wrote as a
  // copy of out_of_place counts in the average but is not a row).
  void read_result(const Json& e, const std::string& path, Collective collective,
                   const std::string& algorithm, NcclTestsRun& run, Entries& entries) const {
    Report& rep = run.report;
    if (!e.is_object()) fail(path, "expected an object, got " + json_type(e));
    const std::int64_t size = integer(member(e, path, "size"), path + ".size", 0);
    const std::int64_t count = integer(member(e, path, "count"), path + ".count", 0);
    DataType dtype{};
    try {
      dtype = parse_data_type(string(member(e, path, "type"), path + ".type"));
    } catch (const UsageError& err) {
      fail(path + ".type", err.what());
    }
    const std::string redop = string(member(e, path, "redop"), path + ".redop");
    RedOp op = rep.op;
    if (redop == "none") {
      if (is_reduction(collective))
        fail(path + ".redop", "'none', but " + std::string(to_string(collective)) + " reduces");
    } else {
      try {
        op = parse_red_op(redop);
      } catch (const UsageError& err) {
        fail(path + ".redop", err.what());
      }
    }
    const std::int64_t root =
        read_root(member(e, path, "root"), path + ".root", collective, rep.ranks);
    const std::int64_t dsize = size_of(dtype);
    const std::int64_t per = per_rank_count(collective) ? rep.ranks : 1;
    if (count > std::numeric_limits<std::int64_t>::max() / dsize / per ||
        count * dsize * per != size)
      fail(path + ".count", std::to_string(count) + " x " + std::to_string(dsize) + " B" +
                                (per > 1 ? " x " + std::to_string(per) + " ranks" : "") +
                                " is not the size " + std::to_string(size));
    bool copied = false;
    if (e.contains("collkit")) {
      const Json& m = e["collkit"];
      copied = m.is_object() && m.contains("in_place") && m["in_place"].is_string() &&
               m["in_place"].get<std::string>() == "copy of out_of_place";
    }
    for (const bool in_place : {false, true}) {
      const char* key = in_place ? "in_place" : "out_of_place";
      const std::string gpath = path + "." + key;
      if (!e.contains(key) || e[key].is_null()) continue;
      const Json& g = e[key];
      const Figures f = read_figures(g, gpath, collective, size, rep.ranks);
      entries.busbw_sum += f.busbw.value;
      ++entries.busbw_n;
      if (in_place && copied) continue;
      std::int64_t wrong = -1;
      if (g.contains("nwrong") && !g["nwrong"].is_null())
        wrong = integer(g["nwrong"], gpath + ".nwrong", 0);
      ResultRow row;
      row.collective = collective;
      row.algorithm = algorithm;
      row.bytes = size;
      row.count = count;
      row.in_place = in_place;
      row.time_us = f.time.value;
      row.algbw_gbps = f.algbw.value;
      row.busbw_gbps = f.busbw.value;
      row.wrong = wrong;
      rep.results.push_back(std::move(row));
      run.row_origins.push_back(file_ + ": " + gpath);
      entries.dtypes.push_back(dtype);
      entries.redops.emplace_back(to_string(op));
      entries.roots.push_back(static_cast<int>(root));
    }
  }

  // What follows results[]: the average busbw (checked against the rows),
  // out-of-bounds count, errors, times, args and NCCL version.
  void read_trailer(const Json& j, const Entries& entries, Json& x) const {
    // The average, spelled average_bus_bandwidith / bandwidith before
    // nccl-tests fixed the typo.
    for (const auto& [key, inner] :
         {std::pair<const char*, const char*>{"average_bus_bandwidth", "bandwidth"},
          {"average_bus_bandwidith", "bandwidith"}}) {
      if (!j.contains(key)) continue;
      const Json& a = j[key];
      const std::string path = std::string(key) + "." + inner;
      if (!a.is_object() || !a.contains(inner)) fail(key, "expected an object with " + path);
      if (a[inner].is_string()) continue;  // "nan": no figures
      const double avg = number(a[inner], path);
      const double mean = entries.busbw_n ? entries.busbw_sum / entries.busbw_n : 0;
      if (std::fabs(avg - mean) > 1e-6 + 1e-9 * std::fabs(avg))
        fail(path, num(avg) + ", but the mean of the file's bus_bw figures is " + num(mean) +
                       " (a result missing, added or edited?)");
      x["avg_busbw"] = avg;
    }
    if (j.contains("out_of_bounds") && j["out_of_bounds"].is_object() &&
        j["out_of_bounds"].contains("count"))
      x["out_of_bounds"] = integer(j["out_of_bounds"]["count"], "out_of_bounds.count", 0);
    if (j.contains("errors") && j["errors"].is_array() && !j["errors"].empty())
      x["errors"] = j["errors"];
    for (const char* key : {"start_time", "end_time"})
      if (j.contains(key) && j[key].is_string()) x[key] = j[key];
    if (j.contains("args") && j["args"].is_array()) x["args"] = j["args"];
    if (j.contains("nccl_version") && j["nccl_version"].is_number_integer() &&
        j["nccl_version"].get<std::int64_t>() > 0) {
      x["nccl_library"] = j["nccl_version"];
      x["nccl_version"] = nccl_version_text(j["nccl_version"].get<std::int64_t>());
    }
  }

  // The report's type, reduction and root: the extension's, else the first
  // row's; rows that differ from them carry their own.
  static void set_levels(Collective collective, bool ext_levels, const Entries& entries,
                         Report& rep) {
    if (!ext_levels) {
      rep.dtype = entries.dtypes.front();
      rep.op = parse_red_op(entries.redops.front());
      rep.root = std::max(0, entries.roots.front());
    }
    const auto mixed = [](const auto& v, const auto& top) {
      return std::any_of(v.begin(), v.end(), [&](const auto& e) { return e != top; });
    };
    const bool mixed_dtype = mixed(entries.dtypes, rep.dtype);
    const bool mixed_op =
        is_reduction(collective) && mixed(entries.redops, std::string(to_string(rep.op)));
    const bool mixed_root = is_rooted(collective) && mixed(entries.roots, rep.root);
    for (std::size_t i = 0; i < rep.results.size(); ++i) {
      if (mixed_dtype) rep.results[i].dtype = entries.dtypes[i];
      if (mixed_op) rep.results[i].op = parse_red_op(entries.redops[i]);
      if (mixed_root) rep.results[i].root = entries.roots[i];
    }
  }

  Collective collective_in(const Json& obj, const std::string& path) const {
    const std::string s = string(member(obj, "collkit", "collective"), path);
    try {
      const Collective c = parse_collective(s);
      if (options_.collective && *options_.collective != c)
        fail(path, s + ", but --collective is " + std::string(to_string(*options_.collective)));
      return c;
    } catch (const UsageError& e) {
      fail(path, e.what());
    }
  }

  void read_extension(const Json& ext, Report& rep, std::string& algorithm) const {
    if (ext.contains("collkit_version"))
      rep.collkit_version = string(ext["collkit_version"], "collkit.collkit_version");
    if (ext.contains("algorithm")) {
      algorithm = string(ext["algorithm"], "collkit.algorithm");
      if (algorithm.empty()) fail("collkit.algorithm", "must not be empty");
    }
    if (ext.contains("mode")) {
      const std::string m = string(ext["mode"], "collkit.mode");
      if (m == "simulate")
        rep.mode = ReportMode::simulate;
      else if (m != "measure")
        fail("collkit.mode", "unknown mode " + shown(m) + "; valid: simulate, measure");
    }
    if (ext.contains("backend")) {
      const std::string b = string(ext["backend"], "collkit.backend");
      bool known = false;
      for (Backend k : {Backend::sim, Backend::mpi, Backend::nccl, Backend::cuda})
        if (to_string(k) == b) {
          rep.backend = k;
          known = true;
        }
      if (!known) fail("collkit.backend", "unknown backend " + shown(b));
    }
    if (ext.contains("ranks")) {
      const std::int64_t n = integer(ext["ranks"], "collkit.ranks", 1);
      if (n > (1 << 24)) fail("collkit.ranks", "too many ranks: " + std::to_string(n));
      if (options_.ranks > 0 && options_.ranks != n)
        fail("collkit.ranks",
             std::to_string(n) + ", but --ranks is " + std::to_string(options_.ranks));
      rep.ranks = static_cast<int>(n);
      rep.extra["ranks_from"] = "collkit.ranks";
    }
    if (ext.contains("launch")) {
      const std::string l = string(ext["launch"], "collkit.launch");
      try {
        parse_launch_mode(l);
      } catch (const UsageError& e) {
        fail("collkit.launch", e.what());
      }
      rep.extra["launch"] = l;
    }
    if (ext.contains("topology") && ext["topology"].is_object()) {
      const Json& t = ext["topology"];
      TopologyInfo info;
      for (const auto& [key, slot] : {std::pair<const char*, std::string*>{"name", &info.name},
                                      {"file", &info.file},
                                      {"sha256", &info.sha256}})
        if (t.contains(key)) *slot = string(t[key], std::string("collkit.topology.") + key);
      rep.topology = info;
    }
    if (ext.contains("dtype")) {
      try {
        rep.dtype = parse_data_type(string(ext["dtype"], "collkit.dtype"));
        rep.op = parse_red_op(string(member(ext, "collkit", "op"), "collkit.op"));
      } catch (const UsageError& e) {
        fail("collkit.dtype", e.what());
      }
      const std::int64_t root = integer(member(ext, "collkit", "root"), "collkit.root", -1);
      if (root > (1 << 24)) fail("collkit.root", "out of range");
      rep.root = static_cast<int>(root);
    }
  }

  void read_config(const Json& c, Json& x) const {
    const auto copy_int = [&](const char* from, const char* to) {
      if (c.contains(from) && !c[from].is_null())
        x[to] = integer(c[from], std::string("config.") + from, 0);
    };
    copy_int("nthreads", "nthreads");
    copy_int("ngpus", "ngpus");
    copy_int("minimum_bytes", "min_bytes");
    copy_int("maximum_bytes", "max_bytes");
    copy_int("step_factor", "step_factor");
    copy_int("step_bytes", "step_bytes");
    copy_int("warmup_iters", "warmup");
    copy_int("iterations", "iters");
    copy_int("aggregated_iterations", "agg_iters");
    copy_int("validation", "validation");
    copy_int("graph", "graph");
    if (c.contains("devices") && c["devices"].is_array() && !x.contains("devices")) {
      Json devices = Json::array();
      for (const Json& d : c["devices"]) {
        if (!d.is_object()) continue;
        Json e = Json::object();
        for (const auto& [from, to] : {std::pair<const char*, const char*>{"rank", "rank"},
                                       {"group", "group"},
                                       {"pid", "pid"},
                                       {"hostname", "host"},
                                       {"device", "device"},
                                       {"device_hex", "pci_bus_id"},
                                       {"device_info", "name"}})
          if (d.contains(from)) e[to] = d[from];
        e["kind"] = "gpu";
        devices.push_back(std::move(e));
      }
      x["devices"] = std::move(devices);
    }
  }

  std::string file_;
  NcclTestsOptions options_;
};

// ---- Writing ----------------------------------------------------------------

std::int64_t nccl_version_code(const Json& v) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (!v.is_string()) return 0;
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(v.get<std::string>().c_str(), "%d.%d.%d", &major, &minor, &patch) != 3) return 0;
  if (major < 0 || minor < 0 || patch < 0 || minor > 99 || patch > 99 || major > 99) return 0;
  return major > 2 || (major == 2 && minor >= 9) ? major * 10000 + minor * 100 + patch
                                                 : major * 1000 + minor * 100 + patch;
}

std::int64_t extra_int(const Report& r, const char* key, std::int64_t fallback) {
  return extra_integer(r, key).value_or(fallback);
}

Json group_json(const ResultRow& r) {
  Json g = Json::object();
  g["time"] = r.time_us;
  g["alg_bw"] = r.algbw_gbps;
  g["bus_bw"] = r.busbw_gbps;
  g["nwrong"] = r.wrong >= 0 ? Json(r.wrong) : Json(nullptr);
  return g;
}

}  // namespace

std::vector<NcclTestsRun> parse_nccl_tests_text(const std::string& text, const std::string& file,
                                                const NcclTestsOptions& options) {
  TextReader reader(file, options);
  return reader.read(text);
}

bool looks_like_nccl_tests_json(const Json& j) {
  return j.is_object() && !j.contains("collkit_version") && j.contains("results") &&
         (j.contains("config") || j.contains("version") || j.contains("nccl_version"));
}

NcclTestsRun nccl_tests_run_from_json(const Json& j, const std::string& file,
                                      const NcclTestsOptions& options) {
  JsonReader reader(file, options);
  return reader.read(j);
}

std::optional<Collective> collective_of_nccl_tests_binary(std::string_view name) {
  const std::vector<std::string> names = binaries_in(name);
  if (names.empty()) return std::nullopt;
  return collective_of_binary(names.front());
}

std::string nccl_version_text(std::int64_t code) {
  if (code <= 0) return "unknown";
  const bool new_scheme = code >= 20900;
  const std::int64_t major = new_scheme ? code / 10000 : code / 1000;
  const std::int64_t minor = new_scheme ? code / 100 % 100 : code / 100 % 10;
  const std::int64_t patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string nccl_tests_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &local);
  return buf;
}

namespace {

// One table line: its out-of-place row, then its in-place one.
struct JsonEntry {
  const ResultRow* oop = nullptr;
  const ResultRow* ip = nullptr;
};

// The rows of this (collective, algorithm), paired by (bytes, count, type,
// op, root) in order of first appearance; lo and hi: the sizes' range.
std::vector<JsonEntry> json_entries(const Report& report, Collective collective,
                                    const std::string& algorithm, std::int64_t& lo,
                                    std::int64_t& hi) {
  std::vector<JsonEntry> entries;
  std::map<std::tuple<std::int64_t, std::int64_t, int, int, int>, std::size_t> index;
  lo = -1;
  hi = -1;
  for (const ResultRow& r : report.results) {
    if (r.collective != collective || r.algorithm != algorithm) continue;
    const auto key =
        std::make_tuple(r.bytes, r.count, static_cast<int>(r.dtype.value_or(report.dtype)),
                        static_cast<int>(r.op.value_or(report.op)), r.root.value_or(report.root));
    auto [it, fresh] = index.emplace(key, entries.size());
    if (fresh) entries.emplace_back();
    JsonEntry& e = entries[it->second];
    // An entry is one table line: its out-of-place figures, then its
    // in-place ones. A row that cannot join the latest line of its size
    // (a repeated size, or an out-of-place row after an in-place one)
    // starts a new line, so reading the file back gives the rows in order.
    const bool joins = r.in_place ? e.ip == nullptr : e.oop == nullptr && e.ip == nullptr;
    if (joins) {
      (r.in_place ? e.ip : e.oop) = &r;
    } else {
      it->second = entries.size();
      entries.emplace_back();
      (r.in_place ? entries.back().ip : entries.back().oop) = &r;
    }
    lo = lo < 0 ? r.bytes : std::min(lo, r.bytes);
    hi = std::max(hi, r.bytes);
  }

  return entries;
}

// nccl-tests' "config": the run's sizes, iterations and devices.
Json json_config(const Report& report, const NcclTestsJsonInfo& info, std::int64_t lo,
                 std::int64_t hi) {
  Json config = Json::object();
  const std::int64_t step_factor =
      info.step_factor >= 0 ? info.step_factor : extra_int(report, "step_factor", 1);
  Json devices = Json::array();
  const Json* known = extra_devices(report);
  if (known && static_cast<int>(known->size()) != report.ranks) known = nullptr;
  if (known) {
    for (const Json& d : *known) {
      Json e = Json::object();
      const auto field = [&](const char* key, Json fallback) {
        return d.is_object() && d.contains(key) ? d[key] : fallback;
      };
      e["rank"] = field("rank", static_cast<int>(devices.size()));
      e["group"] = field("group", 0);
      e["pid"] = field("pid", 0);
      e["hostname"] = field("host", "");
      e["device"] = field("device", 0);
      e["device_hex"] = field("pci_bus_id", "");
      e["device_info"] = field("name", field("device_text", field("kind", "")));
      devices.push_back(std::move(e));
    }
  } else {
    devices.push_back(
        {{"rank", 0},
         {"group", 0},
         {"pid", 0},
         {"hostname", report.mode == ReportMode::simulate ? "simulated" : ""},
         {"device", 0},
         {"device_hex", ""},
         {"device_info", report.topology ? "collkit " + std::string(to_string(report.mode)) +
                                               ", topology " + report.topology->name
                                         : "collkit " + std::string(to_string(report.mode))}});
  }
  config["nthreads"] = 1;
  config["ngpus"] = known ? 1 : report.ranks;
  config["minimum_bytes"] = info.min_bytes >= 0
                                ? info.min_bytes
                                : extra_int(report, "min_bytes", std::max<std::int64_t>(lo, 0));
  config["maximum_bytes"] = info.max_bytes >= 0
                                ? info.max_bytes
                                : extra_int(report, "max_bytes", std::max<std::int64_t>(hi, 0));
  if (step_factor > 1)
    config["step_factor"] = step_factor;
  else
    config["step_bytes"] =
        info.step_bytes >= 0 ? info.step_bytes : extra_int(report, "step_bytes", 0);
  config["warmup_iters"] = info.warmup >= 0 ? info.warmup : extra_int(report, "warmup", 0);
  config["iterations"] = info.iters >= 0 ? info.iters : extra_int(report, "iters", 0);
  config["aggregated_iterations"] = 1;
  config["validation"] =
      info.validation >= 0 ? info.validation : extra_int(report, "check_iters", 0);
  config["graph"] = info.graph >= 0 ? info.graph : extra_int(report, "graph_launches", 0);
  config["blocking_collectives"] = "false";
  config["per_iter_timing"] = "false";
  config["parallel_init"] = "false";
  config["devices"] = std::move(devices);

  return config;
}

// nccl-tests' "results", one per table line, and the average bus bandwidth
// and wrong elements over them (set on `j`).
void json_results(const Report& report, Collective collective,
                  const std::vector<JsonEntry>& entries, const NcclTestsJsonInfo& info, Json& j) {
  Json results = Json::array();
  double busbw_sum = 0;
  int busbw_n = 0;
  std::int64_t wrong = 0;
  for (const JsonEntry& e : entries) {
    const ResultRow& any = e.oop ? *e.oop : *e.ip;
    Json r = Json::object();
    r["size"] = any.bytes;
    r["count"] = any.count;
    r["type"] = std::string(to_string(any.dtype.value_or(report.dtype)));
    r["redop"] = redop_column(collective, any.op.value_or(report.op));
    char root[32];
    std::snprintf(root, sizeof root, "%6i",
                  root_column(collective, any.root.value_or(report.root)));
    r["root"] = root;
    r["out_of_place"] = e.oop ? group_json(*e.oop) : Json(nullptr);
    r["in_place"] = group_json(e.ip ? *e.ip : *e.oop);
    for (const ResultRow* x : {e.oop, e.ip ? e.ip : e.oop}) {
      if (!x) continue;
      busbw_sum += x->busbw_gbps;
      ++busbw_n;
      if (x->wrong > 0) wrong += x->wrong;
    }
    r["actual_iterations"] = info.iters >= 0 ? info.iters : extra_int(report, "iters", 0);
    r["experiment_name"] = "";
    if (!e.ip) r["collkit"] = {{"in_place", "copy of out_of_place"}};
    results.push_back(std::move(r));
  }
  j["results"] = std::move(results);
  j["out_of_bounds"] = {{"count", wrong}, {"okay", wrong == 0 ? "true" : "false"}};
  j["average_bus_bandwidth"] = {{"bandwidth", busbw_n ? busbw_sum / busbw_n : 0.0},
                                {"okay", "unchecked"}};
}

// collkit's own key: what ran, on what, from which collkit.
Json json_collkit(const Report& report, Collective collective, const std::string& algorithm) {
  Json ext = Json::object();
  ext["collkit_version"] = report.collkit_version;
  ext["mode"] = std::string(to_string(report.mode));
  ext["backend"] = std::string(to_string(report.backend));
  ext["collective"] = std::string(to_string(collective));
  ext["algorithm"] = algorithm;
  ext["ranks"] = report.ranks;
  ext["dtype"] = std::string(to_string(report.dtype));
  ext["op"] = std::string(to_string(report.op));
  ext["root"] = report.root;
  if (const std::optional<std::string> launch = extra_string(report, "launch"))
    ext["launch"] = *launch;
  if (report.topology)
    ext["topology"] = {{"name", report.topology->name},
                       {"file", report.topology->file},
                       {"sha256", report.topology->sha256}};
  return ext;
}

}  // namespace

Json nccl_tests_json(const Report& report, Collective collective, const std::string& algorithm,
                     const NcclTestsJsonInfo& info) {
  std::int64_t lo = -1, hi = -1;
  const std::vector<JsonEntry> entries = json_entries(report, collective, algorithm, lo, hi);
  Json j = Json::object();
  j["version"] = 2;
  j["start_time"] = info.start_time.empty() ? nccl_tests_timestamp() : info.start_time;
  Json args = Json::array();
  if (info.args.empty()) {
    for (const std::string& a :
         {std::string("collkit"), std::string(to_string(report.mode)), std::string("--collective"),
          std::string(to_string(collective)), std::string("--algorithm"), algorithm})
      args.push_back(a);
  } else {
    for (const std::string& a : info.args) args.push_back(a);
  }
  j["args"] = std::move(args);
  j["env"] = Json::array();
  // "2.21.5" as collkit writes it, or already nccl-tests' integer code.
  const std::optional<std::string> nccl_version = extra_string(report, "nccl_version");
  j["nccl_version"] = nccl_version ? nccl_version_code(Json(*nccl_version))
                                   : extra_integer(report, "nccl_version").value_or(0);

  j["config"] = json_config(report, info, lo, hi);
  json_results(report, collective, entries, info, j);
  j["errors"] = Json::array();
  j["collkit"] = json_collkit(report, collective, algorithm);
  j["end_time"] = info.end_time.empty() ? nccl_tests_timestamp() : info.end_time;
  return j;
}

std::string nccl_tests_json_path(const std::string& path, const std::string& algorithm,
                                 bool several) {
  if (!several) return path;
  std::string name = algorithm;
  std::replace(name.begin(), name.end(), ':', '-');
  std::replace(name.begin(), name.end(), '/', '-');
  const std::size_t slash = path.find_last_of('/');
  const std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1))
    return path + "." + name;
  return path.substr(0, dot) + "." + name + path.substr(dot);
}

std::vector<std::pair<std::string, std::string>> nccl_tests_json_files(
    const Report& report, const std::string& path, const NcclTestsJsonInfo& info) {
  std::vector<std::pair<Collective, std::string>> groups;
  std::set<Collective> collectives;
  for (const ResultRow& r : report.results) {
    collectives.insert(r.collective);
    const auto g = std::make_pair(r.collective, r.algorithm);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [c, algorithm] : groups) {
    const std::string name =
        collectives.size() > 1 ? std::string(to_string(c)) + "." + algorithm : algorithm;
    files.emplace_back(nccl_tests_json_path(path, name, groups.size() > 1),
                       nccl_tests_json(report, c, algorithm, info).dump(1) + "\n");
  }
  return files;
}

}  // namespace collkit
