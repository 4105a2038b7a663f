#!/usr/bin/env bash
# The quality gates CI runs after scripts/test.sh (docs/QUALITY.md):
#   format  clang-format --dry-run --Werror over every C++/CUDA source
#   asan    the asan preset (clang, AddressSanitizer + UBSan, LeakSanitizer
#           with scripts/sanitizers/lsan.supp): build, then the ctest suite
#           (test presets asan and asan-mpi; the two tests labelled scale
#           run in the default preset only, docs/QUALITY.md)
#   fuzz    every libFuzzer target for COLLKIT_FUZZ_SECONDS (default 60) on a
#           copy of its committed corpus, after replaying tests/regressions/;
#           JOBS targets at a time (CMAKE_BUILD_PARALLEL_LEVEL, default 2)
#   tidy    clang-tidy (.clang-tidy) over the library code in TIDY_DIRS
# Run one or more gates by name (`bash scripts/quality.sh format tidy`); no
# argument runs all four in that order. Each gate prints its wall time.
# Needs clang, clang-tidy, clang-format and libclang-rt-14-dev (.ci/run
# installs them through COLLKIT_EXTRA_PACKAGES).
set -euo pipefail
cd "$(dirname "$0")/.."

# Folders clang-tidy checks (library code, real runs and the command line);
# TIDY_EXCLUDE names single files to leave out.
TIDY_DIRS=(core algorithms topologies sim realrun reports calibration planner interop tuner tuner/plugin whatif cli)
TIDY_EXCLUDE=()
FUZZ_SECONDS=${COLLKIT_FUZZ_SECONDS:-60}
JOBS=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

# Every C++ source git knows of (tracked, or new and not ignored).
sources() {
  git ls-files --cached --others --exclude-standard -- '*.cc' '*.h' '*.cu' '*.cuh' |
    sort -u | while read -r f; do [[ -f $f ]] && echo "$f"; done
}

gate_format() {
  sources | xargs -r clang-format --dry-run --Werror
  echo "format: $(sources | wc -l) files clean"
}

gate_asan() {
  cmake --preset asan
  CMAKE_BUILD_PARALLEL_LEVEL=$JOBS cmake --build --preset asan
  # Two test presets: the mpirun launches (label mpi) need the slow unwinder
  # for LeakSanitizer to match Open MPI's frames (scripts/sanitizers/lsan.supp).
  local rc=0
  ctest --preset asan -j "$JOBS" || rc=1
  ctest --preset asan-mpi -j "$JOBS" || rc=1
  return $rc
}

# One fuzz target (its executable and name): replays its regression inputs, then fuzzes a copy of its
# committed corpus for FUZZ_SECONDS. Writes its report to $work/$name.out and
# returns non-zero on a failing regression input or a crash.
fuzz_one() {
  local exe=$1 name=$2 work=$3 found=0
  {
    # Inputs that once crashed: each must now run clean (one execution each).
    if compgen -G "tests/regressions/$name/*" >/dev/null; then
      "$exe" -runs=1 tests/regressions/"$name"/* 2>"$work/$name.replay.log" ||
        { cat "$work/$name.replay.log"; echo "fuzz: $name: a regression input fails"; found=1; }
    fi
    # The committed corpus is copied so CI never changes the tree; new
    # crashes land in $work and are printed.
    mkdir -p "$work/$name.corpus" "$work/$name.crash"
    cp fuzz/corpus/"$name"/* "$work/$name.corpus/"
    # ASan otherwise hands freed memory back to the kernel every few
    # seconds; with a fuzzer's churn that was 60% of the CPU
    # (docs/results/fuzzing.md). Keeping it costs RSS only, which
    # -rss_limit_mb bounds.
    if ! ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_release_to_os_interval_ms=-1" \
        "$exe" -max_total_time="$FUZZ_SECONDS" -timeout=60 -rss_limit_mb=4096 \
        -print_final_stats=1 -artifact_prefix="$work/$name.crash/" \
        "$work/$name.corpus" >"$work/$name.log" 2>&1; then
      tail -60 "$work/$name.log"
      echo "fuzz: $name: crash; input saved as:"
      ls "$work/$name.crash"
      for f in "$work/$name.crash"/*; do base64 -w0 "$f"; echo; done
      found=1
    fi
    echo "fuzz: $name: $(grep -m1 'stat::number_of_executed_units' "$work/$name.log" | awk '{print $2}') executions in ${FUZZ_SECONDS} s"
  } >"$work/$name.out" 2>&1
  return $found
}

# Every target, JOBS at a time (each fuzzer runs on one core); reports are
# printed in the targets' order once all have run.
gate_fuzz() {
  local found=0 work exe name i
  local -a pids=() names=()
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  for exe in build-asan/fuzz/*_fuzz; do
    name=$(basename "$exe" _fuzz)
    while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || true; done
    fuzz_one "$exe" "$name" "$work" &
    pids+=($!)
    names+=("$name")
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || found=1
    cat "$work/${names[$i]}.out"
  done
  return $found
}

gate_tidy() {
  local tidy=run-clang-tidy
  command -v run-clang-tidy-14 >/dev/null && tidy=run-clang-tidy-14
  [[ -f build-asan/compile_commands.json ]] || cmake --preset asan >/dev/null
  local files=()
  for d in "${TIDY_DIRS[@]}"; do
    for f in "$d"/*.cc; do
      [[ " ${TIDY_EXCLUDE[*]} " == *" $f "* ]] || files+=("$PWD/$f")
    done
  done
  # run-clang-tidy takes regexes; anchor each file name.
  local regex=()
  for f in "${files[@]}"; do regex+=("^${f//./\\.}\$"); done
  local out
  out=$(mktemp)
  # Colour codes stripped so findings grep and read cleanly in CI logs.
  "$tidy" -quiet -p build-asan -j "$JOBS" "${regex[@]}" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$out" || true
  if grep -E "(warning|error):" "$out"; then
    echo "tidy: findings above (checks in .clang-tidy)"
    rm -f "$out"
    return 1
  fi
  rm -f "$out"
  echo "tidy: ${#files[@]} files clean"
}

gates=("$@")
((${#gates[@]})) || gates=(format asan fuzz tidy)
for g in "${gates[@]}"; do
  start=$SECONDS
  echo "=== quality: $g"
  "gate_$g"
  echo "=== quality: $g passed in $((SECONDS - start)) s"
done
