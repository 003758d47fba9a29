"""The pure-Python shared-memory client against a live server.

Run by tests/transport/shm_python_slow_test.cpp, which starts the servers and
passes, through the environment:
  ZL_TEST_SHM_NAME          a live in-process server (dummy:tiny)
  ZL_TEST_EXPECTED_TOKENS   greedy tokens of prompt [1,17,42,99,7,3], 24 new, from the in-process API
  ZL_TEST_DOOMED_SHM_NAME   a server in a child process that this suite kills
  ZL_TEST_DOOMED_PID        its pid
"""
import json
import math
import os
import signal
import time

import pytest

import zerolayer_client as zl

NAME = os.environ.get("ZL_TEST_SHM_NAME")
pytestmark = pytest.mark.skipif(not NAME, reason="needs a server started by shm_python_slow_test")


@pytest.fixture
def client():
    with zl.connect(NAME) as c:
        yield c


def test_greedy_tokens_match_in_process(client):
    expected = [int(t) for t in os.environ["ZL_TEST_EXPECTED_TOKENS"].split(",")]
    result = client.generate([1, 17, 42, 99, 7, 3], max_new_tokens=24, temperature=0.0, ignore_eos=True)
    assert result.tokens == expected
    assert result.finish_reason == "length"
    assert result.num_generated_tokens == 24
    assert result.timings["finish_s"] > 0


def test_chat_messages_render_through_the_template(client):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]
    chat = client.generate(messages, max_new_tokens=8, temperature=0.0, ignore_eos=True)
    # The server renders ChatML; the same text as a plain prompt gives the same greedy tokens.
    text = ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n"
            "<|im_start|>assistant\n")
    plain = client.generate(text, max_new_tokens=8, temperature=0.0, ignore_eos=True)
    assert chat.tokens == plain.tokens and len(chat.tokens) == 8
    with pytest.raises(ValueError):
        client.generate([{"role": "wizard", "content": "x"}], max_new_tokens=1)


def test_long_prompt_travels_in_parts(client):
    # 16 stop strings of 800 bytes leave a 1000-token prompt (4000 bytes) no room
    # in one record: it goes ahead in PROMPT_PART records, and generation is the same.
    prompt = [3 + (i * 7919) % 250 for i in range(1000)]
    whole = client.generate(prompt, max_new_tokens=6, temperature=0.0, ignore_eos=True)
    parted = client.generate(prompt, max_new_tokens=6, temperature=0.0, ignore_eos=True, stop=["q" * 800] * 16)
    assert parted.num_prompt_tokens == 1000
    assert parted.tokens == whole.tokens and len(whole.tokens) == 6


def test_streaming_text_prompt(client):
    events = list(client.stream("Hello from Python", max_new_tokens=5, temperature=0.0, ignore_eos=True))
    assert [e.kind for e in events].count(zl.RESPONSE_FINISH) == 1
    assert events[-1].kind == zl.RESPONSE_FINISH
    assert sum(e.kind == zl.RESPONSE_TOKEN for e in events) == 5
    assert all(e.read_ns >= e.sink_ns for e in events)


def test_rejected_request_names_the_field(client):
    with pytest.raises(zl.RequestError, match="temperature"):
        client.generate([1, 2], max_new_tokens=4, temperature=math.nan)
    with pytest.raises(zl.RequestError, match="prompt: token id"):
        client.generate([10**6], max_new_tokens=4)
    assert client.generate([1, 2], max_new_tokens=3, temperature=0.0, ignore_eos=True).num_generated_tokens == 3


def test_structured_output(client):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"enum": [1, 2, 3]}},
              "required": ["ok", "n"], "additionalProperties": False}
    for seed in range(3):
        result = client.generate([1, 2, 3], max_new_tokens=64, temperature=1.0, seed=seed,
                                 structured=("json_schema", json.dumps(schema)))
        value = json.loads(result.text)
        assert result.finish_reason == "stop" and set(value) == {"ok", "n"} and value["n"] in (1, 2, 3)
    choice = client.generate([1, 2, 3], max_new_tokens=16, temperature=1.0, seed=1,
                             structured=("choice", ["left", "right"]))
    assert choice.text in ("left", "right")
    with pytest.raises(zl.RequestError, match="structured_output"):
        client.generate([1, 2], max_new_tokens=4, structured=("regex", "[a-"))


def test_logit_bias_and_the_stop_id(client):
    # Protocol version 3. dummy:tiny's byte vocabulary: id 65 is "A", 257 "</s>".
    result = client.generate([1, 2, 3], max_new_tokens=6, temperature=1.0, seed=2, ignore_eos=True,
                             logit_bias={65: 100})
    assert result.text == "AAAAAA"
    events = list(client.stream([1, 2, 3], max_new_tokens=6, ignore_eos=True, logit_bias={257: 100},
                                stop_token_ids=[257]))
    assert events[-1].kind == zl.RESPONSE_FINISH and events[-1].token == 257
    kept = client.generate([1, 2, 3], max_new_tokens=2, ignore_eos=True, logit_bias={257: 100},
                           keep_special_tokens=True)
    assert kept.text == "</s></s>"
    with pytest.raises(zl.RequestError, match="logit_bias"):
        client.generate([1, 2], max_new_tokens=2, logit_bias={1: math.nan})


def test_breaking_out_of_a_stream_cancels(client):
    for event in client.stream([1, 2, 3], max_new_tokens=900, temperature=0.0, ignore_eos=True):
        break
    # The next request on the same client still works; the cancelled one's events are skipped.
    assert client.generate([4, 5], max_new_tokens=2, temperature=0.0, ignore_eos=True).num_generated_tokens == 2


def test_killed_server_raises_within_a_second():
    name, pid = os.environ["ZL_TEST_DOOMED_SHM_NAME"], int(os.environ["ZL_TEST_DOOMED_PID"])
    with zl.connect(name) as c:
        assert c.generate([1, 2], max_new_tokens=2, temperature=0.0, ignore_eos=True).num_generated_tokens == 2
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        with pytest.raises(zl.ServerDeadError):
            c.next_event(timeout=10)
        assert time.monotonic() - killed < 1.0
