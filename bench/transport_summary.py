#!/usr/bin/env python3
"""Summarizes rounds of shm_bench and http_bench JSON lines (as written by
bench/transport_bench.sh): one row per figure and client count, with the
minimum and median over rounds of its P50 and P99 in microseconds, and the
conditions shm_bench recorded (spin settings, engine threads, load average).

    python3 bench/transport_summary.py rounds.jsonl
"""
import json
import statistics
import sys


def figure_name(line):
    """A figure's name across both benchmarks' line formats, or None."""
    if line.get("bench") == "http":
        return f"{line['transport']} per {line['per']}"
    if "p50" in line:
        return f"{line['bench']} {line['metric']}"
    return None


def quantiles(line):
    return (line["p50"], line["p99"]) if "p50" in line else (line["p50_us"], line["p99_us"])


def main(path):
    rows, conditions, waits = {}, set(), {}
    with open(path) as f:
        for text in f:
            if not text.startswith("{"):
                continue
            line = json.loads(text)
            if line.get("metric") == "waits":
                waits.setdefault(line["clients"], []).append(line["woken_share"])
            if "spin_us" in line:
                conditions.add((line["spin_us"], line["adaptive_spin_us"], line["engine_threads"], line["cpus"]))
            name = figure_name(line)
            if name is not None:
                rows.setdefault((name, line["clients"]), []).append(quantiles(line))
    for spin, adaptive, threads, cpus in sorted(conditions):
        print(f"shm client spin {spin} us, adaptive spin bound {adaptive} us, engine threads {threads}, {cpus} CPUs")
    for clients, shares in sorted(waits.items()):
        print(f"shm, {clients} clients: share of records read after a futex wake-up, per round: "
              + ", ".join(f"{s:.2f}" for s in shares))
    print()
    print("| figure | clients | rounds | P50 min | P50 median | P99 min | P99 median |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (name, clients), values in sorted(rows.items()):
        p50s, p99s = [v[0] for v in values], [v[1] for v in values]
        print(f"| {name} | {clients} | {len(values)} | {min(p50s):.1f} | {statistics.median(p50s):.1f} "
              f"| {min(p99s):.1f} | {statistics.median(p99s):.1f} |")


if __name__ == "__main__":
    main(sys.argv[1])
