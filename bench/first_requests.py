#!/usr/bin/env python3
"""Full speed from the first request: TTFT of a server's first requests
against the same load a little later.

    .venv/bin/python bench/first_requests.py [--runs 3] [--serve-args=--no-kv-populate] [--out FILE]

Starts `zerolayer serve` (ZEROLAYER_BIN, default build/zerolayer) on
dummy:llama-110m quantized to q8_0, waits for /health, then sends
2 x --requests streamed completions (--prompt-tokens random token ids,
--max-tokens outputs) at --rate requests a second, evenly spaced, and
compares TTFT P50/P95 of the first half with the second. A server that
faults its KV pool and weights in during its first requests shows a first
half slower than the second. Prints one JSON line per run and the start-up
log's own timings (populate, warm-up).
"""

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replica_cluster as rc  # noqa: E402


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else None


def one_run(args, run):
    port = rc.free_port()
    log = tempfile.NamedTemporaryFile(prefix="zl-first-", suffix=".log", delete=False)
    cmd = [rc.BIN, "serve", "--model", args.model, "--quantization", args.quantization, "--port", str(port),
           "--shm-name", "", "--disable-access-log", *args.serve_args.split()]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        rc.wait_until(lambda: rc.request(port, "GET", "/health", timeout=2)[0] == 200, 300, "the server")
        ready_s = time.perf_counter() - start
        rng = random.Random(run)
        n = 2 * args.requests
        results = [None] * n
        threads = []
        t0 = time.perf_counter()
        for i in range(n):
            time.sleep(max(0.0, t0 + i / args.rate - time.perf_counter()))
            prompt = [rng.randrange(1, 32000) for _ in range(args.prompt_tokens)]
            t = threading.Thread(target=lambda i=i, p=prompt: results.__setitem__(
                i, rc.stream_completion(port, p, f"r{i}", args.max_tokens, model=args.model)))
            t.start()
            threads.append(t)
        for t in threads:
            t.join(300)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    text = Path(log.name).read_text(errors="replace")
    os.unlink(log.name)
    halves = [results[:args.requests], results[args.requests:]]
    row = {"run": run, "serve_args": args.serve_args, "ready_s": round(ready_s, 2),
           "failed": sum(1 for r in results if not r or not r[0])}
    for name, half in zip(("first", "next"), halves):
        ttfts = [1e3 * r[1] for r in half if r and r[0]]
        row[f"{name}_ttft_p50_ms"] = round(percentile(ttfts, 0.5), 1)
        row[f"{name}_ttft_p95_ms"] = round(percentile(ttfts, 0.95), 1)
    for key, pattern in (("populate_s", r"KV pool memory committed in ([0-9.]+) s"),
                         ("warmup_s", r"warm-up pass in ([0-9.]+) s")):
        m = re.search(pattern, text)
        row[key] = float(m.group(1)) if m else None
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--model", default="dummy:llama-110m")
    p.add_argument("--quantization", default="q8_0")
    p.add_argument("--requests", type=int, default=120, help="requests in each half")
    p.add_argument("--rate", type=float, default=6.5)
    p.add_argument("--prompt-tokens", type=int, default=128)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--serve-args", default="", help="more serve flags, e.g. --no-kv-populate")
    p.add_argument("--out", help="append the JSON lines to this file")
    args = p.parse_args()
    for run in range(args.runs):
        row = one_run(args, run)
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
