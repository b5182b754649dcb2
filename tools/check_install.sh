#!/usr/bin/env bash
# The install check (docs/install.md): installs into a temporary prefix and
# checks what an embedder outside this repository gets. Prints one line per
# check, "PASS name" or "FAIL name" (with the failing output below it), and
# exits non-zero if any check failed. tools/test.sh counts these lines.
set -u
cd "$(dirname "$0")/.." || exit 1
. tools/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
failed=0

# check NAME FUNCTION: runs FUNCTION in a subshell (its exports stay there)
# with its output captured.
check() {
  if ("$2") >"$tmp/$1.log" 2>&1; then
    echo "PASS $1"
  else
    echo "FAIL $1"
    sed 's/^/  /' "$tmp/$1.log" | tail -n 40
    failed=$((failed + 1))
  fi
}

major=$(pts_ver MAJOR)
version=$major.$(pts_ver MINOR).$(pts_ver PATCH)
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# Nothing of this repository may leak into the consumers' builds.
unset CPATH C_INCLUDE_PATH LIBRARY_PATH LD_LIBRARY_PATH

install_tree() {
  bash tools/install.sh "$prefix" || return 1
  lib=$prefix/lib
  [ -f "$lib/libptsched.so.$version" ] && [ -f "$lib/libptsched.a" ] &&
    [ "$(readlink "$lib/libptsched.so.$major")" = "libptsched.so.$version" ] &&
    [ "$(readlink "$lib/libptsched.so")" = "libptsched.so.$major" ] &&
    [ -f "$prefix/include/ptsched.h" ] && [ -f "$prefix/include/ptsched/version.h" ] ||
    { echo "missing files:"; find "$prefix" | sort; return 1; }
  soname=$(readelf -d "$lib/libptsched.so.$version" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  echo "SONAME $soname"
  [ "$soname" = "libptsched.so.$major" ] || return 1
  echo "pkg-config --modversion: $(pkg-config --modversion ptsched)"
  [ "$(pkg-config --modversion ptsched)" = "$version" ]
}

exported_symbols() {
  lib=$prefix/lib/libptsched.so.$major
  [ -f "$lib" ] || { echo "not installed"; return 1; }
  # Declared: every PTS_EXTERN function of the installed headers.
  cat "$prefix"/include/ptsched.h "$prefix"/include/ptsched/*.h | tr '\n' ' ' |
    grep -o 'PTS_EXTERN[^;(]*(' | grep -o 'pts_[a-z0-9_]* *($' | tr -d ' (' |
    sort -u >"$tmp/declared"
  # Exported: every defined dynamic symbol but the version node itself.
  nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' |
    sort -u >"$tmp/exported"
  echo "$(wc -l <"$tmp/declared") declared, $(wc -l <"$tmp/exported") exported"
  [ -s "$tmp/declared" ] || return 1
  diff "$tmp/declared" "$tmp/exported" &&
    ! grep -q '^pts__' "$tmp/exported"
}

# build_run NAME LINK...: builds examples/NAME.c with only what pkg-config
# says, runs it, and checks it exits 0.
build_run() {
  local name=$1; shift
  cc -std=c11 -Wall -Wextra -Werror examples/$name.c -o "$tmp/$name" "$@" &&
    "$tmp/$name"
}

# The shared runs need the loader to find the prefix's library.
examples_shared() {
  export LD_LIBRARY_PATH=$prefix/lib
  for e in loop pool; do
    build_run $e $(pkg-config --cflags --libs ptsched) || return 1
    ldd "$tmp/$e" | grep "libptsched.so.$major => $prefix/lib/" || return 1
  done
}

examples_static() {
  # -l:libptsched.a picks the archive where -lptsched would pick the .so.
  local libs
  libs=$(pkg-config --libs --static ptsched | sed 's/-lptsched\b/-l:libptsched.a/')
  for e in loop pool; do
    build_run $e $(pkg-config --cflags ptsched) $libs || return 1
    if ldd "$tmp/$e" | grep -q libptsched; then echo "$e links the .so"; return 1; fi
  done
}

headers_standalone() {
  local flags=(-fsyntax-only -Wall -Wextra -pedantic -Werror $(pkg-config --cflags ptsched))
  for h in ptsched.h $(cd "$prefix/include" && ls ptsched/*.h); do
    echo "#include <$h>" | cc -std=c11 "${flags[@]}" -x c - || { echo "C: $h"; return 1; }
    echo "#include <$h>" | c++ -std=c++17 "${flags[@]}" -x c++ - || { echo "C++: $h"; return 1; }
  done
}

doxygen_clean() { bash tools/docs.sh "$tmp/docs"; }

# The .deb holds the same tree under /usr: unpack it and build an example
# against it, pkg-config pointed at the unpacked root (sysroot).
deb_package() {
  local deb root=$tmp/debroot
  deb=$(bash tools/deb.sh "$tmp/deb") || return 1
  dpkg-deb -I "$deb" | grep -q "Version: $version" || return 1
  dpkg-deb -x "$deb" "$root" || return 1
  PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/usr/lib/pkgconfig \
    PKG_CONFIG_PATH= LD_LIBRARY_PATH=$root/usr/lib \
    build_run loop $(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH= \
      PKG_CONFIG_LIBDIR=$root/usr/lib/pkgconfig pkg-config --cflags --libs ptsched)
}

check install_tree install_tree
check exported_symbols exported_symbols
check examples_shared examples_shared
check examples_static examples_static
check headers_standalone headers_standalone
check doxygen_no_warnings doxygen_clean
check deb_package deb_package
echo "install check: $failed failed"
[ "$failed" -eq 0 ]
