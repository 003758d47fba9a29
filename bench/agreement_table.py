#!/usr/bin/env python3
"""Compares `zerolayer bench` with aiperf on one server and workload (files
written by bench/compare_external_loadgen.sh): per round and as the median
over rounds, mean/P50/P95 TTFT, output tokens/s and requests/s as each tool
measured them, and the relative difference (zerolayer bench / aiperf - 1).
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
    for r in range(1, args.rounds + 1):
        with open(os.path.join(args.dir, f"zerolayer-bench.r{r}.json")) as f:
            zl = json.load(f)
        zl_run = zl["runs"][0]
        exports = [os.path.join(args.dir, f"aiperf.r{r}.json")]
        exports += glob.glob(os.path.join(args.dir, f"aiperf.r{r}", "**", "profile_export_aiperf.json"), recursive=True)
        with open(next(p for p in exports if os.path.exists(p))) as f:
            ai = json.load(f)
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
    for name, *_ in METRICS:  # the median over rounds of each tool's figure
        of = [row for row in rows if row["metric"] == name and row["aiperf"] is not None]
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
