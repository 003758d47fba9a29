#!/usr/bin/env python3
"""Writes the side-by-side table (markdown and JSON) from `zerolayer bench`
result files of several engines: per engine and request rate, P95 TTFT and
throughput, the median over rounds (and the spread when there are several),
and zerolayer's ratio to the best peer at each rate.

    python bench/compare_table.py --out DIR/comparison --setup "..." DIR/*.r*.json

Also records the machine (CPU model, cores, memory), the date, the load
average beside each run (<result>.uptime, written by the runner) and the
exact server (<result>.server-cmd) and bench commands.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
from collections import defaultdict


def rate_key(rate):
    return float("inf") if rate == "inf" else float(rate)


def machine():
    cpu = "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                cpu = line.split(":", 1)[1].strip()
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} logical CPUs, {mem_gib:.0f} GiB, {platform.system()} {platform.release()}"


def load(paths):
    by_engine = defaultdict(lambda: defaultdict(list))  # engine -> rate -> [run]
    commands, loads = [], []
    for path in sorted(paths):
        with open(path) as f:
            data = json.load(f)
        engine = data.get("label") or path
        commands.append(data["command"])
        server_cmd_path = path[: -len(".json")] + ".server-cmd"
        if os.path.exists(server_cmd_path):
            with open(server_cmd_path) as f:
                commands.append(f.read().strip())
        uptime_path = path[: -len(".json")] + ".uptime"
        if os.path.exists(uptime_path):
            with open(uptime_path) as f:
                loads.append(f"{os.path.basename(path)}: " + " / ".join(
                    line.split("load average:")[-1].strip() for line in f if "load average" in line))
        for run in data["runs"]:
            by_engine[engine][str(run["request_rate"])].append(run)
    return by_engine, commands, loads


def cell(values, fmt):
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return fmt.format(med) + " (" + fmt.format(min(values)) + "–" + fmt.format(max(values)) + ")"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+")
    parser.add_argument("--out", required=True, help="path without extension: writes .md and .json")
    parser.add_argument("--setup", default="", help="one line on model, threads and server flags")
    parser.add_argument("--vllm-note", default="not run", help="why vLLM has no row")
    parser.add_argument("--baseline", default="zerolayer", help="the engine compared with the best peer")
    args = parser.parse_args()

    by_engine, commands, loads = load(args.results)
    rates = sorted({r for runs in by_engine.values() for r in runs}, key=rate_key)
    summary = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "machine": machine(), "setup": args.setup, "commands": commands, "load_average": loads,
               "vllm": args.vllm_note, "rows": []}
    lines = [f"# zerolayer vs peers under load ({summary['date']})", "",
             f"- machine: {summary['machine']}", f"- setup: {args.setup}",
             "- load average (1/5/15 min) before / after each run: " + "; ".join(loads),
             f"- vLLM: {args.vllm_note}", "",
             "| engine | rate (req/s) | P95 TTFT (ms) | median TTFT (ms) | req/s | output tok/s | P95 TPOT (ms) | failed |",
             "|---|---|---|---|---|---|---|---|"]
    for rate in rates:
        for engine in sorted(by_engine):
            runs = by_engine[engine].get(rate)
            if not runs:
                continue
            row = {"engine": engine, "request_rate": rate, "rounds": len(runs),
                   "p95_ttft_ms": statistics.median(r["p95_ttft_ms"] for r in runs),
                   "median_ttft_ms": statistics.median(r["median_ttft_ms"] for r in runs),
                   "request_throughput": statistics.median(r["request_throughput"] for r in runs),
                   "output_throughput": statistics.median(r["output_throughput"] for r in runs),
                   "p95_tpot_ms": statistics.median(r["p95_tpot_ms"] for r in runs),
                   "failed": sum(r["failed"] for r in runs)}
            summary["rows"].append(row)
            lines.append(f"| {engine} | {rate} | {cell([r['p95_ttft_ms'] for r in runs], '{:.0f}')} | "
                         f"{cell([r['median_ttft_ms'] for r in runs], '{:.0f}')} | "
                         f"{cell([r['request_throughput'] for r in runs], '{:.2f}')} | "
                         f"{cell([r['output_throughput'] for r in runs], '{:.1f}')} | "
                         f"{cell([r['p95_tpot_ms'] for r in runs], '{:.0f}')} | {row['failed']} |")
    lines += ["", f"Ratios, {args.baseline} / best other engine at the same rate "
              "(P95 TTFT: lower is better, goal <= 0.5; throughput: higher is better, goal >= 1):", "",
              "| rate (req/s) | P95 TTFT ratio | output tok/s ratio |", "|---|---|---|"]
    summary["ratios"] = []
    for rate in rates:
        rows = [r for r in summary["rows"] if r["request_rate"] == rate]
        base = [r for r in rows if r["engine"] == args.baseline]
        peers = [r for r in rows if r["engine"] != args.baseline]
        if not base or not peers:
            continue
        ttft = base[0]["p95_ttft_ms"] / min(p["p95_ttft_ms"] for p in peers)
        tput = base[0]["output_throughput"] / max(p["output_throughput"] for p in peers)
        summary["ratios"].append({"request_rate": rate, "p95_ttft_ratio": ttft, "output_throughput_ratio": tput})
        lines.append(f"| {rate} | {ttft:.2f} | {tput:.2f} |")
    lines += ["", "Cells: median over rounds (min–max when more than one). Commands:", ""]
    lines += [f"    {c}" for c in dict.fromkeys(commands)]
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(args.out + ".json", "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
