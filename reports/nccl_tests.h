// nccl-tests' result files, read and written: the text a run prints (one
// table per run; a log may hold several runs, interleaved by a launcher's
// labels) and the JSON file of `-J` (file format versions 1-3). Measured
// rows become a Report of mode measure, backend nccl, algorithm "nccl"
// (NCCL's own choice); every row is checked against nccl-tests' own
// arithmetic (algbw = size / time, busbw = algbw x factor) within the
// printed rounding, so a wrong rank count, collective or edited row is an
// error naming the line, never a silent guess. docs/NCCL_TESTS.md is the
// reference for both formats and where each fact comes from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/collective.h"
#include "core/json.h"
#include "reports/report.h"

namespace collkit {

// The algorithm name of rows nccl-tests measured: NCCL's own choice.
inline constexpr char kNcclTestsAlgorithm[] = "nccl";

// What the command line says when a file does not: the collective (a log that
// does not name the nccl-tests binary) and the rank count (a log without
// "# Rank" lines). A file that says otherwise than a given value is an error.
struct NcclTestsOptions {
  std::optional<Collective> collective;
  int ranks = 0;  // 0 = not given
};

// One run: one table of a text log, or one -J file.
struct NcclTestsRun {
  Report report;
  // Where the run's table starts: its header line (text), 0 for JSON.
  int line = 0;
  // Per report.results row, where it came from, for errors of later stages:
  // "FILE:LINE" (text) or "FILE: results[3].in_place" (JSON).
  std::vector<std::string> row_origins;
};

// The runs of an nccl-tests text log, in order of their tables. Tables
// without rows are left out; a file without any row is an error. Throws
// FileError "FILE:LINE: field: ..." on anything it cannot read or that does
// not add up.
std::vector<NcclTestsRun> parse_nccl_tests_text(const std::string& text, const std::string& file,
                                                const NcclTestsOptions& options = {});

// True when `line` starts with a launcher's rank label that begins with '['
// (Open MPI --tag-output "[1,0]<stdout>:", MPICH -prepend-rank "[3] "): a
// log whose every line carries one starts like a JSON array, and is not one.
bool starts_with_bracket_label(std::string_view line);

// True for a JSON document shaped like nccl-tests' -J output (an object with
// "results" and "config", "version" or "nccl_version", and no
// "collkit_version").
bool looks_like_nccl_tests_json(const Json& j);

// An nccl-tests -J document. Errors name the file and the JSON path
// ("FILE: results[3].out_of_place.alg_bw: ..."): nccl-tests writes the whole
// document on one line, so a line number would say nothing.
NcclTestsRun nccl_tests_run_from_json(const Json& j, const std::string& file,
                                      const NcclTestsOptions& options = {});

// The collective an nccl-tests binary measures, from any text naming it
// ("./build/all_reduce_perf", "alltoall_perf_mpi"); nullopt when the text
// names no nccl-tests binary. Binaries with no collkit collective (sendrecv,
// hypercube, alltoallv) throw UsageError.
std::optional<Collective> collective_of_nccl_tests_binary(std::string_view name);

// "2.26.2" from NCCL_VERSION_CODE 22602 (2.9 and later: X*10000 + Y*100 + Z;
// before: X*1000 + Y*100 + Z).
std::string nccl_version_text(std::int64_t code);

// ---- Writing -J files ------------------------------------------------------

// What a -J file says beyond the report's rows.
struct NcclTestsJsonInfo {
  std::vector<std::string> args;  // "args"; empty = "collkit <mode> --collective C --algorithm A"
  std::string start_time;         // "%Y-%m-%d %H:%M:%S"; empty = now
  std::string end_time;           // empty = now
  // The sweep and loop as run; < 0 = from the report's extra (min_bytes,
  // max_bytes, step_factor, step_bytes, warmup, iters, check_iters,
  // graph_launches), else from the rows.
  std::int64_t min_bytes = -1, max_bytes = -1, step_factor = -1, step_bytes = -1;
  int warmup = -1, iters = -1, validation = -1, graph = -1;
};

// The nccl-tests -J document (file format version 2) of the report's rows of
// one (collective, algorithm): one entry per (size, type, op, root) with its
// out-of-place and in-place figures, the averages and a "collkit" extension
// object (docs/NCCL_TESTS.md) that nccl-tests tooling ignores and that makes
// the file read back as the same rows. Where a size has no in-place row (every
// simulated size), the in-place figures repeat the out-of-place ones, as the
// table does, and the entry's "collkit" object says so.
Json nccl_tests_json(const Report& report, Collective collective, const std::string& algorithm,
                     const NcclTestsJsonInfo& info = {});

// The file for one algorithm of `path`: `path` itself when `several` is
// false, else the algorithm inserted before the extension ("out.json" ->
// "out.ring.json"; a variant's ':' becomes '-': "out.rabenseifner-blocks.json").
std::string nccl_tests_json_path(const std::string& path, const std::string& algorithm,
                                 bool several);

// Every -J file of the report: (path, text) per (collective, algorithm) in
// order of first appearance, named by nccl_tests_json_path (several = more
// than one algorithm; with several collectives the name is "COLLECTIVE.ALGO").
std::vector<std::pair<std::string, std::string>> nccl_tests_json_files(
    const Report& report, const std::string& path, const NcclTestsJsonInfo& info = {});

// The local time as nccl-tests writes it: "%Y-%m-%d %H:%M:%S".
std::string nccl_tests_timestamp();

}  // namespace collkit
