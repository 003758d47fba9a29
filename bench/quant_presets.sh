#!/usr/bin/env bash
# llama-quantize's presets against zerolayer: makes an F16 GGUF of each model,
# has llama.cpp's own llama-quantize write every preset of it, then serves each
# file with llama-server and with `zerolayer serve` (one after the other) and
# compares their first generated token and top-5 log-probabilities on 20
# seeded token-id prompts (bench/quant_presets.py). A file zerolayer does not
# load is a table row "zerolayer refused: <its error>", not a failed run.
# Writes into $OUT_DIR:
#   <model>.<preset>.gguf, .quantize.log   the files and llama-quantize's log
#   <model>.<preset>.<engine>.json/.log    each engine's answers and server log
#   <model>.<preset>.<engine>.refused      the error of a server that did not start
#   results.jsonl   one line per (file, prompt), then one per file
#   summary.md      the table; uptime.txt the load average around the run
#
#   LCP_DIR=path/to/lcp bench/quant_presets.sh
#   PRESETS="Q4_0 Q8_0" MODELS=l110m LCP_DIR=... bench/quant_presets.sh
#
# LCP_DIR holds llama.cpp as vendored in the llama-cpp-python 0.3.36 sdist,
# built by `LLAMA_TARGETS="llama-quantize llama-server" bench/run_llama_cpp_compare.sh build`.
# Files already in OUT_DIR are reused (empty it after changing a model).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LCP_DIR:?set LCP_DIR to a llama.cpp tree with build/bin/llama-quantize and build/bin/llama-server}"
ZL=${ZL:-build/zerolayer}
LLAMA_QUANTIZE=${LLAMA_QUANTIZE:-$LCP_DIR/build/bin/llama-quantize}
LLAMA_SERVER=${LLAMA_SERVER:-$LCP_DIR/build/bin/llama-server}
PYTHON=${PYTHON:-python3}
OUT_DIR=${OUT_DIR:-build/quant_presets}
THREADS=${THREADS:-2}
PORT=${PORT:-18631}
SEED=${SEED:-30}
# Q4_0 and Q8_0 are the controls (zerolayer read them before issue 30).
PRESETS=${PRESETS:-Q2_K Q3_K_M Q4_K_M Q5_K_M Q6_K IQ4_NL IQ4_XS Q5_0 Q5_1 Q4_0 Q8_0}
MODELS=${MODELS:-l110m llama-gqa-tied}
# For serve_lib.sh: one llama-server slot of SLOTS x (2 x 240 + 2 x 8 + 16) = 512 tokens.
SLOTS=1 INPUT_LEN=240 OUTPUT_LEN=8
mkdir -p "$OUT_DIR"

source bench/serve_lib.sh

# The F16 file of a model, and MIN_ID, the first id its prompts may use: past
# the specials and (l110m) the 256 byte tokens, so prompts are ordinary pieces.
make_f16() {  # model
  local f16=$OUT_DIR/$1.F16.gguf
  case "$1" in
    # every matrix width a multiple of 256 (768, 2048): the presets' K-quants
    l110m) [ -f "$f16" ] || "$ZL" convert --model dummy:llama-110m --dtype f16 --out "$f16"; MIN_ID=258 ;;
    # llama.cpp's own converter; widths 64 and 96: every K-quant falls back
    # to a 32-block type (Q4_0, Q5_0, Q5_1, Q8_0, IQ4_NL)
    llama-gqa-tied) [ -f "$f16" ] || cp tests/golden/llamacpp/llama-gqa-tied.f16.gguf "$f16"; MIN_ID=3 ;;
    *) echo "unknown model $1 (l110m, llama-gqa-tied)" >&2; return 1 ;;
  esac
}

quantize() {  # model preset
  local out=$OUT_DIR/$1.$2.gguf
  [ -f "$out" ] && return 0
  # No flags: llama-quantize wants an imatrix only for tensors it writes as
  # IQ1_*, IQ2_*, IQ3_XXS or Q2_K_S's Q2_K, none of the presets here.
  if ! "$LLAMA_QUANTIZE" "$OUT_DIR/$1.F16.gguf" "$out" "$2" "$THREADS" > "$OUT_DIR/$1.$2.quantize.log" 2>&1; then
    echo "llama-quantize $1 $2 failed; see $OUT_DIR/$1.$2.quantize.log" >&2
    rm -f "$out"
  fi
}

ask() {  # engine model preset: serves the file, asks every prompt, stops
  local engine=$1 stem=$2.$3
  local log=$OUT_DIR/$stem.$engine.log
  rm -f "$OUT_DIR/$stem.$engine.refused" "$OUT_DIR/$stem.$engine.json"
  [ -f "$OUT_DIR/$stem.gguf" ] || return 0
  GGUF=$OUT_DIR/$stem.gguf
  if ! start_engine "$engine" "$log"; then
    stop_server
    # Its first error line (else its last line) is the table's reason.
    { grep -m1 -i 'error' "$log" || tail -n1 "$log"; } > "$OUT_DIR/$stem.$engine.refused"
    return 0
  fi
  "$PYTHON" bench/quant_presets.py query --engine "$engine" --port "$PORT" --prompts "$OUT_DIR/$2.prompts.json" \
    --vocab-cache "$OUT_DIR/$2.vocab-texts.json" --out "$OUT_DIR/$stem.$engine.json"
  stop_server
}

echo "start $(uptime)" > "$OUT_DIR/uptime.txt"
for model in $MODELS; do
  make_f16 "$model"
  "$PYTHON" bench/quant_presets.py prompts "$OUT_DIR/$model.F16.gguf" --seed "$SEED" --min-id "$MIN_ID" \
    --out "$OUT_DIR/$model.prompts.json"
  for preset in F16 $PRESETS; do
    [ "$preset" = F16 ] || quantize "$model" "$preset"
    echo "== $model $preset ($(uptime))" >&2
    for engine in llama-server zerolayer; do ask "$engine" "$model" "$preset"; done
  done
done
echo "end $(uptime)" >> "$OUT_DIR/uptime.txt"

# shellcheck disable=SC2086  # MODELS and PRESETS are lists
"$PYTHON" bench/quant_presets.py report --out-dir "$OUT_DIR" --models $MODELS --presets F16 $PRESETS \
  > "$OUT_DIR/results.jsonl"
echo "wrote $OUT_DIR/results.jsonl and $OUT_DIR/summary.md" >&2
