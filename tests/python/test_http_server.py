"""End-to-end tests of `zerolayer serve`'s HTTP API.

Starts the real server binary (ZEROLAYER_BIN, default build/zerolayer) on a
free port and drives it with the official `openai` package, and with raw
HTTP for input no client library would send. Every malformed request must get
its 4xx with the offending field named, and the server must keep serving.
"""

import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

openai = pytest.importorskip("openai")

REPO = Path(__file__).resolve().parents[2]
BIN = os.environ.get("ZEROLAYER_BIN", str(REPO / "build" / "zerolayer"))
SHARED = Path(os.environ.get("ZL_SHARED_DIR", str(REPO.parent / "shared")))
API_KEY = "test-key"
MODEL = "tiny"
MAX_SEQ_LEN = 512


class Server:
    """A running `zerolayer serve` process."""

    def __init__(self, *args, api_key=API_KEY, shm_name="", preexec_fn=None, env=None, health=True):
        if not os.access(BIN, os.X_OK):
            pytest.skip(f"no server binary at {BIN}")
        self.log = tempfile.NamedTemporaryFile(prefix="zl-serve-", suffix=".log", delete=False)
        cmd = [BIN, "serve", "--port", "0", "--shm-name", shm_name, "--threads", "2", *args]
        if api_key:
            cmd += ["--api-key", api_key]
        self.api_key = api_key
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=preexec_fn,
                                     env={**os.environ, **env} if env else None)
        self.port = self._wait_port()
        if health:  # over plain HTTP
            self._wait_healthy()

    def _wait_port(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            text = Path(self.log.name).read_text(errors="replace")
            m = re.search(r"listening on https?://[^:]+:(\d+)", text)
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {text}")
            time.sleep(0.02)
        raise RuntimeError("server did not print its port")

    def _wait_healthy(self, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, _, _ = self.request("GET", "/health")
            if status == 200:
                return
            time.sleep(0.05)
        raise RuntimeError("server never became healthy: " + self.output())

    def output(self):
        return Path(self.log.name).read_text(errors="replace")

    def request(self, method, path, body=None, headers=None, key="default", timeout=60):
        """One request on a fresh connection; body may be bytes, str or a JSON-able object."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        key = self.api_key if key == "default" else key
        if key:
            h["Authorization"] = f"Bearer {key}"
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if body is not None:
            h.setdefault("Content-Type", "application/json")
        try:
            conn.request(method, path, body=body, headers=h)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, dict(resp.getheaders()), data
        except (ConnectionError, http.client.HTTPException, socket.timeout):
            return 0, {}, b""
        finally:
            conn.close()

    def client(self):
        return openai.OpenAI(base_url=f"http://127.0.0.1:{self.port}/v1", api_key=self.api_key or "none",
                             max_retries=0, timeout=120)

    def metrics(self):
        status, _, data = self.request("GET", "/metrics")
        assert status == 200
        values = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name.split("{")[0]] = float(value)
        return values

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.unlink(self.log.name)
        return self.proc.returncode


@pytest.fixture(scope="module")
def server():
    s = Server("--model", "dummy:tiny", "--served-model-name", MODEL, "--max-seq-len", str(MAX_SEQ_LEN),
               "--max-num-seqs", "64", "--kv-cache-memory", "64M")
    yield s
    assert s.stop() == 0


def complete(server, **fields):
    body = {"model": MODEL, "prompt": "Hello", "max_tokens": 8, **fields}
    status, headers, data = server.request("POST", "/v1/completions", body)
    return status, headers, json.loads(data) if data else None


# ---------------------------------------------------------------- the happy path, through `openai`

def test_completion_not_streamed(server):
    r = server.client().completions.create(model=MODEL, prompt="Once upon a time", max_tokens=12,
                                           temperature=0, extra_body={"ignore_eos": True})
    assert len(r.choices) == 1
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 12
    assert r.usage.prompt_tokens > 0
    assert r.usage.total_tokens == r.usage.prompt_tokens + 12
    assert r.model == MODEL


def test_timings_field(server):
    status, _, body = complete(server, temperature=0, ignore_eos=True)
    assert status == 200
    t = body["timings"]
    assert t["predicted_n"] == 8 and t["prompt_n"] > 0
    assert t["prompt_ms"] >= 0 and t["predicted_ms"] >= 0


def test_streaming_equals_not_streaming(server):
    c = server.client()
    args = dict(model=MODEL, prompt="The cat", max_tokens=20, temperature=0, extra_body={"ignore_eos": True})
    whole = c.completions.create(**args).choices[0].text
    chunks = list(c.completions.create(stream=True, stream_options={"include_usage": True}, **args))
    text = "".join(ch.choices[0].text for ch in chunks if ch.choices)
    assert text == whole
    finals = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    assert finals == ["length"]
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 20
    assert chunks[-1].choices == []


def test_stream_ends_with_done(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v1/completions", json.dumps({"prompt": "hi", "max_tokens": 5, "stream": True}),
                 {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Type").startswith("text/event-stream")
    events = [e for e in resp.read().decode().split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    assert all(e.startswith("data: ") for e in events)
    # The same connection serves the next request (keep-alive after a stream).
    conn.request("GET", "/v1/models", headers={"Authorization": f"Bearer {API_KEY}"})
    assert conn.getresponse().status == 200
    conn.close()


def test_n_choices_and_seed(server):
    c = server.client()
    args = dict(model=MODEL, prompt="Seeds", max_tokens=16, temperature=1.0, n=3, seed=1234,
                extra_body={"ignore_eos": True})
    a = c.completions.create(**args)
    b = c.completions.create(**args)
    assert sorted(ch.index for ch in a.choices) == [0, 1, 2]
    assert [ch.text for ch in a.choices] == [ch.text for ch in b.choices]
    assert len({ch.text for ch in a.choices}) > 1  # seed + i: the choices differ
    assert a.usage.completion_tokens == 48
    other = c.completions.create(**{**args, "seed": 99})
    assert [ch.text for ch in other.choices] != [ch.text for ch in a.choices]


def test_n_streamed_and_prompt_list(server):
    stream = server.client().completions.create(model=MODEL, prompt=["a", "b"], max_tokens=4, n=2, stream=True,
                                                extra_body={"ignore_eos": True})
    texts = {}
    finished = set()
    for ch in stream:
        for choice in ch.choices:
            texts[choice.index] = texts.get(choice.index, "") + choice.text
            if choice.finish_reason:
                finished.add(choice.index)
    assert finished == {0, 1, 2, 3}


def test_token_id_prompts(server):
    c = server.client()
    one = c.completions.create(model=MODEL, prompt=[256, 72, 105], max_tokens=4, temperature=0)
    two = c.completions.create(model=MODEL, prompt=[[256, 72, 105], [256, 66]], max_tokens=4, temperature=0)
    assert two.choices[0].text == one.choices[0].text
    assert len(two.choices) == 2


def test_logprobs(server):
    r = server.client().completions.create(model=MODEL, prompt="Log", max_tokens=6, temperature=0, logprobs=3,
                                           extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == 6 and len(lp.token_logprobs) == 6 and len(lp.top_logprobs) == 6
    assert all(x <= 0 for x in lp.token_logprobs)
    assert all(1 <= len(top) <= 3 for top in lp.top_logprobs)
    # Greedy: the chosen token is the most likely one.
    assert all(abs(max(top.values()) - x) < 1e-4 for top, x in zip(lp.top_logprobs, lp.token_logprobs))


def test_stop_string(server):
    c = server.client()
    base = c.completions.create(model=MODEL, prompt="Stop here", max_tokens=40, temperature=0,
                                extra_body={"ignore_eos": True}).choices[0].text
    candidates = [base[i:i + 2] for i in range(5, len(base) - 2) if "\ufffd" not in base[i:i + 2]]
    if not candidates:
        pytest.skip("the dummy model's output has no usable stop string")
    stop = candidates[0]
    r = c.completions.create(model=MODEL, prompt="Stop here", max_tokens=40, temperature=0, stop=[stop, "never"],
                             extra_body={"ignore_eos": True})
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text == base[:base.find(stop)]


def test_models_health_tokenize(server):
    assert [m.id for m in server.client().models.list().data] == [MODEL]
    status, _, _ = server.request("GET", "/health", key=None)
    assert status == 200
    status, _, data = server.request("POST", "/tokenize", {"prompt": "Hi", "add_special_tokens": True})
    body = json.loads(data)
    assert status == 200 and body["tokens"] == [256, 72, 105] and body["count"] == 3
    assert body["max_model_len"] == MAX_SEQ_LEN
    status, _, data = server.request("POST", "/tokenize", {"prompt": "Hi", "add_special_tokens": False})
    assert json.loads(data)["tokens"] == [72, 105]
    status, _, data = server.request("POST", "/detokenize", {"tokens": [72, 105]})
    assert status == 200 and json.loads(data) == {"prompt": "Hi"}


def test_metrics(server):
    m = server.metrics()
    for name in ("vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting",
                 "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
                 "zerolayer:kv_fragmentation_external", "zerolayer:kv_signatures_live"):
        assert name in m
    # On the CPU there are no GPU counters (tests/server/gpu_metrics_test.cpp has them, from a fake NVML).
    # test_metrics.py reads every vLLM metric with Prometheus's parser.
    assert not [name for name in m if name.startswith("zerolayer:gpu_")]


# ---------------------------------------------------------------- malformed input, raw HTTP

HUGE = 10 ** 30

BAD_FIELDS = [
    ({"prompt": 5}, "prompt"),
    ({"prompt": {"a": 1}}, "prompt"),
    ({"prompt": [1, "x"]}, "prompt"),
    ({"prompt": "hi", "max_tokens": "ten"}, "max_tokens"),
    ({"prompt": "hi", "temperature": "hot"}, "temperature"),
    ({"prompt": "hi", "stream": "yes"}, "stream"),
    ({"prompt": "hi", "stop": 5}, "stop"),
    ({"prompt": "hi", "n": 1.5}, "n"),
    ({"prompt": "hi", "logprobs": True}, "logprobs"),
    ({"prompt": "hi", "seed": "x"}, "seed"),
    ({"prompt": "hi", "max_tokens": -1}, "max_tokens"),
    ({"prompt": "hi", "max_tokens": 0}, "max_tokens"),
    ({"prompt": "hi", "temperature": -1}, "temperature"),
    ({"prompt": "hi", "top_p": -0.5}, "top_p"),
    ({"prompt": "hi", "top_p": 0}, "top_p"),
    ({"prompt": "hi", "top_k": -2}, "top_k"),
    ({"prompt": "hi", "min_p": 2}, "min_p"),
    ({"prompt": "hi", "presence_penalty": -3}, "presence_penalty"),
    ({"prompt": "hi", "frequency_penalty": 9}, "frequency_penalty"),
    ({"prompt": "hi", "repetition_penalty": 0}, "repetition_penalty"),
    ({"prompt": "hi", "n": 0}, "n"),
    ({"prompt": "hi", "logprobs": -1}, "logprobs"),
    ({"prompt": "hi", "max_tokens": 10 ** 12}, "max_tokens"),
    ({"prompt": "hi", "max_tokens": HUGE}, "max_tokens"),
    ({"prompt": "hi", "temperature": 1e308}, "temperature"),
    ({"prompt": "hi", "top_k": HUGE}, "top_k"),
    ({"prompt": "hi", "n": 10 ** 6}, "n"),
    ({"prompt": "hi", "logprobs": 1000}, "logprobs"),
    ({"prompt": "hi", "seed": HUGE}, "seed"),
    ({"prompt": "hi", "priority": HUGE}, "priority"),
    ({"prompt": ""}, "prompt"),
    ({"prompt": []}, "prompt"),
    ({"prompt": [[]]}, "prompt"),
    ({"prompt": [""]}, "prompt"),
    ({}, "prompt"),
    ({"prompt": "x" * (MAX_SEQ_LEN * 2)}, "prompt"),
    ({"prompt": [65] * MAX_SEQ_LEN}, "prompt"),
    ({"prompt": [1, 2, 100000]}, "prompt"),
    ({"prompt": [-1]}, "prompt"),
    ({"prompt": [[1], [2, 1 << 40]]}, "prompt"),
    ({"prompt": "hi", "stop": [f"s{i}" for i in range(1000)]}, "stop"),
    ({"prompt": "hi", "stop": ["x" * 5000]}, "stop"),
    ({"prompt": "hi", "echo": True, "logprobs": 1}, "echo"),
    ({"prompt": "hi", "stream_options": {"include_usage": True}}, "stream_options"),
    ({"prompt": "hi", "logit_bias": {"5": 101}}, "logit_bias"),
    ({"prompt": "hi", "logit_bias": {"100000": 1}}, "logit_bias"),
]


@pytest.mark.parametrize("body,param", BAD_FIELDS, ids=[f"{p}-{i}" for i, (_, p) in enumerate(BAD_FIELDS)])
def test_bad_field_names_it(server, body, param):
    status, _, data = server.request("POST", "/v1/completions", body)
    assert status == 400, data
    err = json.loads(data)["error"]
    assert err["param"] == param, err
    assert err["type"] == "invalid_request_error"
    assert err["message"]


RAW_BODIES = [
    (b'{"prompt": ', "prompt"),
    (b"not json", None),
    (b"[1, 2]", None),
    (b'{"prompt": "hi", "temperature": NaN}', "temperature"),
    (b'{"prompt": "hi", "top_p": Infinity}', "top_p"),
    (b'{"prompt": "\xff\xfe bad utf8"}', "prompt"),
    (b'{"prompt": "ok", "stop": ["\xc3\x28"]}', "stop"),
    (b"[" * 100000, None),
]


@pytest.mark.parametrize("body,param", RAW_BODIES, ids=[str(i) for i in range(len(RAW_BODIES))])
def test_bad_json(server, body, param):
    status, _, data = server.request("POST", "/v1/completions", body)
    assert status == 400, data
    err = json.loads(data)["error"]
    assert err["param"] == param, err
    assert err["message"]


def test_unknown_model_route_method(server):
    status, _, data = complete(server, model="gpt-4")
    assert status == 404 and data["error"]["param"] == "model"
    status, _, data = server.request("GET", "/v1/nothing")
    assert status == 404 and "error" in json.loads(data)
    status, headers, data = server.request("GET", "/v1/completions")
    assert status == 405 and headers.get("Allow") == "POST"
    status, _, data = server.request("POST", "/v1/chat/completions", {"messages": []})
    assert status == 400 and json.loads(data)["error"]["param"] == "messages"


def test_api_key(server):
    for key in (None, "wrong-key"):
        for method, path in (("GET", "/v1/models"), ("POST", "/v1/completions"), ("POST", "/tokenize")):
            status, _, data = server.request(method, path, {"prompt": "hi"} if method == "POST" else None, key=key)
            assert status == 401, (key, path)
            assert json.loads(data)["error"]["code"] == "invalid_api_key"
    # /health and /metrics (for scrapers; test_serve_ops.py: --metrics-require-key) need no key.
    for path in ("/health", "/metrics"):
        status, _, _ = server.request("GET", path, key="wrong-key")
        assert status == 200
    # The scheme is case-insensitive (RFC 9110): "bearer" as "Bearer".
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    for scheme in ("bearer", "BEARER"):
        conn.request("GET", "/v1/models", headers={"Authorization": f"{scheme} {API_KEY}"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, scheme
    conn.close()
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="nope",
                      max_retries=0).completions.create(model=MODEL, prompt="x", max_tokens=1)


def test_bad_tokenize_detokenize(server):
    status, _, data = server.request("POST", "/tokenize", {"prompt": 5})
    assert status == 400 and json.loads(data)["error"]["param"] == "prompt"
    status, _, data = server.request("POST", "/detokenize", {"tokens": [1, 99999]})
    assert status == 400 and json.loads(data)["error"]["param"] == "tokens"
    status, _, data = server.request("POST", "/detokenize", {"tokens": "abc"})
    assert status == 400 and json.loads(data)["error"]["param"] == "tokens"


def test_huge_body_refused_promptly(server):
    """A 100 MB body is refused with 413 from its header, without being read."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {100 * 1024 * 1024}\r\n\r\n").encode()
    start = time.time()
    sock.sendall(head)
    sent = 0
    reply = b""
    chunk = b"x" * (1 << 20)
    sock.settimeout(0.05)
    while time.time() - start < 10:
        try:
            data = sock.recv(65536)
            if not data:
                break
            reply += data
            if b"\r\n\r\n" in reply and b"}" in reply:
                break
        except socket.timeout:
            pass
        except ConnectionError:
            break
        if sent < 100 * (1 << 20):
            try:
                sock.sendall(chunk)
                sent += len(chunk)
            except (ConnectionError, socket.timeout):
                pass
    elapsed = time.time() - start
    sock.close()
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert elapsed < 5
    assert sent < 100 * (1 << 20)  # answered before the body was all sent
    assert b"Connection: close" in reply


def test_malformed_http(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(b"GARBAGE\r\n\r\n")
    reply = sock.recv(65536)
    sock.close()
    assert reply.startswith(b"HTTP/1.1 400")


def test_still_serving_after_bad_input(server):
    status, _, body = complete(server, temperature=0)
    assert status == 200 and body["choices"][0]["text"] is not None


# ---------------------------------------------------------------- big bodies stall nobody

def test_text_too_long_for_the_context_is_refused_by_its_size(server):
    # 15 MB of text cannot be 512 tokens: refused before it is tokenized.
    started = time.time()
    status, _, data = complete(server, prompt="hello world " * 1_250_000, max_tokens=4)
    elapsed = time.time() - started
    print(f"15 MB prompt refused in {elapsed:.2f} s")
    assert status == 400
    error = data["error"]
    assert error["param"] == "prompt" and "bytes of text" in error["message"], error
    assert elapsed < 10


def test_health_answers_while_big_bodies_are_tokenized(server):
    big = {"prompt": "hello world " * 1_250_000}
    results = []
    threads = [threading.Thread(target=lambda: results.append(server.request("POST", "/tokenize", big)[0]))
               for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.3)  # both bodies sent, being parsed or tokenized
    worst, checks = 0.0, 0
    while any(t.is_alive() for t in threads) and checks < 20:
        started = time.time()
        status, _, _ = server.request("GET", "/health")
        worst = max(worst, time.time() - started)
        assert status == 200
        checks += 1
        time.sleep(0.05)
    for t in threads:
        t.join(120)
    print(f"/health: worst {worst * 1000:.1f} ms over {checks} checks during two 15 MB /tokenize calls")
    assert results == [200, 200]
    assert worst < 1.0


def test_out_of_file_descriptors_is_reported_briefly_and_survived():
    # 64 descriptors: the connections below exhaust them, so accept fails.
    import resource
    s = Server("--model", "dummy:tiny", "--max-seq-len", "128", "--kv-cache-memory", "8M", api_key=None,
               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
    try:
        socks = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(100)]
        time.sleep(2.0)
        for sock in socks:
            sock.close()
        failures = s.output().count("accept failed")
        assert 1 <= failures <= 2, s.output()[-2000:]
        status, _, _ = s.request("GET", "/health")
        assert status == 200
    finally:
        assert s.stop() == 0


# ---------------------------------------------------------------- disconnects free their KV memory

def _wait_idle(server, timeout):
    """Metrics once nothing runs and no KV block is held; fails after `timeout` s."""
    deadline = time.time() + timeout
    while True:
        m = server.metrics()
        if m["vllm:num_requests_running"] == 0 and m["vllm:num_requests_waiting"] == 0 and \
                m["zerolayer:kv_blocks_used"] == 0 and m["zerolayer:http_completions_in_flight"] == 0:
            return m
        assert time.time() < deadline, m
        time.sleep(0.05)


def _stream(port, max_tokens, disconnect_after, results, index):
    body = json.dumps({"prompt": f"client {index}", "max_tokens": max_tokens, "stream": True, "ignore_eos": True,
                       "stream_options": {"include_usage": True}, "temperature": 0.8, "seed": index})
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    req = (f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode()
    sock.sendall(req)
    data = b""
    try:
        while b"data: [DONE]" not in data:
            part = sock.recv(65536)
            if not part:
                break
            data += part
            if disconnect_after is not None and data.count(b"data: ") >= disconnect_after:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                sock.close()  # an abrupt close (RST), mid-stream
                results[index] = "disconnected"
                return
    finally:
        if results[index] is None:
            sock.close()
    results[index] = data


def test_disconnects_free_kv(server):
    random.seed(7)
    n, max_tokens = 100, 48
    leavers = set(random.sample(range(n), 30))
    results = [None] * n
    threads = [threading.Thread(target=_stream, args=(server.port, max_tokens,
                                                      random.randint(1, 20) if i in leavers else None, results, i))
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for i in range(n):
        if i in leavers:
            assert results[i] == "disconnected"
            continue
        data = results[i]
        assert isinstance(data, bytes) and b"data: [DONE]" in data, (i, data[-200:])
        events = [json.loads(e[6:]) for e in data.decode().split("\r\n") if e.startswith("data: {")]
        usage = [e["usage"] for e in events if e.get("usage")]
        assert usage and usage[-1]["completion_tokens"] == max_tokens
        assert [c["finish_reason"] for e in events for c in e["choices"] if c["finish_reason"]] == ["length"]
    m = _wait_idle(server, timeout=10)
    assert m["vllm:kv_cache_usage_perc"] == 0
    # Most leavers are seen mid-stream (a write fails) and aborted, not run to the end.
    print("client disconnects seen:", m["zerolayer:http_client_disconnects_total"])
    assert m["zerolayer:http_client_disconnects_total"] >= 10
    test_still_serving_after_bad_input(server)


@pytest.mark.parametrize("stream", [False, True])
def test_client_gone_before_the_response_aborts_the_job(server, stream):
    # 64 choices of 480 tokens take seconds; the client leaves after 0.3 s,
    # before any byte of the response (non-streamed) or while no write is due.
    before = server.metrics()["zerolayer:http_client_disconnects_total"]
    body = json.dumps({"prompt": "leave early", "max_tokens": 480, "n": 64, "ignore_eos": True, "stream": stream})
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {API_KEY}\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}").encode())
    time.sleep(0.3)
    left = time.time()
    sock.close()
    m = _wait_idle(server, timeout=2.0)
    print(f"stream={stream}: idle {time.time() - left:.2f} s after the client left")
    assert m["zerolayer:http_client_disconnects_total"] >= before + 1


# ---------------------------------------------------------------- queue full, shutdown, goldens

def test_queue_full_gives_503():
    s = Server("--model", "dummy:tiny", "--max-num-seqs", "1", "--max-num-waiting", "1", "--max-seq-len", "1024",
               "--kv-cache-memory", "16M", api_key=None)
    try:
        results = []
        lock = threading.Lock()

        def one():
            r = s.request("POST", "/v1/completions", {"prompt": "q", "max_tokens": 1000, "ignore_eos": True})
            with lock:
                results.append(r)

        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        busy = [r for r in results if r[0] == 503]
        assert busy, [r[0] for r in results]
        assert busy[0][1].get("Retry-After") == "1"
        assert json.loads(busy[0][2])["error"]["code"] == "queue_full"
        assert any(r[0] == 200 for r in results)
    finally:
        assert s.stop() == 0


def test_sigterm_ends_streams_and_exits_zero():
    # No drain: what is in flight is aborted at once (test_serve_ops.py drains).
    s = Server("--model", "dummy:tiny", "--max-seq-len", "1024", "--kv-cache-memory", "16M", "--shutdown-timeout", "0",
               api_key=None)
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    conn.request("POST", "/v1/completions", json.dumps({"prompt": "long", "max_tokens": 1000, "ignore_eos": True,
                                                        "stream": True}), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    first = resp.read(16)  # the first event is on its way: the request is in flight
    assert first.startswith(b"data: ")
    s.proc.send_signal(signal.SIGTERM)
    rest = (first + resp.read()).decode()
    conn.close()
    assert rest.rstrip().endswith("data: [DONE]")
    finals = [json.loads(e[6:])["choices"][0]["finish_reason"] for e in rest.split("\n\n") if e.startswith("data: {")]
    assert finals[-1] == "abort"
    assert s.proc.wait(30) == 0


def test_stories260k_matches_golden():
    model = SHARED / "models" / "stories260K.gguf"
    if not model.exists():
        pytest.skip(f"{model} is missing")
    golden = json.loads((REPO / "tests" / "golden" / "generate" / "stories260K.json").read_text())
    s = Server("--model", str(model), "--kv-cache-memory", "16M", api_key=None)
    try:
        for case in golden[:3]:
            status, _, data = s.request("POST", "/v1/completions", {
                "prompt": case["prompt"], "max_tokens": len(case["generated_ids"]), "temperature": 0,
                "ignore_eos": True, "return_token_ids": True})
            assert status == 200, data
            choice = json.loads(data)["choices"][0]
            assert choice["token_ids"] == case["generated_ids"]
            assert choice["text"] == case["text"]
            status, _, data = s.request("POST", "/tokenize", {"prompt": case["prompt"]})
            assert json.loads(data)["tokens"] == case["prompt_ids"]
    finally:
        assert s.stop() == 0


def test_logprobs_zero_still_scores_the_chosen_token(server):
    r = server.client().completions.create(model=MODEL, prompt="Log", max_tokens=4, temperature=0, logprobs=0,
                                           extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs
    assert len(lp.token_logprobs) == 4
    # A random model is never certain: every chosen token has log p < 0.
    assert all(x < 0 for x in lp.token_logprobs)


# ---------------------------------------------------------------- chat: /v1/chat/completions and /apply-template

@pytest.fixture(scope="module")
def chat_server():
    s = Server("--model", "dummy:tiny", "--served-model-name", MODEL, "--max-seq-len", str(MAX_SEQ_LEN),
               "--max-num-seqs", "16", "--kv-cache-memory", "32M", "--chat-template", "chatml")
    yield s
    assert s.stop() == 0


CONVERSATION = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi there"}]


def test_chat_not_streamed(chat_server):
    r = chat_server.client().chat.completions.create(model=MODEL, messages=CONVERSATION, max_completion_tokens=6,
                                                     temperature=0, n=2)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    assert len(r.choices) == 2
    for i, c in enumerate(r.choices):
        assert c.index == i and c.message.role == "assistant"
        assert isinstance(c.message.content, str)
        assert c.finish_reason in ("stop", "length")
    assert r.choices[0].message.content == r.choices[1].message.content  # greedy
    assert r.usage.prompt_tokens > 0 and 0 < r.usage.completion_tokens <= 12


def test_chat_streamed_equals_not_streamed(chat_server):
    client = chat_server.client()
    kwargs = dict(model=MODEL, messages=CONVERSATION, max_tokens=8, temperature=0, extra_body={"ignore_eos": True})
    whole = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs))
    assert chunks[0].object == "chat.completion.chunk"
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    finals = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finals == ["length"]
    assert chunks[-1].usage.completion_tokens == 8


def test_chat_stream_ends_with_done(chat_server):
    status, _, data = chat_server.request("POST", "/v1/chat/completions",
                                          {"messages": CONVERSATION, "max_tokens": 3, "stream": True})
    assert status == 200
    events = [line[6:] for line in data.decode().split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    first = json.loads(events[0])
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert json.loads(events[-2])["choices"][0]["finish_reason"] in ("stop", "length")


def test_apply_template_chatml(chat_server):
    status, _, data = chat_server.request("POST", "/apply-template", {"messages": CONVERSATION})
    assert status == 200, data
    assert json.loads(data) == {"prompt": "<|im_start|>system\nYou are terse.<|im_end|>\n"
                                          "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"}


def test_chat_text_parts_and_tools(chat_server):
    parts = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    status, _, data = chat_server.request("POST", "/apply-template", {"messages": parts})
    assert status == 200 and json.loads(data)["prompt"] == "<|im_start|>user\na\nb<|im_end|>\n<|im_start|>assistant\n"
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    status, _, data = chat_server.request("POST", "/v1/chat/completions",
                                          {"messages": parts, "tools": tools, "tool_choice": "auto", "max_tokens": 2})
    assert status == 200, data


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/apply-template"])
@pytest.mark.parametrize("body,needle", [
    ({}, "required"),
    ({"messages": []}, "non-empty"),
    ({"messages": "hi"}, "list"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "wizard"),
    ({"messages": [{"content": "x"}]}, "role"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}, "image_url"),
    ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, "text"),
    ({"messages": [{"role": "user", "content": ["x"]}]}, "content[0]"),
    ({"messages": [{"role": "user", "content": 3}]}, "content"),
])
def test_chat_bad_messages_name_the_field(chat_server, path, body, needle):
    status, _, data = chat_server.request("POST", path, body)
    assert status == 400, data
    err = json.loads(data)["error"]
    assert err["param"] == "messages" and needle in err["message"], err


def test_chat_bad_messages_through_openai(chat_server):
    with pytest.raises(openai.BadRequestError) as info:
        chat_server.client().chat.completions.create(model=MODEL, messages=[{"role": "wizard", "content": "x"}])
    assert info.value.body["param"] == "messages"


def test_chat_without_template_is_400(server):
    for path in ("/v1/chat/completions", "/apply-template"):
        status, _, data = server.request("POST", path, {"messages": CONVERSATION})
        assert status == 400, data
        assert "no chat template" in json.loads(data)["error"]["message"]
    status, _, data = complete(server)  # completions still work
    assert status == 200


# ---------------------------------------------------------------- both transports of one server

def test_shm_and_http_return_the_same_greedy_tokens():
    sys.path.insert(0, str(REPO / "clients" / "python"))
    import zerolayer_client as zl
    name = f"/zl_pytest_{os.getpid()}"
    s = Server("--model", "dummy:tiny", "--served-model-name", MODEL, "--kv-cache-memory", "16M",
               "--chat-template", "chatml", api_key=None, shm_name=name)
    try:
        status, _, data = s.request("POST", "/v1/completions", {
            "prompt": "Hello there", "max_tokens": 12, "temperature": 0, "ignore_eos": True,
            "return_token_ids": True})
        assert status == 200, data
        http_ids = json.loads(data)["choices"][0]["token_ids"]
        messages = [{"role": "user", "content": "Hi there"}]
        status, _, data = s.request("POST", "/v1/chat/completions", {
            "messages": messages, "max_tokens": 6, "temperature": 0, "ignore_eos": True})
        assert status == 200, data
        http_chat = json.loads(data)["choices"][0]["message"]["content"]
        with zl.connect(name) as client:
            over_shm = client.generate("Hello there", max_new_tokens=12, temperature=0.0, ignore_eos=True)
            chat_over_shm = client.generate(messages, max_new_tokens=6, temperature=0.0, ignore_eos=True)
        assert len(http_ids) == 12 and over_shm.tokens == http_ids
        assert chat_over_shm.text == http_chat
    finally:
        assert s.stop() == 0
