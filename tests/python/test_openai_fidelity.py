"""OpenAI fidelity down to the logprob: completion logprobs whose tokens are
the text's own pieces (leading spaces kept, so they join into the text and
text_offset indexes it), and chat logprobs / top_logprobs in the chat shape,
on stories260K (a SentencePiece vocabulary, where a token's leading space is
easy to lose) and dummy:tiny."""

import json

import pytest

from test_http_server import MODEL, SHARED, Server
from test_http_server import chat_server  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def stories():
    model = SHARED / "models" / "stories260K.gguf"
    if not model.exists():
        pytest.skip(f"{model} is missing")
    s = Server("--model", str(model), "--kv-cache-memory", "16M", api_key=None)
    yield s
    assert s.stop() == 0


@pytest.mark.parametrize("stream", [False, True])
def test_completion_logprob_tokens_join_into_the_text(stories, stream):
    body = {"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0, "ignore_eos": True, "logprobs": 2,
            "stream": stream}
    status, _, data = stories.request("POST", "/v1/completions", body)
    assert status == 200, data
    if stream:
        chunks = [json.loads(line[6:]) for line in data.decode().splitlines()
                  if line.startswith("data: {")]
        text = "".join(c["choices"][0]["text"] for c in chunks)
        tokens = [t for c in chunks if c["choices"][0]["logprobs"] for t in c["choices"][0]["logprobs"]["tokens"]]
        offsets = [o for c in chunks if c["choices"][0]["logprobs"] for o in c["choices"][0]["logprobs"]["text_offset"]]
    else:
        choice = json.loads(data)["choices"][0]
        text, tokens, offsets = choice["text"], choice["logprobs"]["tokens"], choice["logprobs"]["text_offset"]
    assert len(tokens) == 24 and "".join(tokens) == text
    assert any(t.startswith(" ") for t in tokens)  # SentencePiece's word starts keep their space
    for token, offset in zip(tokens, offsets):
        assert text.encode()[offset:offset + len(token.encode())] == token.encode()


def test_chat_logprobs(chat_server):  # noqa: F811 (the imported fixture)
    r = chat_server.client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=5, temperature=0, logprobs=True,
        top_logprobs=3, extra_body={"ignore_eos": True})
    content = r.choices[0].logprobs.content
    assert len(content) == 5
    assert "".join(item.token for item in content) == r.choices[0].message.content
    for item in content:
        assert item.logprob <= 0 and bytes(item.bytes) == item.token.encode()
        assert len(item.top_logprobs) == 3
        assert abs(item.top_logprobs[0].logprob - item.logprob) < 1e-4  # greedy: the chosen is the best


def test_chat_top_logprobs_needs_logprobs(chat_server):  # noqa: F811
    status, _, data = chat_server.request("POST", "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Hi"}], "top_logprobs": 2, "max_tokens": 2})
    assert status == 400 and json.loads(data)["error"]["param"] == "top_logprobs"


def test_prompt_plus_max_tokens_beyond_the_context_is_400(chat_server):  # noqa: F811
    prompt = [5] * 500  # MAX_SEQ_LEN is 512
    status, _, data = chat_server.request("POST", "/v1/completions", {"prompt": prompt, "max_tokens": 13})
    error = json.loads(data)["error"]
    assert status == 400 and error["param"] == "max_tokens" and error["code"] == "context_length_exceeded"
    assert "513 tokens (500 in the prompt, 13 in the completion)" in error["message"]
    status, _, data = chat_server.request("POST", "/v1/completions", {"prompt": prompt, "max_tokens": 12,
                                                                      "ignore_eos": True})
    assert status == 200 and json.loads(data)["usage"]["completion_tokens"] == 12
    # Chat without max_tokens gets the rest of the context.
    status, _, data = chat_server.request("POST", "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "x" * 400}], "ignore_eos": True})
    body = json.loads(data)
    assert status == 200 and body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"] == 512


def test_one_model_and_the_fingerprint(chat_server):  # noqa: F811
    client = chat_server.client()
    model = client.models.retrieve(MODEL)
    assert model.id == MODEL and model.object == "model"
    status, _, data = chat_server.request("GET", "/v1/models/no-such-model")
    assert status == 404 and json.loads(data)["error"]["code"] == "model_not_found"
    r = client.completions.create(model=MODEL, prompt="Hi", max_tokens=2)
    assert r.system_fingerprint.startswith("zerolayer-")


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
def test_stream_sends_one_chunk_per_token(chat_server, path):  # noqa: F811
    body = {"max_tokens": 24, "temperature": 0, "ignore_eos": True, "stream": True, "return_token_ids": True}
    body.update({"prompt": "Hi"} if path == "/v1/completions" else {"messages": [{"role": "user", "content": "Hi"}]})
    status, _, data = chat_server.request("POST", path, body)
    assert status == 200
    chunks = [json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: {")]
    if path == "/v1/chat/completions":
        assert chunks[0]["choices"][0]["delta"].get("role") == "assistant"
        chunks = chunks[1:]
    # However the engine's events were batched into writes: a token a chunk
    # (the finish may come alone after the last, as OpenAI's final chunk does).
    counts = [len(c["choices"][0]["token_ids"]) for c in chunks]
    assert sum(counts) == 24 and max(counts) == 1 and counts[:24] == [1] * 24
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])


def test_echo_and_continuous_usage(chat_server):  # noqa: F811
    client = chat_server.client()
    r = client.completions.create(model=MODEL, prompt="Echo me", max_tokens=4, temperature=0, echo=True,
                                  extra_body={"ignore_eos": True})
    plain = client.completions.create(model=MODEL, prompt="Echo me", max_tokens=4, temperature=0,
                                      extra_body={"ignore_eos": True})
    assert r.choices[0].text == "Echo me" + plain.choices[0].text
    stream = client.completions.create(model=MODEL, prompt="Echo me", max_tokens=4, temperature=0, echo=True,
                                       stream=True, stream_options={"include_usage": True,
                                                                    "continuous_usage_stats": True},
                                       extra_body={"ignore_eos": True})
    chunks = list(stream)
    assert "".join(c.choices[0].text for c in chunks if c.choices) == r.choices[0].text
    used = [c.usage.completion_tokens for c in chunks if c.choices and c.usage]
    assert used == sorted(used) and used[-1] == 4 and chunks[-1].usage.completion_tokens == 4
    status, _, data = chat_server.request("POST", "/v1/completions",
                                          {"prompt": "x", "echo": True, "logprobs": 1, "max_tokens": 2})
    assert status == 400 and json.loads(data)["error"]["param"] == "echo"


CONTINUED = [{"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "The colour is"}]


def test_continue_final_message_leaves_the_last_turn_open(chat_server):  # noqa: F811
    body = {"messages": CONTINUED, "continue_final_message": True, "add_generation_prompt": False}
    status, _, data = chat_server.request("POST", "/apply-template", body)
    assert status == 200, data
    prompt = json.loads(data)["prompt"]
    assert prompt.endswith("<|im_start|>assistant\nThe colour is"), prompt  # chatml, no end of turn
    # Both a new turn and the last one continued: vLLM's 400.
    status, _, data = chat_server.request("POST", "/apply-template", {**body, "add_generation_prompt": True})
    assert status == 400 and json.loads(data)["error"]["param"] == "continue_final_message"
    status, _, data = chat_server.request("POST", "/v1/chat/completions",
                                          {"messages": CONTINUED, "continue_final_message": True, "max_tokens": 2})
    assert status == 400 and json.loads(data)["error"]["param"] == "continue_final_message"


@pytest.mark.parametrize("stream", [False, True])
def test_chat_echo_gives_the_continued_message_first(chat_server, stream):  # noqa: F811
    # vLLM's chat echo: the final assistant message, then the new text; the
    # new text is what the rendered prompt's ids give on /v1/completions.
    common = {"max_tokens": 6, "temperature": 0, "ignore_eos": True}
    fields = {"messages": CONTINUED, "continue_final_message": True, "add_generation_prompt": False, **common}
    status, _, data = chat_server.request("POST", "/tokenize", {k: fields[k] for k in
                                                                ("messages", "continue_final_message", "add_generation_prompt")})
    ids = json.loads(data)["tokens"]
    status, _, data = chat_server.request("POST", "/v1/completions", {"prompt": ids, **common})
    plain = json.loads(data)["choices"][0]["text"]
    status, _, data = chat_server.request("POST", "/v1/chat/completions", {**fields, "echo": True, "stream": stream})
    assert status == 200, data
    if stream:
        chunks = [json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: {")]
        content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    else:
        content = json.loads(data)["choices"][0]["message"]["content"]
    assert content == "The colour is" + plain
    # Without echo, or echo after a user turn, only the new text.
    status, _, data = chat_server.request("POST", "/v1/chat/completions", fields)
    assert json.loads(data)["choices"][0]["message"]["content"] == plain


@pytest.mark.parametrize("temperature", [0, 1.0])
def test_logit_bias_steers_every_token(chat_server, temperature):  # noqa: F811
    # dummy:tiny's byte vocabulary: id 65 is "A". +100 makes it every token,
    # greedy or sampled; -100 on it keeps it out of an unbiased run's argmax.
    body = {"prompt": "Hi", "max_tokens": 16, "temperature": temperature, "seed": 3, "ignore_eos": True,
            "logit_bias": {"65": 100}, "logprobs": 0}
    status, _, data = chat_server.request("POST", "/v1/completions", body)
    assert status == 200, data
    choice = json.loads(data)["choices"][0]
    assert choice["text"] == "A" * 16
    # The logprobs are the model's own, not the biased ones (vLLM's default).
    assert all(lp < -0.5 for lp in choice["logprobs"]["token_logprobs"]), choice["logprobs"]
    r = chat_server.client().chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=8, temperature=temperature, seed=3,
        logit_bias={"65": 100}, extra_body={"ignore_eos": True})
    assert r.choices[0].message.content == "A" * 8


def test_logit_bias_bans_a_token(chat_server):  # noqa: F811
    body = {"prompt": "Hi", "max_tokens": 1, "temperature": 0, "return_token_ids": True, "ignore_eos": True}
    status, _, data = chat_server.request("POST", "/v1/completions", body)
    first = json.loads(data)["choices"][0]["token_ids"][0]
    status, _, data = chat_server.request("POST", "/v1/completions", {**body, "logit_bias": {str(first): -100}})
    assert status == 200, data
    assert json.loads(data)["choices"][0]["token_ids"][0] != first


@pytest.mark.parametrize("stream", [False, True])
def test_include_stop_str_in_output(chat_server, stream):  # noqa: F811
    body = {"prompt": "Hi", "max_tokens": 24, "temperature": 0, "ignore_eos": True}
    status, _, data = chat_server.request("POST", "/v1/completions", body)
    text = json.loads(data)["choices"][0]["text"]
    stop = text[6:8]  # greedy: the same text comes again, and stops at its first `stop`
    cut = text.find(stop)
    for include in (False, True):
        status, _, data = chat_server.request("POST", "/v1/completions",
                                              {**body, "stop": [stop], "include_stop_str_in_output": include,
                                               "stream": stream})
        assert status == 200, data
        if stream:
            chunks = [json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: {")]
            got = "".join(c["choices"][0]["text"] for c in chunks)
            reason = chunks[-1]["choices"][0]["finish_reason"]
        else:
            got, reason = json.loads(data)["choices"][0]["text"], json.loads(data)["choices"][0]["finish_reason"]
            assert json.loads(data)["choices"][0]["stop_reason"] == stop  # vLLM's: the string that stopped it
        assert reason == "stop"
        assert got == text[:cut + len(stop) if include else cut]


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
def test_stop_token_ids_end_the_output_and_are_its_stop_reason(chat_server, path):  # noqa: F811
    body = {"max_tokens": 16, "temperature": 0, "ignore_eos": True, "return_token_ids": True}
    body.update({"prompt": "Hi"} if path == "/v1/completions" else {"messages": [{"role": "user", "content": "Hi"}]})
    status, _, data = chat_server.request("POST", path, body)
    choice = json.loads(data)["choices"][0]
    ids = choice["token_ids"]
    assert choice["stop_reason"] is None and choice["finish_reason"] == "length"
    stop_id = ids[5]  # greedy: the same ids come again and end before the first stop id, even with ignore_eos
    status, _, data = chat_server.request("POST", path, {**body, "stop_token_ids": [stop_id]})
    assert status == 200, data
    choice = json.loads(data)["choices"][0]
    assert choice["token_ids"] == ids[:ids.index(stop_id)]
    assert choice["finish_reason"] == "stop" and choice["stop_reason"] == stop_id


@pytest.mark.parametrize("fields, param", [
    ({"stop_token_ids": [512]}, "stop_token_ids"), ({"stop_token_ids": [-1]}, "stop_token_ids"),
    ({"stop_token_ids": "1"}, "stop_token_ids"), ({"stop_token_ids": list(range(65))}, "stop_token_ids"),
    ({"min_tokens": 4}, "min_tokens"), ({"bad_words": ["x"]}, "bad_words"), ({"use_beam_search": True}, "use_beam_search"),
    ({"prompt_logprobs": 1}, "prompt_logprobs"), ({"typical_p": 0.5}, "typical_p"), ({"mirostat": 2}, "mirostat"),
])
def test_fields_that_would_change_the_output_are_implemented_or_400(chat_server, fields, param):  # noqa: F811
    body = {"prompt": "Hi", "max_tokens": 2, **fields}
    status, _, data = chat_server.request("POST", "/v1/completions", body)
    assert status == 400, data
    assert json.loads(data)["error"]["param"] == param
    # Their no-op values, which clients send by default, are fine.
    noop = {"min_tokens": 0, "bad_words": [], "use_beam_search": False, "prompt_logprobs": None, "typical_p": 1.0,
            "mirostat": 0, "length_penalty": 1.0, "truncate_prompt_tokens": None, "stop_token_ids": []}
    status, _, data = chat_server.request("POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 2, **noop})
    assert status == 200, data
