#!/usr/bin/env bash
# Installs, builds and runs the whole test suite (ctest labels: unit, model,
# slow, gpu). Tests that need a GPU or a missing data file report "skipped".
#   scripts/test.sh              # everything
#   scripts/test.sh -L unit      # extra arguments go to ctest
#   ZL_SANITIZERS=1 scripts/test.sh   # also ASan+UBSan unit tests and 20 s per fuzzer (+~25 min)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Released models for the end-to-end tests (skipped, saying so, without them).
scripts/fetch_models.sh || echo "test: fetch_models.sh failed; the released-model tests will report skipped"
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
# When asked (ZL_SANITIZERS=1): the unit tests again under ASan + UBSan, and
# each fuzzer for a short while (clang 14 builds them into build-asan/).
if [ "${ZL_SANITIZERS:-0}" = 1 ]; then
  scripts/sanitize.sh asan
  bench/fuzz.sh --seconds "${ZL_FUZZ_SECONDS:-20}"
fi
