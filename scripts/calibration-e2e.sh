#!/usr/bin/env bash
# The measure -> calibrate -> simulate -> compare -> report pipeline of
# docs/REPORTS.md ("End to end") on this host, at full scale:
#
#   mpirun -np NP BIND collkit bench --backend mpi --collective C ... --json m-C.json  (x REPEATS)
#   collkit calibrate m-*.json --topology BASE --huber 0.1 --repeats fastest -o fit.json  (PICK)
#   collkit simulate --topology fit.json --collective C ... --segments-as m-C.json --json s-C.json
#   collkit compare s-C.json m-C.json m-C.2.json ... --repeats fastest --min-bytes 64K --json cmp-C.json
#   collkit report s-*.json m-C.json ... -o report.html
#
# Environment (defaults in brackets):
#   OUT [out/calibration-e2e], NP [4], BASE [topologies/bases/host-pinned-4.json
#     for 4 ranks on a host of 2 CPUs, the layout BIND gives there; else
#     topologies/bases/host-bus-NP.json, which exists for NP 2 and 4],
#   COLLECTIVES [all_reduce all_gather reduce_scatter broadcast reduce all_to_all],
#   MINBYTES [4K], MAXBYTES [16M], FACTOR [2], ITERS [50], WARMUP [5],
#   REPEATS [5]: runs of every bench (five short runs rather than three long
#     ones: each is a fresh draw of the machine's state for PICK fastest),
#   PICK [fastest]: which repeat of a row calibrate fits and compare
#     compares: fastest (the least time of each row: the machine at its best,
#     where what varies between repeats only slows a run down; docs/results/calibration.md,
#     issue 22: on the development VM a row's time is bimodal, up to 4x apart)
#     or median (calibrate fits every repeat, compare takes each row's median),
#   COMPARE_MIN [64K], HUBER [0.1] (calibrate --huber), FIT_ITERATIONS [100]
#     (calibrate --max-iterations), FIT_MIN [0] (calibrate
#     --min-bytes), COLLKIT [build/cli/collkit],
#   BIND [--bind-to core:overload-allowed --map-by core]: where mpirun puts
#     the ranks. Pinned round-robin (rank r on core r mod cores), every run
#     places them alike; with `--bind-to none` the kernel's placement
#     changes between runs and so do the times (docs/results/calibration.md: one rank
#     pair sharing a core or not moved broadcast rows 1.5-3x between repeats).
#   MEASURE [1]: 0 keeps the m-*.json already in OUT and only re-fits,
#     re-simulates and re-compares (to try another base or FIT_MIN).
#   PROBE [build/bench/host_cma_bench; empty: none]: before and after every
#     measure, reads 1 MiB across the two CPUs as Open MPI does
#     (process_vm_readv), written just before and clean, and logs the ratio
#     of the two rates to OUT/probe.txt. On the development VM it flips
#     between about 1.0 and 0.5 in spells of seconds to minutes
#     (docs/results/calibration.md, issue 22: where the hypervisor puts the two vCPUs),
#     and every row measured in one spell or the other moves with it; the
#     summary says how many measures ran in one spell and how many in both.
# Needs a build with MPI (scripts/main.sh or test.sh) unless MEASURE=0.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${OUT:-out/calibration-e2e}
np=${NP:-4}
if [ -n "${BASE:-}" ]; then
  base=$BASE
elif [ "$np" = 4 ] && [ "$(nproc)" = 2 ]; then
  base=topologies/bases/host-pinned-4.json
else
  base=topologies/bases/host-bus-$np.json
fi
if [ ! -f "$base" ]; then
  echo "calibration-e2e.sh: BASE: no file $base (set BASE to a base for $np ranks)" >&2
  exit 2
fi
collectives=${COLLECTIVES:-all_reduce all_gather reduce_scatter broadcast reduce all_to_all}
sizes=(-b "${MINBYTES:-4K}" -e "${MAXBYTES:-16M}" -f "${FACTOR:-2}")
collkit=${COLLKIT:-build/cli/collkit}
compare_min=${COMPARE_MIN:-64K}
bind=${BIND:---bind-to core:overload-allowed --map-by core}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
measure=${MEASURE:-1}
[ "$measure" = 1 ] && rm -f "$out"/m-*.json "$out"/bench-*.txt "$out"/probe.txt
rm -f "$out"/s-*.json "$out"/cmp-*.json "$out"/fit.json "$out"/report.html

# Repeat k of collective C is m-C.json (k = 1) or m-C.k.json. The repeats
# run one after another over all collectives, so a slow spell of the machine
# lands in one repeat of several collectives rather than in every repeat of
# one; compare then takes each row's fastest (PICK) over the repeats.
repeats=${REPEATS:-5}
pick=${PICK:-fastest}
case "$pick" in
  fastest) fit_repeats=fastest ;;
  median) fit_repeats=all ;;
  *) echo "calibration-e2e.sh: PICK: '$pick' (expected fastest or median)" >&2; exit 2 ;;
esac
probe_bin=${PROBE-build/bench/host_cma_bench}
# One line: written/clean rate ratio, both rates, the CPUs' round trip.
probe() {
  [ -n "$probe_bin" ] && [ -x "$probe_bin" ] || return 0
  "$probe_bin" --benchmark_filter='BM_CmaRead/[01]/1048576/' --benchmark_repetitions=5 \
    --benchmark_min_time=0.05 --benchmark_report_aggregates_only=true --benchmark_format=csv \
    2>/dev/null | awk -F, -v what="$1" '
      /_median/ { gsub(/"/, ""); rate[$8] = $6; trip[$8] = $11 }
      END { if (rate["clean"] > 0 && rate["stores"] > 0)
              printf "%s %.2f written %.1f clean %.1f GB/s round_trip %.0f ns\n", what,
                rate["stores"] / rate["clean"], rate["stores"] / 1e9, rate["clean"] / 1e9, trip["stores"] }'
}
repeat_file() { if [ "$2" = 1 ]; then echo "$out/m-$1.json"; else echo "$out/m-$1.$2.json"; fi; }
if [ "$measure" = 1 ]; then
  for k in $(seq 1 "$repeats"); do
    for c in $collectives; do
      echo "== measure $c on $np ranks (repeat $k of $repeats)"
      probe "$c.$k" | tee -a "$out/probe.txt"
      # shellcheck disable=SC2086 # BIND is a list of mpirun options
      mpirun --oversubscribe $bind -np "$np" "$collkit" bench --backend mpi \
        --collective "$c" "${sizes[@]}" -n "${ITERS:-50}" -w "${WARMUP:-5}" \
        --json "$(repeat_file "$c" "$k")" >"$out/bench-$c.$k.txt"
      probe "$c.$k.after" | tee -a "$out/probe.txt"
    done
  done
fi
measured=()
declare -A repeats_of
for c in $collectives; do
  [ -f "$out/m-$c.json" ] || { echo "$out/m-$c.json is missing" >&2; exit 1; }
  files=("$out/m-$c.json")
  for k in $(seq 2 99); do [ -f "$out/m-$c.$k.json" ] && files+=("$out/m-$c.$k.json"); done
  measured+=("${files[@]}")
  repeats_of[$c]="${files[*]}"
done

echo "== calibrate ${measured[*]} on $base"
"$collkit" calibrate "${measured[@]}" --topology "$base" --min-bytes "${FIT_MIN:-0}" --huber "${HUBER:-0.1}" \
  --max-iterations "${FIT_ITERATIONS:-100}" --repeats "$fit_repeats" \
  -o "$out/fit.json" | tee "$out/calibrate.txt" |
  grep -E '^(#|class|endpoint)'

reports=()
for c in $collectives; do
  "$collkit" simulate --topology "$out/fit.json" --collective "$c" "${sizes[@]}" --segments-as "$out/m-$c.json" \
    --json "$out/s-$c.json" >"$out/simulate-$c.txt"
  echo "== compare $c (sizes >= $compare_min)"
  # shellcheck disable=SC2086 # the repeats' paths have no spaces
  "$collkit" compare "$out/s-$c.json" ${repeats_of[$c]} --repeats "$pick" --min-bytes "$compare_min" \
    --json "$out/cmp-$c.json" >"$out/compare-$c.txt"
  # awk, not grep | head: under pipefail head's early exit could fail the loop.
  awk '/^#/ && n++ < 3' "$out/compare-$c.txt"
  reports+=("$out/s-$c.json" "$out/m-$c.json")
done

# One figure over every collective: the median and p90 of |error| of all
# matched rows together (compare's own quantile convention).
python3 - "$out" "$pick" $collectives <<'EOF' || echo "(python3 missing: per-collective summaries above)"
import json, sys
out, pick, colls = sys.argv[1], sys.argv[2], sys.argv[3:]
errs = []
for c in colls:
    for r in json.load(open(f"{out}/cmp-{c}.json"))["rows"]:
        if r["rel_error"] is not None:
            errs.append(abs(r["rel_error"]))
def q(v, p):
    v = sorted(v)
    pos = p * (len(v) - 1); lo = int(pos); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (pos - lo) * (v[hi] - v[lo])
print(f"== all collectives: {len(errs)} rows ({pick} repeat of each), |error| median "
      f"{100*q(errs, 0.5):.1f}%, p90 {100*q(errs, 0.9):.1f}%")
# The spread of the measurements themselves: |t_i - t_j| / min(t_i, t_j)
# over every pair of repeats of every compared row (not native), the floor
# no model of one run can beat (docs/results/calibration.md, issue 22).
import glob, itertools
spread = []
for c in colls:
    keys = {(r["algorithm"], r["bytes"], r["in_place"])
            for r in json.load(open(f"{out}/cmp-{c}.json"))["rows"] if r["algorithm"] != "native"}
    times = {}
    for f in [f"{out}/m-{c}.json"] + sorted(glob.glob(f"{out}/m-{c}.[0-9]*.json")):
        for r in json.load(open(f))["results"]:
            k = (r["algorithm"], r["bytes"], r["in_place"])
            if k in keys and r["time_us"] > 0:
                times.setdefault(k, []).append(r["time_us"])
    for v in times.values():
        spread += [abs(a - b) / min(a, b) for a, b in itertools.combinations(v, 2)]
if spread:
    print(f"== repeats: {len(spread)} pairs, spread median {100*q(spread, 0.5):.1f}%, "
          f"p90 {100*q(spread, 0.9):.1f}% (the floor no model of one run beats)")
# The probes taken before each measure (PROBE): how much of the run the two
# CPUs spent apart (written data read across them at < 0.8 of clean data's rate).
try:
    ratios = [float(line.split()[1]) for line in open(f"{out}/probe.txt") if line.strip()]
except OSError:
    ratios = []
if ratios:
    apart = sum(r < 0.8 for r in ratios)
    print(f"== probes: {len(ratios)}, written/clean read rate median {q(ratios, 0.5):.2f} "
          f"({min(ratios):.2f}-{max(ratios):.2f}); {apart} of {len(ratios)} below 0.8 "
          f"(the CPUs apart: data one wrote crosses between their caches)")
    # Each measure between its two probes (name, then name.after): the
    # spell it started and ended in.
    spells = {}
    for line in open(f"{out}/probe.txt"):
        f = line.split()
        if len(f) > 1:
            name = f[0][:-len(".after")] if f[0].endswith(".after") else f[0]
            spells.setdefault(name, []).append("apart" if float(f[1]) < 0.8 else "together")
    pairs = [v for v in spells.values() if len(v) == 2]
    if pairs:
        n = {s: sum(v == [s, s] for v in pairs) for s in ("apart", "together")}
        print(f"== measures: {len(pairs)}; apart before and after {n['apart']}, together "
              f"before and after {n['together']}, in both spells "
              f"{len(pairs) - n['apart'] - n['together']}")
EOF

"$collkit" report "${reports[@]}" -o "$out/report.html"
echo "== wrote $out/report.html"
