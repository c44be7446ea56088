#!/usr/bin/env bash
# Rebuilds the golden program, its sysroot and its traces (README.md). Not part of the
# test run: the results are checked in. Needs root (the program is traced from
# /usr/local/bin, the path the traces record) and a built functracer:
#   sudo tests/unit/data/golden/regenerate.sh BUILDDIR
# Then regenerate the expected outputs with
#   FT_GOLDEN_REGENERATE=1 meson test -C BUILDDIR golden_test
# read them, and run golden_test again: it checks them against addr2line and the
# program's own account before they may be committed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:?usage: regenerate.sh BUILDDIR}" && pwd)"
ft="$build/core/functracer"
installed=/usr/local/bin/ft-golden

work="$(mktemp -d)"
trap 'rm -rf "$work" "$installed"' EXIT
g++ -std=c++20 -O1 -g -fno-omit-frame-pointer -Wl,--build-id=sha1 \
    -fdebug-prefix-map="$here/src=/src/golden" -o "$work/ft-golden" "$here/src/golden.cc"
id="$(readelf -n "$work/ft-golden" | awk '/Build ID:/ {print $3}')"

sysroot="$here/sysroot"
rm -rf "$sysroot"
mkdir -p "$sysroot/usr/local/bin" "$sysroot/usr/lib/debug/.build-id/${id:0:2}"
debug="$sysroot/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
objcopy --only-keep-debug "$work/ft-golden" "$debug"
objcopy --strip-debug --add-gnu-debuglink="$debug" "$work/ft-golden" "$sysroot/usr/local/bin/ft-golden"

# The traced copy has symbols but no debug info, as on a machine without debug packages.
install -m 755 "$sysroot/usr/local/bin/ft-golden" "$installed"
trace() {  # NAME FUNCTRACER-ARGS... -- PROGRAM-ARGS...
  local name="$1"; shift
  local dir="$work/$name"
  local args=()
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  (cd / && "$ft" -q "${args[@]}" -o "$dir" "$installed" "$@")
  mv "$dir"/*.trace "$here/$name.trace"
}
trace memtrace-v1 -b 16 -- 1
trace memtrace-v2 -b 16 -- 2
trace fileops -e fileops -b 16 -- 1
trace calltrace -a '*shapes::*' -- 1
echo "build-id $id; traces in $here"
