// What `collkit bench` prints and writes: nccl-tests' table on standard
// output as the harness (realrun/harness.h) measures, and the report JSON
// (--json, atomically) at the end.
#pragma once

#include <memory>

#include "realrun/harness.h"

namespace collkit {

// The sink of one bench run on the printing process.
std::unique_ptr<realrun::BenchSink> make_bench_report_sink(const realrun::BenchArgs& args);

}  // namespace collkit
