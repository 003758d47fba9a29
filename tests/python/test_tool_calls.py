"""Tool calls through `zerolayer serve` and the official `openai` package, on
dummy:tiny-4k (random weights, room for the template's tool prompt) with Qwen 2.5's chat template from ../shared,
whose syntax is hermes (<tool_call>{...}</tool_call>).

tool_choice "required" and a named function are enforced by a grammar, so on
any weights the answer is calls: message.tool_calls with ids, names among the
tools and arguments that validate against the function's parameters, and
finish_reason "tool_calls"; streamed, they arrive as delta.tool_calls. "auto"
leaves the text free and parses what calls it finds; "none" parses nothing.
"""

import json

import pytest

from qwen_server import WEATHER, server  # noqa: F401 (a fixture)
from test_http_server import MAX_SEQ_LEN, MODEL, SHARED, Server

jsonschema = pytest.importorskip("jsonschema")

TIME = {"type": "object", "properties": {"tz": {"enum": ["UTC", "CET"]}}, "required": ["tz"],
        "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "description": "Time", "parameters": TIME}}]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
TEMPLATES = SHARED / "tokenizers" / "chat-templates"
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def check_calls(calls, only=None, parser="hermes"):
    assert calls, "no tool calls"
    ids = set()
    for call in calls:
        # Mistral's templates take only 9 letters and digits as an id.
        assert call.type == "function" and call.id not in ids
        assert call.id.isalnum() and len(call.id) == 9 if parser == "mistral" else call.id.startswith("call_")
        ids.add(call.id)
        assert call.function.name in SCHEMAS and (only is None or call.function.name == only)
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


@pytest.mark.parametrize("seed", range(4))
def test_required_gives_calls(server, seed):
    r = server.client().chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS, tool_choice="required",
                                                max_tokens=400, temperature=1.0, seed=seed)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    assert not choice.message.content
    check_calls(choice.message.tool_calls)


def test_named_function_gives_its_calls(server):
    r = server.client().chat.completions.create(
        model=MODEL, messages=MESSAGES, tools=TOOLS, max_tokens=400, temperature=1.0, seed=11, n=3,
        tool_choice={"type": "function", "function": {"name": "get_time"}})
    for choice in r.choices:
        assert choice.finish_reason == "tool_calls"
        check_calls(choice.message.tool_calls, only="get_time")


def test_streamed_calls_are_delta_tool_calls(server):
    stream = server.client().chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS,
                                                     tool_choice="required", max_tokens=400, temperature=1.0,
                                                     seed=5, stream=True)
    calls, finish, content = {}, None, ""
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for call in delta.tool_calls or []:
            entry = calls.setdefault(call.index, {"id": call.id, "name": call.function.name, "arguments": ""})
            entry["arguments"] += call.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls" and content == ""
    assert calls
    for entry in calls.values():
        assert entry["id"].startswith("call_")
        jsonschema.validate(json.loads(entry["arguments"]), SCHEMAS[entry["name"]])


def test_auto_and_none_answer_text(server):
    client = server.client()
    for choice in ("auto", "none"):
        r = client.chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS, tool_choice=choice,
                                           max_tokens=8, temperature=0)
        assert r.choices[0].finish_reason in ("stop", "length")
        assert r.choices[0].message.tool_calls is None


def test_a_call_in_the_history_renders(server):
    # The client's own format: arguments as JSON text, content null.
    messages = MESSAGES + [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_x", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"city\": \"paris\", \"days\": 2}"}}]},
        {"role": "tool", "tool_call_id": "call_x", "content": "sunny"}]
    status, _, data = server.request("POST", "/apply-template", {"messages": messages, "tools": TOOLS})
    assert status == 200, data
    prompt = json.loads(data)["prompt"]
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "paris", "days": 2}}\n</tool_call>' in prompt
    r = server.client().chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, max_tokens=4)
    assert r.choices[0].finish_reason in ("stop", "length", "tool_calls")


@pytest.mark.parametrize("fields, param", [
    ({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
    ({"tool_choice": "sometimes"}, "tool_choice"),
    ({"tool_choice": "required", "response_format": {"type": "json_object"}}, "tool_choice"),
    ({"tools": [{"type": "function", "function": {"name": ""}}]}, "tools"),
    ({"tools": [{"type": "retrieval"}]}, "tools"),
])
def test_bad_tools_name_the_field(server, fields, param):
    body = {"model": MODEL, "messages": MESSAGES, "max_tokens": 4, "tools": TOOLS, **fields}
    status, _, data = server.request("POST", "/v1/chat/completions", body)
    assert status == 400, data
    assert json.loads(data)["error"]["param"] == param


def test_required_needs_a_known_syntax():
    s = Server("--model", "dummy:tiny", "--max-seq-len", str(MAX_SEQ_LEN), "--kv-cache-memory", "16M",
               "--chat-template", "chatml", api_key="")
    try:
        body = {"messages": MESSAGES, "max_tokens": 4, "tools": TOOLS, "tool_choice": "required"}
        status, _, data = s.request("POST", "/v1/chat/completions", body)
        assert status == 400 and "--tool-call-parser" in json.loads(data)["error"]["message"]
        body["tool_choice"] = "auto"  # text, as before
        status, _, data = s.request("POST", "/v1/chat/completions", body)
        assert status == 200, data
    finally:
        assert s.stop() == 0


@pytest.mark.parametrize("template, parser", [
    ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek_v31"), ("moonshotai-Kimi-K2.jinja", "kimi_k2"),
    ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "deepseek_v3"),
    ("meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3_json"),
    ("ibm-granite-granite-3.3-2B-Instruct.jinja", "granite"),
    ("mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistral"),
    ("meetkai-functionary-medium-v3.2.jinja", "functionary_v3_2"),
    ("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "command_r7b"), ("openai-gpt-oss-120b.jinja", "openai"),
])
def test_other_syntaxes_give_calls_and_take_them_back(template, parser):
    path = TEMPLATES / template
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    # Command R7B's preamble alone is 6,400 tokens of the dummy vocabulary.
    model = "dummy:tiny-16k" if parser == "command_r7b" else "dummy:tiny-4k"
    # R1's prompt opens the reasoning, after which the grammar would hold:
    # random weights never close it. Without the reasoning parser the grammar
    # holds from the first token.
    extra = ["--reasoning-parser", "none"] if parser == "deepseek_v3" else []
    s = Server("--model", model, *extra, "--served-model-name", MODEL, "--max-num-seqs", "8",
               "--kv-cache-memory", "64M", "--chat-template", str(path))
    try:
        assert f"tool calls parsed as {parser}" in s.output()
        r = s.client().chat.completions.create(model=MODEL, messages=MESSAGES, tools=TOOLS, tool_choice="required",
                                               max_tokens=1500, temperature=1.0, seed=5)
        choice = r.choices[0]
        assert choice.finish_reason == "tool_calls", choice
        check_calls(choice.message.tool_calls, parser=parser)
        # The calls go back in the history, as the client sends them (JSON
        # text), and render: as objects, or as text for a template that
        # concatenates them (DeepSeek V3.1).
        call = choice.message.tool_calls[0]
        history = MESSAGES + [{"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
                              {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
        status, _, data = s.request("POST", "/apply-template", {"messages": history, "tools": TOOLS})
        assert status == 200, data
        assert call.function.name in json.loads(data)["prompt"]
    finally:
        assert s.stop() == 0
