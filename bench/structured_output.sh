#!/usr/bin/env bash
# Structured output's cost in one run: engine_bench with 0%, 50% and 100%
# of the sequences under a JSON schema (an array of 300+ integers, so that
# constrained requests last as long as the others), for the scheduling gap
# (dummy:tiny, where the host's work shows most) and decode tokens/s
# (dummy:llama-110m, 32000 tokens of vocabulary to mask), interleaved by
# round so that drift on a shared machine hits every share alike. One JSON
# line per configuration and round into $OUT (default
# build/structured_output.jsonl).
#
#   bench/structured_output.sh            # ROUNDS=3 SEQS=64
#
# Check the load first (uptime): run nothing beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-build/bench/engine_bench}
OUT=${OUT:-build/structured_output.jsonl}
ROUNDS=${ROUNDS:-3}
SEQS=${SEQS:-64}
: > "$OUT"
for round in $(seq "$ROUNDS"); do
  for share in 0 0.5 1; do
    "$BENCH" --mode gap --seqs "$SEQS" --runs 1 --constrained "$share" | tee -a "$OUT"
    "$BENCH" --mode throughput --seqs "$SEQS" --runs 1 --max-new-tokens 64 --constrained "$share" | tee -a "$OUT"
  done
done
echo "structured_output: $(wc -l < "$OUT") lines in $OUT (round $ROUNDS of $ROUNDS)"
