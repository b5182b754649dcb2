#!/usr/bin/env bash
# Builds a Debian package of the installed library (docs/install.md): the
# files of tools/install.sh under prefix /usr, staged with DESTDIR and packed
# with dpkg-deb. Usage: bash tools/deb.sh [OUTDIR] (default out/deb); prints
# the .deb's path.
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh
outdir=${1:-out/deb}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
version=$(pts_ver MAJOR).$(pts_ver MINOR).$(pts_ver PATCH)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
DESTDIR=$stage/root bash tools/install.sh /usr >&2
mkdir -p "$stage/root/DEBIAN"
cat >"$stage/root/DEBIAN/control" <<CTL
Package: libptsched-dev
Version: $version
Architecture: $arch
Maintainer: ptsched developers <ptsched@localhost>
Section: libdevel
Priority: optional
Depends: libc6 (>= 2.34)
Description: Prioritized Task Scheduling API (postTask, yield) as a C11 runtime
 libptsched.so.$(pts_ver MAJOR), libptsched.a, the public headers and ptsched.pc.
CTL
deb=$outdir/libptsched-dev_${version}_$arch.deb
dpkg-deb --root-owner-group --build "$stage/root" "$deb" >&2
echo "$deb"
