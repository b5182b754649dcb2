#!/bin/bash
# bench/probe/post_probe.sh: instructions per post of the crossthread
# suite's streams (post_probe.c), producer and consumer apart, under
# callgrind: the difference of two runs (300,000 and 100,000 tasks) over
# 200,000, so start-up, shut-down and the threads' parking cancel out.
#   bazel build --config=opt //bench/probe:all
#   bench/probe/post_probe.sh [MODE...]      (default: all seven)
# PROBE=path runs another build's post_probe (the A/B of two builds,
# docs/benchmarks.md, "Comparing two builds"). One line per mode: thread 1
# is the producer, the others in the order they started (the consumer is
# the one with the most). Needs valgrind.
set -eu
cd "$(dirname "$0")/../.." || exit 1
bin=$(bazel info --config=opt bazel-bin 2>/dev/null)/bench/probe
probe=${PROBE:-$bin/post_probe}
shim=$bin/libslowclock.so
for f in "$probe" "$shim"; do
  [ -f "$f" ] || { echo "$f: missing (bazel build --config=opt //bench/probe:all)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Per thread, in thread order: the instructions of run $1 (mode $2, $3 tasks).
refs() {
  LD_PRELOAD=$shim valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$out/cg.$2.$1" "$probe" "$2" "$3" >/dev/null 2>&1 ||
    { echo "$probe $2 $3 failed under valgrind" >&2; exit 1; }
  for f in "$out"/cg."$2.$1"-*; do sed -n 's/^totals: *//p' "$f"; done
}
modes=${*:-loop agent limited own chain promise mixed}
for m in $modes; do
  hi=($(refs hi "$m" 300000))
  lo=($(refs lo "$m" 100000))
  [ ${#hi[@]} = ${#lo[@]} ] || { echo "$m: the two runs had different threads" >&2; exit 1; }
  line="$m:"
  for i in "${!hi[@]}"; do
    line="$line thread $((i + 1)) $(( (hi[i] - lo[i]) / 200000 ))"
  done
  echo "$line instructions per task"
done
