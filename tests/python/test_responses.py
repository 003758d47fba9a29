"""POST /v1/responses (OpenAI's Responses API) through the official `openai`
package and `openai-agents`, on dummy:tiny-4k (random weights) with Qwen
2.5's chat template: text output, instructions, previous_response_id,
function tools (required: calls that validate), text.format with a JSON
schema, and the event stream, whose deltas add up to the final output.
"""

import asyncio
import json
from typing import Literal

import pytest

from qwen_server import WEATHER, server  # noqa: F401 (a fixture)
from test_http_server import MODEL

jsonschema = pytest.importorskip("jsonschema")

TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather", "parameters": WEATHER}]


def test_text_response_and_its_follow_up(server):
    client = server.client()
    r = client.responses.create(model=MODEL, input="Hello", instructions="Be brief.", max_output_tokens=8,
                                temperature=0)
    assert r.id.startswith("resp_") and r.object == "response"
    assert r.status in ("completed", "incomplete")
    assert r.output[0].type == "message" and r.output[0].role == "assistant"
    assert isinstance(r.output_text, str)
    assert r.usage.input_tokens > 0 and 0 < r.usage.output_tokens <= 8
    follow = client.responses.create(model=MODEL, input="And then?", previous_response_id=r.id, max_output_tokens=4)
    assert follow.usage.input_tokens > r.usage.input_tokens  # the first turn is in its prompt
    assert follow.previous_response_id == r.id


def test_function_calls_required(server):
    r = server.client().responses.create(model=MODEL, input=[{"role": "user", "content": "Weather?"}], tools=TOOLS,
                                         tool_choice="required", max_output_tokens=300, temperature=1.0)
    calls = [item for item in r.output if item.type == "function_call"]
    assert calls and r.status == "completed"
    for call in calls:
        assert call.name == "get_weather" and call.call_id.startswith("call_")
        jsonschema.validate(json.loads(call.arguments), WEATHER)
    # The call and its output go back as input items.
    items = [{"role": "user", "content": "Weather?"}]
    items += [{"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments} for c in calls]
    items += [{"type": "function_call_output", "call_id": c.call_id, "output": "sunny"} for c in calls]
    again = server.client().responses.create(model=MODEL, input=items, tools=TOOLS, max_output_tokens=4)
    assert again.status in ("completed", "incomplete")


def test_json_schema_format(server):
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
              "required": ["n"], "additionalProperties": False}
    r = server.client().responses.create(model=MODEL, input="A number?", max_output_tokens=100, temperature=1.0,
                                         text={"format": {"type": "json_schema", "name": "n", "schema": schema,
                                                          "strict": True}})
    jsonschema.validate(json.loads(r.output_text), schema)


def test_stream_events_add_up_as_the_text_arrives(server):
    stream = server.client().responses.create(model=MODEL, input="Hello", max_output_tokens=48, temperature=0,
                                              stream=True, extra_body={"ignore_eos": True})
    types, deltas, final, sequence = [], [], None, []
    for event in stream:
        types.append(event.type)
        sequence.append(event.sequence_number)
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        if event.type in ("response.completed", "response.incomplete"):
            final = event.response
    assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert types[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.incomplete"]
    assert sequence == list(range(len(sequence)))
    assert "".join(deltas) == final.output_text
    # Sent as the tokens come, not whole at the end (dummy:tiny steps in about a millisecond).
    assert len(deltas) > 1
    # The same text as unstreamed.
    whole = server.client().responses.create(model=MODEL, input="Hello", max_output_tokens=48, temperature=0,
                                             extra_body={"ignore_eos": True})
    assert whole.output_text == final.output_text


def test_streamed_function_calls_match_the_final_output(server):
    stream = server.client().responses.create(model=MODEL, input=[{"role": "user", "content": "Weather?"}],
                                              tools=TOOLS, tool_choice="required", max_output_tokens=300,
                                              temperature=1.0, stream=True)
    done, final = {}, None
    for event in stream:
        if event.type == "response.output_item.done":
            done[event.output_index] = event.item
        if event.type == "response.completed":
            final = event.response
    assert final is not None and final.output, "no output"
    assert sorted(done) == list(range(len(final.output)))
    for i, item in enumerate(final.output):
        assert done[i].type == item.type and done[i].id == item.id
    calls = [item for item in final.output if item.type == "function_call"]
    assert calls
    for call in calls:
        jsonschema.validate(json.loads(call.arguments), WEATHER)


@pytest.mark.parametrize("input_, param", [
    (None, "input"), (7, "input"), ([{"type": "image", "url": "x"}], "input"),
    ([{"role": "wizard", "content": "x"}], "input"),
])
def test_bad_input_names_the_field(server, input_, param):
    body = {"model": MODEL, "max_output_tokens": 4}
    if input_ is not None:
        body["input"] = input_
    status, _, data = server.request("POST", "/v1/responses", body)
    assert status == 400, data
    assert json.loads(data)["error"]["param"] == param


def test_unknown_previous_response_and_tool_type(server):
    for body, param in [({"input": "x", "previous_response_id": "resp_nope"}, "previous_response_id"),
                        ({"input": "x", "tools": [{"type": "web_search"}]}, "tools")]:
        status, _, data = server.request("POST", "/v1/responses", {"model": MODEL, **body})
        assert status == 400 and json.loads(data)["error"]["param"] == param, data


def test_openai_agents_runs_with_a_tool(server):
    agents = pytest.importorskip("agents")
    openai = pytest.importorskip("openai")
    calls = []

    @agents.function_tool
    def get_weather(city: Literal["paris", "rome"]) -> str:
        """Weather in a city."""
        calls.append(city)
        return "sunny"

    client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key=server.api_key)
    agents.set_tracing_disabled(True)
    model = agents.OpenAIResponsesModel(model=MODEL, openai_client=client)
    # Random weights end free text only at max_tokens (an incomplete
    # response, which the runner refuses): the run ends at the tool's result.
    agent = agents.Agent(name="weather", instructions="Answer with the weather.", tools=[get_weather], model=model,
                         model_settings=agents.ModelSettings(tool_choice="required", max_tokens=400,
                                                             extra_body={"seed": 1}),
                         tool_use_behavior="stop_on_first_tool")
    result = asyncio.run(agents.Runner.run(agent, "Weather in Paris?", max_turns=4))
    assert calls, "the agent called no tool"
    assert result.final_output == "sunny"


@pytest.mark.parametrize("body", [
    {"input": "x", "stream": "yes"}, {"input": "x", "store": 1}, {"input": [{"type": 5}]},
    {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}]},
    {"input": "x", "text": {"format": {"type": 7}}}, {"input": "x", "tools": [{"type": "function", "name": 3}]},
])
def test_fields_of_the_wrong_type_are_400s(server, body):
    status, _, data = server.request("POST", "/v1/responses", {"model": MODEL, "max_output_tokens": 2, **body})
    assert status == 400, data
    status, _, _ = server.request("GET", "/health")
    assert status == 200  # the server lives on
