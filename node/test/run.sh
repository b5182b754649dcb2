#!/usr/bin/env bash
# Runs the JS tests with node's built-in runner (TAP on stdout). Used by
# `bazel test //node:node_test` (the addon comes from the runfiles) and by
# `npm test` / tools/test.sh (the addon from node/build/ptsched.node).
set -u
if [ -n "${TEST_SRCDIR:-}" ]; then
  cd "$TEST_SRCDIR/ptsched/node"   # bazel test: the runfiles tree
else
  cd "$(dirname "$0")/.."
fi
if [ -z "${PTSCHED_NODE_ADDON:-}" ] && [ -f libptsched.node.so ]; then
  export PTSCHED_NODE_ADDON=$PWD/libptsched.node.so
fi
exec node --test --test-reporter=tap test/*.test.js
