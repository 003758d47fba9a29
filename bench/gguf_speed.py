#!/usr/bin/env python3
"""The table of bench/gguf_speed.sh: per file, zerolayer's decode (batch 1)
and prefill-512 tokens/s beside llama-bench's on the same file, per round and
over the rounds.

    python3 bench/gguf_speed.py OUT_DIR > OUT_DIR/summary.jsonl   # also OUT_DIR/summary.md

Per round: zerolayer's median over its runs (decode_bench) against
llama-bench's mean over its repetitions, and their ratio; the fraction of the
read bandwidth is decode_bench's (weight bytes per token over the step time,
against a read of the weights timed before each decode run). Over the rounds:
the min and median of each ratio. One JSON line per file.
"""

import glob
import json
import os
import re
import statistics
import sys


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def round_figures(out_dir, stem, rnd):
    """{decode|prefill: (ours median, ours min, llama.cpp mean)} and our bandwidth fraction."""
    ours = {r["bench"]: r for r in read_jsonl(f"{out_dir}/zl.{stem}.r{rnd}.jsonl")}
    peer = {("prefill" if r["n_prompt"] else "decode"): r for r in read_jsonl(f"{out_dir}/lcpp.{stem}.r{rnd}.jsonl")}
    figures = {k: (ours[k]["tok_s_median"], ours[k]["tok_s_min"], peer[k]["avg_ts"]) for k in ("decode", "prefill")}
    return figures, ours["decode"]["bw_fraction"], ours["decode"]["weight_bytes"]


def summarize(out_dir, stem, rounds):
    per_round = [round_figures(out_dir, stem, r) for r in rounds]
    line = {"file": stem, "rounds": len(rounds), "weight_bytes": per_round[0][2]}
    for kind in ("decode", "prefill"):
        ratios = [f[kind][0] / f[kind][2] for f, _, _ in per_round]
        line[kind] = {"zerolayer_median": [f[kind][0] for f, _, _ in per_round],
                      "zerolayer_min": [f[kind][1] for f, _, _ in per_round],
                      "llama_cpp_mean": [round(f[kind][2], 2) for f, _, _ in per_round],
                      "ratio_min": round(min(ratios), 3), "ratio_median": round(statistics.median(ratios), 3)}
    line["decode"]["bw_fraction"] = [bw for _, bw, _ in per_round]
    return line


def markdown(lines):
    out = ["| file | weights (MB) | decode tok/s, zerolayer median per round | llama.cpp mean | ratio min / median "
           "| bandwidth fraction | prefill-512 tok/s, zerolayer median | llama.cpp mean | ratio min / median |",
           "|---|---|---|---|---|---|---|---|---|"]
    for ln in lines:
        d, p = ln["decode"], ln["prefill"]
        cells = [ln["file"], f"{ln['weight_bytes'] / 1e6:.0f}",
                 " / ".join(f"{v:.1f}" for v in d["zerolayer_median"]),
                 " / ".join(f"{v:.1f}" for v in d["llama_cpp_mean"]), f"{d['ratio_min']:.2f} / {d['ratio_median']:.2f}",
                 " / ".join(f"{v:.2f}" for v in d["bw_fraction"]),
                 " / ".join(f"{v:.1f}" for v in p["zerolayer_median"]),
                 " / ".join(f"{v:.1f}" for v in p["llama_cpp_mean"]), f"{p['ratio_min']:.2f} / {p['ratio_median']:.2f}"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main():
    out_dir = sys.argv[1]
    runs = {}
    for path in glob.glob(f"{out_dir}/zl.*.r*.jsonl"):
        m = re.fullmatch(r"zl\.(.+)\.r(\d+)\.jsonl", os.path.basename(path))
        runs.setdefault(m.group(1), []).append(int(m.group(2)))
    lines = [summarize(out_dir, stem, sorted(rounds)) for stem, rounds in sorted(runs.items())]
    for ln in lines:
        print(json.dumps(ln))
    with open(f"{out_dir}/summary.md", "w") as f:
        f.write(markdown(lines))


if __name__ == "__main__":
    main()
