#!/usr/bin/env bash
# Runs every libFuzzer target of a -Dfuzz=true build for a bounded time:
#   tests/fuzz/run.sh BUILDDIR [SECONDS_PER_TARGET]
# New inputs go to a scratch corpus; the checked-in corpus and seeds are only read.
# Leaks inside the libraries used are suppressed with lsan.supp (nothing of ours).
# An input that makes a target fail is kept as BUILDDIR/fuzz-failures/TARGET-* and the
# script exits non-zero: add it to tests/fuzz/corpus/TARGET/ with the fix.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/../unit/data"
build="$(cd "${1:?usage: run.sh BUILDDIR [SECONDS]}" && pwd)"
seconds="${2:-30}"
failures="$build/fuzz-failures"
mkdir -p "$failures"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

export LSAN_OPTIONS="suppressions=$here/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
status=0
for target in trace elf relocator entry_patch; do
  seeds=("$here/corpus/$target")
  asan_options="${ASAN_OPTIONS:-}"
  case "$target" in
    trace) seeds+=("$data") ;;
    elf) seeds+=("$data/golden/sysroot")
         # Whole stacks at every malloc, so that lsan.supp can name libdw's leak.
         asan_options="fast_unwind_on_malloc=0${asan_options:+:$asan_options}" ;;
  esac
  mkdir -p "$scratch/$target"
  echo "== fuzz_$target for ${seconds}s"
  # The targets read files of their own making only; run them where they can write
  # nothing that matters.
  if ! (cd "$scratch" && ASAN_OPTIONS="$asan_options" "$build/tests/fuzz/fuzz_$target" "$scratch/$target" "${seeds[@]}" \
          -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
          -artifact_prefix="$failures/$target-" 2>&1 | tail -n 25); then
    status=1
  fi
  if compgen -G "$failures/$target-*" >/dev/null; then
    echo "fuzz_$target failed on: $(ls "$failures/$target"-*)"
    status=1
  fi
done
exit $status
