"""Table of command.sh's output: per format and bench, min / median tokens/s
over every run of every round (llama.cpp: its per-run samples; zerolayer: the
per-run figures are not printed, so min / median of the rounds' medians and
the overall min), per build label (DBS in command.sh), with zerolayer's fraction of the bandwidth it
measured in the same invocation, and llama.cpp's decode at batch 1 as a fraction of that bandwidth
(its tok/s x zerolayer's weight bytes of that format / the median bandwidth zerolayer measured for it).
Since 2ec3e31 decode_bench pairs each decode run with a read of the weights
just before it; prefill lines carry null fractions.  Usage: python3 summarize.py run.jsonl"""
import json
import statistics
import sys
from collections import defaultdict

lcp = defaultdict(list)   # (format, bench) -> samples
zl = defaultdict(list)    # (format, bench, batch, build) -> lines
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    d = json.loads(line)
    if d.get("engine") == "llama.cpp":
        lcp[(d["format"], d["bench"])] += d["samples_ts"]
    elif d.get("bench") in ("prefill", "decode"):
        zl[(d["file_format"], d["bench"], d["batch"], d.get("build", "-"))].append(d)

print("| format | bench | batch | build | zerolayer tok/s min / median | bw fraction (median) | llama.cpp tok/s min / median | llama.cpp bw fraction | ratio of medians |")
print("|---|---|---|---|---|---|---|---|---|")
for (fmt, bench, batch, build), rows in sorted(zl.items()):
    meds = [r["tok_s_median"] for r in rows]
    lo = min(r["tok_s_min"] for r in rows)
    med = statistics.median(meds)
    frac = statistics.median(r["bw_fraction"] for r in rows) if bench == "decode" else None
    other = lcp.get((fmt, bench)) if batch == 1 else None
    lc = f"{min(other):.2f} / {statistics.median(other):.2f}" if other else "-"
    ratio = f"{med / statistics.median(other):.2f}" if other else "-"
    fr = f"{frac:.2f}" if frac is not None else "-"
    lfr = "-"
    if other and bench == "decode":
        gbs = statistics.median(r["bandwidth_gbs"] for r in rows)
        lfr = f"{statistics.median(other) * rows[0]['weight_bytes'] / 1e9 / gbs:.2f}"
    print(f"| {fmt} | {bench} | {batch} | {build} | {lo:.2f} / {med:.2f} | {fr} | {lc} | {lfr} | {ratio} |")
bw = [r["bandwidth_gbs"] for rows in zl.values() for r in rows if r.get("bandwidth_gbs") is not None]
if bw:
    print(f"\nmeasured bandwidth over the run: {min(bw):.1f}-{max(bw):.1f} GB/s (median {statistics.median(bw):.1f})")
