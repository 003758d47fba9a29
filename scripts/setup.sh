#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, then configures
# and builds zerolayer (Release) into build/. Safe to run again: packages that
# are present are skipped, and the build is incremental.
#   scripts/setup.sh            # install + build
#   BUILD_TYPE=Debug scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3 python3-venv
  libgtest-dev libcli11-dev nlohmann-json3-dev libpcre2-dev
  libsentencepiece-dev libutf8proc-dev libxxhash-dev
  libboost1.81-dev libboost-system1.81-dev libssl-dev libzmq3-dev
)

scripts/apt_install.sh "${PACKAGES[@]}"

# Python packages the Python-side tests use live in .venv (git-ignored).
if [ -s requirements-test.txt ]; then
  if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
  .venv/bin/pip install -q -r requirements-test.txt
fi

# xgrammar (structured output) builds from its PyPI source distribution.
scripts/fetch_xgrammar.sh

BUILD_TYPE="${BUILD_TYPE:-Release}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" >/dev/null
cmake --build build -j "$(nproc)"
