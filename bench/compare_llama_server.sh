#!/usr/bin/env bash
# Side by side under load: `zerolayer serve` and llama.cpp's `llama-server`
# serving the same GGUF weights with the same thread count, each driven by
# `zerolayer bench` over HTTP with the same workload and request rates, one
# engine after the other, ROUNDS times alternating. Writes into $OUT_DIR:
#   <engine>.r<N>.json  zerolayer bench results     comparison.md / .json  the table
#   comparison.png      latency/throughput plots    *.log                  server logs
#
#   bench/compare_llama_server.sh            # defaults below; env vars override
#   RATES=0.8,1.6 FIRST_ROUND=2 bench/compare_llama_server.sh   # more rates, same table
#
# llama-server is built from the llama-cpp-python sdist on PyPI by
# bench/run_llama_cpp_compare.sh build (LLAMA_TARGETS includes llama-server).
# vLLM: set VLLM_NOTE to say why it was not run (see bench/results/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ZL=${ZL:-build/zerolayer}
LCP_DIR=${LCP_DIR:-build/lcp}
LLAMA_SERVER=${LLAMA_SERVER:-$LCP_DIR/build/bin/llama-server}
PYTHON=${PYTHON:-python3}   # with matplotlib, for the plot
MODEL=${MODEL:-dummy:llama-110m}
DTYPE=${DTYPE:-f16}
GGUF=${GGUF:-build/compare/$(echo "$MODEL" | tr ':' '-').$DTYPE.gguf}
THREADS=${THREADS:-2}
RATES=${RATES:-0.5,1,2,4,inf}
NUM_PROMPTS=${NUM_PROMPTS:-32}
INPUT_LEN=${INPUT_LEN:-128}
OUTPUT_LEN=${OUTPUT_LEN:-32}
SLOTS=${SLOTS:-16}          # llama-server --parallel; zerolayer batches up to --max-num-seqs
ROUNDS=${ROUNDS:-1}
FIRST_ROUND=${FIRST_ROUND:-1}   # >1 adds rounds (e.g. other RATES) beside earlier ones
PORT=${PORT:-18431}
OUT_DIR=${OUT_DIR:-bench/results/llama_server}
VLLM_NOTE=${VLLM_NOTE:-not run}
mkdir -p "$OUT_DIR" "$(dirname "$GGUF")"

[ -x "$LLAMA_SERVER" ] || LLAMA_TARGETS="llama-server" bench/run_llama_cpp_compare.sh build
[ -f "$GGUF" ] || "$ZL" convert --model "$MODEL" --dtype "$DTYPE" --out "$GGUF"

source bench/serve_lib.sh

for round in $(seq "$FIRST_ROUND" $((FIRST_ROUND + ROUNDS - 1))); do
  for engine in zerolayer llama-server; do
    log="$OUT_DIR/$engine.r$round.log"
    start_engine "$engine" "$log"
    echo "== $engine round $round ($(uptime))" >&2
    uptime > "$OUT_DIR/$engine.r$round.uptime"
    "$ZL" bench --base-url "http://127.0.0.1:$PORT" --model model --label "$engine" \
      --request-rate "$RATES" --num-prompts "$NUM_PROMPTS" --random-input-len "$INPUT_LEN" \
      --random-output-len "$OUTPUT_LEN" --seed "$round" --result-file "$OUT_DIR/$engine.r$round.json" \
      | tee "$OUT_DIR/$engine.r$round.md"
    uptime >> "$OUT_DIR/$engine.r$round.uptime"
    stop_server
  done
done

"$PYTHON" bench/compare_table.py --out "$OUT_DIR/comparison" --vllm-note "$VLLM_NOTE" \
  --setup "model $MODEL as $DTYPE GGUF ($GGUF), $THREADS threads each, llama-server -np $SLOTS; $NUM_PROMPTS requests per rate, $INPUT_LEN prompt tokens, $OUTPUT_LEN output tokens" \
  "$OUT_DIR"/*.r*.json
"$PYTHON" bench/plot_bench.py "$OUT_DIR"/*.r*.json --out "$OUT_DIR/comparison.png" \
  --title "$MODEL $DTYPE, $THREADS threads, in $INPUT_LEN / out $OUTPUT_LEN tokens"
echo "wrote $OUT_DIR/comparison.md" >&2
