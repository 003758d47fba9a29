#!/usr/bin/env bash
# Flat latency: does a new request's time to first token stay flat as load
# rises? For each engine (`zerolayer serve`, the same with
# --prefill-first-ms $PREFILL_FIRST_MS (500), llama.cpp's `llama-server`) on
# the same GGUF with the same threads, one after the other, ROUNDS times:
#   1. measure its saturation: `zerolayer bench --request-rate inf` with
#      SAT_PROMPTS requests at once; completed requests/s;
#   2. Poisson arrivals at each of LOADS (fractions of that saturation),
#      max(MIN_PROMPTS, rate x SECONDS) requests each.
# Then bench/flat_latency.py writes the table (P95 TTFT by load, min/median
# over rounds, and P95 at 80% / P95 at 10%) and the plot.
#
#   bench/flat_latency.sh                        # defaults below; env vars override
#   ENGINES=zerolayer ROUNDS=1 bench/flat_latency.sh
# bench/flat_latency_model.py gives what a queueing model of the same
# setup predicts for both zerolayer policies.
#
# Writes into OUT_DIR: <engine>.r<N>.sat.json, <engine>.r<N>.load<F>.json
# (zerolayer bench results), *.log (server logs), flat_latency.{md,json,png}.
# llama-server and llama-quantize are built from the llama-cpp-python sdist
# on PyPI into LCP_DIR (bench/run_llama_cpp_compare.sh build); the Q8_0 file
# is MODEL converted to f16 by zerolayer and quantized by llama-quantize.
set -euo pipefail
cd "$(dirname "$0")/.."
ZL=${ZL:-build/zerolayer}
export LCP_DIR=${LCP_DIR:-build/lcp}
LLAMA_SERVER=${LLAMA_SERVER:-$LCP_DIR/build/bin/llama-server}
LLAMA_QUANTIZE=${LLAMA_QUANTIZE:-$LCP_DIR/build/bin/llama-quantize}
PYTHON=${PYTHON:-python3}
MODEL=${MODEL:-dummy:llama-110m}
OUT_DIR=${OUT_DIR:-bench/results/flat_latency}
GGUF=${GGUF:-build/flat_latency/$(echo "$MODEL" | tr ':' '-').q8_0.gguf}
ENGINES=${ENGINES:-zerolayer zerolayer-prefill-first llama-server}
THREADS=${THREADS:-2}
LOADS=${LOADS:-0.1 0.3 0.5 0.7 0.8 0.9}
SAT_PROMPTS=${SAT_PROMPTS:-48}
MIN_PROMPTS=${MIN_PROMPTS:-20}
SECONDS_PER_LOAD=${SECONDS_PER_LOAD:-40}
INPUT_LEN=${INPUT_LEN:-128}
OUTPUT_LEN=${OUTPUT_LEN:-32}
SLOTS=${SLOTS:-16}          # llama-server --parallel; zerolayer batches up to --max-num-seqs
QUEUE_MS=${QUEUE_MS:-1}     # server-reported queue time above which a request counts as queued
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-18432}
mkdir -p "$OUT_DIR" "$(dirname "$GGUF")"

if [[ " $ENGINES " == *" llama-server "* || ! -f "$GGUF" ]]; then
  if [ ! -x "$LLAMA_SERVER" ] || [ ! -x "$LLAMA_QUANTIZE" ]; then
    LLAMA_TARGETS="llama-server llama-quantize" bench/run_llama_cpp_compare.sh build
  fi
fi
if [ ! -f "$GGUF" ]; then
  "$ZL" convert --model "$MODEL" --dtype f16 --out "$GGUF.f16"
  "$LLAMA_QUANTIZE" "$GGUF.f16" "$GGUF" Q8_0 > "$GGUF.quantize.log" 2>&1
  rm -f "$GGUF.f16"
fi

source bench/serve_lib.sh

bench() {  # result-file rate num-prompts seed
  "$ZL" bench --base-url "http://127.0.0.1:$PORT" --model model --label "$engine" \
    --request-rate "$2" --num-prompts "$3" --random-input-len "$INPUT_LEN" --random-output-len "$OUTPUT_LEN" \
    --queue-threshold-ms "$QUEUE_MS" --seed "$4" --result-file "$1" > "${1%.json}.md"
}

for round in $(seq 1 "$ROUNDS"); do
  for engine in $ENGINES; do
    start_engine "$engine" "$OUT_DIR/$engine.r$round.log"
    echo "== $engine round $round ($(uptime))" >&2
    sat_file="$OUT_DIR/$engine.r$round.sat.json"
    bench "$sat_file" inf "$SAT_PROMPTS" $((round * 100))
    sat=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["request_throughput"])' "$sat_file")
    echo "   saturation $sat req/s" >&2
    pass=0
    for load in $LOADS; do
      pass=$((pass + 1))
      rate=$("$PYTHON" -c "print(f'{$load * $sat:.4f}')")
      prompts=$("$PYTHON" -c "print(max($MIN_PROMPTS, round($load * $sat * $SECONDS_PER_LOAD)))")
      bench "$OUT_DIR/$engine.r$round.load$load.json" "$rate" "$prompts" $((round * 100 + pass))
      echo "   load $load: $rate req/s, $prompts requests" >&2
    done
    stop_server
  done
done

"$PYTHON" bench/flat_latency.py "$OUT_DIR" --out "$OUT_DIR/flat_latency" \
  --setup "$MODEL Q8_0 ($GGUF), $THREADS threads each, llama-server -np $SLOTS; $INPUT_LEN prompt / $OUTPUT_LEN output tokens"
echo "wrote $OUT_DIR/flat_latency.md" >&2
