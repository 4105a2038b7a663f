#!/usr/bin/env bash
# A long libFuzzer campaign on one target (docs/QUALITY.md, "Long campaigns"):
#   bash scripts/fuzz-campaign.sh <target> <runs> [corpus-dir]
# 1. builds <target>_fuzz with the fuzz preset (clang -O2, UBSan + libFuzzer,
#    no ASan: 2-3x the executions per second of the asan build),
# 2. fuzzes for <runs> executions on corpus-dir (default out/fuzz/<target>,
#    created from fuzz/corpus/<target> when missing; it grows run to run),
# 3. replays every input of the grown corpus under the asan preset's build of
#    the same target, so that what the fast build found is also checked by
#    AddressSanitizer.
# Exit status: non-zero if either step finds a crash; crash inputs are saved
# in <corpus-dir>.crash/. The executions count is printed at the end.
# Environment: FUZZ_TIMEOUT (seconds per input, default 300), FUZZ_JOBS
# (parallel fuzzing processes on the one corpus, default 1; the count printed
# is their sum).
set -euo pipefail
cd "$(dirname "$0")/.."

if (($# < 2)); then
  echo "usage: $0 <target> <runs> [corpus-dir]" >&2
  echo "targets: $(cd fuzz && ls -- *_fuzz.cc | sed 's/_fuzz.cc//' | tr '\n' ' ')" >&2
  exit 2
fi
target=$1
runs=$2
corpus=${3:-out/fuzz/$target}
[[ -f fuzz/${target}_fuzz.cc ]] || { echo "$0: unknown target '$target' (no fuzz/${target}_fuzz.cc)" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "$0: runs must be a positive integer, got '$runs'" >&2; exit 2; }
timeout=${FUZZ_TIMEOUT:-300}
jobs=${FUZZ_JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "$0: FUZZ_JOBS must be a positive integer, got '$jobs'" >&2; exit 2; }
JOBS=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

cmake --preset fuzz >/dev/null
CMAKE_BUILD_PARALLEL_LEVEL=$JOBS cmake --build --preset fuzz --target "${target}_fuzz"
cmake --preset asan >/dev/null
CMAKE_BUILD_PARALLEL_LEVEL=$JOBS cmake --build --preset asan --target "${target}_fuzz"

if [[ ! -d $corpus ]]; then
  mkdir -p "$corpus"
  cp fuzz/corpus/"$target"/* "$corpus"/
fi
crash=$corpus.crash
mkdir -p "$crash"
extra=()
# ASTRA-sim network files are a few hundred bytes; longer inputs only slow
# the target down (docs/results/fuzzing.md).
[[ $target == topology_astra ]] && extra+=(-max_len=1024)
# MSCCL files run to 300 KB; mutating those whole only slows the target
# (the small seeds keep every element and step type).
[[ $target == msccl_xml ]] && extra+=(-max_len=16384)
# ASan's allocator returning memory to the OS cost 60% of the CPU on the
# schedule target (docs/results/fuzzing.md); these two options remove that.
export ASAN_OPTIONS=max_malloc_fill_size=0:allocator_release_to_os_interval_ms=-1

log=$corpus.log
echo "fuzz-campaign: $target, $runs executions x $jobs, corpus $corpus, logs $log.*"
rc=0
pids=()
for ((j = 0; j < jobs; ++j)); do
  build-fuzz/fuzz/"${target}"_fuzz -runs="$runs" -timeout="$timeout" -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$crash"/ "${extra[@]}" "$corpus" >"$log.$j" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
total=0
for ((j = 0; j < jobs; ++j)); do
  n=$(awk '/stat::number_of_executed_units/ {print $2}' "$log.$j")
  total=$((total + ${n:-0}))
done
((rc == 0)) || echo "fuzz-campaign: $target: the fuzz build stopped on a crash; see $log.* and $crash/" >&2

echo "fuzz-campaign: replaying $(find "$corpus" -type f | wc -l) corpus inputs under ASan"
if ! build-asan/fuzz/"${target}"_fuzz -runs=0 -timeout="$timeout" -rss_limit_mb=4096 \
  -artifact_prefix="$crash"/ "$corpus" >"$log.asan" 2>&1; then
  echo "fuzz-campaign: $target: an input of $corpus fails under ASan; see $log.asan" >&2
  rc=1
fi
replayed=$(grep -m1 -o 'Done [0-9]* runs' "$log.asan" || echo "no 'Done' line")
echo "fuzz-campaign: $target: $total executions; ASan replay: $replayed"
exit $rc
