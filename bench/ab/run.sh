#!/bin/bash
# bench/ab/run.sh: rounds of two builds' runners, alternating, then the
# report (docs/benchmarks.md, "Comparing two builds", steps 3-4).
#   bench/ab/run.sh OUT A B SUITES ROUNDS
# Runs every OUT/A-* that has an OUT/B-* of the same suffix (build.sh's
# binaries), A before B in odd rounds and B before A in even ones, each as
# `taskset -c $CPUS RUNNER --suite SUITES --no-plots` (CPUS: default 0; 0,1
# places the threads as the runner does by default). Results in
# OUT/runs/BUILD-VARIANT-ROUND (and its .log), replacing an earlier
# OUT/runs; report.py prints the estimators.
# Stops at the first failing run (tools/lib.sh's strictness rule).
set -eu
if [ $# != 5 ]; then
  echo "usage: $0 OUT A B SUITES ROUNDS" >&2
  exit 1
fi
out=$1 a=$2 b=$3 suites=$4 rounds=$5
variants=()
for f in "$out/$a"-*; do
  v=${f#"$out/$a"-}
  [ -x "$f" ] && [ -x "$out/$b-$v" ] && variants+=("$v")
done
[ ${#variants[@]} -gt 0 ] || { echo "$0: no $out/$a-* with a matching $out/$b-*" >&2; exit 1; }
rm -rf "$out/runs"
mkdir -p "$out/runs"
for r in $(seq "$rounds"); do
  for v in "${variants[@]}"; do
    if [ $((r % 2)) = 1 ]; then order=("$a" "$b"); else order=("$b" "$a"); fi
    for build in "${order[@]}"; do
      log=$out/runs/$build-$v-$r.log
      taskset -c "${CPUS:-0}" "$out/$build-$v" --suite "$suites" --no-plots \
        --out "$out/runs/$build-$v-$r" >"$log" 2>&1 || { echo "$0: failed, see $log" >&2; exit 1; }
    done
  done
done
python3 "$(dirname "$0")/report.py" "$out/runs" "$a" "$b" "$rounds" "${variants[@]}"
