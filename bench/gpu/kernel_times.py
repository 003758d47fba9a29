"""Splits a decode step's device time by kernel, from the Nsight Compute CSV
that bench/gpu/run_on_device.sh writes (ncu.csv: "# batch B" lines, each
followed by ncu --csv --metrics gpu__time_duration.sum output for a
gpu_bench run at that batch size).

Prints, per batch size, each kernel (name shortened) with its launches per
step, its device time per step in microseconds, and its share; steps are
counted by the argmax kernel, which runs once per forward pass.

Usage: python3 bench/gpu/kernel_times.py ncu.csv
"""
import csv
import re
import sys
from collections import defaultdict


def short_name(name):
    name = re.sub(r"\(.*", "", name)            # argument list
    name = re.sub(r"<.*>", "", name)            # template arguments
    name = name.split("::")[-1]
    return name[:48]


def main():
    sections, batch = defaultdict(list), None
    for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
        if line.startswith("# batch"):
            batch = int(line.split()[2])
        elif line.startswith('"') and batch is not None:
            sections[batch].append(line)
    for batch, lines in sections.items():
        rows = list(csv.DictReader(lines))
        times, counts = defaultdict(float), defaultdict(int)
        for r in rows:
            if r.get("Metric Name") != "gpu__time_duration.sum":
                continue
            scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(r["Metric Unit"], float("nan"))
            value = float(r["Metric Value"].replace(",", "")) * scale
            name = short_name(r["Kernel Name"])
            times[name] += value
            counts[name] += 1
        steps = max((c for n, c in counts.items() if "argmax" in n), default=0)
        if steps == 0:
            print(f"batch {batch}: no argmax kernel profiled")
            continue
        total = sum(times.values()) / steps
        print(f"batch {batch}: {steps} steps profiled, {total:.1f} us of kernels per step")
        for name, t in sorted(times.items(), key=lambda kv: -kv[1]):
            print(f"  {name:48s} {counts[name] / steps:6.1f}/step {t / steps:9.1f} us {100 * t / steps / total:5.1f}%")


if __name__ == "__main__":
    main()
