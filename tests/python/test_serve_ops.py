"""What an operator relies on when deploying `zerolayer serve`.

Signals (SIGHUP ignored, SIGTERM drains within --shutdown-timeout), the
shared-memory name derived from the port and checked before the model
loads, memory flags that cannot be misread, /metrics without the API key,
X-Request-Id and traceparent in the access log, CORS and TLS.
"""

import http.client
import json
import os
import random
import signal
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest

from test_http_server import BIN, Server


def completion(port, body, headers=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), data


def run_serve(*args, timeout=60):
    return subprocess.run([BIN, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("value", ["2.5", "512", "0", "-1", "nan", "1X", "0.5G0"])
def test_memory_flags_cannot_be_misread(value):
    r = run_serve("--model", "dummy:tiny", "--shm-name", "", "--kv-cache-memory", value)
    assert r.returncode != 0
    assert "--kv-cache-memory" in r.stderr and repr(value)[1:-1] in r.stderr, r.stderr


@pytest.mark.parametrize("flag,value", [("--compaction-bytes-per-step", v) for v in ["512", "0.5", "-1", "nan", "1X"]]
                         + [("--shm-size", v) for v in ["0", "0.5", "64"]])
def test_size_flags_cannot_be_misread(flag, value):
    r = run_serve("--model", "dummy:tiny", "--shm-name", "", flag, value)
    assert r.returncode != 0
    assert flag in r.stderr and repr(value)[1:-1] in r.stderr, r.stderr


def test_compaction_copies_in_slices_its_flag_sets():
    # 64 blocks of 16 tokens that 32 requests of mixed lengths at a time
    # fragment: the contiguous pool compacts, one block a step at 1K.
    s = Server("--model", "dummy:tiny", "--max-seq-len", "512", "--kv-cache-memory", "1M", "--max-num-seqs", "16",
               "--compaction-bytes-per-step", "1K", api_key=None)
    rng = random.Random(1)
    bodies = [{"prompt": "word " * rng.randint(2, 50), "max_tokens": rng.randint(1, 200), "ignore_eos": True,
               "temperature": 0} for _ in range(96)]
    answers = [None] * len(bodies)

    def send(i):
        status, _, data = completion(s.port, bodies[i])
        answers[i] = (status, json.loads(data) if status == 200 else data)

    try:
        assert "compaction copies at most 1 block (16 KiB) a step" in s.output(), s.output()
        for first in range(0, len(bodies), 32):
            threads = [threading.Thread(target=send, args=(i,)) for i in range(first, first + 32)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        for body, (status, answer) in zip(bodies, answers):
            assert status == 200, answer
            assert answer["usage"]["completion_tokens"] == body["max_tokens"]
        m = s.metrics()
        assert m["zerolayer:kv_compactions_total"] > 0 and m["zerolayer:kv_block_moves_total"] > 0
        assert 0 < m["zerolayer:kv_compaction_copy_max_seconds"] <= m["zerolayer:kv_compaction_copy_seconds_total"]
        assert m["zerolayer:engine_drains_total"] == 0  # slices run beside the pass, none waits for it
        assert m["zerolayer:kv_blocks_used"] == 0  # every block back in the pool
    finally:
        assert s.stop() == 0
    s = Server("--model", "dummy:tiny", "--kv-cache-memory", "1M", "--compaction-bytes-per-step", "0", api_key=None)
    try:
        assert "compaction copies at once" in s.output(), s.output()
    finally:
        assert s.stop() == 0


def test_default_kv_pool_is_sized_from_the_context_and_printed():
    s = Server("--model", "dummy:tiny", "--max-num-seqs", "8", "--max-seq-len", "256", api_key=None)
    try:
        assert "8 sequences x 256 tokens" in s.output(), s.output()
        assert "128 blocks x 16 tokens" in s.output(), s.output()  # 8 x 256 tokens, no more
        assert "KV pool memory committed in" in s.output()  # at start, by default
    finally:
        assert s.stop() == 0
    s = Server("--model", "dummy:tiny", "--max-num-seqs", "8", "--no-kv-populate", api_key=None)
    try:
        assert "committed" not in s.output()
    finally:
        assert s.stop() == 0


def test_shm_name_follows_the_port_and_a_clash_fails_before_loading():
    s = Server("--model", "dummy:tiny", "--kv-cache-memory", "16M", api_key=None, shm_name="auto")
    try:
        name = f"/zerolayer-{s.port}"
        assert Path("/dev/shm" + name).exists()
        assert f"shared memory at {name}" in s.output()
        start = time.time()
        # dummy:llama-1b would take many seconds to load: the clash is found first.
        r = run_serve("--model", "dummy:llama-1b", "--shm-name", name)
        assert r.returncode != 0
        assert time.time() - start < 10
        assert f"pid {s.proc.pid}" in r.stderr and "--shm-name" in r.stderr, r.stderr
        assert "loading" not in r.stdout or "KV pool" not in r.stderr
    finally:
        assert s.stop() == 0
    assert not Path("/dev/shm" + name).exists()
    # An environment value cannot be empty: "none" turns it off.
    s = Server("--model", "dummy:tiny", "--kv-cache-memory", "16M", api_key=None, shm_name="none")
    try:
        assert "shared memory at" not in s.output()
        assert not Path(f"/dev/shm/zerolayer-{s.port}").exists()
    finally:
        assert s.stop() == 0


def test_sighup_is_ignored():
    s = Server("--model", "dummy:tiny", "--kv-cache-memory", "16M", api_key=None)
    try:
        s.proc.send_signal(signal.SIGHUP)
        time.sleep(0.3)
        assert s.proc.poll() is None
        status, _, _ = completion(s.port, {"prompt": "hi", "max_tokens": 2})
        assert status == 200
        assert "SIGHUP ignored" in s.output()
    finally:
        assert s.stop() == 0


def test_sigterm_drains_requests_in_flight():
    s = Server("--model", "dummy:tiny", "--max-seq-len", "1024", "--kv-cache-memory", "16M", api_key=None)
    results = {}

    def long_request():
        # Slow enough to be in flight at the signal, short enough to end within the timeout.
        results["long"] = completion(s.port, {"prompt": "long", "max_tokens": 900, "ignore_eos": True,
                                              "temperature": 0})

    t = threading.Thread(target=long_request)
    t.start()
    deadline = time.time() + 10
    while time.time() < deadline and s.metrics().get("vllm:num_requests_running", 0) < 1:
        time.sleep(0.01)
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.05)
    try:
        status, _, data = completion(s.port, {"prompt": "late", "max_tokens": 2})
        assert status == 503, data
    except ConnectionRefusedError:
        pass  # the listener is already closed: as good as a 503
    t.join(60)
    status, _, data = results["long"]
    assert status == 200, data
    assert json.loads(data)["choices"][0]["finish_reason"] == "length"
    assert s.proc.wait(30) == 0
    assert "draining" in s.output()


def test_metrics_open_without_the_key_unless_required():
    s = Server("--model", "dummy:tiny", "--kv-cache-memory", "16M", api_key="secret")
    try:
        status, _, _ = s.request("GET", "/metrics", key=None)
        assert status == 200
        status, _, _ = s.request("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 1}, key=None)
        assert status == 401
    finally:
        assert s.stop() == 0
    s = Server("--model", "dummy:tiny", "--kv-cache-memory", "16M", "--metrics-require-key", api_key="secret")
    try:
        assert s.request("GET", "/metrics", key=None)[0] == 401
        assert s.request("GET", "/metrics")[0] == 200
    finally:
        assert s.stop() == 0


def test_request_id_and_traceparent_reach_the_access_log():
    s = Server("--model", "dummy:tiny", "--kv-cache-memory", "16M", api_key=None)
    try:
        trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        status, headers, _ = completion(s.port, {"prompt": "hi", "max_tokens": 3},
                                        {"X-Request-Id": "req-42", "traceparent": trace})
        assert status == 200 and headers["X-Request-Id"] == "req-42"
        status, headers, _ = completion(s.port, {"prompt": "hi", "max_tokens": 3}, {"X-Request-Id": "x" * 129})
        made = headers["X-Request-Id"]
        assert status == 200 and made and made != "x" * 129
        # A header Beast refuses still gets an id on its 400.
        status, headers, _ = completion(s.port, {"prompt": "hi", "max_tokens": 3}, {"X-Request-Id": "bad\x7f"})
        assert status == 400 and headers["X-Request-Id"]
        status, headers, _ = completion(s.port, {"prompt": "hi", "max_tokens": 3}, {"traceparent": "00-zz-bad"})
        time.sleep(0.2)
        log = [line for line in s.output().splitlines() if "access: POST /v1/completions" in line]
        assert len(log) == 3, log
        assert any("access: - - 400" in line for line in s.output().splitlines())
        assert "200 in=1 out=3 ttft_ms=" in log[0] or " out=3 " in log[0], log[0]
        assert "id=req-42 trace=4bf92f3577b34da6a3ce929d0e0e4736 parent=00f067aa0ba902b7" in log[0], log[0]
        assert f"id={made}" in log[1] and "trace=" not in log[2]
    finally:
        assert s.stop() == 0


def test_cors_for_allowed_origins_only():
    s = Server("--model", "dummy:tiny", "--kv-cache-memory", "16M", "--allowed-origins", "http://a.test,http://b.test")
    try:
        ok = {"Origin": "http://b.test", "Access-Control-Request-Method": "POST",
              "Access-Control-Request-Headers": "authorization,content-type"}
        status, headers, _ = s.request("OPTIONS", "/v1/completions", headers=ok, key=None)
        assert status == 204
        assert headers["Access-Control-Allow-Origin"] == "http://b.test"
        assert "POST" in headers["Access-Control-Allow-Methods"]
        assert headers["Access-Control-Allow-Headers"] == "authorization,content-type"
        status, _, _ = s.request("OPTIONS", "/v1/completions", headers={**ok, "Origin": "http://evil.test"}, key=None)
        assert status == 403
        status, headers, _ = s.request("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 1},
                                       headers={"Origin": "http://a.test"})
        assert status == 200 and headers["Access-Control-Allow-Origin"] == "http://a.test"
        status, headers, _ = s.request("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 1},
                                       headers={"Origin": "http://evil.test"})
        assert status == 200 and "Access-Control-Allow-Origin" not in headers
    finally:
        assert s.stop() == 0


def make_certificate(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                        str(cert), "-days", "1", "-subj", "/CN=localhost"], capture_output=True)
    if r.returncode != 0:
        pytest.skip("openssl cannot make a test certificate: " + r.stderr.decode())
    return cert, key


def test_tls(tmp_path):
    cert, key = make_certificate(tmp_path)
    s = Server("--model", "dummy:tiny", "--kv-cache-memory", "16M", "--ssl-certfile", str(cert),
               "--ssl-keyfile", str(key), api_key=None, health=False)
    try:
        context = ssl.create_default_context(cafile=str(cert))
        context.check_hostname = False
        deadline = time.time() + 60
        while True:
            conn = http.client.HTTPSConnection("127.0.0.1", s.port, context=context, timeout=30)
            conn.request("GET", "/health")
            resp = conn.getresponse()
            resp.read()
            if resp.status == 200 or time.time() > deadline:
                break
            time.sleep(0.05)
        assert resp.status == 200
        conn.request("POST", "/v1/completions", json.dumps({"prompt": "hi", "max_tokens": 4}),
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200 and len(json.loads(resp.read())["choices"]) == 1
        conn.close()
        # Plain HTTP on the TLS port gets no answer; the server goes on.
        status, _, _ = s.request("GET", "/health")
        assert status == 0
        assert s.proc.poll() is None
        assert "listening on https://" in s.output()
    finally:
        assert s.stop() == 0


def test_tls_needs_a_matching_key(tmp_path):
    cert, _ = make_certificate(tmp_path)
    _, other_key = make_certificate(tmp_path / "other" if (tmp_path / "other").mkdir() is None else tmp_path)
    r = run_serve("--model", "dummy:tiny", "--shm-name", "", "--ssl-certfile", str(cert))
    assert r.returncode != 0 and "--ssl-keyfile" in r.stderr
    r = run_serve("--model", "dummy:tiny", "--shm-name", "", "--ssl-certfile", str(cert), "--ssl-keyfile",
                  str(other_key))
    assert r.returncode != 0 and "--ssl-keyfile" in r.stderr and "mismatch" in r.stderr, r.stderr


def test_admin_reload_swaps_weights_without_dropping_anything():
    s = Server("--model", "dummy:tiny:1", "--max-seq-len", "1024", "--kv-cache-memory", "16M", api_key="secret",
               shm_name="auto")
    try:
        auth = {"Authorization": "Bearer secret"}
        body = {"prompt": [5, 6, 7], "max_tokens": 8, "temperature": 0}
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)  # one keep-alive connection throughout

        def call(path, payload):
            conn.request("POST", path, json.dumps(payload), {"Content-Type": "application/json", **auth})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())

        status, first = call("/v1/completions", body)
        assert status == 200
        # A long stream in flight and requests arriving meanwhile all finish normally.
        results = {}
        long_body = {"prompt": "long", "max_tokens": 1000, "ignore_eos": True, "temperature": 0}
        streams = [threading.Thread(target=lambda i=i: results.__setitem__(i, completion(s.port, long_body, auth)))
                   for i in range(3)]
        streams[0].start()
        deadline = time.time() + 10
        while time.time() < deadline and s.metrics().get("vllm:num_requests_running", 0) < 1:
            time.sleep(0.005)
        status, answer = call("/admin/reload", {"model": "dummy:tiny:2"})
        for t in streams[1:]:
            t.start()
        for t in streams:
            t.join(60)
        assert status == 200 and answer["status"] == "reloaded", answer
        for i in range(3):
            status, _, data = results[i]
            assert status == 200 and json.loads(data)["choices"][0]["finish_reason"] == "length", (i, data)
        status, second = call("/v1/completions", body)
        assert second["choices"][0]["text"] != first["choices"][0]["text"]  # other weights
        # Another tokenizer is refused, and the model serves on unchanged.
        status, refused = call("/admin/reload", {"model": "dummy:llama-110m"})
        assert status == 400 and refused["error"]["param"] == "model"
        assert "tokenizer" in refused["error"]["message"]
        assert call("/v1/completions", body)[1]["choices"][0]["text"] == second["choices"][0]["text"]
        status, bad = call("/admin/reload", {"model": 3})
        assert status == 400 and bad["error"]["param"] == "model"
        # Back to the first weights: the first answer again; the segment never went.
        assert call("/admin/reload", {"model": "dummy:tiny:1"})[0] == 200
        assert call("/v1/completions", body)[1]["choices"][0]["text"] == first["choices"][0]["text"]
        assert Path(f"/dev/shm/zerolayer-{s.port}").exists()
        conn.close()
        assert s.request("POST", "/admin/reload", {}, key=None)[0] == 401
    finally:
        assert s.stop() == 0


def test_admin_reload_needs_an_api_key():
    s = Server("--model", "dummy:tiny", "--kv-cache-memory", "16M", api_key=None)
    try:
        status, _, data = s.request("POST", "/admin/reload", {})
        assert status == 403 and "--api-key" in json.loads(data)["error"]["message"]
    finally:
        assert s.stop() == 0
