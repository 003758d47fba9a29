#!/usr/bin/env bash
# Builds the Debian package (cmake/package.cmake): a Release build of the
# server, the CLI and the client library only (no tests, no bench/) in its
# own build directory, then cpack -G DEB. Prints the .deb's path last.
#   scripts/package.sh                  # into build-pkg/
#   scripts/package.sh DIR              # or ZL_PACKAGE_BUILD_DIR=DIR
# CPU only: the CUDA backend is left out (-DZL_ENABLE_CUDA=OFF), because
# libcublasLt.so.13 comes from no Debian package that dpkg-shlibdeps could
# name, and nvcc would add most of the build time; ZL_PACKAGE_CUDA=1 keeps
# it when nvcc is found (dpkg-shlibdeps then fails on libcublasLt unless it
# comes from a Debian package).
# Needs what scripts/setup.sh installs (dpkg-shlibdeps is in dpkg-dev, which
# build-essential pulls in) and xgrammar's sources (fetched here if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-${ZL_PACKAGE_BUILD_DIR:-build-pkg}}"
cuda=OFF
[ "${ZL_PACKAGE_CUDA:-0}" = 1 ] && cuda=ON
scripts/fetch_xgrammar.sh
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DZL_BUILD_TESTS=OFF -DZL_BUILD_BENCH=OFF -DZL_FUZZ=OFF -DZL_SANITIZE= -DZL_ENABLE_CUDA="$cuda" >/dev/null
cmake --build "$dir" -j "$(nproc)"
rm -f "$dir"/*.deb
(cd "$dir" && cpack -G DEB >/dev/null)
deb=("$dir"/*.deb)
[ -f "${deb[0]}" ] || { echo "package: cpack made no .deb in $dir" >&2; exit 1; }
realpath "${deb[0]}"
