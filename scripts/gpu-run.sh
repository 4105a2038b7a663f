#!/usr/bin/env bash
# Runs on a lent GPU machine (the device tool), from the repository root,
# with build-gpu/ carried from scripts/gpu-build.sh:
#
#   device run: carry ["build-gpu"], command "bash scripts/gpu-run.sh all"
#
# Stages (one or several, in order): protocols latency unit sweep (together:
# tests) kernel vranks graph engines sanitizer; "all" is every one but
# protocols, latency, graph and engines.
# The measurements come before the sanitizer runs, which are the slowest.
# Writes at most 8 files under $OUT (the tool's limit): summary.txt,
# tests.log, sanitizer.log, kernel_bench.json, bench.log, ar_p2.json,
# ar_p4.json, ar_p8.json; graph writes graph_p<P>_G<0|10>.json instead of
# the last four (run it without kernel and vranks); engines writes
# engines_p<P>_<interpreter|streams>_G<0|10>.json (four files for one P: run
# it alone, or with unit; ENGINES_CHECKS and ENGINES_RUNS, lists of
# engine:G, narrow its checked and timed runs). latency writes latency.json
# (bench/step_latency_bench: the cost of one dependent step by protocol,
# flag place, warp or block and lanes; docs/BENCH.md "Step latency"; its
# table goes to bench.log): with unit and engines for one P that makes 8
# files (summary, tests.log, bench.log, latency.json, four engines files);
# LATENCY_ARGS adds flags (e.g. "--quick", "--filter L1/"). SWEEP_ENGINES and SWEEP_P narrow the sweep. The summary (printed last) has one
# line per step with its exit code; the logs have everything. Each stage fits well inside
# one 10-minute call on an H100; "all" is meant for one call, but split it
# (e.g. "tests sanitizer" then "kernel vranks") if a run comes close.
set -uo pipefail
root="$(pwd)"
build="$root/build-gpu"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
summary="$out/summary.txt"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(all)
# "tests" is "unit sweep".
want() {
  for s in "${stages[@]}"; do
    [ "$s" = "$1" ] && return 0
    [ "$s" = all ] && [ "$1" != graph ] && [ "$1" != engines ] && [ "$1" != protocols ] \
      && [ "$1" != latency ] && return 0
    [ "$s" = tests ] && { [ "$1" = unit ] || [ "$1" = sweep ]; } && return 0
  done
  return 1
}

# The tests were compiled with absolute paths of the build machine
# (/work/main/...): make them valid here.
if [ ! -e /work/main/build-gpu ]; then
  mkdir -p /work && ln -sfn "$root" /work/main
fi

# NCCL ships in the Python environment there (nvidia-nccl-cu13).
nccl="$(find / -name 'libnccl.so*' -not -path '/proc/*' 2>/dev/null | head -n 1)"
export LD_LIBRARY_PATH="${nccl:+$(dirname "$nccl"):}$build/lib:${LD_LIBRARY_PATH:-}"
collkit="$build/cli/collkit"
if ! command -v compute-sanitizer >/dev/null; then
  cs="$(find / -name compute-sanitizer -type f -perm -u+x -not -path '/proc/*' 2>/dev/null | head -n 1)"
  [ -n "$cs" ] && export PATH="$(dirname "$cs"):$PATH"
fi

# No step may take the whole call: one that hangs is stopped (rc 124) and the
# next runs, so the summary still says which step it was.
step_limit="${STEP_LIMIT:-240}"
step() {  # step NAME LOG COMMAND...: runs, appends to LOG, records the exit code
  local name="$1" log="$2"
  shift 2
  local t0=$SECONDS
  { echo "=== $name: $*"; timeout --signal=INT --kill-after=10 "$step_limit" "$@"; } >>"$log" 2>&1
  local rc=$?
  printf '%-44s rc=%-3s %4ss\n' "$name" "$rc" "$((SECONDS - t0))" | tee -a "$summary"
}

{
  echo "# gpu-run $(date -u +%FT%TZ) stages: ${stages[*]}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  echo "libnccl: ${nccl:-not found}"
  echo "compute-sanitizer: $(command -v compute-sanitizer || echo not found)"
} | tee -a "$summary"

if want protocols; then
  # The interpreter's protocols side by side: all_reduce at P = 8 with
  # COLLKIT_INTERPRETER_LL_BYTES taking each value of PROTO_LL in turn (0:
  # no LL message; 1073741824: every message LL), and
  # COLLKIT_INTERPRETER_LL128_ABOVE each of PROTO_LL128_ABOVE (the size
  # above which they go as LL128 lines; 0: always, 1099511627776: never),
  # PROTO_REPS rounds, then ring at 1 MiB with every message LL on 4, 8 and
  # 16 lanes. Timed runs (-c 0); the sweep and unit stages check LL's results.
  log="$out/bench.log"
  algs="${PROTO_ALGS:-ring,recursive_doubling,rabenseifner,hierarchical,linear,binomial_tree,double_binary_tree,nccl:ring,nccl:tree,nccl:nvls,nccl:nvls_tree}"
  for rep in $(seq 1 "${PROTO_REPS:-2}"); do
    for ll in ${PROTO_LL:-0 1073741824}; do
      for above in ${PROTO_LL128_ABOVE:-524288}; do
        step "bench all_reduce -g 8 LL_BYTES=$ll LL128_ABOVE=$above round $rep" "$log" \
          env COLLKIT_INTERPRETER_LL_BYTES="$ll" COLLKIT_INTERPRETER_LL128_ABOVE="$above" \
          "$collkit" bench --backend cuda -g 8 --collective all_reduce --algorithm "$algs" \
          --engine interpreter -b "${PROTO_MIN:-4K}" -e "${PROTO_MAX:-256M}" -f 4 -n 20 -w 5 -c 0
      done
    done
  done
  for lanes in ${PROTO_LANES:-4 8 16}; do
    step "bench all_reduce ring 1M LL lanes=$lanes" "$log" env COLLKIT_INTERPRETER_LL_BYTES=1073741824 \
      COLLKIT_INTERPRETER_LANES="$lanes" "$collkit" bench --backend cuda -g 8 --collective all_reduce \
      --algorithm ring --engine interpreter -b 1M -e 1M -n 50 -w 5 -c 0
  done
fi

if want latency && [ ! -x "$build/bench/step_latency_bench" ]; then
  echo "latency: skipped, step_latency_bench not built (GPU_TARGETS of gpu-build.sh)" | tee -a "$summary"
elif want latency; then
  # What one dependent step costs (docs/BENCH.md "Step latency"): medians
  # per round trip of every variant, the launch floor. Not yet run on a GPU:
  # 105 variants x 5 launches x 4,100 round trips of a few us (tens at 128
  # KiB) should take well under a minute, --quick a few seconds; STEP_LIMIT
  # bounds it, and a wait that hangs gives up after 2 s. Its table goes to bench.log;
  # the launch floor and any failure to the summary too.
  step "step_latency_bench${LATENCY_ARGS:+ $LATENCY_ARGS}" "$out/bench.log" "$build/bench/step_latency_bench" \
    ${LATENCY_ARGS:-} --json "$out/latency.json"
  grep "^# empty kernel\|^# FAILED\|TIMED OUT\|N/A (not resident)" "$out/bench.log" | tee -a "$summary"
fi

log="$out/tests.log"
if want unit; then
  # The GPU test programs (gpu-build.sh builds only these; the host tests
  # run in CI).
  for t in ${UNIT_TESTS:-realrun_device_reduce realrun_cuda_interpreter realrun_cuda_multirank \
           realrun_cuda_bench_cli bench_step_latency}; do
    [ -x "$build/tests/$t" ] || { echo "test $t: not built (GPU_TARGETS)" | tee -a "$summary"; continue; }
    step "test $t" "$log" "$build/tests/$t" --gtest_brief=1
  done
fi
if want sweep; then
  # Every collective x algorithm (+ native where NCCL can) end to end with
  # virtual ranks, checked on the device: P = 3 and 16, last rank as root,
  # on each engine (the interpreter is the default).
  for engine in ${SWEEP_ENGINES:-interpreter streams}; do
    for p in ${SWEEP_P:-3 16}; do
      for c in broadcast reduce all_gather scatter gather reduce_scatter all_reduce all_to_all barrier; do
        step "bench cuda -g $p $c --engine $engine" "$log" "$collkit" bench --backend cuda -g "$p" \
          --collective "$c" --engine "$engine" --algorithm all -b 4K -e 256K -f 8 -n 1 -w 0 -c 1 \
          -r $((p - 1)) -d all -o all
      done
    done
  done
fi
if want unit || want sweep; then
  # Skips would hide a missing device: none is expected here.
  grep "SKIPPED\|skipped" "$log" | sort | uniq -c | tee -a "$summary"
fi

if want kernel && [ ! -x "$build/bench/reduce_kernel_bench" ]; then
  echo "kernel: skipped, reduce_kernel_bench not built (GPU_TARGETS of gpu-build.sh)" | tee -a "$summary"
elif want kernel; then
  # Medians of KERNEL_REPS repetitions, each the mean of event-timed launches
  # over KERNEL_MIN_TIME seconds; KERNEL_FILTER picks benchmarks (a regex).
  step "reduce_kernel_bench" "$out/bench.log" "$build/bench/reduce_kernel_bench" \
    --benchmark_out="$out/kernel_bench.json" --benchmark_out_format=json \
    --benchmark_min_time="${KERNEL_MIN_TIME:-0.1}" --benchmark_repetitions="${KERNEL_REPS:-5}" \
    --benchmark_report_aggregates_only=true --benchmark_filter="${KERNEL_FILTER:-.}"
fi

if want vranks; then
  log="$out/bench.log"
  for p in ${VRANKS_P:-2 4 8}; do
    # Correctness at small sizes (every algorithm, every check), then timing
    # 1 MiB..1 GiB without checks (the host computes the expected values).
    [ "${VRANKS_CHECK:-1}" = 1 ] && step "bench cuda -g $p all_reduce check" "$log" "$collkit" bench --backend cuda -g "$p" \
      --collective all_reduce --algorithm all -b 1K -e 4M -f 16 -n 2 -w 1 -c 2 -d all -o sum
    step "bench cuda -g $p all_reduce 1M..1G" "$log" "$collkit" bench --backend cuda -g "$p" \
      --collective all_reduce --algorithm all -b 1M -e 1G -f 4 -n 20 -w 5 -c 0 \
      --json "$out/ar_p$p.json"
  done
fi

if want graph; then
  # -G: the same all_reduce runs enqueued directly and through a CUDA graph,
  # side by side per P, with checks; small sizes are where launches dominate.
  log="$out/bench.log"
  for p in ${GRAPH_P:-2 8}; do
    for g in 0 10; do
      step "bench cuda -g $p all_reduce -G $g" "$log" "$collkit" bench --backend cuda -g "$p" \
        --collective all_reduce --algorithm all -b 1K -e 16M -f 4 -n 20 -w 5 -c 1 -G "$g" \
        --json "$out/graph_p${p}_G$g.json"
    done
  done
fi

if want engines; then
  # The interpreter next to the streams engine, each with and without -G, in
  # one call per P (issue 21's targets: P = 8, ring at 1 MiB <= 25 us, every
  # all_reduce algorithm at 1 MiB within 2x of its HBM-traffic bound in
  # docs/results/gpu-interpreter.md, >= 64 MiB at >= 0.95x of it). Each engine is checked at
  # small sizes (with and without the graph) first, every type; the timed
  # runs skip the check, as vranks does: the host computes the expected
  # values (P^2 x count of them for all_reduce), which took 150 s for
  # 1 KiB..4 MiB with -d all at P = 8 on the H100 machine.
  log="$out/bench.log"
  for p in ${ENGINES_P:-8}; do
    for run in ${ENGINES_CHECKS:-interpreter:0 interpreter:10 streams:0 streams:10}; do
      engine="${run%%:*}" g="${run##*:}"
      step "bench cuda -g $p all_reduce --engine $engine -G $g check" "$log" "$collkit" bench \
        --backend cuda -g "$p" --collective all_reduce --algorithm all --engine "$engine" \
        -b 1K -e "${ENGINES_CHECK_MAX:-256K}" -f 16 -n 2 -w 1 -c 1 -G "$g" -d all -o sum
    done
    for run in ${ENGINES_RUNS:-interpreter:0 interpreter:10 streams:0 streams:10}; do
      engine="${run%%:*}" g="${run##*:}"
      step "bench cuda -g $p all_reduce --engine $engine -G $g" "$log" "$collkit" bench \
        --backend cuda -g "$p" --collective all_reduce --algorithm all --engine "$engine" \
        -b "${ENGINES_MIN:-1K}" -e 256M -f "${ENGINES_FACTOR:-4}" -n 20 -w 5 -c 0 -G "$g" \
        --json "$out/engines_p${p}_${engine}_G$g.json"
    done
  done
fi

if want sanitizer; then
  log="$out/sanitizer.log"
  san=(compute-sanitizer --tool memcheck --error-exitcode 99 --leak-check full)
  step "memcheck device_reduce (quick)" "$log" env COLLKIT_GPU_TEST_QUICK=1 "${san[@]}" \
    "$build/tests/realrun_device_reduce" --gtest_brief=1
  step "memcheck cuda_multirank (all_reduce, all_gather)" "$log" "${san[@]}" \
    "$build/tests/realrun_cuda_multirank" --gtest_brief=1 \
    --gtest_filter='*all_reduce*:*all_gather*:*reduce_scatter_ring*'
  step "memcheck bench cuda -g 4 all_reduce" "$log" "${san[@]}" "$collkit" bench \
    --backend cuda -g 4 --collective all_reduce --algorithm all -b 4K -e 256K -f 8 -n 2 -w 1 -c 1
  step "racecheck device_reduce (quick)" "$log" env COLLKIT_GPU_TEST_QUICK=1 \
    compute-sanitizer --tool racecheck --error-exitcode 99 "$build/tests/realrun_device_reduce" \
    --gtest_brief=1 --gtest_filter='*MatchesTheHost*'
  # The interpreter's persistent kernel: memory errors, shared-memory races
  # and barrier misuse (synccheck) on the ring, tree and all_gather cases.
  interp_filter='*all_reduce_ring*:*all_reduce_double_binary_tree*:*all_gather_ring*:*ALostSignal*:*ALostLlSend*'
  step "memcheck cuda_interpreter" "$log" "${san[@]}" "$build/tests/realrun_cuda_interpreter" \
    --gtest_brief=1 --gtest_filter="$interp_filter"
  step "racecheck cuda_interpreter" "$log" compute-sanitizer --tool racecheck --error-exitcode 99 \
    "$build/tests/realrun_cuda_interpreter" --gtest_brief=1 --gtest_filter="$interp_filter"
  step "synccheck cuda_interpreter" "$log" compute-sanitizer --tool synccheck --error-exitcode 99 \
    "$build/tests/realrun_cuda_interpreter" --gtest_brief=1 --gtest_filter="$interp_filter"
  step "memcheck bench cuda -g 4 all_reduce --engine interpreter -G 2" "$log" "${san[@]}" \
    "$collkit" bench --backend cuda -g 4 --collective all_reduce --algorithm all \
    --engine interpreter -b 4K -e 256K -f 8 -n 2 -w 1 -c 1 -G 2
fi

echo "# summary (also in $summary)"
cat "$summary"
