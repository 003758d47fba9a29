"""Replicas behind vllm-router (PyPI), on loopback.

Three `zerolayer serve` replicas publish KV-cache events; `vllm-router` in
front routes. With `kv_aware` (our events) and `cache_aware` (the router's
own tree), 20 users, each repeating its own 1,000-token prefix, stay on one
replica each, and the cluster's prefix-cache hit rate is at least 90% of
what one server gets on the same requests; `round_robin` scatters them and
gets less than half. A replica SIGKILLed under load: its streams fail with
an error (never hang), every other request completes, the router stops
sending to it, and once restarted it is sent requests again.
The library is bench/replica_cluster.py; bench/replicas.py reports figures.
"""

import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import replica_cluster as rc  # noqa: E402

if not Path(rc.ROUTER).exists():
    pytest.skip(f"vllm-router is not installed at {rc.ROUTER} (pip install vllm-router)", allow_module_level=True)
if not Path(rc.BIN).exists():
    pytest.skip(f"no server binary at {rc.BIN}", allow_module_level=True)

USERS, PREFIX, ROUNDS = 20, 1000, 3


def replicas(n, *extra):
    # The access log names who served what: kept on here.
    return [rc.Replica(i, "--kv-cache-memory", "64M", "--threads", "1", *extra) for i in range(n)]


@pytest.fixture(scope="module")
def single_server_hit_rate():
    (one,) = replicas(1)
    try:
        return rc.measure([one], one.port, rc.user_prompts(USERS, PREFIX, ROUNDS, seed=100), 4)["hit_rate"]
    finally:
        one.stop()


@pytest.mark.parametrize("policy", ["kv_aware", "cache_aware", "round_robin"])
def test_users_land_where_their_prefix_is(policy, single_server_hit_rate):
    reps = replicas(3)
    router = rc.Router(policy, reps)
    try:
        figures = rc.measure(reps, router.port, rc.user_prompts(USERS, PREFIX, ROUNDS, seed=100), 4)
    finally:
        router.stop()
        for r in reps:
            assert r.stop() == 0
    assert figures["ok"] == USERS * ROUNDS, figures
    # One server: each user's first request misses, the next two hit ~98% of their prompt.
    assert single_server_hit_rate > 0.6
    if policy == "round_robin":
        assert figures["hit_rate"] < 0.5 * single_server_hit_rate, figures
    else:
        assert figures["hit_rate"] >= 0.9 * single_server_hit_rate, figures
        assert figures["users_on_one_replica"] >= USERS - 1, figures
        assert sum(1 for n in figures["users_per_replica"] if n > 0) >= 2, figures  # spread, not all on one


def test_killed_replica_fails_its_streams_and_rejoins():
    reps = replicas(3)
    router = rc.Router("kv_aware", reps)
    try:
        prompts = rc.user_prompts(12, 32, 1, seed=7)[0]
        results = {}

        def stream(rid, prompt):
            results[rid] = rc.stream_completion(router.port, prompt, rid, 3500)

        threads = [threading.Thread(target=stream, args=(rid, p)) for _, rid, p in prompts]
        for t in threads:
            t.start()
        # Kill a replica with streams in flight.
        rc.wait_until(lambda: any(r.metrics().get("vllm:num_requests_running", 0) > 0 for r in reps), 30, "streams")
        victim = max(reps, key=lambda r: r.metrics().get("vllm:num_requests_running", 0))
        victim.kill()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads), "a stream hung"
        failed = [rid for rid, (ok, *_) in results.items() if not ok]
        assert failed and len(failed) < len(prompts), results  # the victim's streams, and only those
        survivors = set().union(*(r.request_ids() for r in reps if r is not victim))
        assert not set(failed) & survivors
        # Each stream that ended well was answered: by a survivor, or by the
        # victim before it died (its access log has the line).
        assert set(results) - set(failed) <= survivors | victim.request_ids()

        # The router stops sending to it: everything after completes.
        time.sleep(2.5)  # a health check or two (every second)
        later = rc.run_rounds(router.port, rc.user_prompts(10, 64, 1, seed=8), 4)
        assert all(ok for ok, *_ in later.values()), later

        # Restarted on its ports, it is sent requests again.
        victim.start()
        deadline, seed = time.time() + 30, 9
        while time.time() < deadline and not victim.request_ids():
            more = rc.run_rounds(router.port, rc.user_prompts(6, 64, 1, seed=seed), 3)
            assert all(ok for ok, *_ in more.values()), more
            seed += 1
        assert victim.request_ids(), "the restarted replica got no request"
    finally:
        router.stop()
        for r in reps:
            r.stop()
