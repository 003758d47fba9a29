#!/usr/bin/env bash
# Installs, builds and runs the whole test suite (ctest labels: unit, model,
# slow, gpu). Tests that need a GPU or a missing data file report "skipped".
#   scripts/test.sh              # everything
#   scripts/test.sh -L unit      # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Released models for the end-to-end tests (skipped, saying so, without them).
scripts/fetch_models.sh || echo "test: fetch_models.sh failed; the released-model tests will report skipped"
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
