#!/usr/bin/env python3
"""How flat can time to first token stay on this machine? A queueing model.

Simulates one engine loop under Poisson arrivals with pass costs measured by
decode_bench on the flat-latency setup, for the two scheduling policies of
`zerolayer serve`:

  mixed          every pass: all decoding requests' tokens, then every
                 waiting prompt (--prefill-first-ms 0)
  prefill-first  a prompt waits: the pass computes it alone, decoders wait
                 (--prefill-first-ms, no limit here)

and prints P95 TTFT at each load (a fraction of the saturation the model
itself reaches with a burst) and P95 at 80% / P95 at 10%, the issue's ratio.
A pass costs prefill_ms_per_token x prompt tokens + decode(n) for n decode
rows, decode() interpolated from measured decode steps. Nothing else waits
(no HTTP, no client), so the model is a lower bound on what the engine can
show; its use is the ratio, which no scheduling within a pass can beat.

  bench/flat_latency_model.py                    # defaults: dummy:llama-110m
                                                 # Q8_0, 2 threads, Xeon VM
  bench/flat_latency_model.py --prefill-ms-per-token 0.34 \\
      --decode-ms 1:3.3,4:4.9,8:8.3,16:14.0,32:27.0,64:54.0
Defaults from: decode_bench --model <the flat-latency Q8_0 GGUF> --formats
stored --batches 1,4,8,16 --threads 2 --prompt 128 --context 160 (prefill
2948 tokens/s; decode steps of 3.3 / 4.9 / 8.3 / 14 ms; 32 and 64 by slope).
"""
import argparse
import json
import random


def interpolate(points, n):
    if n == 0:
        return 0.0
    keys = sorted(points)
    for lo, hi in zip(keys, keys[1:]):
        if lo <= n <= hi:
            return points[lo] + (points[hi] - points[lo]) * (n - lo) / (hi - lo)
    return points[keys[-1]] * n / keys[-1]


def simulate(policy, arrivals, args, decode_ms):
    """Returns (TTFTs in ms, time the last request finished)."""
    t, i, waiting, decoding, ttft, finished = 0.0, 0, [], [], [], 0.0
    while i < len(arrivals) or waiting or decoding:
        while i < len(arrivals) and arrivals[i] <= t:
            waiting.append(arrivals[i])
            i += 1
        if not waiting and not decoding:
            t = arrivals[i]
            continue
        if policy == "mixed":
            prompts, rows = waiting, len(decoding)
        else:
            prompts, rows = waiting[:1], 0 if waiting else len(decoding)
        t += args.prefill_ms_per_token * args.prompt * len(prompts) + interpolate(decode_ms, rows)
        for d in decoding[:rows]:
            d[0] -= 1
        decoding = [d for d in decoding if d[0] > 0]
        finished = t
        for a in list(prompts):
            waiting.remove(a)
            ttft.append(t - a)
            decoding.append([args.output - 1])
    return ttft, finished


def p95(values):
    values = sorted(values)
    return values[min(len(values) - 1, int(0.95 * len(values)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefill-ms-per-token", type=float, default=1000.0 / 2948)
    parser.add_argument("--decode-ms", default="1:3.3,4:4.9,8:8.3,16:14.0,32:27.0,64:54.0",
                        help="decode step ms by batch, batch:ms,...")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--output", type=int, default=32)
    parser.add_argument("--loads", default="0.1,0.3,0.5,0.7,0.8,0.9")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    decode_ms = {int(b): float(ms) for b, ms in (p.split(":") for p in args.decode_ms.split(","))}
    for policy in ("mixed", "prefill-first"):
        _, makespan = simulate(policy, [0.0] * 48, args, decode_ms)
        saturation = 48 / makespan * 1000.0  # requests/s, as flat_latency.sh measures it
        row = {"policy": policy, "saturation_rps": round(saturation, 2), "p95_ttft_ms": {}}
        for load in map(float, args.loads.split(",")):
            rate = load * saturation / 1000.0  # per ms
            results = []
            for seed in range(args.seeds):
                rng, t, arrivals = random.Random(seed), 0.0, []
                for _ in range(args.requests):
                    t += rng.expovariate(rate)
                    arrivals.append(t)
                results.append(p95(simulate(policy, arrivals, args, decode_ms)[0]))
            row["p95_ttft_ms"][str(load)] = round(sorted(results)[len(results) // 2], 1)
        if "0.8" in row["p95_ttft_ms"] and "0.1" in row["p95_ttft_ms"]:
            row["ratio_80_10"] = round(row["p95_ttft_ms"]["0.8"] / row["p95_ttft_ms"]["0.1"], 2)
        print(json.dumps(row))


if __name__ == "__main__":
    main()
