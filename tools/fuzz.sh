#!/usr/bin/env bash
# Long reliability campaigns (docs/reliability.md).
#
#   bash tools/fuzz.sh --ops N          differential fuzz: N operations against
#                                       the reference model (tests/model/)
#   bash tools/fuzz.sh --chaos N        concurrent chaos: N cross-thread
#                                       operations on a pool (tests/chaos/)
#   --seed S      first seed of the fuzz (default 1)
#   --config C    Bazel config: opt (default), asan or tsan
#   --libfuzzer T run the libFuzzer target for T seconds (clang,
#                 -fsanitize=fuzzer; needs libclang-rt-14-dev)
#
# Options combine (--ops and --chaos both run). Prints each test's summary
# line; exits non-zero on any divergence, accounting failure or sanitizer
# report. The CI sizes run from tools/test.sh; this is the long version.
set -u
cd "$(dirname "$0")/.." || exit 1
. tools/lib.sh
ops=0 chaos=0 seed=1 config=opt lf=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ops) ops=$2; shift 2 ;;
    --chaos) chaos=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --libfuzzer) lf=$2; shift 2 ;;
    *) echo "tools/fuzz.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ "$ops" = 0 ] && [ "$chaos" = 0 ] && [ "$lf" = 0 ]; then
  echo "usage: bash tools/fuzz.sh --ops N [--chaos N] [--seed S] [--config opt|asan|tsan] [--libfuzzer SECONDS]" >&2
  exit 2
fi
disk=$(pts_disk_cache)
flags=(--disk_cache="$disk" --noshow_progress "--config=$config")
rc=0
if [ "$ops" != 0 ] || [ "$chaos" != 0 ]; then
  bazel build "${flags[@]}" //tests/model:fuzz_test //tests/chaos:chaos_test || exit 1
  bin=$(bazel info "${flags[@]}" bazel-bin 2>/dev/null)
fi
if [ "$ops" != 0 ]; then
  PTS_FUZZ_OPS=$ops PTS_FUZZ_SEED=$seed \
    "$bin/tests/model/fuzz_test" --gtest_filter='Fuzz.*' || rc=1
fi
if [ "$chaos" != 0 ]; then
  PTS_CHAOS_OPS=$chaos "$bin/tests/chaos/chaos_test" || rc=1
fi
if [ "$lf" != 0 ]; then
  # clang with coverage instrumentation everywhere and ASan, in an output
  # base of its own (changing the C compiler would reconfigure the main one).
  lfbase=${PTS_LIBFUZZER_BASE:-$HOME/.cache/ptsched/libfuzzer-base}
  lflags=(--noshow_progress --action_env=CC=clang --action_env=CXX=clang++
    --define=ptsched_allocator=system
    --copt=-fsanitize=fuzzer-no-link,address --linkopt=-fsanitize=address
    --copt=-Wno-unused-command-line-argument --copt=-O1)
  bazel --output_base="$lfbase" build "${lflags[@]}" //tests/model:fuzz_libfuzzer || exit 1
  bin=$(bazel --output_base="$lfbase" info "${lflags[@]}" bazel-bin 2>/dev/null)
  corpus=$(mktemp -d)
  "$bin/tests/model/fuzz_libfuzzer" -max_total_time="$lf" -max_len=2048 "$corpus" || rc=1
  rm -rf "$corpus"
  bazel --output_base="$lfbase" shutdown
fi
exit $rc
