#!/usr/bin/env bash
# Installs ptsched for use outside this repository (docs/install.md):
#   PREFIX/lib/libptsched.so.M.m.p, libptsched.so.M -> it, libptsched.so -> .so.M
#   PREFIX/lib/libptsched.a
#   PREFIX/include/ptsched.h, PREFIX/include/ptsched/*.h
#   PREFIX/lib/pkgconfig/ptsched.pc
# Usage: bash tools/install.sh PREFIX
# Builds //dist with -c opt (no LTO: the installed objects must not depend on
# this machine's compiler). DESTDIR (optional) stages the tree for packaging:
# files go to DESTDIR/PREFIX while ptsched.pc still names PREFIX.
set -eu
[ $# -eq 1 ] || { echo "usage: bash tools/install.sh PREFIX" >&2; exit 2; }
case $1 in /*) prefix=$1 ;; *) prefix=$(pwd)/$1 ;; esac
prefix=${prefix%/}
cd "$(dirname "$0")/.."
. tools/lib.sh
disk=$(pts_disk_cache)
flags=(--disk_cache="$disk" --compilation_mode=opt)
bazel build --noshow_progress "${flags[@]}" //dist:dist >&2
bin=$(bazel info "${flags[@]}" bazel-bin 2>/dev/null)/dist

# The version, from the one place it is written.
major=$(pts_ver MAJOR) minor=$(pts_ver MINOR) patch=$(pts_ver PATCH)
version=$major.$minor.$patch
[ -f "$bin/libptsched.so.$major" ] ||
  { echo "install: no libptsched.so.$major (dist SOVERSION != PTS_VERSION_MAJOR?)" >&2; exit 1; }

root=${DESTDIR:-}$prefix
libdir=$root/lib
install -d "$libdir/pkgconfig" "$root/include/ptsched"
install -m 0755 "$bin/libptsched.so.$major" "$libdir/libptsched.so.$version"
ln -sfn "libptsched.so.$version" "$libdir/libptsched.so.$major"
ln -sfn "libptsched.so.$major" "$libdir/libptsched.so"
install -m 0644 "$bin/libptsched.a" "$libdir/libptsched.a"
install -m 0644 include/ptsched.h "$root/include/ptsched.h"
install -m 0644 include/ptsched/*.h "$root/include/ptsched/"

# The library needs only libc and pthreads. jemalloc is not a dependency: the
# repository's binaries link it as their allocator, and an embedder may do the
# same (-ljemalloc) or not; nothing in the library calls it.
cat >"$libdir/pkgconfig/ptsched.pc" <<PC
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: ptsched
Description: the WICG Prioritized Task Scheduling API (postTask, yield, TaskController) as a C11 runtime
Version: $version
Libs: -L\${libdir} -lptsched
Libs.private: -lpthread
Cflags: -I\${includedir}
PC
echo "installed ptsched $version in ${DESTDIR:+$DESTDIR}$prefix"
