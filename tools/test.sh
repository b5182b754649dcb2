#!/usr/bin/env bash
# The whole test suite, three times: plain, --config=asan (ASan + UBSan) and
# --config=tsan. Ends with one line "N passed, N failed" counting individual
# GoogleTest cases over the three runs (read from Bazel's test.xml files) plus
# the Node binding's JS test cases, the runtime-neutral conformance suite of
# host/conformance included (node/test/run.sh, plain build only), and
# exits non-zero if any case failed, any test target failed (e.g. a sanitizer
# report at exit) or anything did not build. Then the install check
# (tools/check_install.sh), each of its checks one more case.
#
# PTS_DISK_CACHE: Bazel's disk cache, shared across clones (default below).
# PTS_CONFIGS: the configs to run (default "plain asan tsan").
set -u
cd "$(dirname "$0")/.." || { echo "0 passed, 1 failed"; exit 1; }
. tools/lib.sh
bash tools/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

disk=$(pts_disk_cache)
configs=${PTS_CONFIGS:-plain asan tsan}
targets=$(bazel query --noshow_progress 'tests(//...) except attr(tags, "manual", tests(//...))' 2>/dev/null)
if [ -z "$targets" ]; then
  echo "tools/test.sh: no test targets found" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

# attr NAME LINE: the value of attribute NAME in an XML start tag (0 if absent).
attr() { printf '%s' "$2" | sed -n "s/.* $1=\"\([0-9]*\)\".*/\1/p" | grep . || echo 0; }

passed=0
failed=0
out=$(mktemp)
for cfg in $configs; do
  flags=(--disk_cache="$disk")
  build=()
  # The plain run builds everything (benchmarks and the demo too); the
  # sanitizer runs build what the tests need.
  [ "$cfg" = plain ] || { flags+=("--config=$cfg"); build=(--build_tests_only); }
  echo "== bazel test ${flags[*]} ${build[*]} //..." >&2
  bazel test "${flags[@]}" "${build[@]}" //... 2>&1 | tee "$out" >&2
  rc=${PIPESTATUS[0]}
  cfg_failed_before=$failed
  logs=$(bazel info "${flags[@]}" bazel-testlogs 2>/dev/null)
  for t in $targets; do
    rel=${t#//}; rel=${rel/://}
    status=$(grep -E "^$t[[:space:]]" "$out" | tail -n 1)
    xml="$logs/$rel/test.xml"
    if [ -z "$status" ] || printf '%s' "$status" | grep -q 'TO BUILD\|NO STATUS' || [ ! -f "$xml" ]; then
      echo "FAILED ($cfg): $t did not build or run" >&2
      failed=$((failed + 1))
      continue
    fi
    head=$(grep -o '<testsuites[^>]*>' "$xml" | head -n 1)
    n=$(attr tests "$head"); f=$(attr failures "$head"); e=$(attr errors "$head")
    d=$(attr disabled "$head"); s=$(attr skipped "$head")
    bad=$((f + e))
    if ! printf '%s' "$status" | grep -q PASSED; then
      echo "FAILED ($cfg): $t" >&2
      # Every case passed but the target failed (a sanitizer report or a leak
      # at exit): that is one more failure.
      [ "$bad" -eq 0 ] && bad=1
    fi
    passed=$((passed + n - f - e - d - s))
    failed=$((failed + bad))
  done
  # Bazel failed but no test case did: something else did not build.
  if [ "$rc" -ne 0 ] && [ "$failed" -eq "$cfg_failed_before" ]; then
    echo "FAILED ($cfg): bazel exited $rc (a target did not build)" >&2
    failed=$((failed + 1))
  fi
done
rm -f "$out"

# The install check (tools/check_install.sh, docs/install.md): install into a
# temporary prefix, build and run the examples with pkg-config only, compare
# the exported symbols with the headers, Doxygen with no warning. Each of its
# PASS/FAIL lines counts as one case; a crash with no FAIL line counts as one.
echo "== bash tools/check_install.sh" >&2
inst=$(bash tools/check_install.sh 2>&1)
inst_rc=$?
printf '%s\n' "$inst" >&2
inst_pass=$(printf '%s\n' "$inst" | grep -c '^PASS ')
inst_fail=$(printf '%s\n' "$inst" | grep -c '^FAIL ')
[ "$inst_rc" -ne 0 ] && [ "$inst_fail" -eq 0 ] && inst_fail=1
passed=$((passed + inst_pass))
failed=$((failed + inst_fail))

# ---- The Node.js binding (node/, docs/node.md): build the addon (plain
# config) and run its JS tests with node's runner; TAP's "# pass"/"# fail"
# counts join the totals. PTS_NODE=0 skips this part.
# tap_count NAME CMD...: runs a `node --test` command and adds its TAP
# "# pass"/"# fail"/"# cancelled" counts to the totals; a non-zero exit with
# no failing case is one more failure.
tap_count() {
  local name=$1; shift
  local tap np nf nc nrc
  tap=$(mktemp)
  "$@" >"$tap" 2>&1
  nrc=$?
  awk '/^not ok/{p=1} p{print} /^  \.\.\.$/{p=0} /^# (tests|pass|fail|cancelled)/' "$tap" >&2
  np=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap" | tail -n 1)
  nf=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap" | tail -n 1)
  nc=$(sed -n 's/^# cancelled \([0-9]*\)$/\1/p' "$tap" | tail -n 1)
  passed=$((passed + ${np:-0}))
  failed=$((failed + ${nf:-0} + ${nc:-0}))
  if [ "$nrc" -ne 0 ] && [ "${nf:-0}" -eq 0 ] && [ "${nc:-0}" -eq 0 ]; then
    echo "FAILED ($name): node --test exited $nrc" >&2
    tail -n 20 "$tap" >&2
    failed=$((failed + 1))
  fi
  rm -f "$tap"
}

if [ "${PTS_NODE:-1}" != 0 ]; then
  echo "== node --test (node/test/run.sh)" >&2
  if ! bash node/build.sh >&2; then
    echo "FAILED (node): the addon did not build" >&2
    failed=$((failed + 1))
  else
    # node/test and the runtime-neutral conformance suite (docs/host.md),
    # the same files //host:host_test runs inside ptsched-host.
    tap_count node bash node/test/run.sh
  fi
  # The npm package (tools/check_npm.sh): pack, install offline without
  # Bazel, require/import, the package's tests there; PASS/FAIL lines count.
  npm_out=$(bash tools/check_npm.sh 2>&1); npm_rc=$?
  printf '%s\n' "$npm_out" >&2
  passed=$((passed + $(printf '%s\n' "$npm_out" | grep -c '^PASS ')))
  npm_fail=$(printf '%s\n' "$npm_out" | grep -c '^FAIL ')
  [ "$npm_rc" -ne 0 ] && [ "$npm_fail" -eq 0 ] && npm_fail=1
  failed=$((failed + npm_fail))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
