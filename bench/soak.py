#!/usr/bin/env python3
"""Soak: hold `zerolayer serve` at a share of its saturation for a set time
while some clients leave, and check that nothing leaks and nothing is lost.

    python3 bench/soak.py                                  # 30 min, 80 % load, 30 % leave
    python3 bench/soak.py --minutes 1 --probe-seconds 10   # a quick look
    python3 bench/soak.py --faults forward:every=200 --out soak.json

The script starts the server itself (--bin, --model), measures saturation with
a closed loop of 64 clients, then sends Poisson arrivals at --load times that
rate. Of the arrivals, 1 - --leave complete (a third each: HTTP, HTTP streamed,
shared memory) and --leave leave (a third each: a stream reset after a few
events, a non-streamed request closed 0-300 ms in, a shared-memory client in a
child process SIGKILLed 50-500 ms after it submits).

Reported as one JSON line on stdout (progress goes to stderr): saturation and
target rates, counts per behaviour (lost = a completing request without exactly
one terminal answer; a 500 or an error event is a terminal answer), RSS and
scheduler gauges every 10 s, rss_growth_pct (last 10 % of the run against the
minute after a warm-up of max(2 min, 10 %); null for short runs), seconds until
the server is idle, KV blocks in use then, the server's finished counters beside
the clients' counts, its exit code, and `pass`. The goal of a 30-minute run:
RSS growth < 1 %, no KV block left in use, no request lost.
"""
import argparse
import json
import os
import queue
import random
import re
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import http.client
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
CLIENT_DIR = str(REPO / "clients" / "python")
sys.path.insert(0, CLIENT_DIR)
import zerolayer_client as zl  # noqa: E402

COMPLETE = ("http", "http_stream", "shm")
LEAVE = ("leave_stream_reset", "leave_before_answer", "leave_shm_killed")
WORDS = "the a cat dog river stone light under over quiet storm seven blue long road old house sings".split()
SAMPLE_S = 10
MAX_CLIENT_THREADS = 1024
REQUEST_TIMEOUT_S = 120
MAX_SHM_CLIENTS = 40  # of a segment's 64 slots, leaving the rest to the children that get killed
# A fork server for the shm clients that get SIGKILLed. Forking a process that
# has already imported zerolayer_client costs ~1 ms of CPU; a fresh interpreter
# costs ~100, which on a small box takes a third of the CPU from the server.
# Each child waits for its SIGKILL rather than exit, so the pid killed is its.
FORK_SERVER = """import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import zerolayer_client as zl
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps a killed child at once: its pid is gone
say = lambda tag, what: os.write(1, f"{tag} {what}\\n".encode())
def child(tag, max_tokens, prompt):
    try:
        c = zl.connect(sys.argv[2])
        rid = c.submit(prompt, max_new_tokens=int(max_tokens), temperature=0.8, ignore_eos=True)
        say(tag, "submitted")
        for _ in c.events(rid):
            pass
        say(tag, "finished")
    except Exception as e:
        say(tag, "failed " + repr(e).replace("\\n", " "))
    time.sleep(60)
    os._exit(0)
for line in sys.stdin:
    tag, max_tokens, prompt = line.rstrip("\\n").split("\\t")
    pid = os.fork()
    if pid == 0:
        child(tag, max_tokens, prompt)
    say(tag, f"pid {pid}")
"""


def log(msg):
    print(f"soak: {msg}", file=sys.stderr, flush=True)


def prompt_text():
    return " ".join(random.choice(WORDS) for _ in range(random.randint(3, 12)))


class Server:
    """The `zerolayer serve` under test, with its log in a temp file."""

    def __init__(self, args):
        self.shm_name = f"/zl-soak-{os.getpid()}"
        self.log = tempfile.NamedTemporaryFile(prefix="zl-soak-", suffix=".log", delete=False)
        cmd = [args.bin, "serve", "--port", "0", "--shm-name", self.shm_name, "--model", args.model,
               "--max-num-seqs", "64", "--kv-cache-memory", "64M", "--max-seq-len", "512", "--threads", "2"]
        env = {**os.environ, "ZEROLAYER_FAULTS": args.faults} if args.faults else None
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.port = self._wait_for(self._port, 30, "print its port")
        self._wait_for(self._healthy, 120, "become healthy")
        self.model = json.loads(self.request("GET", "/v1/models")[1])["data"][0]["id"]

    def _wait_for(self, probe, timeout_s, what):
        deadline = time.monotonic() + timeout_s
        while not (value := probe()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"server did not {what}:\n" + self.output())
            time.sleep(0.02)
        return value

    def _port(self):
        m = re.search(r"listening on http://[^:]+:(\d+)", self.output())
        return m and int(m.group(1))

    def output(self):
        return Path(self.log.name).read_text(errors="replace")

    def _healthy(self):
        try:
            return self.request("GET", "/health", timeout=5)[0] == 200
        except OSError:
            return False

    def request(self, method, path, body=None, timeout=REQUEST_TIMEOUT_S):
        """(status, body bytes) on a fresh connection; transport failures raise."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def post_raw(self, body):
        """A socket with a POST /v1/completions sent on it, for clients that leave early."""
        data = json.dumps(body)
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=REQUEST_TIMEOUT_S)
        sock.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(data)}\r\n\r\n{data}").encode())
        return sock

    def scrape(self):
        """(gauges by metric name, vllm:request_success_total by finished_reason) from /metrics."""
        _, data = self.request("GET", "/metrics", timeout=30)
        gauges, finished = {}, {}
        for line in data.decode().splitlines():
            if not line or line.startswith("#"):
                continue
            key, value = line.rsplit(" ", 1)
            name = key.split("{")[0]
            if name == "vllm:request_success_total":
                finished[re.search(r'finished_reason="([^"]*)"', key).group(1)] = float(value)
            else:
                gauges[name] = float(value)  # histogram buckets overwrite each other; none is read
        return gauges, finished

    def rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return round(kb / 1024, 1)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "killed after 60 s"


def completion_body(srv, args, stream=False):
    return {"model": srv.model, "prompt": prompt_text(), "max_tokens": args.max_tokens, "ignore_eos": True,
            "temperature": 0.8, "stream": stream}


def judge_finish(reason, detail=""):
    """(outcome, error kind, message) for a request that got one terminal answer."""
    if reason in ("length", "stop"):
        return reason, None, None
    return "error_answer", f"finish_{reason}", detail


def judge_json(status, data):
    if status == 200:
        return judge_finish(json.loads(data)["choices"][0]["finish_reason"])
    try:
        message = json.loads(data)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = data[:200].decode(errors="replace")
    return "error_answer", f"http_{status}", message


def judge_sse(status, data):
    if status != 200:
        return judge_json(status, data)
    # Split on "\n" only: str.splitlines() also splits at U+0085 and U+2028,
    # which JSON leaves unescaped inside a token's text.
    lines = [line[6:].rstrip("\r") for line in data.decode(errors="replace").split("\n")
             if line.startswith("data: ")]
    events = [json.loads(e) for e in lines if e != "[DONE]"]
    errors = [e["error"].get("message", "") for e in events if "error" in e]
    finishes = [c["finish_reason"] for e in events for c in e.get("choices", []) if c.get("finish_reason")]
    if len(errors) + len(finishes) != 1 or lines.count("[DONE]") != 1:
        return "lost", "sse_terminals", f"{len(errors)} errors, {finishes}, {lines.count('[DONE]')} [DONE]"
    return ("error_answer", "sse_error", errors[0]) if errors else judge_finish(finishes[0])


def run_http(srv, args, clients):
    return judge_json(*srv.request("POST", "/v1/completions", completion_body(srv, args)))


def run_http_stream(srv, args, clients):
    return judge_sse(*srv.request("POST", "/v1/completions", completion_body(srv, args, stream=True)))


def take_shm_client(srv, clients):
    """A pooled client (each is one thread's at a time), a new one while there are fewer than
    MAX_SHM_CLIENTS, else the next one freed (counted: it means arrivals queued here)."""
    with clients.lock:
        if clients.pool.empty() and clients.num_shm < MAX_SHM_CLIENTS:
            clients.num_shm += 1
            return zl.connect(srv.shm_name)
        clients.num_waits += clients.pool.empty()
    return clients.pool.get()


def run_shm(srv, args, clients):
    client = take_shm_client(srv, clients)
    try:
        result = client.generate(prompt_text(), timeout=REQUEST_TIMEOUT_S, max_new_tokens=args.max_tokens,
                                 temperature=0.8, ignore_eos=True)
        return judge_finish(result.finish_reason, result.detail)
    except zl.RequestError as e:
        return "error_answer", "shm_error", str(e)
    except (zl.ZerolayerError, TimeoutError):
        client.close()  # it may hold a stale request or a reclaimed slot: start afresh
        client = zl.connect(srv.shm_name)
        raise
    finally:
        clients.pool.put(client)


def leave_stream_reset(srv, args, clients):
    after = random.randint(1, 10)
    sock = srv.post_raw(completion_body(srv, args, stream=True))
    data = b""
    while data.count(b"data: ") < after and b"data: [DONE]" not in data:
        part = sock.recv(65536)
        if not part:
            break
        data += part
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()  # SO_LINGER 0: the close sends RST, as a crashed client would
    return ("finished_anyway" if b"data: [DONE]" in data else "left"), None, None


def leave_before_answer(srv, args, clients):
    sock = srv.post_raw(completion_body(srv, args))
    answered, _, _ = select.select([sock], [], [], random.uniform(0, 0.3))
    sock.close()
    return ("finished_anyway" if answered else "left"), None, None


def leave_shm_killed(srv, args, clients):
    forker = clients.forker
    tag = forker.start(prompt_text(), args.max_tokens)
    try:
        news = forker.wait(tag, 30)
        if "submitted" not in news:
            return "error", "child_failed", news.get("failed", f"nothing within 30 s: {news}")
        time.sleep(random.uniform(0.05, 0.5))
        return ("finished_anyway" if "finished" in forker.wait(tag, 0) else "left"), None, None
    finally:
        forker.kill(tag)


class Forker:
    """The parent's side of FORK_SERVER: starts children, hears what they say, kills them."""

    def __init__(self, shm_name):
        self.proc = subprocess.Popen([sys.executable, "-c", FORK_SERVER, CLIENT_DIR, shm_name], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1)
        self.cond = threading.Condition()
        self.news = {}  # tag -> {"pid": ..., "submitted": ..., "finished": ..., "failed": message}
        self.num_started = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            tag, what, *rest = line.rstrip("\n").split(" ", 2)
            with self.cond:
                self.news.setdefault(int(tag), {})[what] = rest[0] if rest else True
                self.cond.notify_all()

    def start(self, prompt, max_tokens):
        with self.cond:
            tag = self.num_started
            self.num_started += 1
            self.proc.stdin.write(f"{tag}\t{max_tokens}\t{prompt}\n")
            self.proc.stdin.flush()
        return tag

    def wait(self, tag, timeout):
        """What child `tag` has said once it has a pid and has submitted or failed (or at the timeout)."""
        with self.cond:
            said = lambda: self.news.get(tag, {})
            self.cond.wait_for(lambda: "pid" in said() and ("submitted" in said() or "failed" in said()), timeout)
            return dict(said())

    def kill(self, tag):
        with self.cond:
            pid = self.news.pop(tag, {}).get("pid")
        if pid:
            os.kill(int(pid), signal.SIGKILL)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


RUNNERS = {"http": run_http, "http_stream": run_http_stream, "shm": run_shm, "leave_stream_reset": leave_stream_reset,
           "leave_before_answer": leave_before_answer, "leave_shm_killed": leave_shm_killed}


class Tally:
    """Client-side counts per behaviour, and how late arrivals started."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {b: {"sent": 0, "outcomes": Counter(), "errors": Counter(), "examples": []} for b in RUNNERS}
        self.in_flight = self.peak_in_flight = self.num_late = self.num_skipped = 0
        self.max_late_s = 0.0
        # Arrivals beyond the pool's threads are skipped, not queued: a queue
        # would grow without bound when the target rate exceeds what the
        # machine serves, and drain long after the run's end.
        self.slots = threading.BoundedSemaphore(MAX_CLIENT_THREADS)

    def run(self, behaviour, scheduled, srv, args, clients):
        late = time.monotonic() - scheduled
        with self.lock:
            self.counts[behaviour]["sent"] += 1
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            self.num_late += late > 0.1
            self.max_late_s = max(self.max_late_s, late)
        try:
            outcome, kind, message = RUNNERS[behaviour](srv, args, clients)
        except Exception as e:  # a transport failure: for a completing request, no terminal answer
            outcome = "lost" if behaviour in COMPLETE else "error"
            kind, message = type(e).__name__, str(e)
        with self.lock:
            c = self.counts[behaviour]
            c["outcomes"][outcome] += 1
            if kind:
                c["errors"][kind] += 1
                if len(c["examples"]) < 3:
                    c["examples"].append(f"{kind}: {message}"[:300])
            self.in_flight -= 1
        self.slots.release()

    def total(self, behaviours, outcomes=None):
        return sum(self.counts[b]["sent"] if outcomes is None else sum(self.counts[b]["outcomes"][o] for o in outcomes)
                   for b in behaviours)


def probe_saturation(srv, args):
    """Completions per second of a closed loop of 64 clients."""
    start = time.monotonic()
    stop_at = start + args.probe_seconds
    done = Counter()

    def loop():
        while time.monotonic() < stop_at:
            try:
                done[srv.request("POST", "/v1/completions", completion_body(srv, args))[0]] += 1
            except OSError as e:
                done[type(e).__name__] += 1

    threads = [threading.Thread(target=loop) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log(f"probe answers: {dict(done)}")
    return done[200] / (time.monotonic() - start)


def sample_loop(srv, tally, start, series, stop):
    while not stop.wait(SAMPLE_S - (time.monotonic() - start) % SAMPLE_S):
        point = {"t": round(time.monotonic() - start, 1), "client_in_flight": tally.in_flight}
        try:
            point["rss_mb"] = srv.rss_mb()
            gauges = srv.scrape()[0]
            for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "zerolayer:kv_blocks_used"):
                point[name.split(":")[1]] = gauges[name]
        except (OSError, KeyError, StopIteration) as e:
            point["error"] = repr(e)
        series.append(point)
        log(json.dumps(point))


def send_arrivals(srv, args, rate, tally, clients):
    """Poisson arrivals at `rate` for --minutes, each on its own pool thread; returns when all are done."""
    end = time.monotonic() + args.minutes * 60
    at = time.monotonic()
    with ThreadPoolExecutor(max_workers=MAX_CLIENT_THREADS) as executor:
        while True:
            at += random.expovariate(rate)
            if at >= end:
                break
            time.sleep(max(0.0, at - time.monotonic()))
            group = LEAVE if random.random() < args.leave else COMPLETE
            behaviour = random.choice(group)  # a third each
            if not tally.slots.acquire(blocking=False):
                tally.num_skipped += 1
                continue
            executor.submit(tally.run, behaviour, at, srv, args, clients)


def wait_idle(srv, timeout=60):
    """Seconds until nothing runs, waits or holds KV (None if not within `timeout`), and the gauges then."""
    start = time.monotonic()
    while True:
        gauges = srv.scrape()[0]
        if all(gauges[n] == 0 for n in ("vllm:num_requests_running", "vllm:num_requests_waiting",
                                        "zerolayer:kv_blocks_used", "zerolayer:http_completions_in_flight")):
            return round(time.monotonic() - start, 2), gauges
        if time.monotonic() - start > timeout:
            return None, gauges
        time.sleep(0.2)


def rss_growth_pct(series, duration_s):
    warm_s = max(120.0, 0.1 * duration_s)
    if warm_s + 60 > 0.9 * duration_s:
        return None
    base = [p["rss_mb"] for p in series if warm_s <= p["t"] <= warm_s + 60 and "rss_mb" in p]
    last = [p["rss_mb"] for p in series if 0.9 * duration_s <= p["t"] <= duration_s and "rss_mb" in p]
    if not base or not last:
        return None
    return round((sum(last) / len(last) - sum(base) / len(base)) / (sum(base) / len(base)) * 100, 3)


def consistency(tally, finished, faults):
    """Checks of the server's finished counters (deltas over the soak) against the clients' counts."""
    sent, leavers, lost = tally.total(RUNNERS), tally.total(LEAVE), tally.total(COMPLETE, ("lost",))
    completes, answered_errors = tally.total(COMPLETE, ("length", "stop")), tally.total(COMPLETE, ("error_answer",))
    ok, total = finished.get("length", 0) + finished.get("stop", 0), sum(finished.values())
    abort, error = finished.get("abort", 0), finished.get("error", 0)
    checks = {
        "ok_cover_client_completes": {"pass": ok >= completes and total <= sent, "server_ok": ok,
                                      "client_completes": completes, "server_total": total, "sent": sent},
        "aborts_within_leavers": {"pass": abort <= leavers, "server_abort": abort, "leavers": leavers},
        "no_server_errors": {"pass": bool(faults) or error == 0, "server_error": error},
        "extra_ok_within_leavers": {"pass": ok - completes <= leavers, "extra": ok - completes, "leavers": leavers},
        "none_lost": {"pass": lost == 0, "lost": lost},
    }
    if faults:  # every error a client saw was counted; the uncounted rest went to leavers
        checks["errors_match"] = {"pass": 0 <= error - answered_errors <= leavers, "server_error": error,
                                  "client_error_answers": answered_errors}
    return checks


def log_findings(text):
    """Warnings, errors and sanitizer reports the server logged: count and a few distinct examples."""
    lines = [line for line in text.splitlines() if re.match(r"\[zerolayer\] [WE] |(WARNING|ERROR): \w+Sanitizer", line)]
    examples = list(dict.fromkeys(re.sub(r"\d+", "N", line) for line in lines))[:6]
    return {"num_lines": len(lines), "examples": examples}


def soak(srv, args):
    rate_saturation = probe_saturation(srv, args)
    idle_s, _ = wait_idle(srv)
    log(f"saturation {rate_saturation:.1f} completions/s; idle {idle_s} s after the probe")
    rate = args.load * rate_saturation
    tally, series, stop = Tally(), [], threading.Event()
    clients = SimpleNamespace(pool=queue.Queue(), lock=threading.Lock(), num_shm=0, num_waits=0,
                              forker=Forker(srv.shm_name))
    finished_before = srv.scrape()[1]
    start = time.monotonic()
    sampler = threading.Thread(target=sample_loop, args=(srv, tally, start, series, stop))
    sampler.start()
    send_arrivals(srv, args, rate, tally, clients)
    clients_done_s = time.monotonic() - start
    idle_s, gauges = wait_idle(srv)
    stop.set()
    sampler.join()
    while not clients.pool.empty():
        clients.pool.get().close()
    clients.forker.close()
    finished_after = srv.scrape()[1]
    finished = {k: finished_after.get(k, 0) - finished_before.get(k, 0) for k in finished_after}
    return summary(args, rate_saturation, rate, tally, clients, series, clients_done_s, idle_s, gauges, finished)


def summary(args, rate_saturation, rate, tally, clients, series, clients_done_s, idle_s, gauges, finished):
    counts = {b: {"sent": c["sent"], "completed": sum(c["outcomes"][o] for o in ("length", "stop", "error_answer")),
                  "outcomes": dict(c["outcomes"]), "errors": dict(c["errors"]), "examples": c["examples"]}
              for b, c in tally.counts.items()}
    checks = consistency(tally, finished, args.faults)
    checks["idle_and_kv_returned"] = {"pass": idle_s is not None and gauges["zerolayer:kv_blocks_used"] == 0,
                                      "kv_blocks_used": gauges["zerolayer:kv_blocks_used"], "seconds_to_idle": idle_s}
    growth = rss_growth_pct(series, args.minutes * 60)
    checks["rss_growth_below_1pct"] = {"pass": None if growth is None else growth < 1, "rss_growth_pct": growth}
    return {
        "saturation_per_s": round(rate_saturation, 2), "target_per_s": round(rate, 2),
        "achieved_arrivals_per_s": round(tally.total(RUNNERS) / (args.minutes * 60), 2),
        "seconds_until_clients_done": round(clients_done_s, 1),
        "client_queueing": {"arrivals_skipped_all_threads_busy": tally.num_skipped,
                            "arrivals_started_over_100ms_late": tally.num_late,
                            "max_late_s": round(tally.max_late_s, 3), "peak_in_flight": tally.peak_in_flight,
                            "shm_clients": clients.num_shm, "shm_waits_for_a_client": clients.num_waits},
        "counts": counts, "lost": tally.total(COMPLETE, ("lost",)), "server_finished": finished,
        "kv_blocks_used_end": gauges["zerolayer:kv_blocks_used"], "seconds_to_idle": idle_s,
        "rss_growth_pct": growth, "series": series, "checks": checks,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.environ.get("ZEROLAYER_BIN", str(REPO / "build" / "zerolayer")))
    parser.add_argument("--model", default="dummy:tiny")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--load", type=float, default=0.8, help="share of the measured saturation")
    parser.add_argument("--leave", type=float, default=0.3, help="share of clients that leave")
    parser.add_argument("--probe-seconds", type=float, default=30.0)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--faults", help="ZEROLAYER_FAULTS for the server, e.g. forward:every=200")
    parser.add_argument("--out", help="also write the report here (indented)")
    args = parser.parse_args()
    srv = Server(args)
    log(f"server pid {srv.proc.pid} on port {srv.port}, shm {srv.shm_name}, model {srv.model}, log {srv.log.name}")
    report = {"config": {k: v for k, v in vars(args).items() if k != "out"}}
    armed = "fault injection armed" in srv.output()
    try:
        report.update(soak(srv, args))
    finally:
        report["server_exit_code"] = srv.stop()
    if args.faults:  # a binary without fault injection ignores ZEROLAYER_FAULTS
        report["checks"]["faults_armed"] = {"pass": armed}
    report["checks"]["exit_code_zero"] = {"pass": report["server_exit_code"] == 0, "code": report["server_exit_code"]}
    report["shm_segment_left"] = os.path.exists("/dev/shm" + srv.shm_name)
    report["server_log"] = log_findings(srv.output())
    report["pass"] = all(c["pass"] is not False for c in report["checks"].values())
    if report["pass"]:
        os.unlink(srv.log.name)
    else:
        report["server_log"]["path"] = srv.log.name
    print(json.dumps(report))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
