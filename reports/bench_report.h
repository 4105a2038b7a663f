// What `collkit bench` prints and writes: nccl-tests' table on standard
// output as the harness (realrun/harness.h) measures, and the report JSON
// (--json, atomically) at the end.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/progress.h"
#include "realrun/harness.h"

namespace collkit {

// The sink of one bench run on the printing process. `nccl_tests_json`
// (bench -J): also write the nccl-tests JSON of every algorithm
// (reports/nccl_tests.h), atomically with --json; its directory is checked
// when the sink is made, before the first measurement. `command_line` is
// the process's argv: the -J files' "args" (empty: they name the backend
// and collective alone).
// `progress`: how the sink shows progress on standard error (core/progress.h;
// --quiet silences it).
std::unique_ptr<realrun::BenchSink> make_bench_report_sink(
    const realrun::BenchArgs& args, const std::string& nccl_tests_json = "",
    const std::vector<std::string>& command_line = {}, ProgressOptions progress = {});

}  // namespace collkit
