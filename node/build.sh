#!/usr/bin/env bash
# Builds the addon with the project's Bazel build and copies it to
# node/build/ptsched.node, where lib/ptsched.js looks for it.
# PTS_DISK_CACHE: Bazel's disk cache (tools/lib.sh).
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh
disk=$(pts_disk_cache)
# Extra Bazel flags may follow (e.g. --config=opt for the benchmark).
bazel build --disk_cache="$disk" "$@" //node:ptsched.node >&2
bin=$(bazel info --disk_cache="$disk" "$@" bazel-bin 2>/dev/null)
mkdir -p node/build
install -m 0755 "$bin/node/libptsched.node.so" node/build/ptsched.node
echo "node/build/ptsched.node" >&2
