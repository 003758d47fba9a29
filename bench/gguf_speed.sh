#!/usr/bin/env bash
# Decode and prefill speed of GGUF files, zerolayer beside llama.cpp's
# llama-bench on the same files and thread count, in one run: ROUNDS rounds,
# each file measured by both engines one after the other (the two never run
# at once). Per file and round:
#   zerolayer: decode_bench --formats stored --prompt 512 --batches 1
#              --steps 64 --runs 3 (tokens/s min / median / max over the runs,
#              and the fraction of the read bandwidth it measures before each
#              decode run: the weights' bytes per token over the time)
#   llama.cpp: llama-bench -p 512 -n 64 -r 3 (tokens/s mean and deviation)
# then bench/gguf_speed.py writes the table (ratios per round, min / median
# over rounds). Writes into $OUT_DIR: zl.<stem>.r<N>.jsonl,
# lcpp.<stem>.r<N>.jsonl, uptime.txt, summary.md and summary.jsonl.
#
#   LCP_DIR=path/to/lcp bench/gguf_speed.sh FILE.gguf ...
#
# LCP_DIR: llama.cpp as vendored in the llama-cpp-python 0.3.36 sdist, built
# by `bench/run_llama_cpp_compare.sh build` (its llama-bench). Check the load
# first (uptime): these are speed figures, run nothing else beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LCP_DIR:?set LCP_DIR to a llama.cpp tree with build/bin/llama-bench}"
[ $# -gt 0 ] || { echo "usage: LCP_DIR=... $0 FILE.gguf ..." >&2; exit 2; }
LLAMA_BENCH=${LLAMA_BENCH:-$LCP_DIR/build/bin/llama-bench}
DECODE_BENCH=${DECODE_BENCH:-build/bench/decode_bench}
PYTHON=${PYTHON:-python3}
OUT_DIR=${OUT_DIR:-build/gguf_speed}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT_DIR"

echo "start $(uptime)" > "$OUT_DIR/uptime.txt"
for round in $(seq 1 "$ROUNDS"); do
  for file in "$@"; do
    stem=$(basename "$file" .gguf)
    echo "== round $round $stem ($(uptime))" >&2
    "$DECODE_BENCH" --model "$file" --formats stored --threads "$THREADS" --runs 3 --prompt 512 --batches 1 \
      --steps 64 > "$OUT_DIR/zl.$stem.r$round.jsonl"
    "$LLAMA_BENCH" -m "$file" -p 512 -n 64 -t "$THREADS" -r 3 -o jsonl > "$OUT_DIR/lcpp.$stem.r$round.jsonl"
    echo "round $round $stem $(uptime)" >> "$OUT_DIR/uptime.txt"
  done
done
echo "end $(uptime)" >> "$OUT_DIR/uptime.txt"
"$PYTHON" bench/gguf_speed.py "$OUT_DIR" > "$OUT_DIR/summary.jsonl"
echo "wrote $OUT_DIR/summary.md and $OUT_DIR/summary.jsonl" >&2
