#!/bin/bash
# bench/ab/build.sh: one build's runner, four times over, for an A/B of two
# builds (docs/benchmarks.md, "Comparing two builds", step 2).
#   bench/ab/build.sh NAME WORKTREE OUT offsets|shuffle
# WORKTREE is a checkout of the build, with the runner source both builds
# share (step 1). Writes four binaries to OUT:
#   offsets  NAME-o0, -o16, -o32, -o48: RB_LAYOUT_PAD = 0, 16, 32, 48, which
#            puts the library at each 16-byte place of a 64-byte line;
#   shuffle  NAME-s1 ... NAME-s4: linked by gold with its functions in four
#            random orders (seeds 1-4; NAME.sections lists them).
# Stops at the first failure (tools/lib.sh's strictness rule).
set -eu
if [ $# != 4 ] || { [ "$4" != offsets ] && [ "$4" != shuffle ]; }; then
  echo "usage: $0 NAME WORKTREE OUT offsets|shuffle" >&2
  exit 1
fi
name=$1 mode=$4
wt=$(cd "$2" && pwd)
mkdir -p "$3"
out=$(cd "$3" && pwd)
cd "$(dirname "$0")/../.." || exit 1
. tools/lib.sh
flags=(-c opt --config=opt "--disk_cache=$(pts_disk_cache)")
cd "$wt" || exit 1
target=//bench/runner:ptsched-bench
runner() { printf '%s/bench/runner/ptsched-bench\n' "$(bazel info "${flags[@]}" bazel-bin 2>/dev/null)"; }
if [ "$mode" = offsets ]; then
  for pad in 0 16 32 48; do
    bazel build "${flags[@]}" "--per_file_copt=bench/runner/main.c@-DRB_LAYOUT_PAD=$pad" "$target"
    cp -f "$(runner)" "$out/$name-o$pad"
  done
else
  flags+=(--linkopt=-fuse-ld=gold --linkopt=-ffunction-sections)
  bazel build "${flags[@]}" "--linkopt=-Wl,-Map=$out/$name.map" "$target"
  grep -o '^ \.text\.[^ ]*' "$out/$name.map" | sed 's/^ //' | sort -u >"$out/$name.sections"
  for seed in 1 2 3 4; do
    python3 - "$out/$name.sections" "$seed" >"$out/$name.order-$seed" <<'PY'
import random, sys
names = open(sys.argv[1]).read().split()
random.Random(int(sys.argv[2])).shuffle(names)
print("\n".join(names))
PY
    bazel build "${flags[@]}" "--linkopt=-Wl,--section-ordering-file=$out/$name.order-$seed" "$target"
    cp -f "$(runner)" "$out/$name-s$seed"
  done
fi
bazel shutdown
