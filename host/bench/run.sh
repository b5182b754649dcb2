#!/usr/bin/env bash
# host/bench/run.sh BIN [TENANTS...]: wall time of ptsched-host running
# TENANTS copies of tasks.js (default 1 8 64) on 1 and 2 threads, and the
# mean of the tenants' start-delay p99 (--json). Figures in docs/host.md.
set -eu
bin=$1; shift
counts=${*:-1 8 64}
dir=$(cd "$(dirname "$0")" && pwd)
for n in $counts; do
  files=()
  for ((i = 0; i < n; i++)); do files+=("$dir/tasks.js"); done
  for th in 1 2; do
    t0=$(date +%s%N)
    out=$("$bin" --threads "$th" --json "${files[@]}")
    t1=$(date +%s%N)
    p99=$(printf '%s' "$out" | grep -o '"delay_p99_ns":[0-9]*' | cut -d: -f2 |
      awk '{s += $1} END {printf "%.0f", s / NR / 1000}')
    echo "tenants=$n threads=$th wall_ms=$(((t1 - t0) / 1000000)) mean_delay_p99_us=$p99"
  done
done
