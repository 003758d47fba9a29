#!/bin/bash
# Decode only: llama-bench tg64 vs decode_bench (landed, packed) vs the same code with packing off, alternating.
#   GGUF_DIR: the folder with l110m.{q8_0,q4_0,bf16}.gguf (default $REPO/build)
#   LCP_DIR: llama.cpp as built by bench/run_llama_cpp_compare.sh build (default $REPO/build/lcp)
#   NEW_BENCH: the packed decode_bench (default $REPO/build/bench/decode_bench)
#   OLD_BENCH: a decode_bench that switches packing off under ZL_NO_PACK_TMP=1
#              (a local-only switch, never committed); required
# $REPO is the repository root (three folders above this script).
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
esac
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
GGUF_DIR=${GGUF_DIR:-$REPO/build}
LCP_DIR=${LCP_DIR:-$REPO/build/lcp}
NEW_BENCH=${NEW_BENCH:-$REPO/build/bench/decode_bench}
[ -x "$LCP_DIR/build/bin/llama-bench" ] || { echo "no llama-bench in $LCP_DIR/build/bin: run bench/run_llama_cpp_compare.sh build, or set LCP_DIR" >&2; exit 2; }
[ -n "${OLD_BENCH:-}" ] || { echo "set OLD_BENCH to a decode_bench that honours ZL_NO_PACK_TMP=1 (see --help)" >&2; exit 2; }
for rep in 1 2; do
for T in 2 1; do
for f in q8_0 q4_0 bf16; do
  g=$GGUF_DIR/l110m.$f.gguf
  "$LCP_DIR/build/bin/llama-bench" -m "$g" -p 0 -n 64 -t $T -r 3 -o jsonl 2>/dev/null | python3 -c '
import sys,json
for l in sys.stdin:
  d=json.loads(l); print("LCP", "'$f'", "t'$T'", "tg", round(d["avg_ts"],2))'
  for mode in NEW OLD; do
    if [ $mode = NEW ]; then b=$NEW_BENCH; unset ZL_NO_PACK_TMP; else b=$OLD_BENCH; export ZL_NO_PACK_TMP=1; fi
    "$b" --model "$g" --formats stored --threads $T --runs 3 --steps 64 --prompt 16 --batches 1,8 --bandwidth-gbs 35 2>/dev/null | grep decode | python3 -c '
import sys,json
for l in sys.stdin:
  d=json.loads(l); print("'$mode'", "'$f'", "t'$T'", d["bench"], d["batch"], d["tok_s_median"], d["tok_s_max"], "cpu", d["cpu_tok_s_median"])'
  done
done; done; done
