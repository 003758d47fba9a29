#!/usr/bin/env bash
# Does `zerolayer bench` measure what an independent load generator measures?
# NVIDIA's aiperf (PyPI) and `zerolayer bench` drive one `zerolayer serve` AT
# THE SAME TIME, each with the same workload: streamed /v1/completions, prompt
# and output lengths around ISL and OSL (output lengths exact via ignore_eos),
# CONCURRENCY requests in flight and NUM requests per tool. Both see the same
# server under the same load at the same moment, so their TTFT and throughput
# should agree. Repeated ROUNDS times. Writes $OUT_DIR/agreement.md and .json:
# per round and as the median over rounds, mean/P50/P95 TTFT, output tokens/s
# and requests/s from each tool and the relative difference. With DETAIL=1 it
# keeps every request's timings from both tools and writes
# $OUT_DIR/agreement_detail.md (bench/agreement_detail.py): the same TTFT
# figures pooled with bootstrap intervals, and in the steady state. That is
# the comparison to read: zerolayer bench starts once aiperf's warm-up is done,
# so its first requests always queue behind aiperf's first prefill, and aiperf
# sends its last ones alone (bench/results/README.md, agreement_detail/).
#
#   DETAIL=1 bench/compare_external_loadgen.sh
#
# Why at once and why varied lengths (both measured here, see
# bench/results/README.md): aiperf runs several Python processes that take a
# large share of a 2-core machine, so tools taking turns measure a server
# slowed by different amounts (bench/results/agreement_sequential/). At once
# with fixed lengths, the two tools' requests finish in lockstep and the
# engine's steps phase-lock them: one tool's requests keep waiting for the
# other's prefill before their first token, the other's before their second,
# so E2E and throughput agree but TTFT splits
# (bench/results/agreement_simultaneous/). Lengths drawn around their means
# (the same mean and variance in both tools: uniform +-RANGE_RATIO in
# zerolayer bench, normal with the matching stddev in aiperf) break the lockstep.
#
# The model is dummy:llama-110m with the Llama 2 tokenizer (vocab 32000 as the
# model's) from ../shared/tokenizers/llama-2, so that aiperf builds prompts of
# the intended token counts with the server's own tokenizer. aiperf comes from
# bench/requirements.txt (PYTHON names that venv's python).
set -euo pipefail
cd "$(dirname "$0")/.."
ZL=${ZL:-build/zerolayer}
PYTHON=${PYTHON:-build/loadgen-venv/bin/python}   # a venv with bench/requirements.txt
AIPERF=${AIPERF:-$(dirname "$PYTHON")/aiperf}
TOKENIZER=${TOKENIZER:-$(cd .. && pwd)/shared/tokenizers/llama-2}
MODEL=${MODEL:-dummy:llama-110m}
THREADS=${THREADS:-2}
ISL=${ISL:-128}
OSL=${OSL:-16}
RANGE_RATIO=${RANGE_RATIO:-0.5}
CONCURRENCY=${CONCURRENCY:-2}
NUM=${NUM:-40}
ROUNDS=${ROUNDS:-4}
PORT=${PORT:-18432}
OUT_DIR=${OUT_DIR:-bench/results/agreement}
DETAIL=${DETAIL:-0}  # 1: keep every request's timings from both tools (bench/agreement_detail.py reads them)
detail_flag=""
[ "$DETAIL" = 1 ] && detail_flag=--save-detailed
mkdir -p "$OUT_DIR"
# aiperf's transformers cannot read that folder's tokenizer.json (its merges
# format); given only tokenizer.model it builds the same tokenizer. The copy
# stays outside the repository (Llama 2 licence).
AIPERF_TOKENIZER=$(mktemp -d)
cp "$TOKENIZER"/tokenizer.model "$TOKENIZER"/tokenizer_config.json "$TOKENIZER"/special_tokens_map.json "$AIPERF_TOKENIZER"/

"$ZL" serve --model "$MODEL" --tokenizer "$TOKENIZER/tokenizer.model" --threads "$THREADS" --port "$PORT" \
  --shm-name "" --served-model-name model > "$OUT_DIR/serve.log" 2>&1 &
server_pid=$!
trap 'kill $server_pid 2>/dev/null || true; wait $server_pid 2>/dev/null || true; rm -rf "$AIPERF_TOKENIZER"' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { echo "serve exited: see $OUT_DIR/serve.log" >&2; exit 1; }
  sleep 0.2
done

run_aiperf() {  # round
  rm -rf "$OUT_DIR/aiperf.r$1"
  # A uniform distribution over LEN * [1 - r, 1 + r] has stddev LEN * r / sqrt(3).
  local isl_sd osl_sd
  isl_sd=$(awk -v l="$ISL" -v r="$RANGE_RATIO" 'BEGIN { printf "%.1f", l * r / sqrt(3) }')
  osl_sd=$(awk -v l="$OSL" -v r="$RANGE_RATIO" 'BEGIN { printf "%.1f", l * r / sqrt(3) }')
  "$AIPERF" profile --model model --url "http://127.0.0.1:$PORT" --endpoint-type completions --streaming \
    --tokenizer "$AIPERF_TOKENIZER" --use-server-token-count \
    --synthetic-input-tokens-mean "$ISL" --synthetic-input-tokens-stddev "$isl_sd" \
    --output-tokens-mean "$OSL" --output-tokens-stddev "$osl_sd" --extra-inputs ignore_eos:true temperature:0 \
    --concurrency "$CONCURRENCY" --request-count "$NUM" --warmup-request-count 1 --random-seed "$1" \
    --ui-type none --artifact-dir "$OUT_DIR/aiperf.r$1" > "$OUT_DIR/aiperf.r$1.log" 2>&1
}

keep_aiperf_summary() {  # round
  # Keep the summary (and with DETAIL=1 the per-request records); the rest is large.
  mv "$OUT_DIR/aiperf.r$1/profile_export_aiperf.json" "$OUT_DIR/aiperf.r$1.json"
  if [ "$DETAIL" = 1 ]; then gzip -c "$OUT_DIR/aiperf.r$1/profile_export.jsonl" > "$OUT_DIR/aiperf.r$1.jsonl.gz"; fi
  rm -rf "$OUT_DIR/aiperf.r$1" "$OUT_DIR/aiperf.r$1.log"
}

run_zerolayer_bench() {  # round
  "$ZL" bench --base-url "http://127.0.0.1:$PORT" --model model --label zerolayer-bench \
    --max-concurrency "$CONCURRENCY" --num-prompts "$NUM" --random-input-len "$ISL" --random-output-len "$OSL" \
    --random-range-ratio "$RANGE_RATIO" --num-warmups 0 \
    --token-id-range 3:32000 --seed "$1" --result-file "$OUT_DIR/zerolayer-bench.r$1.json" $detail_flag \
    > "$OUT_DIR/zerolayer-bench.r$1.md"
}

# Requests the server has finished so far (Prometheus counter, all reasons).
finished() {
  curl -sf "http://127.0.0.1:$PORT/metrics" | awk '/^vllm:request_success_total/ { n += $NF } END { print n + 0 }'
}

for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round: $(uptime)" >&2
  uptime > "$OUT_DIR/round$round.uptime"
  before=$(finished)
  run_aiperf "$round" &
  aiperf_pid=$!
  # aiperf takes seconds to start its processes, then sends one warm-up
  # request: zerolayer bench starts when the server has finished that one.
  while [ "$(finished)" -le "$before" ] && kill -0 "$aiperf_pid" 2>/dev/null; do sleep 0.05; done
  run_zerolayer_bench "$round"
  wait "$aiperf_pid" || { echo "aiperf failed: see $OUT_DIR/aiperf.r$round.log" >&2; exit 1; }
  keep_aiperf_summary "$round"
  uptime >> "$OUT_DIR/round$round.uptime"
done

"$PYTHON" bench/agreement_table.py --out "$OUT_DIR/agreement" \
  --setup "$MODEL (Llama 2 tokenizer), $THREADS threads; ISL $ISL, OSL $OSL (+-$RANGE_RATIO), concurrency $CONCURRENCY and $NUM requests per tool, both tools at once" \
  --rounds "$ROUNDS" "$OUT_DIR"
if [ "$DETAIL" = 1 ]; then
  "$PYTHON" bench/agreement_detail.py "$OUT_DIR" > "$OUT_DIR/agreement_detail.md"
fi
