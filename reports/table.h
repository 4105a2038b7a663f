// The nccl-tests table, so that scripts written for nccl-tests output parse
// collkit's: every line that is not a data row starts with '#', and data rows
// use nccl-tests' exact column formats (docs/REPORTS.md, "The table").
#pragma once

#include <string>

#include "reports/report.h"

namespace collkit {

// The three '#' header lines (out-of-place / in-place banner, column names,
// units), each ending in '\n'.
std::string table_header();

// nccl-tests' time column: %7.0f from 10000 us, %7.1f from 100 us, else %7.2f.
std::string format_time_us(double time_us);

// One data row (with '\n'): `%12li  %12li  %8s  %6s  %6s` then, for the
// out-of-place and the in-place figures, `  %7s  %6.2f  %6.2f  %6g`, where
// #wrong prints as "N/A" when wrong < 0. type/redop/root are printed as
// given (use redop_column/root_column for nccl-tests' "none" and -1).
std::string format_table_row(const ResultRow& out_of_place, const ResultRow& in_place,
                             const std::string& type, const std::string& redop, int root);

// The table of one (collective, algorithm) of the report: a '#' title line,
// the header, one row per size (rows paired by size, dtype, op and root;
// when a size has only an out-of-place or only an in-place row, e.g. every
// simulated size, its figures fill both column groups, because parsers
// expect numbers there), then "# Out of bounds values : N OK|FAILED" and
// "# Avg bus bandwidth    : %g" (mean of every printed busbw). Empty string
// when the report has no such rows.
std::string format_table(const Report& report, Collective collective, const std::string& algorithm);

// Every (collective, algorithm) of the report, in order of first appearance,
// one table each, separated by a "#" line.
std::string format_tables(const Report& report);

// The best algorithm per size and the crossover sizes, as '#' lines (so
// nccl-tests parsers skip them).
std::string format_best_summary(const Report& report);

// "64 KiB", "1 GiB", "1.5 MiB", "12 B": powers of 1024, as the size flags.
std::string format_bytes_human(std::int64_t bytes);

}  // namespace collkit
