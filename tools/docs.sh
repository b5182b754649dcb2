#!/usr/bin/env bash
# The API reference: Doxygen over the public headers (docs/Doxyfile), HTML in
# OUT/html (default out/docs/html). Fails, printing them, on any Doxygen
# warning, e.g. a public symbol without a doc comment.
# Usage: bash tools/docs.sh [OUT]
set -eu
cd "$(dirname "$0")/.."
. tools/lib.sh
command -v doxygen >/dev/null || bash tools/setup.sh
out=${1:-out/docs}
mkdir -p "$out"
log=$out/warnings.log
rm -rf "$out/html"
{
  cat docs/Doxyfile
  echo "OUTPUT_DIRECTORY = $out"
  echo "PROJECT_NUMBER = $(pts_ver MAJOR).$(pts_ver MINOR).$(pts_ver PATCH)"
  echo "WARN_LOGFILE = $log"
} | doxygen - >/dev/null 2>&1 || true
if [ -s "$log" ] || [ ! -f "$out/html/index.html" ]; then
  echo "docs: doxygen warnings ($(wc -l <"$log" 2>/dev/null || echo ?) lines):" >&2
  cat "$log" >&2 2>/dev/null || true
  exit 1
fi
echo "docs: $out/html/index.html"
