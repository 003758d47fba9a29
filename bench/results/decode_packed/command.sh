#!/bin/bash
# Decode only: llama-bench tg64 vs decode_bench (landed, packed) vs the same code with packing off, alternating.
cd /work/wt-decode
for rep in 1 2; do
for T in 2 1; do
for f in q8_0 q4_0 bf16; do
  g=/tmp/l110m.$f.gguf
  /tmp/lcp/build/bin/llama-bench -m $g -p 0 -n 64 -t $T -r 3 -o jsonl 2>/dev/null | python3 -c '
import sys,json
for l in sys.stdin:
  d=json.loads(l); print("LCP", "'$f'", "t'$T'", "tg", round(d["avg_ts"],2))'
  for mode in NEW OLD; do
    if [ $mode = NEW ]; then b=/tmp/decode_bench_v2; unset ZL_NO_PACK_TMP; else b=/tmp/decode_bench_ab; export ZL_NO_PACK_TMP=1; fi
    $b --model $g --formats stored --threads $T --runs 3 --steps 64 --prompt 16 --batches 1,8 --bandwidth-gbs 35 2>/dev/null | grep decode | python3 -c '
import sys,json
for l in sys.stdin:
  d=json.loads(l); print("'$mode'", "'$f'", "t'$T'", d["bench"], d["batch"], d["tok_s_median"], d["tok_s_max"], "cpu", d["cpu_tok_s_median"])'
  done
done; done; done
