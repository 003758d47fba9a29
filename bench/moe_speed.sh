#!/usr/bin/env bash
# Mixture-of-experts decoding: the Qwen3-MoE GGUFs of bench/make_moe_gguf.py
# (dummy:moe-small's shape, written by llama.cpp's converter and
# llama-quantize), zerolayer beside llama-bench on the same files and
# threads (bench/gguf_speed.sh: batch-1 decode and prefill-512, ROUNDS
# rounds), then zerolayer's batched decode at 1-64 sequences
# (decode_bench: tokens/s, experts run per layer and step, the bytes a step
# streams and their fraction of the read bandwidth). Writes into $OUT_DIR
# gguf_speed's files and batched.<stem>.jsonl.
#
#   LCP_DIR=path/to/lcp PYTHON=path/to/venv/python bench/moe_speed.sh
#
# LCP_DIR: llama.cpp as vendored in the llama-cpp-python 0.3.36 sdist, built
# with llama-bench and llama-quantize (bench/run_llama_cpp_compare.sh build);
# PYTHON: a venv with torch, transformers, sentencepiece and numpy (for
# make_moe_gguf.py). Check the load first (uptime): run nothing beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LCP_DIR:?set LCP_DIR to a llama.cpp tree with build/bin/llama-bench and llama-quantize}"
PYTHON=${PYTHON:-python3}
OUT_DIR=${OUT_DIR:-build/moe_speed}
GGUF_DIR=${GGUF_DIR:-build/moe_gguf}
TYPES=${TYPES:-Q8_0,Q4_K_M}
THREADS=${THREADS:-2}
DECODE_BENCH=${DECODE_BENCH:-build/bench/decode_bench}
mkdir -p "$OUT_DIR"

mapfile -t files < <(LLAMA_CPP_SRC="$LCP_DIR/src/vendor/llama.cpp" \
  LLAMA_QUANTIZE="$LCP_DIR/build/bin/llama-quantize" "$PYTHON" bench/make_moe_gguf.py --out "$GGUF_DIR" --types "$TYPES")
OUT_DIR="$OUT_DIR" THREADS="$THREADS" PYTHON="$PYTHON" bench/gguf_speed.sh "${files[@]}"
for file in "${files[@]}"; do
  stem=$(basename "$file" .gguf)
  echo "== batched $stem ($(uptime))" >&2
  "$DECODE_BENCH" --model "$file" --formats stored --threads "$THREADS" --runs 3 --steps 16 --prompt 0 \
    --batches 1,8,16,32,64 > "$OUT_DIR/batched.$stem.jsonl"
done
echo "wrote $OUT_DIR" >&2
