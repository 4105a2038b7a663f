#include "reports/inputs.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json.h"
#include "reports/compare.h"

namespace collkit {
namespace {

std::string describe(const RowKey& k) {
  return std::string(to_string(k.collective)) + " " + k.algorithm + " " + std::to_string(k.bytes) +
         " B " + (k.in_place ? "in-place" : "out-of-place") + " " + k.dtype + " " + k.op +
         " root " + std::to_string(k.root);
}

}  // namespace

std::string_view to_string(InputFormat f) {
  switch (f) {
    case InputFormat::collkit:
      return "collkit report";
    case InputFormat::nccl_tests_text:
      return "nccl-tests log";
    case InputFormat::nccl_tests_json:
      return "nccl-tests JSON";
  }
  return "?";
}

std::vector<InputRun> parse_runs(const std::string& text, const std::string& file,
                                 const ReadOptions& options) {
  std::size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // UTF-8 byte order mark
  while (i < text.size() &&
         (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n'))
    ++i;
  std::vector<InputRun> runs;
  // "[1,0]<stdout>:" and "[0] " label the lines of a text log, not a JSON array.
  const bool labelled =
      i < text.size() && starts_with_bracket_label(std::string_view(text).substr(i, 32));
  if (i < text.size() && (text[i] == '{' || text[i] == '[') && !labelled) {
    Json j;
    try {
      j = parse_json_unique<Json>(std::string_view(text).substr(i));
    } catch (const DuplicateJsonKey& e) {
      throw FileError(file + ": " + e.what() +
                      ": JSON keeps one of the two silently; give it once");
    } catch (const Json::exception& e) {
      // parse_error, or out_of_range for a number a double cannot hold.
      throw FileError(file + ": malformed JSON: " + e.what());
    }
    InputRun run;
    run.file = file;
    run.name = file;
    if (looks_like_nccl_tests_json(j)) {
      NcclTestsRun r = nccl_tests_run_from_json(j, file, options);
      run.format = InputFormat::nccl_tests_json;
      run.report = std::move(r.report);
      run.row_origins = std::move(r.row_origins);
    } else {
      run.format = InputFormat::collkit;
      run.report = report_from_json(j, file);
    }
    runs.push_back(std::move(run));
    return runs;
  }
  std::vector<NcclTestsRun> parsed = parse_nccl_tests_text(text, file, options);
  for (NcclTestsRun& r : parsed) {
    InputRun run;
    run.file = file;
    run.name = parsed.size() == 1 ? file : file + ":" + std::to_string(r.line);
    run.format = InputFormat::nccl_tests_text;
    run.report = std::move(r.report);
    run.row_origins = std::move(r.row_origins);
    runs.push_back(std::move(run));
  }
  return runs;
}

std::vector<InputRun> read_runs(const std::string& path, const ReadOptions& options) {
  return parse_runs(read_input_file(path, "report"), path, options);
}

Report combine_runs(const std::vector<InputRun>& runs) {
  if (runs.empty()) throw UsageError("no report given");
  if (runs.size() == 1) return runs[0].report;
  // Groups of repeats: the same rank count and the same rows.
  using Signature = std::pair<int, std::vector<RowKey>>;
  std::vector<Signature> signatures;
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Report& r = runs[i].report;
    Signature sig{r.ranks, {}};
    for (const ResultRow& row : r.results) sig.second.push_back(row_key(r, row));
    std::sort(sig.second.begin(), sig.second.end());
    std::size_t g = 0;
    while (
        g < signatures.size() &&
        !(signatures[g].first == sig.first &&
          std::equal(signatures[g].second.begin(), signatures[g].second.end(), sig.second.begin(),
                     sig.second.end(), [](const RowKey& a, const RowKey& b) { return a == b; })))
      ++g;
    if (g == signatures.size()) {
      signatures.push_back(std::move(sig));
      groups.emplace_back();
    }
    groups[g].push_back(i);
  }
  Report out;
  std::map<RowKey, std::string> owner;  // row -> the run it came from
  Json names = Json::array();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::vector<Report> repeats;
    std::vector<std::string> repeat_names;
    for (std::size_t i : groups[g]) {
      repeats.push_back(runs[i].report);
      repeat_names.push_back(runs[i].name);
      names.push_back(runs[i].name);
    }
    Report merged = median_of_repeats(repeats, repeat_names);
    const std::string& name = repeat_names.front();
    if (g == 0) {
      out = std::move(merged);
      for (const ResultRow& row : out.results) owner.emplace(row_key(out, row), name);
      continue;
    }
    if (merged.ranks != out.ranks)
      throw FileError(name + ": ranks: " + std::to_string(merged.ranks) + ", but " +
                      runs[groups[0].front()].name + " has " + std::to_string(out.ranks) +
                      ": the runs of one measurement must have one rank count");
    for (ResultRow& row : merged.results) {
      const RowKey k = row_key(merged, row);
      auto it = owner.find(k);
      if (it != owner.end())
        throw FileError(name + ": row " + describe(k) + " is also in " + it->second +
                        ", but the two runs are not repeats (their rows differ): give them "
                        "separately");
      // Rows keep their own type, op and root when the first run's differ.
      if (!row.dtype && merged.dtype != out.dtype) row.dtype = merged.dtype;
      if (!row.op && merged.op != out.op) row.op = merged.op;
      if (!row.root && merged.root != out.root) row.root = merged.root;
      out.results.push_back(row);
    }
    for (const ResultRow& row : merged.results) owner.emplace(row_key(merged, row), name);
  }
  out.best = compute_best(out.results);
  out.extra["runs"] = std::move(names);
  return out;
}

}  // namespace collkit
