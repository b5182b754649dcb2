#!/usr/bin/env bash
# The npm package check (docs/node.md, "Installing"): `npm pack` in node/,
# then `npm install` of the tarball in an empty folder with Bazel off the
# PATH and npm offline (the tarball has no dependencies), which builds the
# addon with node-gyp from the tarball's own sources and Node's installed
# headers; then require(), import and the package's own tests there. One
# PASS or FAIL line per check (tools/test.sh counts them).
set -u
cd "$(dirname "$0")/../node"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; }

# A PATH without bazel: each PATH folder that has a bazel is replaced by a
# folder of links to everything else in it (node and npm share /usr/bin with
# Debian's bazel).
path=""
i=0
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -d "$d" ] || continue
  if [ -e "$d/bazel" ]; then
    i=$((i + 1))
    mkdir -p "$tmp/path$i"
    for f in "$d"/*; do
      case ${f##*/} in bazel*) ;; *) ln -s "$f" "$tmp/path$i/" ;; esac
    done
    d=$tmp/path$i
  fi
  path=${path:+$path:}$d
done

if tgz=$(npm pack --silent --pack-destination "$tmp" 2>"$tmp/pack.log") && [ -f "$tmp/$tgz" ]; then
  pass "npm pack: $tgz"
else
  fail "npm pack"; cat "$tmp/pack.log"; exit 1
fi
list=$(tar -tzf "$tmp/$tgz")
missing=""
for f in binding.gyp index.d.ts src/binding.c src/engine.cc csrc/include/ptsched.h \
         csrc/sched/scheduler.c csrc/loop/loop.c csrc/sync/mpsc.c scripts/install.js; do
  printf '%s\n' "$list" | grep -qx "package/$f" || missing="$missing $f"
done
if printf '%s\n' "$list" | grep -q '\.node$'; then missing="$missing (a prebuilt .node is shipped)"; fi
PATH=$path command -v bazel >/dev/null && fail "bazel is still on the test PATH"
[ -z "$missing" ] && pass "tarball has the C sources, binding.gyp and types, no prebuilt addon" ||
  fail "tarball contents:$missing"
[ ! -d csrc ] && pass "postpack removed node/csrc" || fail "node/csrc left behind"

app=$tmp/app
mkdir -p "$app"
printf '{"name":"app","version":"1.0.0","private":true}\n' >"$app/package.json"
if (cd "$app" && env PATH="$path" npm install --offline --no-audit --no-fund "$tmp/$tgz") >"$tmp/install.log" 2>&1 &&
   [ -f "$app/node_modules/ptsched/build/Release/ptsched.node" ]; then
  pass "npm install of the tarball (no Bazel on PATH, offline) built build/Release/ptsched.node"
else
  fail "npm install of the tarball"; tail -n 30 "$tmp/install.log"; exit 1
fi
out=$(cd "$app" && env PATH="$path" node -e "
  const api = require('ptsched');
  scheduler.postTask(() => 'ran', { priority: 'user-blocking' }).then((v) => console.log(v, api.scheduler === scheduler));" 2>&1)
[ "$out" = "ran true" ] && pass "require('ptsched')" || fail "require('ptsched'): $out"
out=$(cd "$app" && env PATH="$path" node --input-type=module -e "
  import { scheduler, TaskController } from 'ptsched';
  const tc = new TaskController();
  console.log(await scheduler.postTask(() => 'ran', { signal: tc.signal }), tc.signal.priority);" 2>&1)
[ "$out" = "ran user-visible" ] && pass "import from 'ptsched'" || fail "import from 'ptsched': $out"
tap=$(cd "$app/node_modules/ptsched" && env PATH="$path" node --test --test-reporter=tap test/*.test.js 2>&1)
np=$(printf '%s\n' "$tap" | sed -n 's/^# pass \([0-9]*\)$/\1/p' | tail -n 1)
nf=$(printf '%s\n' "$tap" | sed -n 's/^# fail \([0-9]*\)$/\1/p' | tail -n 1)
if [ "${nf:-1}" = 0 ] && [ "${np:-0}" -gt 0 ]; then
  pass "the package's own tests in the installed copy ($np passed)"
else
  fail "the package's own tests in the installed copy (${np:-0} passed, ${nf:-?} failed)"
  printf '%s\n' "$tap" | grep -A 12 '^not ok' | head -n 60
fi
