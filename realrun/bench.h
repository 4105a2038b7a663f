// `collkit bench`: nccl-tests' measurement loop over the real executors
// (every registered algorithm) and the vendor's own collectives ("native"):
// --backend mpi (CPUs, under mpirun), nccl (one process per GPU, under
// mpirun) and cuda (one process driving every rank on the visible GPUs).
// docs/BENCH.md is the user reference; realrun/harness.h the shared loop.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace collkit::realrun {

// The command line as text: every value is parsed (and every error reported)
// by run_bench, after MPI is up where there is MPI, so that only rank 0
// prints it.
struct BenchArgs {
  std::string version;  // collkit's, for the report
  std::string backend;
  std::string collective;
  std::string algorithms = "all";  // comma list; "native" = MPI's own; "all" = every one + native
  // nccl-tests' flags and defaults.
  std::string min_bytes = "32M";  // -b
  std::string max_bytes = "32M";  // -e
  std::string step_factor = "1";  // -f (> 1: multiply)
  std::string step_bytes = "1M";  // -i (when -f is 1)
  std::string iters = "20";       // -n
  std::string warmup = "5";       // -w (nccl-tests' default)
  std::string check = "1";        // -c: check iterations (0 = none)
  std::string dtype = "float";    // -d: a type or "all"
  std::string op = "sum";         // -o: an op or "all"
  std::string root = "0";         // -r
  std::string average = "1";      // -a: 0 rank 0, 1 mean, 2 min, 3 max
  std::string json_path;          // --json
  std::string timeout = "0";      // -T: seconds per collective, 0 = none
  std::string ranks;              // -g/--ranks: ranks of the cuda backend
  std::string graph = "0";        // -G: CUDA graph launches per measurement (cuda backend)
  std::string engine;  // --engine (cuda backend): interpreter or streams; empty = default
  // nccl-tests' other flags, with its defaults; parse_config accepts each
  // where it means something for the backend and refuses it, saying so,
  // where it does not (docs/BENCH.md).
  std::string threads = "1";         // -t: threads per process
  std::string agg_iters = "1";       // -m: operations aggregated per iteration
  std::string blocking = "0";        // -z: wait for each collective before the next
  std::string parallel_init = "0";   // -p: initialise the threads' communicators in parallel
  std::string cycles = "1";          // -N: run the whole bench this many times
  std::string cputime = "0";         // -C: report CPU time instead of GPU time
  std::string local_register = "0";  // -R: register buffers with NCCL
  std::string nccl_buffsize = "0";   // --nccl-buffsize: msccl:FILE.xml's runtime buffer
  std::vector<std::string> extras;   // arguments the command line did not recognise
  // Report files the sink writes besides --json (flag, path), for checks
  // that concern every output file (-N).
  std::vector<std::pair<std::string, std::string>> other_outputs;
};

// Where the figures go (realrun/harness.h); made once, on the printing
// process only, by the layer that prints tables and writes reports.
class BenchSink;
using BenchSinkFactory = std::function<std::unique_ptr<BenchSink>(const BenchArgs& args)>;

// mpi and nccl: runs the benchmark on this MPI rank (initialising and
// finalising MPI) and prints the tables on rank 0, which also writes --json
// atomically. Bad input on any rank: rank 0 prints one line and the job ends
// with MPI_Abort(2), never a hang; likewise ranks started with different
// flags. A failure during the run aborts with the error's exit code.
// cuda: one process, no MPI; no device is a UsageError (exit 2, "no CUDA
// device"). Returns normally when every element checked was right;
// otherwise (rank 0) throws RuntimeFailure (exit 1).
void run_bench(const BenchArgs& args, const BenchSinkFactory& make_sink);

}  // namespace collkit::realrun
