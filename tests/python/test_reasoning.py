"""Reasoning (<think> ... </think>) split out of chat outputs, through
`zerolayer serve` on dummy:tiny-4k with reasoning models' chat templates
from ../shared.

DeepSeek R1's generation prompt ends with <think>, so its output starts in
the reasoning: on random weights, which never write </think>, the whole
output is message.reasoning (and reasoning_content), content is null, and
the text is the one /v1/completions gives for the same prompt ids and seed.
Qwen3 with enable_thinking false closes the reasoning in its prompt: the
output is content. Where the split happens inside an output is covered by
tests/server/reasoning_test.cpp, byte by byte.
"""

import json
import re

import pytest

from test_http_server import MODEL, SHARED, Server

TEMPLATES = SHARED / "tokenizers" / "chat-templates"
R1 = TEMPLATES / "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"
QWEN3 = TEMPLATES / "Qwen-Qwen3-0.6B.jinja"
QWEN25 = TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja"
MESSAGES = [{"role": "user", "content": "Is 9.11 greater than 9.8?"}]
ARGS = ("--served-model-name", MODEL, "--max-num-seqs", "8", "--kv-cache-memory", "32M")


def serve(template, *extra, model="dummy:tiny-4k"):
    if not template.is_file():
        pytest.skip(f"{template} is missing")
    return Server(*ARGS, "--model", model, "--chat-template", str(template), *extra)


@pytest.fixture(scope="module")
def r1():
    s = serve(R1)
    assert "reasoning (<think> ... </think>) parsed out of chat outputs" in s.output()
    yield s
    assert s.stop() == 0


def post(server, path, body):
    status, _, data = server.request("POST", path, body)
    assert status == 200, data
    return data


def chat(server, **fields):
    body = {"messages": MESSAGES, "max_tokens": 32, "temperature": 1.0, "seed": 7, "ignore_eos": True, **fields}
    return post(server, "/v1/chat/completions", body)


def plain_text(server, **template_fields):
    """What the model writes after the rendered prompt, read without the chat route."""
    ids = json.loads(post(server, "/tokenize", {"messages": MESSAGES, "add_generation_prompt": True,
                                                **template_fields}))["tokens"]
    body = {"prompt": ids, "max_tokens": 32, "temperature": 1.0, "seed": 7, "ignore_eos": True}
    return json.loads(post(server, "/v1/completions", body))["choices"][0]["text"]


def sse_chunks(data):
    return [json.loads(line[6:]) for line in data.decode().split("\n") if line.startswith("data: {")]


def test_a_prompt_that_opens_the_reasoning_makes_the_output_reasoning(r1):
    message = json.loads(chat(r1))["choices"][0]["message"]
    text = plain_text(r1)
    assert "</think>" not in text
    assert message["reasoning"] == text and message["reasoning_content"] == text
    assert message["content"] is None


def test_streamed_reasoning_is_the_same_text_a_token_a_chunk(r1):
    whole = json.loads(chat(r1))["choices"][0]["message"]["reasoning"]
    chunks = sse_chunks(chat(r1, stream=True, return_token_ids=True))[1:]  # after the role chunk
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert "".join(d.get("reasoning", "") for d in deltas) == whole
    assert all(d.get("reasoning_content") == d.get("reasoning") for d in deltas)
    assert not any(d.get("content") for d in deltas)
    counts = [len(c["choices"][0]["token_ids"]) for c in chunks]
    assert sum(counts) == 32 and max(counts) == 1


def test_responses_api_answers_a_reasoning_item(r1):
    whole = json.loads(chat(r1))["choices"][0]["message"]["reasoning"]
    body = {"model": MODEL, "input": MESSAGES, "max_output_tokens": 32, "temperature": 1.0, "seed": 7,
            "ignore_eos": True}
    response = json.loads(post(r1, "/v1/responses", body))
    output = response["output"]
    # Every token is reasoning: the prompt opens it and random weights never close it.
    assert response["usage"]["output_tokens_details"]["reasoning_tokens"] == 32
    assert output[0]["type"] == "reasoning" and output[0]["id"].startswith("rs_")
    assert output[0]["content"] == [{"type": "reasoning_text", "text": whole}]
    events = [json.loads(line[6:]) for line in post(r1, "/v1/responses", {**body, "stream": True}).decode().split("\n")
              if line.startswith("data: ")]
    deltas = [e["delta"] for e in events if e["type"] == "response.reasoning_text.delta"]
    assert "".join(deltas) == whole
    assert events[-1]["response"]["usage"]["output_tokens_details"]["reasoning_tokens"] == 32


def test_a_grammar_holds_after_the_reasoning(r1):
    # As vLLM: R1's prompt opens the reasoning, which is free; the grammar
    # would hold from the token after </think>, which random weights never
    # write: the output is the unconstrained text, all reasoning.
    message = json.loads(chat(r1, guided_regex="[a-z]{1,8}"))["choices"][0]["message"]
    assert message["reasoning"] == plain_text(r1) and message["content"] is None


def test_a_grammar_without_an_opened_reasoning_holds_from_the_first_token():
    # Qwen3's prompt does not open the reasoning (its output may or may not
    # begin with <think>): the grammar holds from the start, and there is no
    # reasoning.
    s = serve(QWEN3)
    try:
        message = json.loads(chat(s, guided_regex="[a-z]{1,8}", ignore_eos=False))["choices"][0]["message"]
        assert "reasoning" not in message
        assert re.fullmatch("[a-z]{1,8}", message["content"]), message
    finally:
        assert s.stop() == 0


def test_qwen3_without_thinking_answers_content():
    s = serve(QWEN3)
    try:
        kwargs = {"chat_template_kwargs": {"enable_thinking": False}}
        message = json.loads(chat(s, **kwargs))["choices"][0]["message"]
        assert message["content"] == plain_text(s, **kwargs)
        assert message["reasoning"] is None and message["reasoning_content"] is None
    finally:
        assert s.stop() == 0


@pytest.mark.parametrize("template,extra", [(QWEN25, ()), (R1, ("--reasoning-parser", "none"))])
def test_without_a_parser_the_output_is_content(template, extra):
    s = serve(template, *extra)
    try:
        assert "reasoning (<think>" not in s.output()
        r = json.loads(chat(s))
        message = r["choices"][0]["message"]
        assert "reasoning" not in message and "reasoning_content" not in message
        assert message["content"] == plain_text(s)
        # /tokenize with messages gives the ids the chat route runs on (bos
        # added as there: Qwen's template writes none, the dummy vocabulary has one).
        count = json.loads(post(s, "/tokenize", {"messages": MESSAGES, "add_generation_prompt": True}))["count"]
        assert count == r["usage"]["prompt_tokens"]
    finally:
        assert s.stop() == 0


GPT_OSS = TEMPLATES / "openai-gpt-oss-120b.jinja"
COMMAND_R7B = TEMPLATES / "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja"


@pytest.mark.parametrize("template,model,syntax", [
    (GPT_OSS, "dummy:tiny-4k", "harmony's analysis channel"),
    (COMMAND_R7B, "dummy:tiny-16k", "<|START_THINKING|> ... <|END_THINKING|>")])
def test_text_outside_the_markers_is_content_whole_and_streamed(template, model, syntax):
    # Random weights write no harmony header and no thinking tags: all of it
    # is content (nothing is lost to a splitter waiting for a marker), the
    # same text whole and streamed.
    s = serve(template, model=model)
    try:
        assert f"reasoning ({syntax}) parsed out of chat outputs" in s.output()
        message = json.loads(chat(s))["choices"][0]["message"]
        assert message["content"] == plain_text(s)
        assert message["reasoning"] is None
        chunks = sse_chunks(chat(s, stream=True))[1:]
        assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == message["content"]
    finally:
        assert s.stop() == 0
