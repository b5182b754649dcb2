#!/bin/bash
# bench/probe/per_task.sh: instructions per task of the scale workload
# (switch_probe.c) under callgrind, as the difference of two runs (300,000
# and 100,000 tasks) over 200,000, so start-up and shut-down cancel out.
#   bazel build --config=opt //bench/probe:all
#   bench/probe/per_task.sh THREADS QUANTUM_NS AGENTS [POLICY]
# Docs: docs/benchmarks.md, "Instructions per task". Needs valgrind.
set -eu
cd "$(dirname "$0")/../.." || exit 1
[ $# -ge 3 ] || { echo "usage: $0 THREADS QUANTUM_NS AGENTS [POLICY]" >&2; exit 1; }
bin=$(bazel info --config=opt bazel-bin 2>/dev/null)/bench/probe
probe=${PROBE:-$bin/switch_probe}
shim=$bin/libslowclock.so
for f in "$probe" "$shim"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "$f: missing (bazel build --config=opt //bench/probe:all)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
refs() {
  LD_PRELOAD=$shim valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1" \
    "$probe" "$2" "$3" "$4" "$1" 0 "${5:-1}" 2>&1 >/dev/null | sed -n 's/.*refs: *//p' | tr -d ,
}
hi=$(refs 300000 "$1" "$2" "$3" "${4:-1}")
lo=$(refs 100000 "$1" "$2" "$3" "${4:-1}")
echo "threads $1, quantum $2 ns, $3 agents, policy ${4:-1}: $(( (hi - lo) / 200000 )) instructions per task"
