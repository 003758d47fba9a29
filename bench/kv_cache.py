#!/usr/bin/env python3
"""Summarizes a bench/kv_cache.sh run (the directory it wrote) as markdown.

Per KV format: bytes per token and how many sequences of the long context
fit a 4 GiB pool; decode tokens/s at batch 1 and 16 after short prompts and
at the long context (median per round, then min / median over rounds), the
ratio to the f32 cache, and attention's share of a long-context step (one
minus the short-context step time over the long-context one); greedy
agreement with the f32 cache per model.
"""
import glob
import json
import os
import statistics
import sys

POOL_BYTES = 4 << 30


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def main(out_dir):
    runs = {}  # (kv_dtype, context, batch) -> [tok_s_median per round]
    bytes_per_token = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "decode.r*.jsonl"))):
        for d in read_jsonl(path):
            if d["bench"] != "decode":
                continue
            runs.setdefault((d["kv_dtype"], d["context"], d["batch"]), []).append(d["tok_s_median"])
            bytes_per_token[d["kv_dtype"]] = d["kv_bytes_per_token"]
            model, weights = d["model"], d["format"]
    dtypes = list(bytes_per_token)
    contexts = sorted({c for _, c, _ in runs})
    batches = sorted({b for _, _, b in runs})
    long_ctx = contexts[-1]
    print(f"KV formats on {model} ({weights} weights); decode tokens/s, median of 3 runs per round, "
          f"min / median over {len(runs[next(iter(runs))])} rounds.\n")
    print(f"| KV | bytes/token | sequences of {long_ctx} in 4 GiB |")
    print("|---|---|---|")
    for k in dtypes:
        print(f"| {k} | {bytes_per_token[k]:,} | {POOL_BYTES // (bytes_per_token[k] * long_ctx)} |")
    print()
    header = "| KV | " + " | ".join(f"ctx {c} b{b}" for c in contexts for b in batches)
    header += " | " + " | ".join(f"vs f32 ctx {long_ctx} b{b}" for b in batches)
    header += " | " + " | ".join(f"attention share b{b}" for b in batches) + " |"
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    med = {key: statistics.median(v) for key, v in runs.items()}
    for k in dtypes:
        cells = [f"{min(runs[(k, c, b)]):.1f} / {med[(k, c, b)]:.1f}" for c in contexts for b in batches]
        cells += [f"{med[(k, long_ctx, b)] / med[('f32', long_ctx, b)]:.2f}x" if ("f32", long_ctx, b) in med else "-"
                  for b in batches]
        # tokens/s -> step time: batch / tok_s; the share is 1 - short / long.
        cells += [f"{1 - med[(k, long_ctx, b)] / med[(k, contexts[0], b)]:.2f}" for b in batches]
        print(f"| {k} | " + " | ".join(cells) + " |")
    agreement = os.path.join(out_dir, "agreement.jsonl")
    if os.path.exists(agreement):
        print("\nGreedy agreement with the f32 cache (prompts identical to the last token; mean agreeing prefix):\n")
        print("| model | KV | tokens (at most, by context) | identical | mean agreeing prefix | first difference per prompt "
              "| f32's top-1 margin there (nats) |")
        print("|---|---|---|---|---|---|---|")
        for d in read_jsonl(agreement):
            print(f"| {os.path.basename(d['model'])} | {d['kv_dtype']} | {min(d['tokens'], d['generated_max'])} | "
                  f"{d['identical']}/{d['prompts']} | {d['agreeing_prefix_mean']:.1f} | "
                  f"{', '.join(map(str, d['agreeing_prefix']))} | "
                  f"{', '.join(f'{m:.3f}' for m in d['f32_margin_at_difference'])} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/kv_cache")
