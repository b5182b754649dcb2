#!/usr/bin/env bash
# Runs the JS tests with node's built-in runner (TAP on stdout): node/test's
# Node-only cases and the runtime-neutral conformance suite
# (host/conformance/*.test.js, the same files //host:host_test runs inside
# ptsched-host) through its shim, in one `node --test` run. Used by
# `bazel test //node:node_test` (the addon comes from the runfiles), by
# `npm test` and tools/test.sh (node/build/ptsched.node, built first by
# node/build.sh), and in an installed package (build/Release, node-gyp's).
# Outside Bazel's sandbox it installs the devDependencies (TypeScript for
# test/types.test.js) when they are missing, from npm's cache if it can.
set -u
suite=1   # the conformance suite is required (the repository, Bazel)
if [ -n "${TEST_SRCDIR:-}" ]; then
  cd "$TEST_SRCDIR/ptsched/node"   # bazel test: the runfiles tree
else
  cd "$(dirname "$0")/.."
  # An installed package has no host/: it runs node/test's cases only.
  [ -f ../WORKSPACE ] && [ ! -d csrc ] || suite=0
  if [ "$suite" = 1 ]; then
    # The repository: the types check is required, so TypeScript is installed.
    [ -f node_modules/typescript/bin/tsc ] ||
      npm install --prefer-offline --no-audit --no-fund >&2 || exit 1
    export PTSCHED_REQUIRE_TSC=1
  fi
fi
if [ -z "${PTSCHED_NODE_ADDON:-}" ] && [ -f libptsched.node.so ]; then
  export PTSCHED_NODE_ADDON=$PWD/libptsched.node.so
fi
if [ "$suite" = 1 ]; then
  shared=(../host/conformance/*.test.js)
  if [ ! -f ../host/conformance/node-shim.js ] || [ ! -f "${shared[0]}" ]; then
    echo "run.sh: the conformance suite (host/conformance) is missing" >&2
    exit 1
  fi
  exec node --require ../host/conformance/node-shim.js --test --test-reporter=tap \
    test/*.test.js "${shared[@]}"
fi
exec node --test --test-reporter=tap test/*.test.js
