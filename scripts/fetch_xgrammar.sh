#!/usr/bin/env bash
# Fetches the source distribution of xgrammar (the grammar engine behind
# structured output, src/engine/grammar.h) from PyPI and unpacks it where
# CMake builds its C++ core from (cmake/xgrammar.cmake). Safe to run again:
# a verified copy is kept.
#
#   scripts/fetch_xgrammar.sh          # into $ZL_DEPS_DIR (default .deps/)
#
# Only the sdist is used, never a wheel: CMake compiles cpp/ with our own
# compiler and flags, so the sanitizer builds instrument it too.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.2.9
SHA256=87b466bca2475e29bb0323abc62c6c33cbcbcff47e5fb800a3e2099ac9620b90
DEPS="${ZL_DEPS_DIR:-.deps}"
DEST="$DEPS/xgrammar-$VERSION"
INDEX="${ZL_PYPI_JSON:-https://pypi.org/pypi}"

# Bump when the fixes below change, so that an unpacked copy is redone.
STAMP="$DEST/.verified-fix1"
if [ -f "$STAMP" ]; then exit 0; fi
mkdir -p "$DEPS"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# pip download of an sdist would build its metadata (and fetch a build
# toolchain); PyPI's JSON API names the file directly.
python3 - "$INDEX/xgrammar/json" "$VERSION" "$work/xgrammar.tar.gz" <<'PY'
import json, sys, urllib.parse, urllib.request
meta_url, version, out = sys.argv[1:4]
with urllib.request.urlopen(meta_url, timeout=120) as r:
    meta = json.load(r)
sdists = [u for u in meta["releases"].get(version, []) if u["packagetype"] == "sdist"]
if not sdists:
    sys.exit(f"fetch_xgrammar: no source distribution of {version} listed at {meta_url}")
url = urllib.parse.urljoin(meta_url, sdists[0]["url"])
with urllib.request.urlopen(url, timeout=300) as r, open(out, "wb") as f:
    while chunk := r.read(1 << 20):
        f.write(chunk)
PY
if ! echo "$SHA256  $work/xgrammar.tar.gz" | sha256sum -c --status; then
  echo "fetch_xgrammar: the downloaded xgrammar-$VERSION.tar.gz does not have sha256 $SHA256" >&2
  exit 1
fi
rm -rf "$DEST"
tar xzf "$work/xgrammar.tar.gz" -C "$DEPS"
# Our fix to 0.2.9: a JSON string with minLength / maxLength let raw control
# characters (U+0000-U+001F) through, so the output did not parse as JSON
# (tests/engine/grammar_test.cpp found it). The bounded string's character
# class now excludes them as the unbounded one does.
python3 - "$DEST/cpp/json_schema_converter.cc" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
old = "builder_.AddCharacterClass({{'\"', '\"'}, {'\\\\', '\\\\'}, {'\\r', '\\r'}, {'\\n', '\\n'}}, true);"
new = "builder_.AddCharacterClass({{0, 0x1f}, {'\"', '\"'}, {'\\\\', '\\\\'}}, true);"
if text.count(old) != 1:
    sys.exit(f"fetch_xgrammar: the bounded-string character class is not where expected in {path}")
open(path, "w").write(text.replace(old, new))
PY
touch "$STAMP"
echo "fetch_xgrammar: xgrammar $VERSION in $DEST"
