"""KV-cache events as vllm-router's kv_aware policy reads them.

`zerolayer serve --kv-events-endpoint` publishes vLLM's KVEventBatch over a
ZMQ PUB socket: frames [topic, seq (8 bytes big-endian), msgpack payload],
payload [ts, [event maps tagged by "type"], data_parallel_rank]. The events
are decoded here by the msgpack package (the independent oracle for our
encoder) and checked against what the server computed: each BlockStored
carries the block's own prompt tokens, chains to its parent, and every
BlockRemoved names a block stored before. The replay socket serves the same
batches again. The render endpoints the router asks before routing return the
token ids /tokenize gives.
"""

import json
import random
import socket
import time

import pytest

from test_http_server import Server

zmq = pytest.importorskip("zmq")
msgpack = pytest.importorskip("msgpack")

BLOCK = 16
VOCAB = 512  # dummy:tiny-4k's


def tokens(seed, n):
    """n token ids of a prompt no other seed shares (in practice)."""
    return random.Random(seed).choices(range(VOCAB), k=n)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def events_server():
    pub, replay = free_port(), free_port()
    s = Server("--model", "dummy:tiny-4k", "--kv-cache-memory", "1M", "--max-num-seqs", "4",
               "--kv-events-endpoint", f"tcp://127.0.0.1:{pub}",
               "--kv-events-replay-endpoint", f"tcp://127.0.0.1:{replay}", api_key=None)
    context = zmq.Context()
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(f"tcp://127.0.0.1:{pub}")
    time.sleep(0.3)  # a SUB that is not connected yet misses what is sent
    yield s, sub, context, replay
    sub.close(0)
    context.term()
    assert s.stop() == 0


def receive(sub, until, timeout=10):
    """Batches (seq, decoded payload) until until(events so far) holds."""
    batches, events = [], []
    deadline = time.time() + timeout
    while not until(events) and time.time() < deadline:
        if not sub.poll(100):
            continue
        topic, seq, payload = sub.recv_multipart()
        assert topic == b""
        assert len(seq) == 8
        batch = msgpack.unpackb(payload)
        ts, batch_events, rank = batch
        assert isinstance(ts, float) and abs(ts - time.time()) < 60 and rank == 0
        batches.append((int.from_bytes(seq, "big"), payload))
        events += batch_events
    return batches, events


def complete(server, prompt):
    status, _, data = server.request("POST", "/v1/completions", {"prompt": prompt, "max_tokens": 1,
                                                                  "temperature": 0})
    assert status == 200, data


def stored_blocks(events):
    """(hash, parent, tokens) of each block in BlockStored events, in order."""
    blocks = []
    for e in events:
        if e["type"] != "BlockStored":
            continue
        assert set(e) == {"type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id",
                          "medium", "lora_name"}
        assert e["block_size"] == BLOCK and e["medium"] == "GPU" and e["lora_id"] is None and e["lora_name"] is None
        hashes = e["block_hashes"]
        assert len(e["token_ids"]) == BLOCK * len(hashes)
        parent = e["parent_block_hash"]
        for i, h in enumerate(hashes):
            assert isinstance(h, bytes) and len(h) == 16
            blocks.append((h, parent, e["token_ids"][i * BLOCK:(i + 1) * BLOCK]))
            parent = h
    return blocks


def test_stored_blocks_carry_their_tokens_and_chain(events_server):
    server, sub, _, _ = events_server
    prompt = tokens(1, 5 * BLOCK + 3)  # five full blocks and three tokens
    complete(server, prompt)
    _, events = receive(sub, lambda ev: len(stored_blocks(ev)) >= 5)
    blocks = stored_blocks(events)
    assert len(blocks) == 5, events
    assert blocks[0][1] is None  # the prompt's first block has no parent
    for i, (h, parent, block_tokens) in enumerate(blocks):
        assert block_tokens == prompt[i * BLOCK:(i + 1) * BLOCK]
        if i:
            assert parent == blocks[i - 1][0]
    assert len({b[0] for b in blocks}) == 5

    # The same prefix again is served from the cache: no new block for it.
    complete(server, prompt[:2 * BLOCK] + tokens(2, BLOCK + 1))
    _, events = receive(sub, lambda ev: len(stored_blocks(ev)) >= 1)
    again = stored_blocks(events)
    assert len(again) == 1 and again[0][1] == blocks[1][0], again


def test_evictions_remove_blocks_that_were_stored(events_server):
    server, sub, _, _ = events_server
    # 1 MiB of KV on dummy:tiny-4k holds 64 blocks: 96 new ones evict.
    known, removed = set(), []
    for k in range(24):
        complete(server, tokens(100 + k, 4 * BLOCK + 1))
    _, events = receive(sub, lambda ev: any(e["type"] == "BlockRemoved" for e in ev) and
                        len(stored_blocks(ev)) >= 96, timeout=10)
    for e in events:
        if e["type"] == "BlockStored":
            known.update(e["block_hashes"])
        elif e["type"] == "BlockRemoved":
            assert set(e) == {"type", "block_hashes", "medium"} and e["medium"] == "GPU"
            removed += e["block_hashes"]
    assert removed, "no eviction"
    # Blocks stored by the earlier tests may be removed too; any removal of
    # this test's blocks must follow their storing.
    assert all(isinstance(h, bytes) and len(h) == 16 for h in removed)
    assert len(known & set(removed)) > 0


def test_replay_serves_kept_batches_then_ends(events_server):
    server, sub, context, replay_port = events_server
    complete(server, tokens(3, 2 * BLOCK + 1))
    live, _ = receive(sub, lambda ev: len(stored_blocks(ev)) >= 2)
    start = live[0][0]
    dealer = context.socket(zmq.DEALER)
    dealer.connect(f"tcp://127.0.0.1:{replay_port}")
    dealer.send_multipart([b"", start.to_bytes(8, "big")])
    replayed = []
    while True:
        assert dealer.poll(5000), "no replay answer"
        frames = dealer.recv_multipart()
        assert len(frames) == 4 and frames[0] == b""
        seq = int.from_bytes(frames[2], "big", signed=True)
        if seq == -1:
            assert frames[1] == b"" and frames[3] == b""
            break
        assert frames[1] == b"" and seq >= start
        replayed.append((seq, frames[3]))
    assert replayed[:len(live)] == live
    # A malformed request gets nothing, and the publisher goes on.
    dealer.send_multipart([b"", b"\x01"])
    assert not dealer.poll(300)
    dealer.close(0)
    complete(server, tokens(4, BLOCK + 1))
    assert stored_blocks(receive(sub, lambda ev: len(stored_blocks(ev)) >= 1)[1])


def test_render_endpoints_give_the_prompt_tokens(events_server):
    server = events_server[0]
    status, _, data = server.request("POST", "/tokenize", {"prompt": "hello world"})
    ids = json.loads(data)["tokens"]
    # vllm-router sends fields it does not need (ignore_eos, ...): accepted.
    status, _, data = server.request("POST", "/v1/completions/render",
                                     {"model": "x", "prompt": ["hello world", [5, 6]], "ignore_eos": True})
    assert status == 200, data
    assert json.loads(data) == [{"token_ids": ids}, {"token_ids": [5, 6]}]
    status, _, data = server.request("POST", "/v1/chat/completions/render",
                                     {"messages": [{"role": "user", "content": "hi"}]})
    assert status == 400  # dummy:tiny-4k has no chat template, said as for chat itself
    assert "chat template" in json.loads(data)["error"]["message"]


def test_a_reload_clears_the_routers_view():
    pub = free_port()
    s = Server("--model", "dummy:tiny-4k", "--kv-cache-memory", "1M", "--kv-events-endpoint",
               f"tcp://127.0.0.1:{pub}", api_key="secret")
    context = zmq.Context()
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(f"tcp://127.0.0.1:{pub}")
    time.sleep(0.3)
    try:
        complete(s, tokens(9, 2 * BLOCK + 1))
        assert len(stored_blocks(receive(sub, lambda ev: len(stored_blocks(ev)) >= 2)[1])) >= 2
        status, _, data = s.request("POST", "/admin/reload", {"model": "dummy:tiny-4k:5"})
        assert status == 200, data
        _, events = receive(sub, lambda ev: any(e["type"] == "AllBlocksCleared" for e in ev))
        assert {"type": "AllBlocksCleared"} in events
    finally:
        sub.close(0)
        context.term()
        assert s.stop() == 0
