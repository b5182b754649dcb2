# tools/lib.sh: what the project's scripts share (issue 34). Source it after
# `cd` to the repository's top: `. tools/lib.sh`.
#
# The strictness rule: a script that builds, installs or runs one job stops at
# the first failing command (`set -eu`: main.sh, setup.sh, install.sh,
# deb.sh, docs.sh, node/build.sh, bench/ab/*.sh); a script that counts
# failures runs every check and exits non-zero at the end when any failed
# (`set -u`, each command's status tested: test.sh, check_install.sh,
# check_npm.sh, fuzz.sh, node/test/run.sh, .ci/run).

# pts_ver NAME: PTS_VERSION_NAME (MAJOR, MINOR, PATCH) from version.h.
pts_ver() { sed -n "s/^#define PTS_VERSION_$1 \([0-9]*\)$/\1/p" include/ptsched/version.h; }

# pts_disk_cache: Bazel's disk cache, shared by every clone of the repository
# so that unchanged actions are reused (PTS_DISK_CACHE overrides); created.
pts_disk_cache() {
  local d=${PTS_DISK_CACHE:-$HOME/.cache/ptsched/bazel-disk}
  mkdir -p "$d" && printf '%s\n' "$d"
}
