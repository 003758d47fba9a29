#!/usr/bin/env python3
"""Plots `zerolayer bench --result-file` JSON: latency and throughput against
request rate, one line per label (e.g. per engine; files with the same label are merged,
the median taken where a rate repeats).

    python bench/plot_bench.py zl.json llama.json --out latency.png

Panels: TTFT, TPOT, ITL and E2E (P50 dashed, P95 solid, P99 dotted) and
output-token throughput. Rates are evenly spaced categories ("inf" last), so
passes of a sweep line up even when the rates are not evenly spaced.
Needs matplotlib (bench/requirements.txt).
"""
import argparse
import json
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

METRICS = [("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2E")]
STYLES = {"p50": "--", "p95": "-", "p99": ":"}


def rate_key(rate):
    return float("inf") if rate == "inf" else float(rate)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="result files of zerolayer bench")
    parser.add_argument("--out", required=True, help="the PNG to write")
    parser.add_argument("--title", default="", help="a title over the panels")
    args = parser.parse_args()

    # Files with the same label (rounds of one engine, or passes at other
    # rates) are merged: one line per label, the median where rates repeat.
    by_label = {}
    for path in args.results:
        with open(path) as f:
            data = json.load(f)
        label = data.get("label") or data.get("model") or path
        for run in data["runs"]:
            by_label.setdefault(label, {}).setdefault(str(run["request_rate"]), []).append(run)
    results = []
    for label, by_rate in by_label.items():
        runs = []
        for rate in sorted(by_rate, key=rate_key):
            merged = {"request_rate": rate}
            for key, value in by_rate[rate][0].items():
                values = [r.get(key) for r in by_rate[rate]]
                if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                    merged[key] = statistics.median(values)
            runs.append(merged)
        results.append((label, runs))
    rates = sorted({str(r["request_rate"]) for _, runs in results for r in runs}, key=rate_key)
    x_of = {rate: i for i, rate in enumerate(rates)}

    fig, axes = plt.subplots(1, len(METRICS) + 1, figsize=(4.2 * (len(METRICS) + 1), 4))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for color, (label, runs) in zip(colors, results):
        xs = [x_of[str(r["request_rate"])] for r in runs]
        for ax, (key, name) in zip(axes, METRICS):
            for pct, style in STYLES.items():
                ys = [r.get(f"{pct}_{key}_ms") for r in runs]
                if any(y is None for y in ys):
                    continue
                ax.plot(xs, ys, style, marker="o", color=color, label=f"{label} {pct.upper()}")
            ax.set_title(f"{name} (ms)")
        axes[-1].plot(xs, [r["output_throughput"] for r in runs], "-", marker="o", color=color, label=label)
        axes[-1].set_title("output tokens/s")
    for ax in axes:
        ax.set_xticks(range(len(rates)), rates)
        ax.set_xlabel("request rate (req/s)")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    axes[-1].legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


if __name__ == "__main__":
    main()
