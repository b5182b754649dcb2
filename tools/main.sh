#!/usr/bin/env bash
# The main job: installs what it needs, then builds optimised and runs the
# demo of the library (until the benchmark runner of issue 7 exists), which
# prints what it did. Arguments are passed to the program.
set -eu
cd "$(dirname "$0")/.."
bash tools/setup.sh
disk=${PTS_DISK_CACHE:-$HOME/.cache/ptsched/bazel-disk}
mkdir -p "$disk"
bazel run --noshow_progress --config=opt --disk_cache="$disk" //bench:demo -- "$@"
