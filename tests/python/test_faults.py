"""Faults through the whole server: forward passes that fail (injected with
ZEROLAYER_FAULTS, see src/core/fault.h), a KV pool that cannot be had at
start, and a client that stops reading its stream. Every request still gets
exactly one terminal answer, the counters in /metrics equal what the
clients saw, and every KV block returns."""

import json
import os
import socket
import subprocess
import threading
import time

import pytest
from test_http_server import API_KEY, BIN, MAX_SEQ_LEN, MODEL, Server, _wait_idle, server  # noqa: F401


def _finished_by_reason(s):
    """vllm:request_success_total by its finished_reason label."""
    _, _, data = s.request("GET", "/metrics")
    counts = {}
    for line in data.decode().splitlines():
        if line.startswith("vllm:request_success_total{"):
            reason = line.split('finished_reason="')[1].split('"')[0]
            counts[reason] = float(line.rsplit(" ", 1)[1])
    return counts


def _terminal_answers(status, data, stream):
    """("length" | "error", count of terminal answers) in one response."""
    if not stream:
        if status == 500:
            assert "injected fault" in json.loads(data)["error"]["message"]
            return "error", 1
        assert status == 200, (status, data[:200])
        return json.loads(data)["choices"][0]["finish_reason"], 1
    assert status == 200 and data.decode().count("data: [DONE]") == 1, (status, data[-200:])
    # "\n" only: splitlines() would also split at U+0085 / U+2028 inside a token's text.
    events = [json.loads(line[6:]) for line in data.decode().split("\n") if line.startswith("data: {")]
    errors = [e for e in events if "error" in e]
    finishes = [e["choices"][0]["finish_reason"] for e in events if e.get("choices") and e["choices"][0]["finish_reason"]]
    for e in errors:
        assert "injected fault" in e["error"]["message"], e
    return ("error" if errors else finishes[0]), len(errors) + len(finishes)


def test_failing_forward_passes_end_each_request_once():
    # Pass 6 fails, then every 60th: whatever runs then fails, the rest ends by length.
    s = Server("--model", "dummy:tiny", "--served-model-name", MODEL, "--max-seq-len", str(MAX_SEQ_LEN),
               "--max-num-seqs", "16", "--kv-cache-memory", "32M",
               env={"ZEROLAYER_FAULTS": "forward:after=5:every=60"})
    try:
        assert "fault injection armed from ZEROLAYER_FAULTS: forward:after=5:every=60" in s.output()
        results = [None] * 48

        def one(i):
            body = {"model": MODEL, "prompt": f"fault {i}", "max_tokens": 24, "ignore_eos": True,
                    "stream": i % 2 == 1}
            results[i] = s.request("POST", "/v1/completions", body, timeout=120)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(results))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        seen = {"length": 0, "error": 0}
        for i, (status, _, data) in enumerate(results):
            reason, count = _terminal_answers(status, data, stream=i % 2 == 1)
            assert count == 1, (i, data[-300:])
            seen[reason] += 1
        assert seen["error"] > 0 and seen["length"] > 0, seen
        _wait_idle(s, timeout=10)
        counted = _finished_by_reason(s)
        assert counted.get("error") == seen["error"] and counted.get("length") == seen["length"], (counted, seen)
        assert s.request("GET", "/health")[0] == 200
    finally:
        assert s.stop() == 0


@pytest.mark.parametrize("point,message", [("kv_map", "cannot allocate a KV cache of "),
                                           ("kv_populate", "cannot commit the KV pool's ")])
def test_a_kv_pool_that_cannot_be_had_stops_start_up_cleanly(point, message):
    # The pool is mapped after the port is bound and the shared-memory name
    # checked: a failure there must exit 1 with the reason and leave no segment.
    name = f"/zl-test-kv-fault-{os.getpid()}"
    r = subprocess.run([BIN, "serve", "--model", "dummy:tiny", "--port", "0", "--shm-name", name],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "ZEROLAYER_FAULTS": point})
    assert r.returncode == 1, r.stderr
    assert message in r.stderr and " bytes" in r.stderr, r.stderr
    assert not os.path.exists("/dev/shm" + name)


def test_a_client_that_stops_reading_is_cut_off_and_its_job_aborted(server):
    # 128 streamed choices of 500 tokens are ~12 MB of events: more than the
    # kernel buffers (4 MiB each side at most here) and the server's 4 MiB of
    # unsent stream, so a client that never reads is dropped long before the
    # generation ends, and its KV returns.
    before = server.metrics()["zerolayer:http_client_disconnects_total"]
    body = json.dumps({"model": MODEL, "prompt": "never read", "max_tokens": 500, "n": 128, "ignore_eos": True,
                       "stream": True})
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    try:
        sock.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
        started = time.time()
        while server.metrics()["zerolayer:http_completions_in_flight"] == 0:
            assert time.time() < started + 10, "the request never started"
            time.sleep(0.02)
        m = _wait_idle(server, timeout=120)
        print(f"idle {time.time() - started:.2f} s after the request; the client read nothing")
    finally:
        sock.close()
    assert m["zerolayer:http_client_disconnects_total"] >= before + 1
    assert "a client stopped reading its stream" in server.output()
