#!/usr/bin/env bash
# Installs, builds and runs the whole test suite (ctest labels: unit, model,
# slow, gpu). Tests that need a GPU or a missing data file report "skipped".
#   scripts/test.sh              # everything
#   scripts/test.sh -L unit      # extra arguments go to ctest
# On CI (CI=true), and wherever ZL_SANITIZERS=1, the unit tests (engine and
# transport included) also run under ASan + UBSan and under TSan, and each
# fuzzer for ZL_FUZZ_SECONDS (20) on its corpus: about +35 min on 2 cores.
# ZL_SANITIZERS=0 leaves them out, CI included.
# On CI, and wherever ZL_PACKAGE_TEST=1, the Debian package is built, installed
# with dpkg -i, tried and removed (scripts/package_test.sh; as root or with
# sudo): a second Release build, of the server and client library only, in
# build-pkg/: about +6.5 min on 2 cores. ZL_PACKAGE_TEST=0 leaves it out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Released models for the end-to-end tests (skipped, saying so, without them).
scripts/fetch_models.sh || echo "test: fetch_models.sh failed; the released-model tests will report skipped"
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
package_test="${ZL_PACKAGE_TEST:-}"
[ -n "$package_test" ] || { [ "${CI:-}" = true ] && package_test=1 || package_test=0; }
if [ "$package_test" = 1 ]; then
  scripts/package_test.sh
fi
sanitizers="${ZL_SANITIZERS:-}"
[ -n "$sanitizers" ] || { [ "${CI:-}" = true ] && sanitizers=1 || sanitizers=0; }
if [ "$sanitizers" = 1 ]; then
  scripts/sanitize.sh asan
  bench/fuzz.sh --seconds "${ZL_FUZZ_SECONDS:-20}"
  scripts/sanitize.sh tsan
fi
