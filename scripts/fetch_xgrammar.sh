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
STAMP="$DEST/.verified-fix3"
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
# Our fix 2: character classes admitted ill-formed UTF-8 (overlong forms,
# surrogates, codepoints above U+10FFFF), which random weights over byte
# tokens do pick and which then decode to U+FFFD, so a maxLength string's
# text was longer than the grammar counted. Lead bytes C0, C1 and F5-F7 are
# refused, and the first continuation byte is checked as a strict decoder
# does (E0 A0.., ED ..9F, F0 90.., F4 ..8F).
python3 - "$DEST/cpp/support/encoding.h" "$DEST/cpp/earley_parser.cc" <<'PY'
import sys
encoding, parser = sys.argv[1], sys.argv[2]

def patch(path, old, new, count):
    text = open(path).read()
    if text.count(old) != count:
        sys.exit(f"fetch_xgrammar: {path} is not as expected ({old[:40]!r}...)")
    open(path, "w").write(text.replace(old, new))

row2 = "     2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,\n"
patch(encoding, row2 + row2, "    -1, -1,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,  2,\n" + row2, 1)
patch(encoding, "    4,  4,  4,  4,  4,  4,  4,  4, -1, -1, -1, -1, -1, -1, -1, -1,",
      "    4,  4,  4,  4,  4, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,", 1)
patch(encoding, "inline std::tuple<bool, int, TCodepoint> HandleUTF8FirstByte(uint8_t byte) {",
      """// Whether `ch` may continue a UTF-8 form whose bits so far are `partial`
// with `remaining` continuation bytes due (ch included), as a strict decoder
// accepts it: no overlong forms, surrogates or codepoints above U+10FFFF.
inline bool IsStrictUTF8Continuation(TCodepoint partial, int remaining, uint8_t ch) {
  if ((ch & 0xC0) != 0x80) return false;
  if (remaining == 2 && partial < 0x10) {  // a 3-byte form's first continuation
    if (partial == 0x0 && ch < 0xA0) return false;
    if (partial == 0xD && ch > 0x9F) return false;
  }
  if (remaining == 3) {  // a 4-byte form's first continuation
    if (partial == 0x0 && ch < 0x90) return false;
    if (partial == 0x4 && ch > 0x8F) return false;
  }
  return true;
}

inline std::tuple<bool, int, TCodepoint> HandleUTF8FirstByte(uint8_t byte) {""", 1)
patch(parser, "    if ((ch & 0xC0) == 0x80) {",
      "    if (IsStrictUTF8Continuation(state.partial_codepoint, state.sub_element_id, ch)) {", 2)
PY
# The character classes compiled to byte automata: ranges are cut at the
# UTF-8 widths' ends and around the surrogates (U+D800-U+DFFF), which are
# left out, so no range spans an overlong form or a surrogate.
python3 - "$DEST/cpp/grammar_functor.cc" "$DEST/cpp/fsm_builder.cc" <<'PY'
import sys
functor, fsm = sys.argv[1], sys.argv[2]

def patch(path, old, new):
    text = open(path).read()
    if text.count(old) != 1:
        sys.exit(f"fetch_xgrammar: {path} is not as expected ({old[:40]!r}...)")
    open(path, "w").write(text.replace(old, new))

patch(functor, """  constexpr uint32_t width_ends[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  for (uint32_t width_end : width_ends) {
    if (low <= high && low <= width_end) {
      auto end = std::min(high, width_end);
      AddCharacterRange(from, to, CodepointToPackedUTF8(low), CodepointToPackedUTF8(end));""",
      """  constexpr uint32_t width_ends[] = {0x7F, 0x7FF, 0xD7FF, 0xDFFF, 0xFFFF, 0x10FFFF};
  for (uint32_t width_end : width_ends) {
    if (low <= high && low <= width_end) {
      auto end = std::min(high, width_end);
      if (low < 0xD800 || end > 0xDFFF)  // surrogates encode no character
        AddCharacterRange(from, to, CodepointToPackedUTF8(low), CodepointToPackedUTF8(end));""")
patch(fsm, """      uint32_t multi_byte_low = std::max<uint32_t>(low, kMax1ByteUnicode + 1);
      AddPackedUTF8RangeEdges(
          *fsm, from, to, CodepointToPackedUTF8(multi_byte_low), CodepointToPackedUTF8(high)
      );""",
      """      uint32_t multi_byte_low = std::max<uint32_t>(low, kMax1ByteUnicode + 1);
      for (uint32_t width_end : {0x7FFu, 0xD7FFu, 0xDFFFu, 0xFFFFu, 0x10FFFFu}) {
        if (multi_byte_low > high || multi_byte_low > width_end) continue;
        uint32_t end = std::min<uint32_t>(high, width_end);
        if (multi_byte_low < 0xD800 || end > 0xDFFF)  // surrogates encode no character
          AddPackedUTF8RangeEdges(
              *fsm, from, to, CodepointToPackedUTF8(multi_byte_low), CodepointToPackedUTF8(end)
          );
        multi_byte_low = end + 1;
      }""")
PY
touch "$STAMP"
echo "fetch_xgrammar: xgrammar $VERSION in $DEST"
