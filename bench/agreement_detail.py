#!/usr/bin/env python3
"""Per-request look at a zerolayer bench vs aiperf run (bench/compare_external_loadgen.sh
with DETAIL=1): why do the two tools' TTFT figures differ, and by more than chance?

Reads, for each round N in DIR, zerolayer-bench.rN.json (--save-detailed) and
aiperf.rN.jsonl.gz (aiperf's per-request records, profiling phase only) and prints
a markdown report:
  - each tool's TTFT mean and P50/P95 recomputed from its own requests with one
    definition (numpy's linear percentiles), beside what the tool itself reported:
    a difference there would be a definition or aggregation difference;
  - pooled over the rounds, the zerolayer/aiperf - 1 differences with 95%
    bootstrap intervals (resampling each tool's requests): an interval that holds
    0 is a difference chance alone explains;
  - the same in the steady state, where both tools load the server alike: from
    the end of each tool's first CONCURRENCY requests (the runner starts
    zerolayer bench once aiperf's warm-up has finished, so aiperf's first prompts
    are always being prefilled when zerolayer bench's first ones arrive, which
    then wait a whole prefill step more) to the earlier of the two tools' last
    starts (after it one tool runs alone on a server half as loaded);
  - each tool's first wave of requests, round by round (the start-up ordering);
  - requests of the two tools whose first tokens came out of one engine step
    (wall-clock first-token times less than 50 ms apart): how far apart the two
    tools timestamped the same moment, i.e. the tools' own measurement error;
  - TTFT against prompt length (least squares per tool), to compare the tools at
    equal prompt lengths, and the prompt and output lengths each tool sent.

  bench/agreement_detail.py bench/results/agreement_detail > report.md
"""
import argparse
import gzip
import json
from pathlib import Path

import numpy as np


def zerolayer_requests(path):
    doc = json.loads(path.read_text())
    run = doc["runs"][0]
    start = run["start_unix_ns"] / 1e9
    ok = [i for i, e in enumerate(run["errors"]) if not e]
    return {
        "concurrency": run["max_concurrency"],
        "start": np.array([start + run["start_times"][i] for i in ok]),
        "end": np.array([start + run["start_times"][i] + run["e2els"][i] for i in ok]),
        "ttft": np.array([run["ttfts"][i] * 1e3 for i in ok]),
        "isl": np.array([run["input_lens"][i] for i in ok]),
        "osl": np.array([run["output_lens"][i] for i in ok]),
        "reported": {"mean": run["mean_ttft_ms"], "p50": run["p50_ttft_ms"], "p95": run["p95_ttft_ms"]},
    }


def aiperf_requests(jsonl_path, summary_path):
    start, end, ttft, isl, osl = [], [], [], [], []
    with gzip.open(jsonl_path, "rt") as f:
        for line in f:
            record = json.loads(line)
            meta, metrics = record["metadata"], record.get("metrics") or {}
            if meta.get("benchmark_phase") != "profiling" or record.get("error") or "time_to_first_token" not in metrics:
                continue
            start.append(meta["request_start_ns"] / 1e9)
            end.append(meta["request_end_ns"] / 1e9)
            ttft.append(metrics["time_to_first_token"]["value"])  # ms in the export
            isl.append(metrics.get("input_sequence_length", {}).get("value", np.nan))
            osl.append(metrics.get("output_sequence_length", {}).get("value", np.nan))
    summary = json.loads(summary_path.read_text())["time_to_first_token"]
    return {
        "start": np.array(start), "end": np.array(end), "ttft": np.array(ttft), "isl": np.array(isl, float), "osl": np.array(osl, float),
        "reported": {"mean": summary["avg"], "p50": summary["p50"], "p95": summary["p95"]},
    }


def stats(ttft):
    return {"mean": float(np.mean(ttft)), "p50": float(np.percentile(ttft, 50)), "p95": float(np.percentile(ttft, 95))}


def bootstrap(z, a, rng, num=4000):
    """95% intervals of zerolayer/aiperf - 1 for mean, P50 and P95, each tool resampled on its own."""
    out = {k: [] for k in ("mean", "p50", "p95")}
    for _ in range(num):
        sz, sa = stats(rng.choice(z, z.size)), stats(rng.choice(a, a.size))
        for k in out:
            out[k].append(sz[k] / sa[k] - 1)
    return {k: (float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))) for k, v in out.items()}


def pct(x):
    return f"{100 * x:+.1f}%"


def comparison_rows(label, z, a, rng):
    sz, sa, ci = stats(z), stats(a), bootstrap(z, a, rng)
    rows = []
    for k, name in (("mean", "mean"), ("p50", "P50"), ("p95", "P95")):
        lo, hi = ci[k]
        rows.append(f"| {label} | {name} TTFT (ms) | {len(z)} / {len(a)} | {sz[k]:.1f} | {sa[k]:.1f} | "
                    f"{pct(sz[k] / sa[k] - 1)} | [{pct(lo)}, {pct(hi)}] |")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    rounds = sorted(int(p.name.split(".r")[1].split(".")[0]) for p in args.dir.glob("zerolayer-bench.r*.json"))
    tools = {"zerolayer": [], "aiperf": []}
    print("## Each tool's TTFT, recomputed from its requests vs as it reported (ms)\n")
    print("| round | tool | n | mean (recomputed / reported) | P50 | P95 |")
    print("|---|---|---|---|---|---|")
    for r in rounds:
        z = zerolayer_requests(args.dir / f"zerolayer-bench.r{r}.json")
        a = aiperf_requests(args.dir / f"aiperf.r{r}.jsonl.gz", args.dir / f"aiperf.r{r}.json")
        # Steady state: each tool's first wave of requests over, both still sending.
        wave = z["concurrency"] or 1
        lo = max(np.sort(z["end"])[wave - 1], np.sort(a["end"])[wave - 1])
        hi = min(z["start"].max(), a["start"].max())
        for name, d in (("zerolayer", z), ("aiperf", a)):
            d["steady"] = (d["start"] >= lo) & (d["start"] <= hi)
            s, rep = stats(d["ttft"]), d["reported"]
            print(f"| {r} | {name} | {d['ttft'].size} | {s['mean']:.1f} / {rep['mean']:.1f} | "
                  f"{s['p50']:.1f} / {rep['p50']:.1f} | {s['p95']:.1f} / {rep['p95']:.1f} |")
            tools[name].append(d)
    cat = {name: {k: np.concatenate([d[k] for d in ds]) for k in ("ttft", "isl", "osl", "steady")}
           for name, ds in tools.items()}
    z, a = cat["zerolayer"], cat["aiperf"]
    print("\n## zerolayer bench / aiperf - 1, pooled over the rounds, with 95% bootstrap intervals\n")
    print("| requests | metric | n (zerolayer / aiperf) | zerolayer | aiperf | difference | 95% interval |")
    print("|---|---|---|---|---|---|---|")
    for row in comparison_rows("all", z["ttft"], a["ttft"], rng):
        print(row)
    for row in comparison_rows("steady state", z["ttft"][z["steady"]], a["ttft"][a["steady"]], rng):
        print(row)
    print("\n## Each tool's first wave of requests (TTFT, ms; zerolayer bench starts after aiperf)\n")
    print("| round | zerolayer bench | aiperf |")
    print("|---|---|---|")
    for r, z, a in zip(rounds, tools["zerolayer"], tools["aiperf"]):
        first = lambda d: ", ".join(f"{v:.0f}" for v in d["ttft"][np.argsort(d["start"])[: z["concurrency"] or 1]])
        print(f"| {r} | {first(z)} | {first(a)} |")
    gaps = []
    for z, a in zip(tools["zerolayer"], tools["aiperf"]):
        first_a = a["start"] + a["ttft"] / 1e3
        for t in z["start"] + z["ttft"] / 1e3:
            gap = t - first_a[np.argmin(np.abs(first_a - t))]
            if abs(gap) < 0.05:
                gaps.append(gap * 1e3)
    if gaps:
        print(f"\n## First tokens of one engine step, as each tool timestamped them\n\n{len(gaps)} pairs: zerolayer bench "
              f"- aiperf = median {np.median(gaps):+.2f} ms, P10 {np.percentile(gaps, 10):+.2f} ms, "
              f"P90 {np.percentile(gaps, 90):+.2f} ms")
    print("\n## TTFT against prompt length (least squares, pooled)\n")
    print("| tool | prompt tokens mean (sd) | output tokens mean (sd) | TTFT = a + b * prompt tokens | TTFT at 128 tokens |")
    print("|---|---|---|---|---|")
    for name, d in cat.items():
        b, a0 = np.polyfit(d["isl"], d["ttft"], 1)
        print(f"| {name} | {np.mean(d['isl']):.1f} ({np.std(d['isl']):.1f}) | {np.nanmean(d['osl']):.1f} "
              f"({np.nanstd(d['osl']):.1f}) | {a0:.0f} ms + {b:.2f} ms/token | {a0 + 128 * b:.0f} ms |")


if __name__ == "__main__":
    main()
