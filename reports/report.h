// The report model shared by `collkit simulate` and `collkit bench`: one row
// per (collective, algorithm, size, in-place) with nccl-tests' time, algbw,
// busbw and #wrong, plus the run's context. docs/REPORTS.md is the reference
// for the JSON form; to_json/report_from_json are its only writer and reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "core/backend.h"
#include "core/dtypes.h"
#include "core/json.h"
#include "core/nccl_sizes.h"

namespace collkit {

enum class ReportMode : std::uint8_t { simulate, measure };
std::string_view to_string(ReportMode m);

struct TopologyInfo {
  std::string name;
  std::string file;    // path as given on the command line
  std::string sha256;  // of the file's bytes; "" for generated topologies
  bool operator==(const TopologyInfo&) const = default;
};

// One measured or simulated figure, in nccl-tests' units: microseconds and
// GB/s (1e9 B/s). `bytes` and `count` are nccl-tests' "size" and "count"
// columns (see SizeMapping).
struct ResultRow {
  Collective collective = Collective::all_reduce;
  std::string algorithm;  // registered name ("ring", "rabenseifner:blocks") or "native"
  std::int64_t bytes = 0;
  std::int64_t count = 0;
  bool in_place = false;
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::int64_t wrong = -1;  // mismatching elements; -1 = not checked (JSON null)
  // Set only when one report mixes several (bench -d all, -o all, roots);
  // absent = the report's value.
  std::optional<DataType> dtype;
  std::optional<RedOp> op;
  std::optional<int> root;
  Json extra = Json::object();  // backend-specific keys of the row, kept verbatim
  bool operator==(const ResultRow&) const = default;
};

// The fastest algorithm of one (collective, bytes) (and dtype/op/root where
// rows carry their own).
struct BestEntry {
  Collective collective = Collective::all_reduce;
  std::int64_t bytes = 0;
  std::string algorithm;
  double time_us = 0;
  std::optional<DataType> dtype;
  std::optional<RedOp> op;
  std::optional<int> root;
  // The winner is an in-place row: only where its size has no out-of-place
  // row (an out-of-place run that was not available).
  bool in_place = false;
  bool operator==(const BestEntry&) const = default;
};

struct Report {
  std::string collkit_version;
  ReportMode mode = ReportMode::simulate;
  Backend backend = Backend::sim;
  std::optional<TopologyInfo> topology;  // required for simulate
  int ranks = 0;
  DataType dtype = DataType::float32;
  RedOp op = RedOp::sum;
  int root = 0;
  std::vector<ResultRow> results;
  std::vector<BestEntry> best;
  // Backend-specific top-level keys (hosts, devices, iters, warmup, model,
  // ...). Written next to the fixed keys; on reading, every unknown top-level
  // key lands here. Must not reuse a fixed key's name.
  Json extra = Json::object();
  bool operator==(const Report&) const = default;
};

// A row with algbw and busbw derived from the time the nccl-tests way:
// algbw = size.bytes / time, busbw = algbw x busbw_factor(collective, p).
ResultRow make_row(Collective collective, std::string algorithm, const SizeMapping& size, int ranks,
                   double time_us, bool in_place = false, std::int64_t wrong = -1);

// Per (collective, bytes, effective dtype/op/root), in order of first
// appearance, the row with the lowest time; ties go to the earlier row.
std::vector<BestEntry> compute_best(const std::vector<ResultRow>& rows);

// A size at which the fastest algorithm changes.
struct Crossover {
  Collective collective = Collective::all_reduce;
  std::int64_t bytes = 0;  // the first size where `to` wins
  std::string from;        // the winner at the previous (smaller) size
  std::string to;
  bool operator==(const Crossover&) const = default;
};

// Walks `best` in increasing bytes per (collective, dtype, op, root) and
// reports every change of winner.
std::vector<Crossover> compute_crossovers(const std::vector<BestEntry>& best);

// The JSON form (docs/REPORTS.md). Throws std::logic_error when `extra` or a
// row's extra reuses a fixed key, which would make the file ambiguous.
Json to_json(const Report& report);

// Strict reader: every fixed key must be present and well typed; `file` names
// the source in errors, e.g. "m.json: results[3].time_us: missing". Throws
// FileError, also for JSON that is not a collkit report.
Report report_from_json(const Json& j, const std::string& file);

// Parses report JSON text; `file` names it in errors (FileError on any failure).
Report parse_report(const std::string& text, const std::string& file);

// Reads and parses `path` (FileError naming it on any failure).
Report read_report(const std::string& path);

// One line per row: collective,algorithm,bytes,count,dtype,op,root,in_place,
// time_us,algbw_gbps,busbw_gbps,wrong. dtype/op/root follow the table's
// conventions ("none" and -1 where they do not apply); wrong is empty for N/A.
std::string to_csv(const Report& report);

// The text a report file holds: to_json(report).dump(1) plus a newline.
std::string report_json_text(const Report& report);

// The printed values of the table columns: the op is "none" for collectives
// that do not reduce, the root -1 for collectives without one.
std::string redop_column(Collective c, RedOp op);

// The cost parameters a run chose its default segment sizes with
// (ScheduleSpec::model), kept in a report's extra.segment_model as
// {"alpha": s, "beta": s/byte, "gamma": s/byte}, so that calibrate and
// simulate --segments-as rebuild the very schedules that ran.
Json segment_model_json(const CostParams& m);
// nullopt when the report has no segment_model (older files); FileError
// naming `file` and the field when it is malformed.
std::optional<CostParams> segment_model_of(const Report& r, const std::string& file);
int root_column(Collective c, int root);

}  // namespace collkit
