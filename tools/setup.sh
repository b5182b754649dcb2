#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the benchmarks need.
# Idempotent and quiet: it asks dpkg what is missing and runs apt-get (update,
# then install) only when something is. Needs root (or sudo) on Debian 12.
set -eu

packages=(
  build-essential        # gcc/g++ with the ASan, UBSan and TSan runtimes
  bazel-bootstrap        # Bazel 4.2.3, offline
  bazel-rules-java       # rules_java for the offline WORKSPACE
  libck-dev              # concurrencykit
  libjemalloc-dev        # the allocator
  googletest libgtest-dev
  libbenchmark-dev       # Google Benchmark
  libevent-dev libuv1-dev  # peers measured by the benchmark runner
  golang-go              # Go's scheduler, the runner's peer for scale and latency
  gnuplot-nox            # plots of the benchmark reports
  doxygen pkg-config     # the API reference; the install check's consumers
  libmozjs-102-dev       # SpiderMonkey 102: the JavaScript host (host/, docs/host.md)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
