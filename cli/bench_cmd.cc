// Built only with collkit_realrun (cli/CMakeLists.txt defines
// COLLKIT_HAVE_REALRUN then); main.cc registers it under the same guard.
#ifdef COLLKIT_HAVE_REALRUN

#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "realrun/bench.h"
#include "realrun/harness.h"
#include "reports/bench_report.h"

namespace collkit::cli {

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench",
      "Measure collectives for real: --backend mpi or nccl under mpirun, --backend cuda as one "
      "process driving -g ranks on the visible GPUs; nccl-tests flags and table");
  auto a = std::make_shared<realrun::BenchArgs>();
  a->version = COLLKIT_VERSION;
  // Values stay text: run_bench parses them after MPI is up, so a bad value is
  // reported once (by rank 0) and ends the whole job, instead of every rank
  // printing and exiting on its own. COLLKIT_FAULT_INJECT (test only) is
  // described in docs/BENCH.md.
  cmd->add_option("--backend", a->backend,
                  "Backend: mpi (CPUs, under mpirun), nccl (one process per GPU, under mpirun), "
                  "cuda (one process, all ranks; exits 2 without a CUDA device)");
  cmd->add_option("--collective", a->collective, "Collective");
  cmd->add_option("--algorithm", a->algorithms,
                  "Comma-separated algorithms (name or name:variant), 'native' for the MPI "
                  "library's or NCCL's own, 'all' for every one (default)");
  cmd->add_option("-b,--minbytes", a->min_bytes, "Minimum size in bytes, K/M/G suffixes (32M)");
  cmd->add_option("-e,--maxbytes", a->max_bytes, "Maximum size in bytes (32M)");
  cmd->add_option("-f,--stepfactor", a->step_factor, "Multiply the size by this (1 = use -i)");
  cmd->add_option("-i,--stepbytes", a->step_bytes, "Add this to the size when -f is 1 (1M)");
  cmd->add_option("-n,--iters", a->iters, "Timed iterations (20)");
  cmd->add_option("-w,--warmup_iters", a->warmup, "Warm-up iterations (5, as nccl-tests)");
  cmd->add_option("-c,--check", a->check, "Correctness check iterations, 0 = none (1)");
  cmd->add_option("-d,--datatype", a->dtype, "Data type or 'all' (float)");
  cmd->add_option("-o,--op", a->op, "Reduction op or 'all' (sum)");
  cmd->add_option("-r,--root", a->root, "Root rank (0)");
  cmd->add_option("-a,--average", a->average, "Time across ranks: 0 rank 0, 1 mean, 2 min, 3 max");
  cmd->add_option("-T,--timeout", a->timeout,
                  "Abort when one collective takes longer than this many seconds (0 = never)");
  cmd->add_option("-g,--ranks", a->ranks,
                  "--backend cuda: ranks, placed round-robin on the visible GPUs; more ranks "
                  "than GPUs = virtual ranks (default: one per GPU)");
  cmd->add_option("-G,--cudagraph", a->graph,
                  "--backend cuda: capture the -n timed runs into a CUDA graph and launch it "
                  "this many times; time = total / (n x launches) (0 = no graph, default)");
  cmd->add_option("--engine", a->engine,
                  "--backend cuda: how collkit's schedules run: interpreter (one persistent "
                  "kernel per GPU runs every rank's program) or streams (copies, kernels and "
                  "events per step); default: the interpreter where it can run the plan, else "
                  "streams");
  cmd->add_option("-t,--nthreads", a->threads,
                  "nccl-tests' threads per process: 1 only (one thread per process)");
  cmd->add_option("-m,--agg_iters", a->agg_iters,
                  "Collectives per timed iteration, NCCL's own in one group (nccl, cuda) (1)");
  cmd->add_option("-z,--blocking", a->blocking,
                  "1: wait for each collective before the next (nccl, cuda; mpi always does) (0)");
  cmd->add_option("-p,--parallel_init", a->parallel_init,
                  "nccl-tests' parallel communicator init: 0 only (one thread per process)");
  cmd->add_option("-N,--run_cycles", a->cycles,
                  "Run the whole bench this many times, 0 = until interrupted (1); not with "
                  "--json or -J");
  cmd->add_option("-C,--report_cputime", a->cputime,
                  "1: CPU time instead of GPU event time (mpi: host wall-clock times either way) "
                  "(0)");
  cmd->add_option("-R,--local_register", a->local_register,
                  "1: register buffers with NCCL, ncclCommRegister (nccl, cuda native) (0)");
  cmd->add_option("--nccl-buffsize", a->nccl_buffsize,
                  "msccl:FILE.xml: NCCL_BUFFSIZE of the runtime, bytes (K/M/G suffixes) of a "
                  "connection's Simple buffer; sizes at which the file would hang there are "
                  "refused (0 = NCCL's default, 4M)");
  cmd->add_option("--json", a->json_path, "Write the report (JSON) here, atomically");
  auto quiet = std::make_shared<bool>(false);
  cmd->add_flag("--quiet", *quiet,
                "No progress on standard error (rank 0 shows it after a few seconds: a bar on "
                "a terminal, a line every 10 s otherwise)");
  // -J is nccl-tests' own flag: the nccl-tests JSON schema, one file per
  // algorithm (reports/nccl_tests.h). Kept out of BenchArgs: realrun knows
  // nothing of report files; the sink writes it.
  auto nccl_tests_json = std::make_shared<std::string>();
  cmd->add_option("-J,--output_file", *nccl_tests_json,
                  "Write nccl-tests JSON (-J schema) here; with several algorithms one file each, "
                  "the algorithm before the extension (FILE.ring.json)");
  // A repeated flag takes its last value (as nccl-tests' getopt loop does)
  // rather than failing inside CLI11 on every rank before MPI is up.
  for (CLI::Option* opt : cmd->get_options())
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  cmd->allow_extras();
  cmd->callback([a, cmd, nccl_tests_json, quiet] {
    a->extras = cmd->remaining();
    if (!nccl_tests_json->empty()) a->other_outputs.emplace_back("-J", *nccl_tests_json);
    // Output paths are checked before MPI starts, by the process that
    // writes them (rank 0's): one line and exit 2, no MPI_Abort banner.
    if (realrun::launch_environment().rank == 0) refuse_empty_values(*cmd);
    if (realrun::launch_environment().rank == 0)
      prepare_outputs({{"--json", a->json_path}, {"-J", *nccl_tests_json}}, {});
    realrun::run_bench(*a, [nccl_tests_json, quiet](const realrun::BenchArgs& args) {
      return make_bench_report_sink(args, *nccl_tests_json, command_line(), {*quiet});
    });
  });
}

}  // namespace collkit::cli

#endif  // COLLKIT_HAVE_REALRUN
