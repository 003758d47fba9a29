#!/bin/bash
# dummy:llama-1b (or M=l110m: dummy:llama-110m) on the CPU: zerolayer's
# decode_bench and llama.cpp's llama-bench on the same GGUF files,
# interleaved, ROUNDS rounds.
#   DBS: label=decode_bench pairs, run one after the other (copies of the
#        binaries, so rebuilds during the run do not touch them);
#        default new=$REPO/build/bench/decode_bench
#   FORMATS: which of q8_0 q4_0 q4_k q6_k bf16 f16 int8
#   M: the file prefix, l1b (default) or l110m
#   GGUF_DIR: the folder with the GGUF files (default $REPO/build)
#   LCP_DIR: llama.cpp as built by bench/run_llama_cpp_compare.sh build
#            (default $REPO/build/lcp)
#   LB: llama-bench (default $LCP_DIR/build/bin/llama-bench)
# $REPO is the repository root (three folders above this script).
# GGUFs written first with
#   zerolayer convert --model dummy:llama-1b --quantization q8_0 --out $GGUF_DIR/l1b.q8_0.gguf
#   zerolayer convert --model dummy:llama-1b --quantization q4_0 --out $GGUF_DIR/l1b.q4_0.gguf
#   zerolayer convert --model dummy:llama-1b --quantization q4_k --out $GGUF_DIR/l1b.q4_k.gguf (q6_k alike)
#   zerolayer convert --model dummy:llama-1b --dtype bf16 --out $GGUF_DIR/l1b.bf16.gguf
#   zerolayer convert --model dummy:llama-1b --dtype f16 --out $GGUF_DIR/l1b.f16.gguf
# (and the same with dummy:llama-110m into $GGUF_DIR/l110m.*.gguf)
# int8 (per-row scales) has no GGUF type: decode_bench converts the bf16 file at
# load (--formats int8); llama.cpp has no counterpart.
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
esac
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
DBS=${DBS:-new=$REPO/build/bench/decode_bench}
FORMATS=${FORMATS:-q8_0 q4_0 bf16 f16 int8}
M=${M:-l1b}
GGUF_DIR=${GGUF_DIR:-$REPO/build}
LCP_DIR=${LCP_DIR:-$REPO/build/lcp}
LB=${LB:-$LCP_DIR/build/bin/llama-bench}
ROUNDS=${ROUNDS:-2}
if [ ! -x "$LB" ]; then
  echo "no llama-bench at $LB: run bench/run_llama_cpp_compare.sh build, or set LCP_DIR or LB" >&2
  exit 2
fi
for round in $(seq 1 "$ROUNDS"); do
  for f in $FORMATS; do
    g=$GGUF_DIR/$M.$f.gguf
    fmt=stored
    if [ $f = int8 ]; then g=$GGUF_DIR/$M.bf16.gguf; fmt=int8; fi
    echo "# round $round $f $(uptime | sed 's/.*load/load/')"
    if [ $f != int8 ]; then
      "$LB" -m "$g" -p 512 -n 32 -t 2 -r 3 -o jsonl 2>/dev/null | python3 -c '
import sys, json
for l in sys.stdin:
    d = json.loads(l)
    kind = "prefill" if d["n_prompt"] else "decode"
    print(json.dumps({"engine": "llama.cpp", "format": "'$f'", "bench": kind, "batch": 1,
                      "tok_s_avg": round(d["avg_ts"], 2), "tok_s_stddev": round(d["stddev_ts"], 2),
                      "samples_ts": [round(x, 2) for x in d["samples_ts"]]}))'
    fi
    for entry in $DBS; do
      "${entry#*=}" --model "$g" --formats $fmt --threads 2 --runs 3 --steps 32 --prompt 512 --batches 1,8 \
        --bandwidth-gbs 0 2>/dev/null | sed "s/^{/{\"engine\":\"zerolayer\",\"build\":\"${entry%%=*}\",\"file_format\":\"$f\",/"
    done
  done
done
