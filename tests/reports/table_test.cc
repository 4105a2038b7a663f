#include "reports/table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace collkit {
namespace {

ResultRow row(std::int64_t bytes, std::int64_t count, double time, double algbw, double busbw,
              std::int64_t wrong, bool in_place = false) {
  ResultRow r;
  r.bytes = bytes;
  r.count = count;
  r.time_us = time;
  r.algbw_gbps = algbw;
  r.busbw_gbps = busbw;
  r.wrong = wrong;
  r.in_place = in_place;
  return r;
}

// The example table of docs/NCCL_TESTS.md (nccl-tests' layout), byte for byte.
std::string reference_block() {
  std::ifstream in(COLLKIT_SOURCE_DIR "/docs/NCCL_TESTS.md");
  std::stringstream s;
  s << in.rdbuf();
  const std::string text = s.str();
  const auto start = text.find("```\n#     ");
  if (start == std::string::npos) return "";
  const auto end = text.find("```", start + 3);
  return text.substr(start + 4, end - start - 4);
}

TEST(Table, RowMatchesNcclTestsExample) {
  const std::string line =
      format_table_row(row(134217728, 33554432, 1234.5, 108.72, 190.26, 0),
                       row(134217728, 33554432, 1230.1, 109.11, 190.95, 0), "float", "sum", -1);
  EXPECT_EQ(line,
            "   134217728      33554432     float     sum      -1   1234.5  108.72  190.26       0"
            "   1230.1  109.11  190.95       0\n");
}

TEST(Table, HeaderMatchesReference) {
  const std::string ref = reference_block();
  ASSERT_FALSE(ref.empty()) << "docs/NCCL_TESTS.md has no example table";
  EXPECT_EQ(ref.substr(0, table_header().size()), table_header());
}

TEST(Table, TimeColumnPrecision) {
  EXPECT_EQ(format_time_us(5.234), "   5.23");
  EXPECT_EQ(format_time_us(99.994), "  99.99");
  EXPECT_EQ(format_time_us(100.0), "  100.0");
  EXPECT_EQ(format_time_us(9999.94), " 9999.9");
  EXPECT_EQ(format_time_us(10000.0), "  10000");
  EXPECT_EQ(format_time_us(1234567.0), "1234567");
}

TEST(Table, WrongIsNaWhenNotChecked) {
  const std::string line = format_table_row(row(8, 2, 12.5, 0.0, 0.0, -1),
                                            row(8, 2, 12.5, 0.0, 0.0, -1), "float", "none", 0);
  EXPECT_EQ(line,
            "           8             2     float    none       0    12.50    0.00    0.00     N/A"
            "    12.50    0.00    0.00     N/A\n");
}

Report two_size_report() {
  Report rep;
  rep.ranks = 8;
  rep.topology = TopologyInfo{"fc-8", "fc-8.json", ""};
  ResultRow a = make_row(Collective::all_reduce, "ring", {1024, 256, 256}, 8, 10.0);
  ResultRow b = make_row(Collective::all_reduce, "ring", {2048, 512, 512}, 8, 20.0);
  ResultRow c = make_row(Collective::all_reduce, "tree", {1024, 256, 256}, 8, 8.0);
  rep.results = {a, b, c};
  rep.best = compute_best(rep.results);
  return rep;
}

TEST(Table, SimulatedRowsFillBothColumnGroups) {
  const Report rep = two_size_report();
  const std::string expected =
      "# collkit simulate (sim): all_reduce, algorithm ring, 8 ranks, topology fc-8\n"
      "#\n" +
      table_header() +
      "        1024           256     float     sum      -1    10.00    0.10    0.18     N/A"
      "    10.00    0.10    0.18     N/A\n"
      "        2048           512     float     sum      -1    20.00    0.10    0.18     N/A"
      "    20.00    0.10    0.18     N/A\n"
      "# Out of bounds values : 0 OK\n"
      "# Avg bus bandwidth    : 0.1792\n";
  EXPECT_EQ(format_table(rep, Collective::all_reduce, "ring"), expected);
  EXPECT_EQ(format_table(rep, Collective::all_gather, "ring"), "");
}

TEST(Table, PairsInPlaceRowsAndAveragesEveryPrintedBusbw) {
  Report rep;
  rep.mode = ReportMode::measure;
  rep.backend = Backend::mpi;
  rep.ranks = 2;
  rep.root = 1;
  rep.results = {make_row(Collective::broadcast, "native", {64, 16, 16}, 2, 2.0, false, 0),
                 make_row(Collective::broadcast, "native", {64, 16, 16}, 2, 4.0, true, 3)};
  const std::string t = format_table(rep, Collective::broadcast, "native");
  EXPECT_NE(t.find("          64            16     float    none       1     2.00    0.03    0.03"
                   "       0     4.00    0.02    0.02       3\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("# Out of bounds values : 3 FAILED\n"), std::string::npos);
  // (0.032 + 0.016) / 2
  EXPECT_NE(t.find("# Avg bus bandwidth    : 0.024\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("measure (mpi)"), 10u);
}

TEST(Table, EveryNonDataLineIsAComment) {
  const Report rep = two_size_report();
  std::istringstream in(format_tables(rep) + format_best_summary(rep));
  int data = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++data;
  }
  EXPECT_EQ(data, 3);
}

TEST(Table, BestSummaryListsWinnersAndCrossovers) {
  const Report rep = two_size_report();
  const std::string s = format_best_summary(rep);
  EXPECT_NE(s.find("#       1024           256  all_reduce      tree"), std::string::npos) << s;
  EXPECT_NE(s.find("#       2048           512  all_reduce      ring"), std::string::npos) << s;
  EXPECT_NE(s.find("#       2048  2 KiB       all_reduce: tree -> ring\n"), std::string::npos) << s;
}

TEST(Table, HumanSizes) {
  EXPECT_EQ(format_bytes_human(12), "12 B");
  EXPECT_EQ(format_bytes_human(65536), "64 KiB");
  EXPECT_EQ(format_bytes_human(1536 * 1024), "1.5 MiB");
  EXPECT_EQ(format_bytes_human(std::int64_t{1} << 30), "1 GiB");
}

}  // namespace
}  // namespace collkit
