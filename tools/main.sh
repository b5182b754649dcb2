#!/usr/bin/env bash
# The main job: installs what it needs, builds the benchmark runner optimised
# and runs it (every suite, about a minute; arguments go to the runner, e.g.
# --suite throughput --runs 5 --out DIR --quick). The report folder it prints
# holds results.json, results.csv, report.md and the plots.
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh
bash tools/setup.sh
disk=$(pts_disk_cache)
bazel run --noshow_progress --config=opt --disk_cache="$disk" \
  //bench/runner:ptsched-bench -- "$@"
