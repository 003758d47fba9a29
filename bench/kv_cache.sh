#!/usr/bin/env bash
# The KV cache's storage formats (--kv-cache-dtype), in one run:
#   speed: decode_bench on $MODEL ($FORMAT weights) for each format in
#     $DTYPES, batch 1 and 16, after 16-token prompts (context 0) and after
#     $CONTEXT positions of KV (--context), --steps 8 --runs 3: tokens/s min /
#     median / max, and the KV bytes per token. The step time at $CONTEXT
#     over the one at 0 shows attention's share.
#   agreement: kv_agreement on each of $AGREE_MODELS: 8 prompts decoded
#     greedily for $TOKENS tokens with each format against the f32 cache.
# ROUNDS rounds of the speed runs; bench/kv_cache.py writes summary.md
# (min / median over rounds). Writes into $OUT_DIR: decode.r<N>.jsonl,
# agreement.jsonl, uptime.txt, summary.md.
#
#   bench/kv_cache.sh
#   AGREE_MODELS="path/to/model.gguf" ROUNDS=3 bench/kv_cache.sh
#
# Check the load first (uptime): these are speed figures.
set -euo pipefail
cd "$(dirname "$0")/.."
DECODE_BENCH=${DECODE_BENCH:-build/bench/decode_bench}
KV_AGREEMENT=${KV_AGREEMENT:-build/bench/kv_agreement}
PYTHON=${PYTHON:-python3}
OUT_DIR=${OUT_DIR:-build/kv_cache}
MODEL=${MODEL:-dummy:llama-1b}
FORMAT=${FORMAT:-bf16}
CONTEXT=${CONTEXT:-4096}
DTYPES=${DTYPES:-f32 f16 bf16 q8_0 fp8}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}
TOKENS=${TOKENS:-256}
SHARED_DIR=${SHARED_DIR:-../shared}
MODEL_CACHE=${ZEROLAYER_MODEL_CACHE:-$HOME/.cache/zerolayer}
if [ -z "${AGREE_MODELS:-}" ]; then
  AGREE_MODELS="$SHARED_DIR/models/stories260K.gguf"
  [ -f "$MODEL_CACHE/gemma-3-270m-q4_k_m.gguf" ] && AGREE_MODELS="$AGREE_MODELS $MODEL_CACHE/gemma-3-270m-q4_k_m.gguf"
fi
mkdir -p "$OUT_DIR"

echo "start $(uptime)" > "$OUT_DIR/uptime.txt"
for round in $(seq 1 "$ROUNDS"); do
  : > "$OUT_DIR/decode.r$round.jsonl"
  for context in 0 "$CONTEXT"; do
    for dtype in $DTYPES; do
      echo "== round $round context $context $dtype ($(uptime))" >&2
      "$DECODE_BENCH" --model "$MODEL" --formats "$FORMAT" --kv-cache-dtype "$dtype" --context "$context" \
        --prompt 0 --batches 1,16 --steps 8 --runs 3 --threads "$THREADS" >> "$OUT_DIR/decode.r$round.jsonl"
    done
  done
  echo "round $round $(uptime)" >> "$OUT_DIR/uptime.txt"
done
: > "$OUT_DIR/agreement.jsonl"
for model in $AGREE_MODELS; do
  echo "== agreement $model ($(uptime))" >&2
  "$KV_AGREEMENT" --model "$model" --tokens "$TOKENS" --threads "$THREADS" >> "$OUT_DIR/agreement.jsonl"
done
echo "end $(uptime)" >> "$OUT_DIR/uptime.txt"
"$PYTHON" bench/kv_cache.py "$OUT_DIR" > "$OUT_DIR/summary.md"
cat "$OUT_DIR/summary.md"
