#!/usr/bin/env python3
"""Compares `zerolayer bench` with aiperf on one server and workload (files
written by bench/compare_external_loadgen.sh): per round and as the median
over rounds (and pooled: all requests, tokens and time of every round), mean/
P50/P95 TTFT, output tokens/s and requests/s as each tool measured them, and the relative difference (zerolayer bench / aiperf - 1).
Writes OUT.md and OUT.json.
"""
import argparse
import datetime
import glob
import json
import os
import statistics

# (what, zerolayer bench key, aiperf metric tag, aiperf statistic)
METRICS = [
    ("mean TTFT (ms)", "mean_ttft_ms", "time_to_first_token", "avg"),
    ("P50 TTFT (ms)", "median_ttft_ms", "time_to_first_token", "p50"),
    ("P95 TTFT (ms)", "p95_ttft_ms", "time_to_first_token", "p95"),
    ("output tokens/s", "output_throughput", "output_token_throughput", "avg"),
    ("requests/s", "request_throughput", "request_throughput", "avg"),
]
AGREEMENT = 0.05  # the bar: within 5%


def aiperf_value(data, tag, stat):
    node = data.get(tag)
    if node is None and isinstance(data.get("records"), dict):
        node = data["records"].get(tag)
    if isinstance(node, dict):
        return node.get(stat)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dir", help="the runner's output folder")
    parser.add_argument("--out", required=True, help="path without extension")
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--setup", default="")
    args = parser.parse_args()

    rows = []
    zl_runs, ai_runs = {}, {}
    for r in range(1, args.rounds + 1):
        with open(os.path.join(args.dir, f"zerolayer-bench.r{r}.json")) as f:
            zl = json.load(f)
        zl_run = zl["runs"][0]
        exports = [os.path.join(args.dir, f"aiperf.r{r}.json")]
        exports += glob.glob(os.path.join(args.dir, f"aiperf.r{r}", "**", "profile_export_aiperf.json"), recursive=True)
        with open(next(p for p in exports if os.path.exists(p))) as f:
            ai = json.load(f)
        zl_runs[r], ai_runs[r] = zl_run, ai
        load = ""
        uptime_path = os.path.join(args.dir, f"round{r}.uptime")
        if os.path.exists(uptime_path):
            with open(uptime_path) as f:
                load = " / ".join(line.split("load average:")[-1].strip() for line in f)
        for name, zl_key, tag, stat in METRICS:
            a = aiperf_value(ai, tag, stat)
            z = zl_run.get(zl_key)
            diff = (z / a - 1.0) if a else None
            rows.append({"round": r, "metric": name, "zerolayer_bench": z, "aiperf": a, "relative_difference": diff,
                         "load_average": load, "zerolayer_bench_command": zl["command"]})
    # Pooled over rounds: mean TTFT weighted by requests, throughput as all
    # tokens (requests) over all the time measured; percentiles do not pool
    # from summaries (bench/agreement_detail.py pools them from each request).
    pooled = {"zl": [0.0, 0, 0, 0.0], "ai": [0.0, 0, 0, 0.0]}  # ttft sum, requests, tokens, seconds
    for r in range(1, args.rounds + 1):
        zl_run = zl_runs[r]
        pooled["zl"][0] += zl_run["mean_ttft_ms"] * zl_run["completed"]
        pooled["zl"][1] += zl_run["completed"]
        pooled["zl"][2] += zl_run["total_output_tokens"]
        pooled["zl"][3] += zl_run["duration"]
        ai = ai_runs[r]
        n = aiperf_value(ai, "request_count", "avg")
        pooled["ai"][0] += aiperf_value(ai, "time_to_first_token", "avg") * n
        pooled["ai"][1] += n
        pooled["ai"][2] += aiperf_value(ai, "total_output_tokens", "avg")
        pooled["ai"][3] += aiperf_value(ai, "benchmark_duration", "avg")
    z, a = pooled["zl"], pooled["ai"]
    for name, zv, av in [("mean TTFT (ms)", z[0] / z[1], a[0] / a[1]), ("output tokens/s", z[2] / z[3], a[2] / a[3]),
                         ("requests/s", z[1] / z[3], a[1] / a[3])]:
        rows.append({"round": "all", "metric": name, "zerolayer_bench": zv, "aiperf": av,
                     "relative_difference": zv / av - 1.0, "load_average": "", "zerolayer_bench_command": ""})
    for name, *_ in METRICS:  # the median over rounds of each tool's figure
        of = [row for row in rows
              if row["metric"] == name and isinstance(row["round"], int) and row["aiperf"] is not None]
        if len(of) > 1:
            z = statistics.median(row["zerolayer_bench"] for row in of)
            a = statistics.median(row["aiperf"] for row in of)
            rows.append({"round": "median", "metric": name, "zerolayer_bench": z, "aiperf": a,
                         "relative_difference": z / a - 1.0, "load_average": "", "zerolayer_bench_command": ""})
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [f"# zerolayer bench vs aiperf ({date})", "", f"- setup: {args.setup}",
             f"- bar: |difference| <= {AGREEMENT:.0%}", "",
             "| round | metric | zerolayer bench | aiperf | difference | within 5% | load average (before / after) |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        d = row["relative_difference"]
        ok = "n/a" if d is None else ("yes" if abs(d) <= AGREEMENT else "no")
        fmt = lambda v: "n/a" if v is None else f"{v:.2f}"
        lines.append(f"| {row['round']} | {row['metric']} | {fmt(row['zerolayer_bench'])} | {fmt(row['aiperf'])} | "
                     + ("n/a" if d is None else f"{d:+.1%}") + f" | {ok} | {row['load_average']} |")
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(args.out + ".json", "w") as f:
        json.dump({"date": date, "setup": args.setup, "rows": rows}, f, indent=2)
        f.write("\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
