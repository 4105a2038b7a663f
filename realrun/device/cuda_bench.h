// `collkit bench --backend cuda`: one process drives P ranks placed
// round-robin on the visible GPUs (P may exceed the GPUs: "virtual ranks"),
// every registered algorithm through the single-process multi-rank program
// (realrun/multirank.h) on CUDA streams, and NCCL's own collectives through
// ncclCommInitAll where the ranks sit on distinct GPUs.
#pragma once

#include "realrun/bench.h"
#include "realrun/harness.h"

namespace collkit::realrun {

// No device: UsageError (exit 2) "no CUDA device: <CUDA's error>".
void run_cuda_bench(const BenchArgs& args, const BenchSinkFactory& make_sink);

}  // namespace collkit::realrun
