#!/usr/bin/env python3
"""Replicas behind vllm-router: where users land, the cluster's prefix-cache
hit rate, and throughput and TTFT of 1 against 3 replicas.

    .venv/bin/python bench/replicas.py [--runs 3] [--out DIR]

Workload: USERS users, each sending ROUNDS requests that share its own
PREFIX-token prefix (token ids, so no tokenizer is involved), a round at a
time (a user's next request follows the cluster's answer to its last),
CONCURRENCY requests in flight. Model dummy:tiny-4k, each replica on one
compute thread. Prints one JSON line per (setup, run) and a summary with the
min and median over the runs; --out also writes them there.

On a 2-core machine three replicas share two cores with the router and the
client: the 1-against-3 figures show the router's and the replicas' overhead
and the cache effect, not scaling, which needs a core (or a GPU) per replica.
Paths: ZEROLAYER_BIN, VLLM_ROUTER (see replica_cluster.py).
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replica_cluster as rc  # noqa: E402


def one_run(setup, run, args):
    rounds = rc.user_prompts(args.users, args.prefix, args.rounds, seed=run)
    n = 1 if setup == "single" else 3
    reps = [rc.Replica(i, "--kv-cache-memory", "256M", "--threads", "1") for i in range(n)]
    router = rc.Router(setup, reps) if setup != "single" else None
    try:
        port = router.port if router else reps[0].port
        figures = rc.measure(reps, port, rounds, args.concurrency, args.max_tokens)
    finally:
        if router:
            router.stop()
        for r in reps:
            r.stop()
    return {"setup": setup, "run": run, **figures}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--users", type=int, default=20)
    p.add_argument("--prefix", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--setups", default="single,kv_aware,cache_aware,round_robin")
    p.add_argument("--out", help="directory for runs.jsonl and summary.json")
    args = p.parse_args()
    rows = []
    for run in range(args.runs):
        for setup in args.setups.split(","):
            rows.append(one_run(setup, run, args))
            print(json.dumps(rows[-1]), flush=True)
    summary = {}
    for setup in args.setups.split(","):
        mine = [r for r in rows if r["setup"] == setup]
        summary[setup] = {k: {"min": min(r[k] for r in mine), "median": statistics.median(r[k] for r in mine)}
                          for k in ("hit_rate", "users_on_one_replica", "requests_per_s", "ttft_p50_ms", "ttft_p90_ms")}
    single = summary.get("single", {}).get("hit_rate", {}).get("median")
    for setup, s in summary.items():
        if single:
            s["hit_rate_vs_single"] = s["hit_rate"]["median"] / single
    print(json.dumps({"summary": summary, "args": vars(args)}, indent=1))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (out / "summary.json").write_text(json.dumps({"summary": summary, "args": vars(args)}, indent=1) + "\n")


if __name__ == "__main__":
    main()
