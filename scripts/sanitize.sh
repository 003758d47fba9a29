#!/usr/bin/env bash
# Builds zerolayer with clang 14 under sanitizers and runs tests there.
#   scripts/sanitize.sh asan [ctest args]   # build-asan/: ASan + UBSan, and the fuzzers of fuzz/
#   scripts/sanitize.sh tsan [ctest args]   # build-tsan/: ThreadSanitizer
#   scripts/sanitize.sh asan --configure-only  # only configure (bench/fuzz.sh builds its targets)
# ctest args default to "-L unit" (the unit, engine and transport tests that
# need no model file), then the overlap scheduling tests on dummy:tiny (its
# 10,000 random operations under every policy, and sampled passes): their
# files are labelled model and slow. Any sanitizer report fails the test
# that caused it.
# CUDA is off in these builds (nvcc does not take the flags). Run
# scripts/setup.sh first: it installs the libraries these builds share.
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-}"
shift || true
case "$kind" in
  asan) dir=build-asan; flags=(-DZL_SANITIZE=address,undefined -DZL_FUZZ=ON) ;;
  tsan) dir=build-tsan; flags=(-DZL_SANITIZE=thread) ;;
  *) echo "usage: scripts/sanitize.sh asan|tsan [ctest args]" >&2; exit 2 ;;
esac
scripts/apt_install.sh clang-14 libclang-rt-14-dev llvm-14
# Line tables only: symbolized reports without the link time of full debug info.
CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DZL_ENABLE_CUDA=OFF -DZL_BUILD_BENCH=OFF \
  -DCMAKE_C_FLAGS=-gline-tables-only -DCMAKE_CXX_FLAGS=-gline-tables-only "${flags[@]}" >/dev/null
[ "${1:-}" = --configure-only ] && exit 0
cmake --build "$dir" -j "$(nproc)"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
export LLVM_SYMBOLIZER_PATH="${LLVM_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer-14 || echo /usr/lib/llvm-14/bin/llvm-symbolizer)}"
cd "$dir"
if (($#)); then
  ctest --output-on-failure -j "$(nproc)" "$@"
else
  ctest --output-on-failure -j "$(nproc)" -L unit
  ctest --output-on-failure -j "$(nproc)" -R '^(OverlapTest|(Policies|PrefillFirst)/EngineCoreRandomTest)\.'
fi
