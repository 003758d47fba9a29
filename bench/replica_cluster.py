"""Replicas of `zerolayer serve` behind vllm-router, on loopback.

A library for bench/replicas.py (the figures) and tests/python/test_router.py
(the checks): start N replicas, each publishing KV-cache events, and
`vllm-router` in front with a policy; drive a workload of users who each
repeat their own long shared prefix; read which replica served each request
(the replicas' access logs, by X-Request-Id, which the router forwards) and
the cluster's prefix-cache hit rate (each replica's /metrics).

Paths: ZEROLAYER_BIN (default <repo>/build/zerolayer) and VLLM_ROUTER
(default <repo>/.venv/bin/vllm-router).
"""

import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = os.environ.get("ZEROLAYER_BIN", str(REPO / "build" / "zerolayer"))
ROUTER = os.environ.get("VLLM_ROUTER", str(REPO / ".venv" / "bin" / "vllm-router"))
MODEL = "dummy:tiny-4k"  # loads at once; 4096 tokens of context, vocabulary of 512
VOCAB = 512


def terminate(proc, timeout):
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, method, path, body=None, headers=None, timeout=120):
    """(status, headers, body bytes); status 0 when the connection failed."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body) if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    except (OSError, http.client.HTTPException):
        return 0, {}, b""
    finally:
        conn.close()


def wait_until(check, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


class Replica:
    """One `zerolayer serve` with KV-cache events on its own ports."""

    def __init__(self, index, *extra, port=None, events=None, replay=None):
        self.index = index
        self.port, self.events, self.replay = port or free_port(), events or free_port(), replay or free_port()
        self.extra = extra
        self.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.log = tempfile.NamedTemporaryFile(prefix=f"zl-replica{self.index}-", suffix=".log", delete=False)
        cmd = [BIN, "serve", "--model", MODEL, "--port", str(self.port), "--shm-name", "",
               "--kv-events-endpoint", f"tcp://127.0.0.1:{self.events}",
               "--kv-events-replay-endpoint", f"tcp://127.0.0.1:{self.replay}", *self.extra]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        wait_until(lambda: request(self.port, "GET", "/health", timeout=2)[0] == 200 or self.proc.poll() is not None,
                   60, f"replica {self.index}")
        if self.proc.poll() is not None:
            raise RuntimeError(f"replica {self.index} exited: {self.output()}")

    def output(self):
        return Path(self.log.name).read_text(errors="replace")

    def request_ids(self):
        """The X-Request-Ids this replica answered a completion for."""
        return set(re.findall(r"access: POST /v1/completions \d+ .*? id=(\S+)", self.output()))

    def metrics(self):
        status, _, data = request(self.port, "GET", "/metrics", timeout=10)
        values = {}
        for line in data.decode().splitlines() if status == 200 else []:
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name.split("{")[0]] = float(value)
        return values

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            terminate(self.proc, 30)
        os.unlink(self.log.name)
        return self.proc.returncode


class Router:
    """vllm-router in front of the replicas; kv_aware reads their events."""

    def __init__(self, policy, replicas, *extra):
        self.port = free_port()
        cmd = [ROUTER, "--host", "127.0.0.1", "--port", str(self.port), "--policy", policy,
               "--worker-urls", *[r.url for r in replicas],
               "--health-check-interval-secs", "1", "--health-failure-threshold", "1",
               "--health-success-threshold", "1", "--log-level", "warning",
               "--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port()), *extra]
        if policy == "kv_aware":
            cmd += ["--kv-event-model", MODEL, "--router-temperature", "0"]
            for r in replicas:
                cmd += ["--kv-event-source", f"{r.url}=tcp://127.0.0.1:{r.events}",
                        "--kv-event-replay-source", f"{r.url}=tcp://127.0.0.1:{r.replay}"]
        self.log = tempfile.NamedTemporaryFile(prefix="zl-router-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        wait_until(lambda: request(self.port, "GET", "/readiness", timeout=2)[0] == 200 or self.proc.poll() is not None,
                   60, "the router")
        if self.proc.poll() is not None:
            raise RuntimeError("vllm-router exited: " + Path(self.log.name).read_text(errors="replace"))
        time.sleep(0.5)  # its event subscribers connect after readiness

    def stop(self):
        terminate(self.proc, 10)
        os.unlink(self.log.name)


def user_prompts(users, prefix_tokens, requests_per_user, suffix_tokens=16, seed=0):
    """Rounds of (user, request id, token ids): each user's prompts share its own prefix."""
    rng = random.Random(seed)
    prefixes = [[rng.randrange(VOCAB) for _ in range(prefix_tokens)] for _ in range(users)]
    return [[(u, f"user{u}-req{k}-{seed}", prefixes[u] + [rng.randrange(VOCAB) for _ in range(suffix_tokens)])
             for u in range(users)] for k in range(requests_per_user)]


def stream_completion(port, prompt, request_id, max_tokens, model=MODEL):
    """Streams one completion: (ok, ttft_s, total_s, error); ok only with a normal finish and [DONE]."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", "/v1/completions", json.dumps({
            "model": model, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0,
            "stream": True}), {"Content-Type": "application/json", "X-Request-Id": request_id})
        resp = conn.getresponse()
        if resp.status != 200:
            return False, None, time.perf_counter() - start, f"status {resp.status}"
        ttft, finish, done = None, None, False
        for line in resp:
            if ttft is None and line.startswith(b"data: {"):
                ttft = time.perf_counter() - start
            if line.startswith(b"data: [DONE]"):
                done = True
            elif line.startswith(b"data: {"):
                event = json.loads(line[6:])
                if "error" in event:
                    return False, ttft, time.perf_counter() - start, "error event"
                finish = event["choices"][0].get("finish_reason") or finish
        ok = done and finish == "length"
        return ok, ttft, time.perf_counter() - start, None if ok else f"ended without a finish ({finish}, {done})"
    except (OSError, http.client.HTTPException) as e:
        return False, None, time.perf_counter() - start, type(e).__name__
    finally:
        conn.close()


def run_rounds(port, rounds, concurrency, max_tokens=4, pause_s=0.2):
    """Runs each round's requests concurrently, rounds one after another
    (a user's next request comes once the cluster has seen its last)."""
    results = {}
    with ThreadPoolExecutor(concurrency) as pool:
        for round_ in rounds:
            futures = {rid: pool.submit(stream_completion, port, prompt, rid, max_tokens) for _, rid, prompt in round_}
            for rid, f in futures.items():
                results[rid] = f.result()
            time.sleep(pause_s)  # KV events reach the router in a few ms
    return results


def hit_rate(replicas, before):
    """The cluster's prefix-cache hit rate since the `before` snapshots."""
    hits = queries = 0
    for r, b in zip(replicas, before):
        m = r.metrics()
        hits += m.get("vllm:prefix_cache_hits_total", 0) - b.get("vllm:prefix_cache_hits_total", 0)
        queries += m.get("vllm:prefix_cache_queries_total", 0) - b.get("vllm:prefix_cache_queries_total", 0)
    return hits / queries if queries else 0.0


def placement(replicas, rounds):
    """{user: set of replica indices that served it}."""
    served = {}
    ids = [r.request_ids() for r in replicas]
    for round_ in rounds:
        for user, rid, _ in round_:
            for r, answered in zip(replicas, ids):
                if rid in answered:
                    served.setdefault(user, set()).add(r.index)
    return served


def measure(replicas, port, rounds, concurrency, max_tokens=4):
    """Runs the rounds through `port`; returns the figures of the run."""
    before = [r.metrics() for r in replicas]
    start = time.perf_counter()
    results = run_rounds(port, rounds, concurrency, max_tokens)
    elapsed = time.perf_counter() - start
    time.sleep(0.3)  # the last access-log lines
    served = placement(replicas, rounds)
    ttfts = sorted(t for ok, t, _, _ in results.values() if ok and t is not None)
    return {
        "requests": len(results),
        "ok": sum(1 for ok, *_ in results.values() if ok),
        "hit_rate": hit_rate(replicas, before),
        "users_on_one_replica": sum(1 for s in served.values() if len(s) == 1),
        "users_per_replica": [sum(1 for s in served.values() if r.index in s) for r in replicas],
        "users": len(served),
        "elapsed_s": elapsed,
        "requests_per_s": len(results) / elapsed,
        "ttft_p50_ms": 1e3 * ttfts[len(ttfts) // 2] if ttfts else None,
        "ttft_p90_ms": 1e3 * ttfts[int(len(ttfts) * 0.9)] if ttfts else None,
    }
