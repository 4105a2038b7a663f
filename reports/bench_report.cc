#include "reports/bench_report.h"

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "reports/nccl_tests.h"
#include "reports/report.h"
#include "reports/table.h"

namespace collkit {
namespace {

using realrun::BenchConfig;
using realrun::BenchFigure;

// One table row; the columns of a placement that is not available read N/A.
// `oop` always carries the size columns.
// `row` without its last `columns` columns (and the spaces before them).
std::string drop_columns(std::string row, int columns) {
  for (int col = 0; col < columns; ++col) {
    const std::size_t end = row.find_last_not_of(' ');
    row.resize(row.find_last_of(' ', end) + 1);
    row.resize(row.find_last_not_of(' ') + 1);
  }
  return row;
}

std::string table_row(const ResultRow& oop, bool have_oop, const ResultRow* ip,
                      const std::string& type, const std::string& redop, int root) {
  if (have_oop && ip) return format_table_row(oop, *ip, type, redop, root);
  // "  %7s  %6s  %6s  %6s" with N/A in each column.
  const std::string na = "      N/A     N/A     N/A     N/A";
  std::string row = format_table_row(oop, ip ? *ip : oop, type, redop, root);
  row.pop_back();
  if (have_oop) return drop_columns(row, 4) + na + "\n";
  const std::string prefix = drop_columns(row, 8);
  if (!ip) return prefix + na + na + "\n";
  // In place only: its figures after the out-of-place N/A.
  return prefix + na + row.substr(drop_columns(row, 4).size()) + "\n";
}

class BenchReportSink final : public realrun::BenchSink {
 public:
  BenchReportSink(std::string version, std::string nccl_tests_json,
                  std::vector<std::string> command_line, ProgressOptions progress)
      : nccl_tests_json_(std::move(nccl_tests_json)),
        command_line_(std::move(command_line)),
        progress_options_(progress) {
    report_.collkit_version = std::move(version);
    if (!nccl_tests_json_.empty()) check_writable(nccl_tests_json_);
  }

  void begin(const BenchConfig& cfg, int ranks, const std::string& title,
             const std::vector<std::string>& rank_lines) override {
    cfg_ = cfg;
    ranks_ = ranks;
    start_time_ = nccl_tests_timestamp();
    backend_name_ = std::string(to_string(cfg.backend));
    std::printf("# collkit bench --backend %s: %s, %s\n", backend_name_.c_str(),
                std::string(to_string(cfg.collective)).c_str(), title.c_str());
    std::printf(
        "#  minBytes %lld maxBytes %lld step: %lld(%s) warmup iters: %d iters: %d "
        "validation: %d average: %s graph: %d\n",
        static_cast<long long>(cfg.min_bytes), static_cast<long long>(cfg.max_bytes),
        static_cast<long long>(cfg.step_factor > 1 ? cfg.step_factor : cfg.step_bytes),
        cfg.step_factor > 1 ? "factor" : "bytes", cfg.warmup, cfg.iters, cfg.check,
        to_string(cfg.average), cfg.graph_launches);
    std::printf("#\n");
    for (const std::string& l : rank_lines) std::printf("%s\n", l.c_str());
    std::fflush(stdout);
    report_.mode = ReportMode::measure;
    report_.backend = cfg.backend;
    report_.ranks = ranks;
    report_.dtype = cfg.dtypes.front();
    report_.op = cfg.ops.front();
    report_.root = cfg.root;
    mixed_ = cfg.dtypes.size() > 1 || cfg.ops.size() > 1;
    // One step per table row; -N 0 (until interrupted) has no total.
    const std::size_t rows =
        cfg.algorithms.size() * cfg.sizes.size() * cfg.dtypes.size() * cfg.ops.size();
    progress_ = std::make_unique<Progress>(
        "bench " + std::string(to_string(cfg.collective)),
        cfg.cycles > 0 ? rows * static_cast<std::size_t>(cfg.cycles) : 0, progress_options_);
    // A row of many iterations at a large size takes long: the elapsed time
    // keeps moving between rows.
    progress_->start_ticker();
  }

  void begin_algorithm(const std::string& algorithm, int cycle) override {
    algorithm_ = algorithm;
    busbw_sum_ = 0;
    busbw_n_ = 0;
    wrong_ = 0;
    // -N: each cycle's tables say which cycle they are.
    std::string of_cycles;
    if (cfg_.cycles != 1)
      of_cycles = ", cycle " + std::to_string(cycle) + " of " +
                  (cfg_.cycles == 0 ? std::string("unlimited") : std::to_string(cfg_.cycles));
    std::printf("#\n# collkit measure (%s): %s, algorithm %s, %d ranks%s\n#\n%s",
                backend_name_.c_str(), std::string(to_string(cfg_.collective)).c_str(),
                algorithm.c_str(), ranks_, of_cycles.c_str(), table_header().c_str());
    std::fflush(stdout);
  }

  void add(DataType type, RedOp op, const SizeMapping& size, const BenchFigure* out_of_place,
           const BenchFigure* in_place) override {
    const Collective c = cfg_.collective;
    ResultRow rows[2];
    const BenchFigure* figures[2] = {out_of_place, in_place};
    if (!out_of_place) rows[0] = make_row(c, algorithm_, size, ranks_, 0, false, -1);
    for (int ip = 0; ip < 2; ++ip) {
      if (!figures[ip]) continue;
      rows[ip] =
          make_row(c, algorithm_, size, ranks_, figures[ip]->time_us, ip == 1, figures[ip]->wrong);
      if (mixed_) {
        rows[ip].dtype = type;
        rows[ip].op = op;
      }
      report_.results.push_back(rows[ip]);
      busbw_sum_ += rows[ip].busbw_gbps;
      ++busbw_n_;
      if (figures[ip]->wrong > 0) wrong_ += figures[ip]->wrong;
    }
    std::printf("%s", table_row(rows[0], out_of_place != nullptr, in_place ? &rows[1] : nullptr,
                                std::string(to_string(type)), redop_column(c, op),
                                root_column(c, cfg_.root))
                          .c_str());
    std::fflush(stdout);
    if (progress_)
      progress_->update(++rows_done_, algorithm_ + " " + std::to_string(size.bytes) + " B " +
                                          std::string(to_string(type)));
  }

  void end_algorithm(const std::set<std::string>& out_of_place_unavailable,
                     const std::set<std::string>& in_place_unavailable) override {
    for (const std::string& why : out_of_place_unavailable) {
      std::printf("# out-of-place: N/A (%s)\n", why.c_str());
      unavailable_oop_.push_back({{"algorithm", algorithm_}, {"reason", why}});
    }
    for (const std::string& why : in_place_unavailable) {
      std::printf("# in-place: N/A (%s)\n", why.c_str());
      unavailable_.push_back({{"algorithm", algorithm_}, {"reason", why}});
    }
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong_),
                wrong_ == 0 ? "OK" : "FAILED");
    std::printf("# Avg bus bandwidth    : %g\n", busbw_n_ ? busbw_sum_ / busbw_n_ : 0.0);
    std::fflush(stdout);
  }

  void end(const Json& backend_extra) override {
    progress_.reset();  // the bar is cleared before the summary
    report_.best = compute_best(report_.results);
    for (const auto& [key, value] : backend_extra.items()) report_.extra[key] = value;
    report_.extra["segment_model"] = segment_model_json(realrun::kBenchSegmentModel);
    report_.extra["iters"] = cfg_.iters;
    report_.extra["warmup"] = cfg_.warmup;
    report_.extra["check_iters"] = cfg_.check;
    report_.extra["average"] = to_string(cfg_.average);
    report_.extra["timeout_s"] = cfg_.timeout_s;
    report_.extra["graph_launches"] = cfg_.graph_launches;
    report_.extra["in_place_unavailable"] = unavailable_;
    if (!unavailable_oop_.empty()) report_.extra["unavailable"] = unavailable_oop_;
    std::printf("#\n%s", format_best_summary(report_).c_str());
    std::fflush(stdout);
    std::vector<std::pair<std::string, std::string>> files;
    if (!cfg_.json_path.empty()) files.emplace_back(cfg_.json_path, report_json_text(report_));
    if (!nccl_tests_json_.empty()) {
      NcclTestsJsonInfo info;
      info.start_time = start_time_;
      info.args = command_line_;
      if (info.args.empty())
        info.args = {"collkit",     "bench",        "--backend",
                     backend_name_, "--collective", std::string(to_string(cfg_.collective))};
      info.min_bytes = cfg_.min_bytes;
      info.max_bytes = cfg_.max_bytes;
      info.step_factor = cfg_.step_factor;
      info.step_bytes = cfg_.step_bytes;
      info.warmup = cfg_.warmup;
      info.iters = cfg_.iters;
      info.validation = cfg_.check;
      info.graph = cfg_.graph_launches;
      for (auto& file : nccl_tests_json_files(report_, nccl_tests_json_, info))
        files.push_back(std::move(file));
    }
    write_files_atomic(files);
  }

 private:
  std::string nccl_tests_json_;
  std::vector<std::string> command_line_;
  ProgressOptions progress_options_;
  std::unique_ptr<Progress> progress_;
  std::size_t rows_done_ = 0;
  std::string start_time_;
  BenchConfig cfg_;
  int ranks_ = 0;
  std::string backend_name_;
  bool mixed_ = false;
  Report report_;
  Json unavailable_ = Json::array();      // in place
  Json unavailable_oop_ = Json::array();  // out of place too (no measurement at all)
  std::string algorithm_;
  double busbw_sum_ = 0;
  int busbw_n_ = 0;
  std::int64_t wrong_ = 0;
};

}  // namespace

std::unique_ptr<realrun::BenchSink> make_bench_report_sink(
    const realrun::BenchArgs& args, const std::string& nccl_tests_json,
    const std::vector<std::string>& command_line, ProgressOptions progress) {
  return std::make_unique<BenchReportSink>(args.version, nccl_tests_json, command_line, progress);
}

}  // namespace collkit
