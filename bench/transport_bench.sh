#!/usr/bin/env bash
# The transports' own cost, several rounds: each round runs shm_bench (shared
# memory, with its loopback TCP ping-pong) and http_bench (HTTP keep-alive
# streaming, with its own TCP ping-pong) back to back on dummy:tiny, at the
# same client counts and token counts, one engine thread each. The rounds'
# JSON lines go to $OUT_DIR/rounds.jsonl; bench/transport_summary.py prints
# min and median over rounds of each P50 and P99 (the machine is shared, so
# the minimum is the figure least disturbed by other work).
#
#   bench/transport_bench.sh                          # defaults below
#   ROUNDS=5 SHM_ARGS="--adaptive-spin-us 0" bench/transport_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-1,64}
REQUESTS=${REQUESTS:-20}
TOKENS=${TOKENS:-64}
SHM_ARGS=${SHM_ARGS:-}
OUT_DIR=${OUT_DIR:-bench/results/transport/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT_DIR"
out="$OUT_DIR/rounds.jsonl"
: > "$out"
{
  echo "# $(date -u +%FT%TZ) $(nproc) CPUs, git $(git rev-parse --short HEAD)"
  echo "$BUILD/bench/shm_bench --clients $CLIENTS --requests $REQUESTS --tokens $TOKENS --engine-threads 1 $SHM_ARGS"
  echo "$BUILD/bench/http_bench --clients $CLIENTS --requests $REQUESTS --max-tokens $TOKENS --threads 1"
} > "$OUT_DIR/command.txt"
for round in $(seq "$ROUNDS"); do
  # shellcheck disable=SC2086  # SHM_ARGS is a list of flags
  "$BUILD/bench/shm_bench" --clients "$CLIENTS" --requests "$REQUESTS" --tokens "$TOKENS" --engine-threads 1 \
    $SHM_ARGS 2>/dev/null | sed "s/^{/{\"round\":$round,/" >> "$out"
  "$BUILD/bench/http_bench" --clients "$CLIENTS" --requests "$REQUESTS" --max-tokens "$TOKENS" --threads 1 \
    2>/dev/null | sed "s/^{/{\"round\":$round,/" >> "$out"
done
python3 bench/transport_summary.py "$out" | tee "$OUT_DIR/summary.md"
