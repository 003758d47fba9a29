#!/usr/bin/env bash
# Alternates two engine_bench binaries (say, before and after a change) on
# the scheduling-gap benchmark, one run of each at a time, so that both meet
# the same minutes of a noisy machine; prints each run as a JSON line with a
# "binary" field, then a summary (min and median over the rounds) on stderr.
#   bench/engine_gap_ab.sh OLD_BIN NEW_BIN [ROUNDS] > results.jsonl
#   SEQS=1,16,64,256 EXTRA="--cache-policy paged" bench/engine_gap_ab.sh ...
set -euo pipefail
if (($# < 2)); then
  echo "usage: $0 OLD_ENGINE_BENCH NEW_ENGINE_BENCH [ROUNDS]" >&2
  exit 2
fi
old="$1" new="$2" rounds="${3:-6}"
seqs="${SEQS:-1,16,64,256}"
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for bin in "$old" "$new"; do
    # shellcheck disable=SC2086  # EXTRA holds several options
    "$bin" --mode gap --seqs "$seqs" --runs 1 ${EXTRA:-} | sed "s|^{|{\"binary\":\"$bin\",|" | tee -a "$tmp"
  done
done
python3 - "$tmp" >&2 <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    runs.setdefault((d["seqs"], d["binary"]), []).append(d)
for (seqs, binary), v in sorted(runs.items()):
    def stat(key):
        xs = sorted(x[key]["median"] for x in v)
        return f"{xs[0]:.2f}/{statistics.median(xs):.2f}"
    print(f"seqs {seqs:4d} {binary}: runs {len(v)}, min/median P50 {stat('sched_gap_p50_us')} "
          f"P99 {stat('sched_gap_p99_us')} max {stat('sched_gap_max_us')} us")
PY
