// The nccl-tests readers and writer (reports/nccl_tests.h) on small logs and
// JSON files written here, whose rows are known: values are checked against
// the figures the test computes itself (algbw = size / time, busbw = algbw x
// nccl-tests' factor), and every malformed input must fail with one message
// naming the file, the line (or JSON path) and the field.
#include "reports/nccl_tests.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/error.h"
#include "reports/inputs.h"

namespace collkit {
namespace {

// One table row as nccl-tests prints it: "%12li  %12li  %8s  %6s  %6s", then
// per placement "  %7s  %6s  %6s  %6s", the time %7.2f (all times here are
// below 10000 us), algbw = size / time and busbw = algbw x factor, %6.2f.
std::string row(std::int64_t size, std::int64_t count, const char* type, const char* redop,
                int root, double t_oop, double t_ip, double factor, const char* wrong_oop = "0",
                const char* wrong_ip = "0") {
  char buf[256];
  int n =
      std::snprintf(buf, sizeof buf, "%12lld  %12lld  %8s  %6s  %6d", static_cast<long long>(size),
                    static_cast<long long>(count), type, redop, root);
  for (const auto& [t, w] : {std::pair<double, const char*>{t_oop, wrong_oop}, {t_ip, wrong_ip}}) {
    const double algbw = static_cast<double>(size) / (t * 1e3);
    n += std::snprintf(buf + n, sizeof buf - n, "  %7.2f  %6.2f  %6.2f  %6s", t, algbw,
                       algbw * factor, w);
  }
  return std::string(buf) + "\n";
}

const char kBanner[] =
    "#                                                              out-of-place                "
    "       in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     "
    "time   algbw   busbw  #wrong \n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             "
    "(us)  (GB/s)  (GB/s)         \n";

std::string rank_lines(int n, const std::string& host, int first = 0) {
  std::string s;
  for (int r = first; r < first + n; ++r) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0000:%02x:00] NVIDIA H100 80GB "
                  "HBM3\n",
                  r, 4242, host.c_str(), r % 8, 0x18 + r);
    s += buf;
  }
  return s;
}

// The mean of the printed busbw figures of the rows, as nccl-tests' last line.
std::string footer(const std::vector<std::string>& rows) {
  double sum = 0;
  int n = 0;
  for (const std::string& r : rows) {
    double v[13];
    char type[16], redop[16], w1[16], w2[16];
    long long size, count;
    int root;
    std::sscanf(r.c_str(), "%lld %lld %15s %15s %d %lf %lf %lf %15s %lf %lf %lf %15s", &size,
                &count, type, redop, &root, &v[0], &v[1], &v[2], w1, &v[3], &v[4], &v[5], w2);
    sum += v[2] + v[5];
    n += 2;
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g \n#\n",
                n ? sum / n : 0.0);
  return buf;
}

// An 8-GPU all_reduce as a modern nccl-tests prints it with NCCL_DEBUG=INFO.
std::vector<std::string> all_reduce_rows() {
  return {row(1048576, 262144, "float", "sum", -1, 44.38, 43.46, 1.75),
          row(16777216, 4194304, "float", "sum", -1, 125.47, 123.60, 1.75, "0", "N/A"),
          row(134217728, 33554432, "float", "sum", -1, 699.15, 703.95, 1.75)};
}

std::string all_reduce_log() {
  const std::vector<std::string> rows = all_reduce_rows();
  std::string s =
      "+ mpirun -np 1 ./build/all_reduce_perf -b 1M -e 128M -f 8 -g 8\n"
      "# nccl-tests version 2.17.9 nccl-headers=22602 nccl-library=22602\n"
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 134217728 step: 8(factor) warmup iters: 5 "
      "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "#\n# Using devices\n" +
      rank_lines(8, "node-a") +
      "node-a:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "node-a:4242:4242 [0] NCCL INFO NCCL version 2.26.2+cuda12.8\n"
      "node-a:4242:4260 [3] NCCL WARN some warning\n#\n" +
      kBanner;
  for (const std::string& r : rows) s += r;
  s += footer(rows);
  s += "# Collective test concluded: all_reduce_perf\n#\n";
  return s;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const FileError& e) {
    return e.what();
  }
  return "no error";
}

void expect_parts(const std::string& what, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    EXPECT_NE(what.find(p), std::string::npos) << "missing \"" << p << "\" in: " << what;
}

std::string text_error(const std::string& text, NcclTestsOptions o = {}) {
  return error_of([&] { parse_nccl_tests_text(text, "log.txt", o); });
}

TEST(NcclTestsText, ReadsAModernLog) {
  const std::vector<NcclTestsRun> runs = parse_nccl_tests_text(all_reduce_log(), "log.txt");
  ASSERT_EQ(runs.size(), 1u);
  const Report& r = runs[0].report;
  EXPECT_EQ(r.mode, ReportMode::measure);
  EXPECT_EQ(r.backend, Backend::nccl);
  EXPECT_EQ(r.ranks, 8);  // eight "# Rank" lines
  EXPECT_EQ(r.dtype, DataType::float32);
  EXPECT_EQ(r.op, RedOp::sum);
  ASSERT_EQ(r.results.size(), 6u);
  // Row 2 in place: 16 MiB in 123.60 us; #wrong N/A.
  const ResultRow& ip = r.results[3];
  EXPECT_EQ(ip.collective, Collective::all_reduce);
  EXPECT_EQ(ip.algorithm, "nccl");
  EXPECT_EQ(ip.bytes, 16777216);
  EXPECT_EQ(ip.count, 4194304);
  EXPECT_TRUE(ip.in_place);
  EXPECT_DOUBLE_EQ(ip.time_us, 123.60);
  EXPECT_NEAR(ip.algbw_gbps, 16777216 / 123.60e3, 0.005);
  EXPECT_NEAR(ip.busbw_gbps, 16777216 / 123.60e3 * 1.75, 0.005);
  EXPECT_EQ(ip.wrong, -1);
  EXPECT_EQ(r.results[2].wrong, 0);
  EXPECT_FALSE(r.results[2].in_place);
  EXPECT_DOUBLE_EQ(r.results[0].time_us, 44.38);
  EXPECT_DOUBLE_EQ(r.results[5].time_us, 703.95);
  EXPECT_FALSE(r.results[0].dtype.has_value());  // one type: the report's
  // Facts of the header, and where each row came from.
  EXPECT_EQ(r.extra["nccl_tests_version"], "2.17.9");
  EXPECT_EQ(r.extra["nccl_version"], "2.26.2");
  EXPECT_EQ(r.extra["nccl_version_line"], "2.26.2+cuda12.8");
  EXPECT_EQ(r.extra["iters"], 20);
  EXPECT_EQ(r.extra["warmup"], 5);
  EXPECT_EQ(r.extra["step_factor"], 8);
  EXPECT_EQ(r.extra["ngpus"], 8);
  EXPECT_EQ(r.extra["devices"].size(), 8u);
  EXPECT_EQ(r.extra["devices"][3]["host"], "node-a");
  EXPECT_EQ(r.extra["devices"][3]["pci_bus_id"], "0000:1b:00");
  EXPECT_EQ(r.extra["devices"][3]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.extra["hosts"], 1);
  EXPECT_EQ(r.extra["ranks_from"], "'# Rank' lines");
  EXPECT_EQ(r.extra["collective_from"], "all_reduce_perf (line 3)");
  EXPECT_FALSE(r.extra.contains("complete"));
  ASSERT_EQ(runs[0].row_origins.size(), 6u);
  EXPECT_EQ(runs[0].row_origins[0], "log.txt:22");
  EXPECT_EQ(runs[0].line, 20);
}

TEST(NcclTestsText, SeveralRunsAndCollectivesInOneLog) {
  std::vector<std::string> ag = {row(1048576, 32768, "float", "none", -1, 40.10, 40.35, 0.875),
                                 row(8388608, 262144, "float", "none", -1, 47.46, 46.03, 0.875)};
  std::string log = all_reduce_log() + "srun ./all_gather_perf -b 1M -e 8M -f 8 -g 8\n" +
                    "# nccl-tests version 2.17.9 nccl-headers=22602 nccl-library=22602\n" +
                    "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 8388608 step: 8(factor) "
                    "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
                    rank_lines(8, "node-a") + kBanner + ag[0] + ag[1] + footer(ag);
  const std::vector<NcclTestsRun> runs = parse_nccl_tests_text(log, "log.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].report.results[0].collective, Collective::all_reduce);
  EXPECT_EQ(runs[1].report.results[0].collective, Collective::all_gather);
  EXPECT_EQ(runs[1].report.results.size(), 4u);
  EXPECT_EQ(runs[1].report.results[0].count, 32768);  // per rank
  EXPECT_NEAR(runs[1].report.results[3].busbw_gbps, 8388608 / 46.03e3 * 0.875, 0.005);
  // A third table with no binary named before it inherits nothing.
  log += kBanner + ag[0] + footer({ag[0]});
  expect_parts(text_error(log), {"log.txt:", "collective:", "give --collective"});
  NcclTestsOptions o;
  o.collective = Collective::all_gather;
  // --collective does not overrule the binaries the log names.
  expect_parts(text_error(log, o), {"log.txt:20:",
                                    "collective: the log runs all_reduce_perf (line 3), but "
                                    "--collective is all_gather"});
}

TEST(NcclTestsText, LabelledInterleavedRunsAreReadApart) {
  // Two nodes of a Slurm job, each its own 8-GPU run, lines interleaved and
  // labelled by srun --label; node 1 is slower.
  const std::vector<std::string> a = all_reduce_rows();
  const std::vector<std::string> b = {
      row(1048576, 262144, "float", "sum", -1, 50.00, 50.00, 1.75),
      row(16777216, 4194304, "float", "sum", -1, 150.0, 150.0, 1.75),
      row(134217728, 33554432, "float", "sum", -1, 800.0, 800.0, 1.75)};
  const auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
      const std::size_t nl = text.find('\n', pos);
      out.push_back(text.substr(pos, nl - pos + 1));
      pos = nl + 1;
    }
    return out;
  };
  const std::string head =
      "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 134217728 step: "
      "8(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 "
      "graph: 0\n";
  const std::vector<std::string> la =
      lines(head + rank_lines(8, "n0") + kBanner + a[0] + a[1] + a[2] + footer(a));
  const std::vector<std::string> lb =
      lines(head + rank_lines(8, "n1") + kBanner + b[0] + b[1] + b[2] + footer(b));
  std::string log = "+ srun -l ./build/all_reduce_perf -b 1M -e 128M -f 8 -g 8\n";
  std::string tagged = "+ mpirun --tag-output ./build/all_reduce_perf -g 8\n";
  for (std::size_t i = 0; i < std::max(la.size(), lb.size()); ++i) {
    if (i < la.size()) log += "0: " + la[i];
    if (i < lb.size()) log += "1: " + lb[i];
    if (i < la.size()) tagged += "[1,0]<stdout>:" + la[i];
    if (i < lb.size()) tagged += "[1,1]<stdout>:" + lb[i];
  }
  NcclTestsOptions o;
  o.collective = Collective::all_reduce;  // the labelled streams do not see the command line
  for (const std::string& text : {log, tagged}) {
    const std::vector<NcclTestsRun> runs = parse_nccl_tests_text(text, "slurm.out", o);
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0].report.ranks, 8);
    EXPECT_EQ(runs[0].report.extra["devices"][0]["host"], "n0");
    EXPECT_EQ(runs[1].report.extra["devices"][0]["host"], "n1");
    EXPECT_DOUBLE_EQ(runs[0].report.results[4].time_us, 699.15);
    EXPECT_DOUBLE_EQ(runs[1].report.results[4].time_us, 800.0);
  }
  // Without labels the same lines cannot be told apart: an error, not a guess.
  std::string plain = "+ srun ./build/all_reduce_perf -b 1M -e 128M -f 8 -g 8\n";
  for (std::size_t i = 0; i < std::max(la.size(), lb.size()); ++i) {
    if (i < la.size()) plain += la[i];
    if (i < lb.size()) plain += lb[i];
  }
  expect_parts(text_error(plain), {"log.txt:", "interleaved"});
}

TEST(NcclTestsText, UnlabelledInterleavingIsAnErrorNamingTheLine) {
  const std::vector<std::string> a = all_reduce_rows();
  const NcclTestsOptions o{Collective::all_reduce, 8};
  // Stripped logs (no header lines): the second table header (line 5)
  // arrives before any row of the first.
  expect_parts(text_error(std::string(kBanner) + kBanner + a[0] + a[0], o),
               {"log.txt:5: table:", "interleaved"});
  // Rows of two runs alternating: 16 MiB after 128 MiB, and 16 MiB is not
  // where the sweep starts (a restart of the sweep, nccl-tests -N, would be).
  expect_parts(text_error(std::string(kBanner) + a[0] + a[1] + a[0] + a[2] + a[1], o),
               {"log.txt:8: size: 16777216 after 134217728", "interleaved"});
  // The same rank listed twice: two processes' "# Rank" lines mixed.
  expect_parts(text_error(rank_lines(2, "x") + rank_lines(2, "y") + kBanner + a[0], o),
               {"log.txt:3: # Rank: rank 0 is listed twice (also line 1)", "interleaved"});
  // A row where no table is open in its stream.
  expect_parts(text_error(std::string(kBanner) + a[0] + footer({a[0]}) + a[1], o),
               {"log.txt:8: row: a data row outside a table", "interleaved"});
}

TEST(NcclTestsText, CollectiveAndRanksComeFromTheLogOrTheOptions) {
  const std::vector<std::string> a = all_reduce_rows();
  const std::string table = std::string(kBanner) + a[0] + a[1] + a[2] + footer(a);
  // Neither the binary nor the ranks: both are needed.
  expect_parts(text_error(table), {"log.txt:2: collective:", "give --collective"});
  expect_parts(text_error(table, {Collective::all_reduce, 0}),
               {"log.txt:2: ranks: unknown", "give --ranks"});
  // From the options.
  std::vector<NcclTestsRun> runs =
      parse_nccl_tests_text(table, "log.txt", {Collective::all_reduce, 8});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].report.ranks, 8);
  EXPECT_EQ(runs[0].report.extra["ranks_from"], "--ranks");
  EXPECT_EQ(runs[0].report.extra["collective_from"], "--collective");
  // nThread x nGpus: one process of 2 threads x 4 GPUs.
  runs = parse_nccl_tests_text(
      "# nThread 2 nGpus 4 minBytes 1048576 maxBytes 134217728 step: 8(factor) warmup iters: 5 "
      "iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
          table,
      "log.txt", {Collective::all_reduce, 0});
  EXPECT_EQ(runs[0].report.ranks, 8);
  EXPECT_EQ(runs[0].report.extra["ranks_from"], "nThread 2 x nGpus 4 (one process)");
  // --ranks against the "# Rank" lines.
  expect_parts(text_error(rank_lines(8, "h") + table, {Collective::all_reduce, 16}),
               {"log.txt:10: ranks: the '# Rank' lines (1-8) list 8 ranks, but --ranks is 16"});
  // A gap in the "# Rank" lines.
  expect_parts(
      text_error(rank_lines(2, "h") + rank_lines(2, "h", 3) + table, {Collective::all_reduce, 0}),
      {"log.txt:3: # Rank: rank 3, but rank 2 is missing"});
  // A wrong rank count shows in the busbw, with the count that fits.
  expect_parts(text_error(table, {Collective::all_reduce, 4}),
               {"log.txt:4: out-of-place busbw: 41.35 GB/s, but algbw 23.63 x 2(p-1)/p = 35.45",
                "p = 4 from --ranks", "the row fits p = 8"});
  // The wrong collective shows in the redop, root or busbw columns.
  expect_parts(
      text_error(table, {Collective::all_gather, 8}),
      {"log.txt:4: count: 262144 x float (4 B) x 8 ranks = 8388608 B, but size is 1048576"});
  expect_parts(text_error(table, {Collective::broadcast, 8}),
               {"log.txt:4: root: -1, but broadcast has a root"});
  std::vector<std::string> ag = {row(1048576, 32768, "float", "none", -1, 40.10, 40.35, 0.875)};
  expect_parts(text_error(std::string(kBanner) + ag[0], {Collective::reduce_scatter, 8}),
               {"log.txt:4: redop: 'none', but reduce_scatter reduces"});
  // A binary collkit has no collective for.
  expect_parts(text_error("./sendrecv_perf -g 8\n" + table, {std::nullopt, 8}),
               {"log.txt:3: collective: sendrecv_perf measures point-to-point transfers"});
  // A line naming two binaries is no answer.
  expect_parts(
      text_error("for t in all_reduce_perf all_gather_perf; do\n" + table, {std::nullopt, 8}),
      {"log.txt:3: collective: line 1 names 2 nccl-tests binaries"});
}

TEST(NcclTestsText, FiguresThatDoNotAddUpAreErrors) {
  const NcclTestsOptions o{Collective::all_reduce, 8};
  // algbw edited: 1048576 B / 44.38 us = 23.63 GB/s, not 25.00.
  std::string bad = row(1048576, 262144, "float", "sum", -1, 44.38, 43.46, 1.75);
  bad.replace(bad.find("23.63"), 5, "25.00");
  expect_parts(text_error(std::string(kBanner) + bad, o),
               {"log.txt:4: out-of-place algbw: 25.00 GB/s, but size / time = 1048576 B / 44.38 "
                "us = 23.63 GB/s"});
  // The average of the footer against the rows.
  const std::vector<std::string> a = all_reduce_rows();
  expect_parts(
      text_error(std::string(kBanner) + a[0] + a[1] + "# Avg bus bandwidth    : 99.5\n", o),
      {"log.txt:6: Avg bus bandwidth: 99.5, but the mean of the table's 4 busbw figures"});
  // Unknown names and unreadable numbers.
  std::string f8 = row(1048576, 1048576, "f8e4m3", "sum", -1, 44.38, 43.46, 1.75);
  expect_parts(text_error(std::string(kBanner) + f8, o),
               {"log.txt:4: type: unknown data type 'f8e4m3'"});
  std::string mulsum = row(1048576, 262144, "float", "mulsum", -1, 44.38, 43.46, 1.75);
  expect_parts(text_error(std::string(kBanner) + mulsum, o), {"log.txt:4: redop:", "mulsum"});
  std::string letters = a[0];
  letters.replace(letters.find("44.38"), 5, "4x.38");
  expect_parts(text_error(std::string(kBanner) + letters, o),
               {"log.txt:4: out-of-place time: expected a number >= 0, got '4x.38'"});
  expect_parts(
      text_error(std::string(kBanner) + "     1048576        262144     float     sum\n", o),
      {"log.txt:4: row: 4 columns, but the header (line 2) has 13"});
  // CPU time is not the collective's time.
  std::string cpu = kBanner;
  cpu.replace(cpu.find(" time"), 5, " cputime");
  expect_parts(text_error(cpu + a[0], o),
               {"log.txt:2: table header: the time column is 'cputime'"});
}

TEST(NcclTestsText, EdgeCases) {
  const NcclTestsOptions o{Collective::all_reduce, 8};
  const std::vector<std::string> a = all_reduce_rows();
  expect_parts(text_error(""), {"log.txt: empty file"});
  expect_parts(text_error(" \n\n"), {"log.txt: empty file"});
  expect_parts(text_error("hello\nNCCL INFO nothing here\n"), {"log.txt: no nccl-tests table"});
  expect_parts(text_error(std::string(kBanner) + "# Out of bounds values : 0 OK\n", o),
               {"log.txt:2: table: the nccl-tests table has no rows"});
  // CRLF line ends read like LF.
  std::string crlf;
  for (char c : std::string(kBanner) + a[0] + a[1]) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  std::vector<NcclTestsRun> runs = parse_nccl_tests_text(crlf, "log.txt", o);
  ASSERT_EQ(runs[0].report.results.size(), 4u);
  EXPECT_DOUBLE_EQ(runs[0].report.results[3].time_us, 123.60);
  // A last line without its newline: read when whole, an error when cut.
  std::string whole = std::string(kBanner) + a[0] + a[1];
  whole.pop_back();
  EXPECT_EQ(parse_nccl_tests_text(whole, "log.txt", o)[0].report.results.size(), 4u);
  std::string cut = std::string(kBanner) + a[0] + a[1].substr(0, 60);
  expect_parts(text_error(cut, o), {"log.txt:5: row:", "the file ends inside this line"});
  // A table without its footer (the run was killed) keeps its rows, marked.
  runs = parse_nccl_tests_text(std::string(kBanner) + a[0], "log.txt", o);
  EXPECT_EQ(runs[0].report.extra["complete"], false);
  // Size-0 rows (all_gather of 8 B on 8 ranks) and in-place columns of N/A.
  std::string ag = std::string(kBanner) +
                   "           0             0     float    none      -1     0.89    0.00    "
                   "0.00       0     0.95    0.00    0.00       0\n" +
                   "           0             0     float    none      -1     0.91    0.00    "
                   "0.00       0      N/A     N/A     N/A     N/A\n";
  runs = parse_nccl_tests_text(ag, "log.txt", {Collective::all_gather, 8});
  ASSERT_EQ(runs[0].report.results.size(), 3u);  // the second row has no in-place figures
  EXPECT_EQ(runs[0].report.results[2].bytes, 0);
  EXPECT_DOUBLE_EQ(runs[0].report.results[2].time_us, 0.91);
  EXPECT_FALSE(runs[0].report.results[2].in_place);
  // Out-of-place columns left blank (nccl-tests ran in place only).
  std::string blank = std::string(kBanner) +
                      "     1048576        262144     float     sum      -1" +
                      std::string(32, ' ') + "    43.46   24.13   42.23       0\n";
  runs = parse_nccl_tests_text(blank, "log.txt", o);
  ASSERT_EQ(runs[0].report.results.size(), 1u);
  EXPECT_TRUE(runs[0].report.results[0].in_place);
  EXPECT_DOUBLE_EQ(runs[0].report.results[0].time_us, 43.46);
  // Times of 10000 us and more print %7.0f, old versions' 100 us and more %7.1f.
  const std::string big =
      "  2147483648     536870912     float     sum      -1    10340  207.68  "
      "363.44      0  10316.3  208.16  364.29      0\n";
  runs = parse_nccl_tests_text(std::string(kBanner) + big, "log.txt", o);
  EXPECT_DOUBLE_EQ(runs[0].report.results[0].time_us, 10340);
  EXPECT_DOUBLE_EQ(runs[0].report.results[1].time_us, 10316.3);
}

TEST(NcclTestsText, SeveralTypesAndOpsInOneTable) {
  // -d all -o all: rows carry their own type and op.
  std::vector<std::string> rows = {row(1048576, 262144, "float", "sum", -1, 44.38, 43.46, 1.75),
                                   row(1048576, 262144, "float", "max", -1, 45.00, 45.10, 1.75),
                                   row(1048576, 131072, "double", "sum", -1, 46.00, 46.50, 1.75),
                                   row(1048576, 524288, "half", "min", -1, 43.00, 43.10, 1.75)};
  std::string log = std::string(kBanner);
  for (const std::string& r : rows) log += r;
  log += footer(rows);
  const Report r = parse_nccl_tests_text(log, "log.txt", {Collective::all_reduce, 8})[0].report;
  ASSERT_EQ(r.results.size(), 8u);
  EXPECT_EQ(r.results[2].op, RedOp::max);
  EXPECT_EQ(r.results[2].dtype, DataType::float32);
  EXPECT_EQ(r.results[4].dtype, DataType::float64);
  EXPECT_EQ(r.results[4].count, 131072);
  EXPECT_EQ(r.results[7].dtype, DataType::half);
  EXPECT_EQ(r.results[7].op, RedOp::min);
  EXPECT_FALSE(r.results[0].root.has_value());
}

TEST(NcclTestsText, OlderFormats) {
  // nccl-tests 2.0-era tables: no root column, an "error" column in place of
  // #wrong, "#wrong" one space narrower.
  const std::string old =
      "# nThread 1 nGpus 4 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 "
      "validation: 1\n#\n#   Rank  0 Pid  12345 on  dgx1 device  0 [0x06] Tesla V100-SXM2-32GB\n"
      "#   Rank  1 Pid  12345 on  dgx1 device  1 [0x07] Tesla V100-SXM2-32GB\n"
      "#   Rank  2 Pid  12345 on  dgx1 device  2 [0x0a] Tesla V100-SXM2-32GB\n"
      "#   Rank  3 Pid  12345 on  dgx1 device  3 [0x0b] Tesla V100-SXM2-32GB\n"
      "#\n#                                                     out-of-place                       "
      "in-place\n"
      "#       size         count    type   redop     time   algbw   busbw  error     time   algbw "
      " "
      " busbw  error\n"
      "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s) "
      " "
      "(GB/s)\n"
      "     1048576        262144   float     sum    45.20   23.20   34.80  1e-07    45.10   23.25 "
      "  34.88  1e-07\n"
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 34.84\n";
  const Report r =
      parse_nccl_tests_text("./build/all_reduce_perf -g 4\n" + old, "old.txt")[0].report;
  EXPECT_EQ(r.ranks, 4);
  ASSERT_EQ(r.results.size(), 2u);
  EXPECT_DOUBLE_EQ(r.results[1].time_us, 45.10);
  EXPECT_EQ(r.results[1].wrong, -1);  // a relative error, not a count
  EXPECT_EQ(r.extra["devices"][2]["pci_bus_id"], "0x0a");
  EXPECT_EQ(r.extra["devices"][2]["host"], "dgx1");
}

TEST(NcclTestsText, BinaryNames) {
  EXPECT_EQ(collective_of_nccl_tests_binary("./build/all_reduce_perf"), Collective::all_reduce);
  EXPECT_EQ(collective_of_nccl_tests_binary("/opt/nccl-tests/reduce_scatter_perf_mpi -b 8"),
            Collective::reduce_scatter);
  EXPECT_EQ(collective_of_nccl_tests_binary("./nccl_alltoall_perf"), Collective::all_to_all);
  EXPECT_EQ(collective_of_nccl_tests_binary("reduce_perf"), Collective::reduce);
  EXPECT_EQ(collective_of_nccl_tests_binary("scatter_perf"), Collective::scatter);
  EXPECT_EQ(collective_of_nccl_tests_binary("no binary here"), std::nullopt);
  EXPECT_EQ(collective_of_nccl_tests_binary("performance"), std::nullopt);
  EXPECT_THROW(collective_of_nccl_tests_binary("hypercube_perf"), UsageError);
  EXPECT_EQ(nccl_version_text(22602), "2.26.2");
  EXPECT_EQ(nccl_version_text(22902), "2.29.2");
  EXPECT_EQ(nccl_version_text(2708), "2.7.8");
}

// ---- JSON ---------------------------------------------------------------------

// A document as nccl-tests 2.17 writes it with -J (numbers %lf, root "%6i",
// booleans as strings, devices one per process).
Json nccl_json(int version = 2, bool typo = false) {
  Json results = Json::array();
  double sum = 0;
  int n = 0;
  for (const auto& [size, t_oop, t_ip] :
       {std::tuple<std::int64_t, double, double>{1048576, 44.381, 43.462},
        {134217728, 699.153, 703.951}}) {
    Json r = Json::object();
    r["size"] = size;
    r["count"] = size / 4;
    r["type"] = "float";
    r["redop"] = "sum";
    r["root"] = "    -1";
    for (const auto& [key, t] :
         {std::pair<const char*, double>{"out_of_place", t_oop}, {"in_place", t_ip}}) {
      const double algbw = std::round(static_cast<double>(size) / (t * 1e3) * 1e6) / 1e6;
      const double busbw = std::round(static_cast<double>(size) / (t * 1e3) * 1.75 * 1e6) / 1e6;
      r[key] = {{"time", t}, {"alg_bw", algbw}, {"bus_bw", busbw}, {"nwrong", 0.0}};
      sum += busbw;
      ++n;
    }
    r["actual_iterations"] = 20;
    r["experiment_name"] = "";
    results.push_back(r);
  }
  Json j = Json::object();
  j["version"] = version;
  j["start_time"] = "2026-03-05 22:09:44";
  j["args"] = {"./build/all_reduce_perf",
               "-b",
               "1M",
               "-e",
               "128M",
               "-f",
               "128",
               "-g",
               "4",
               "-J",
               "out.json"};
  j["env"] = Json::array();
  j["nccl_version"] = 22602;
  j["config"] = {{"nthreads", 1},
                 {"ngpus", 4},
                 {"minimum_bytes", 1048576},
                 {"maximum_bytes", 134217728},
                 {"step_factor", 128},
                 {"warmup_iters", 5},
                 {"iterations", 20},
                 {"aggregated_iterations", 1},
                 {"validation", 1},
                 {"graph", 0},
                 {"blocking_collectives", "false"},
                 {"parallel_init", "false"},
                 {"devices",
                  {{{"rank", 0},
                    {"group", 0},
                    {"pid", 11},
                    {"hostname", "a"},
                    {"device", 0},
                    {"device_hex", "0000:18:00"},
                    {"device_info", "NVIDIA H100"}},
                   {{"rank", 4},
                    {"group", 0},
                    {"pid", 12},
                    {"hostname", "b"},
                    {"device", 0},
                    {"device_hex", "0000:18:00"},
                    {"device_info", "NVIDIA H100"}}}}};
  j["results"] = results;
  j["out_of_bounds"] = {{"count", 0}, {"okay", "true"}};
  j[typo ? "average_bus_bandwidith" : "average_bus_bandwidth"] = {
      {typo ? "bandwidith" : "bandwidth", sum / n}, {"okay", "unchecked"}};
  j["errors"] = Json::array();
  j["end_time"] = "2026-03-05 22:10:01";
  return j;
}

std::string json_error(const Json& j, NcclTestsOptions o = {}) {
  return error_of([&] { nccl_tests_run_from_json(j, "r.json", o); });
}

TEST(NcclTestsJson, ReadsEveryVersionAndTheOldSpelling) {
  for (int version : {1, 2, 3}) {
    for (bool typo : {false, true}) {
      SCOPED_TRACE(std::to_string(version) + (typo ? " typo" : ""));
      const Json j = nccl_json(version, typo);
      ASSERT_TRUE(looks_like_nccl_tests_json(j));
      const NcclTestsRun run = nccl_tests_run_from_json(j, "r.json");
      const Report& r = run.report;
      EXPECT_EQ(r.ranks, 8);  // 2 processes x 1 thread x 4 GPUs
      EXPECT_EQ(r.mode, ReportMode::measure);
      ASSERT_EQ(r.results.size(), 4u);
      EXPECT_EQ(r.results[0].collective, Collective::all_reduce);
      EXPECT_EQ(r.results[0].algorithm, "nccl");
      EXPECT_DOUBLE_EQ(r.results[3].time_us, 703.951);
      EXPECT_TRUE(r.results[3].in_place);
      EXPECT_EQ(r.results[3].wrong, 0);
      EXPECT_EQ(r.results[2].count, 33554432);
      EXPECT_EQ(r.extra["nccl_version"], "2.26.2");
      EXPECT_EQ(r.extra["json_version"], version);
      EXPECT_EQ(r.extra["iters"], 20);
      EXPECT_EQ(r.extra["devices"][1]["host"], "b");
      EXPECT_EQ(run.row_origins[3], "r.json: results[1].in_place");
    }
  }
}

TEST(NcclTestsJson, MalformedFilesNameThePath) {
  Json j = nccl_json();
  j["version"] = 4;
  expect_parts(json_error(j), {"r.json: version: 4: collkit reads nccl-tests JSON versions 1-3"});
  j = nccl_json(1, true);
  j["average_bus_bandwidith"]["bandwidith"] = 1.0;
  expect_parts(json_error(j), {"r.json: average_bus_bandwidith.bandwidith: 1, but the mean"});
  j = nccl_json();
  j["results"][1]["in_place"]["alg_bw"] = 150.0;
  expect_parts(json_error(j), {"r.json: results[1].in_place.alg_bw: 150 GB/s, but size / time"});
  j = nccl_json();
  j["config"]["ngpus"] = 2;  // 4 ranks: busbw says 8
  expect_parts(json_error(j),
               {"r.json: results[0].out_of_place.bus_bw:", "with p = 4", "the row fits p = 8"});
  j = nccl_json();
  j["results"][0]["out_of_place"]["time"] = "nan";
  expect_parts(json_error(j), {"r.json: results[0].out_of_place.time: nan"});
  j = nccl_json();
  j["results"][0]["out_of_place"]["cpu_time"] = 1.0;
  expect_parts(json_error(j), {"r.json: results[0].out_of_place.cpu_time:", "rerun without -C"});
  j = nccl_json();
  j["args"] = {"./my_benchmark"};
  expect_parts(json_error(j), {"r.json: args[0]:", "give --collective"});
  EXPECT_EQ(nccl_tests_run_from_json(j, "r.json", {Collective::all_reduce, 0}).report.ranks, 8);
  j = nccl_json();
  expect_parts(json_error(j, {Collective::all_gather, 0}),
               {"r.json: args[0]: the file is of all_reduce_perf, but --collective is all_gather"});
  expect_parts(json_error(j, {std::nullopt, 16}), {"r.json: config.devices:", "--ranks is 16"});
  j = nccl_json();
  j["results"][0]["type"] = "f8e5m2";
  expect_parts(json_error(j), {"r.json: results[0].type: unknown data type 'f8e5m2'"});
  j = nccl_json();
  j["results"][0].erase("size");
  expect_parts(json_error(j), {"r.json: results[0].size: missing"});
  j = nccl_json();
  j["config"]["nthreads"] = std::int64_t{1} << 40;  // a product that would overflow
  expect_parts(json_error(j), {"r.json: config.nthreads: too large"});
  j = nccl_json();
  j["results"][1]["out_of_place"] = nullptr;  // in place only: one row
  j.erase("average_bus_bandwidth");
  EXPECT_EQ(nccl_tests_run_from_json(j, "r.json").report.results.size(), 3u);
}

// ---- Writing ------------------------------------------------------------------

Report simulated(Collective c, const std::vector<std::string>& algorithms, int p = 8) {
  Report r;
  r.collkit_version = "0.1.0";
  r.mode = ReportMode::simulate;
  r.backend = Backend::sim;
  r.topology = TopologyInfo{"dgx-h100", "topologies/dgx-h100.json", "65a1"};
  r.ranks = p;
  r.root = c == Collective::broadcast ? 3 : 0;
  double t = 10;
  for (const std::string& a : algorithms)
    for (std::int64_t bytes : {0, 8, 1 << 20, 64 << 20}) {
      r.results.push_back(make_row(c, a, map_size(c, bytes, 4, p), p, t));
      t *= 1.7;
    }
  r.best = compute_best(r.results);
  r.extra["min_bytes"] = 8;
  r.extra["max_bytes"] = 64 << 20;
  r.extra["step_factor"] = 2;
  return r;
}

void expect_same_rows(const Report& a, const Report& b) {
  ASSERT_EQ(a.results.size(), b.results.size());
  for (std::size_t i = 0; i < a.results.size(); ++i) {
    SCOPED_TRACE(i);
    const ResultRow& x = a.results[i];
    const ResultRow& y = b.results[i];
    EXPECT_EQ(x.collective, y.collective);
    EXPECT_EQ(x.algorithm, y.algorithm);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.count, y.count);
    EXPECT_EQ(x.in_place, y.in_place);
    EXPECT_EQ(x.time_us, y.time_us);
    EXPECT_EQ(x.algbw_gbps, y.algbw_gbps);
    EXPECT_EQ(x.busbw_gbps, y.busbw_gbps);
    EXPECT_EQ(x.wrong, y.wrong);
    EXPECT_EQ(x.dtype.value_or(a.dtype), y.dtype.value_or(b.dtype));
    EXPECT_EQ(redop_column(x.collective, x.op.value_or(a.op)),
              redop_column(y.collective, y.op.value_or(b.op)));
    EXPECT_EQ(root_column(x.collective, x.root.value_or(a.root)),
              root_column(y.collective, y.root.value_or(b.root)));
  }
}

TEST(NcclTestsJsonWriter, WritesTheSchemaAndReadsBackTheSameRows) {
  const Report sim = simulated(Collective::all_reduce, {"ring", "rabenseifner:blocks"});
  const auto files = nccl_tests_json_files(sim, "out/s.json");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].first, "out/s.ring.json");
  EXPECT_EQ(files[1].first, "out/s.rabenseifner-blocks.json");
  const Json j = Json::parse(files[0].second);
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["results"].size(), 4u);
  EXPECT_EQ(j["results"][2]["size"], 1 << 20);
  EXPECT_EQ(j["results"][2]["count"], 262144);
  EXPECT_EQ(j["results"][2]["type"], "float");
  EXPECT_EQ(j["results"][2]["redop"], "sum");
  EXPECT_EQ(j["results"][2]["root"], "    -1");
  EXPECT_EQ(j["results"][2]["out_of_place"]["time"], sim.results[2].time_us);
  EXPECT_EQ(j["results"][2]["out_of_place"]["nwrong"], nullptr);
  // Simulated sizes have no in-place row: its figures repeat, marked.
  EXPECT_EQ(j["results"][2]["in_place"], j["results"][2]["out_of_place"]);
  EXPECT_EQ(j["results"][2]["collkit"]["in_place"], "copy of out_of_place");
  EXPECT_EQ(j["config"]["nthreads"].get<int>() * j["config"]["ngpus"].get<int>() *
                static_cast<int>(j["config"]["devices"].size()),
            8);
  EXPECT_EQ(j["config"]["step_factor"], 2);
  double mean = 0;
  for (const Json& r : j["results"]) mean += 2 * r["out_of_place"]["bus_bw"].get<double>();
  EXPECT_DOUBLE_EQ(j["average_bus_bandwidth"]["bandwidth"].get<double>(), mean / 8);
  EXPECT_EQ(j["out_of_bounds"]["okay"], "true");
  EXPECT_EQ(j["collkit"]["algorithm"], "ring");
  // Read back: the same rows, of algorithm ring, simulated.
  std::vector<InputRun> back = parse_runs(files[1].second, "s.rabenseifner-blocks.json");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].format, InputFormat::nccl_tests_json);
  EXPECT_EQ(back[0].report.mode, ReportMode::simulate);
  EXPECT_EQ(back[0].report.topology->name, "dgx-h100");
  Report only = sim;
  only.results.erase(only.results.begin(), only.results.begin() + 4);
  expect_same_rows(only, back[0].report);
  // One algorithm: the file itself.
  EXPECT_EQ(nccl_tests_json_files(simulated(Collective::all_reduce, {"ring"}), "s.json")[0].first,
            "s.json");
  EXPECT_EQ(nccl_tests_json_path("dir.v2/out", "ring", true), "dir.v2/out.ring");
}

TEST(NcclTestsJsonWriter, MeasuredRowsRoundTrip) {
  // As bench writes them: in-place rows, a size whose in-place run was not
  // available, several types, a rooted collective and checked rows.
  Report m;
  m.collkit_version = "0.1.0";
  m.mode = ReportMode::measure;
  m.backend = Backend::mpi;
  m.ranks = 4;
  m.root = 2;
  m.dtype = DataType::float32;
  const Collective c = Collective::broadcast;
  for (DataType d : {DataType::float32, DataType::int8}) {
    for (std::int64_t bytes : {1024, 1 << 20}) {
      const SizeMapping s = map_size(c, bytes, size_of(d), 4);
      ResultRow oop = make_row(c, "native", s, 4, 12.5 + bytes / 1e5, false, 0);
      oop.dtype = d;
      oop.op = RedOp::sum;
      m.results.push_back(oop);
      if (bytes == 1024) continue;  // in place unavailable
      ResultRow ip = make_row(c, "native", s, 4, 13.25 + bytes / 1e5, true, 3);
      ip.dtype = d;
      ip.op = RedOp::sum;
      m.results.push_back(ip);
    }
  }
  m.best = compute_best(m.results);
  m.extra["devices"] = Json::array();
  for (int r = 0; r < 4; ++r)
    m.extra["devices"].push_back({{"rank", r}, {"host", "h"}, {"pid", 100 + r}, {"kind", "cpu"}});
  const Json j = nccl_tests_json(m, c, "native");
  EXPECT_EQ(j["config"]["devices"].size(), 4u);
  EXPECT_EQ(j["config"]["devices"][2]["pid"], 102);
  EXPECT_EQ(j["results"][0]["root"], "     2");
  EXPECT_EQ(j["results"][2]["type"], "int8");
  EXPECT_EQ(j["out_of_bounds"]["count"], 6);
  EXPECT_EQ(j["out_of_bounds"]["okay"], "false");
  const Report back = nccl_tests_run_from_json(j, "b.json").report;
  EXPECT_EQ(back.backend, Backend::mpi);
  EXPECT_EQ(back.ranks, 4);
  expect_same_rows(m, back);
}

}  // namespace
}  // namespace collkit
