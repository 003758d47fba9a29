#!/usr/bin/env python3
"""Summarises bench/flat_latency.sh: time to first token against load, per
engine, over rounds.

    python bench/flat_latency.py OUT_DIR --out OUT_DIR/flat_latency

Reads OUT_DIR/<engine>.r<N>.sat.json (the saturation probe) and
<engine>.r<N>.load<F>.json (`zerolayer bench` at F x saturation). Writes
<out>.md (a table: TTFT P50 and P95 by load, min / median over rounds; the
server-reported queue; the flatness ratio P95 TTFT at 80% / P95 TTFT at
10%, per round), <out>.json (one object per engine and load) and, with
matplotlib (bench/requirements.txt), <out>.png.
"""
import argparse
import glob
import json
import os
import re
import statistics
import textwrap

NAME = re.compile(r"^(?P<engine>.+)\.r(?P<round>\d+)\.load(?P<load>[0-9.]+)\.json$")


def first_run(path):
    with open(path) as f:
        return json.load(f)["runs"][0]


def load_results(out_dir):
    """{engine: {load: {round: run}}} and {engine: {round: saturation}}."""
    passes, saturation = {}, {}
    for path in sorted(glob.glob(os.path.join(out_dir, "*.json"))):
        name = os.path.basename(path)
        m = NAME.match(name)
        if m:
            passes.setdefault(m["engine"], {}).setdefault(float(m["load"]), {})[int(m["round"])] = first_run(path)
            continue
        m = re.match(r"^(?P<engine>.+)\.r(?P<round>\d+)\.sat\.json$", name)
        if m:
            saturation.setdefault(m["engine"], {})[int(m["round"])] = first_run(path)["request_throughput"]
    return passes, saturation


def min_median(values):
    return (min(values), statistics.median(values)) if values else (float("nan"), float("nan"))


def flatness(by_load, high=0.8, low=0.1):
    """P95 TTFT at `high` / at `low`, per round that has both."""
    if high not in by_load or low not in by_load:
        return []
    rounds = sorted(set(by_load[high]) & set(by_load[low]))
    return [by_load[high][r]["p95_ttft_ms"] / by_load[low][r]["p95_ttft_ms"] for r in rounds]


def summarise(passes, saturation):
    rows = []
    for engine in sorted(passes):
        for load in sorted(passes[engine]):
            runs = list(passes[engine][load].values())
            rows.append({
                "engine": engine,
                "load": load,
                "rounds": len(runs),
                "saturation_req_s": min_median(list(saturation.get(engine, {}).values())),
                "rate_req_s": statistics.median(r["request_rate"] for r in runs),
                "achieved_req_s": min_median([r["request_throughput"] for r in runs]),
                "ttft_p50_ms": min_median([r["p50_ttft_ms"] for r in runs]),
                "ttft_p95_ms": min_median([r["p95_ttft_ms"] for r in runs]),
                "queue_p95_ms": min_median([r["p95_queue_ms"] for r in runs if r.get("p95_queue_ms") is not None]),
                "queued_fraction": min_median([r["queued_fraction"] for r in runs if r.get("queued_fraction") is not None]),
                "tpot_p50_ms": min_median([r["p50_tpot_ms"] for r in runs]),
            })
    return rows


def write_markdown(path, rows, passes, setup):
    fmt = lambda mm, d=1: f"{mm[0]:.{d}f} / {mm[1]:.{d}f}"  # noqa: E731
    lines = [f"Setup: {setup}", "",
             "Values are min / median over rounds; loads are fractions of each engine's own saturation.", "",
             "| engine | load | rate (req/s) | achieved (req/s) | TTFT P50 (ms) | TTFT P95 (ms) | queue P95 (ms) | queued | TPOT P50 (ms) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['engine']} | {r['load']:.0%} | {r['rate_req_s']:.3f} | {fmt(r['achieved_req_s'], 3)} | "
                     f"{fmt(r['ttft_p50_ms'])} | {fmt(r['ttft_p95_ms'])} | {fmt(r['queue_p95_ms'])} | "
                     f"{fmt(r['queued_fraction'], 2)} | {fmt(r['tpot_p50_ms'])} |")
    lines += ["", "| engine | saturation (req/s) | P95 TTFT at 80% / at 10%, per round | min / median |", "|---|---|---|---|"]
    for engine in sorted(passes):
        ratios = flatness(passes[engine])
        sat = next((r["saturation_req_s"] for r in rows if r["engine"] == engine), (float("nan"),) * 2)
        per_round = ", ".join(f"{x:.2f}" for x in ratios) or "n/a"
        lines.append(f"| {engine} | {fmt(sat, 2)} | {per_round} | {fmt(min_median(ratios), 2)} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def plot(path, passes, title):
    try:
        import matplotlib
    except ImportError:
        print("matplotlib missing (bench/requirements.txt): no plot")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for engine in sorted(passes):
        loads = sorted(passes[engine])
        for key, style in (("p95_ttft_ms", "-"), ("p50_ttft_ms", "--")):
            medians = [statistics.median(r[key] for r in passes[engine][load].values()) for load in loads]
            ax.plot([100 * x for x in loads], medians, style, marker="o", label=f"{engine} {key[:3].upper()}")
            for load in loads:
                ax.scatter([100 * load] * len(passes[engine][load]), [r[key] for r in passes[engine][load].values()],
                           s=8, alpha=0.4, color=ax.lines[-1].get_color())
    ax.set_xlabel("load (% of the engine's saturation)")
    ax.set_ylabel("TTFT (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title("\n".join(textwrap.wrap(title, 80)), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--out", required=True, help="path prefix of the .md, .json and .png written")
    parser.add_argument("--setup", default="", help="a line saying what ran")
    args = parser.parse_args()
    passes, saturation = load_results(args.out_dir)
    if not passes:
        raise SystemExit(f"no <engine>.r<N>.load<F>.json in {args.out_dir}")
    rows = summarise(passes, saturation)
    write_markdown(args.out + ".md", rows, passes, args.setup)
    with open(args.out + ".json", "w") as f:
        for r in rows:
            f.write(json.dumps(dict(r, bench="flat_latency", flatness_80_10=flatness(passes[r["engine"]]))) + "\n")
    plot(args.out + ".png", passes, args.setup)
    print(open(args.out + ".md").read())


if __name__ == "__main__":
    main()
