"""Structured output through `zerolayer serve`: response_format, vLLM's
structured_outputs / guided_* and llama-server's json_schema / grammar, on
/v1/completions and /v1/chat/completions, through the official `openai`
package (chat.completions.parse with a pydantic model) and raw HTTP.

dummy:tiny has random weights: whatever it prefers, the grammar holds the
output to its language, so every output that ends parses and validates (the
schemas bound their strings so that it ends). Bad specs get a 400 naming the
field, never a 200 that ignores them.

Strings of any characters are bounded by maxLength, which counts characters:
the grammar admits only well-formed UTF-8 (scripts/fetch_xgrammar.sh's fix 2),
so what random weights pick over byte tokens decodes to as many characters.
"""

import json
import re
from typing import Annotated, List, Literal

import pytest

from test_http_server import MODEL
from test_http_server import chat_server as server  # noqa: F401 (a fixture)

jsonschema = pytest.importorskip("jsonschema")
pydantic = pytest.importorskip("pydantic")

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 4},
        "score": {"type": "number"},
        "ok": {"type": "boolean"},
        "pet": {"anyOf": [{"type": "null"}, {"type": "string", "pattern": "^[a-z]{1,4}$"}]},
    },
    "required": ["name", "age", "tags", "ok"],
    "additionalProperties": False,
}


def post(server, path, **fields):
    body = {"model": MODEL, "max_tokens": 300, **fields}
    if path == "/v1/completions":
        body.setdefault("prompt", "Hello")
    else:
        body.setdefault("messages", [{"role": "user", "content": "Describe a person."}])
    status, _, data = server.request("POST", path, body)
    return status, json.loads(data) if data else None


def texts(path, body):
    return [c["text"] if path == "/v1/completions" else c["message"]["content"] for c in body["choices"]]


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
@pytest.mark.parametrize("form", ["response_format", "structured_outputs", "guided_json", "json_schema"])
def test_json_schema_outputs_validate(server, path, form):
    fields = {
        "response_format": {"response_format": {"type": "json_schema",
                                                "json_schema": {"name": "person", "schema": PERSON, "strict": True}}},
        "structured_outputs": {"structured_outputs": {"json": PERSON}},
        "guided_json": {"guided_json": PERSON},
        "json_schema": {"json_schema": PERSON},
    }[form]
    status, body = post(server, path, n=4, temperature=1.0, seed=7, **fields)
    assert status == 200, body
    for choice, text in zip(body["choices"], texts(path, body)):
        assert choice["finish_reason"] == "stop", text
        jsonschema.validate(json.loads(text), PERSON)


def test_json_object_is_an_object(server):
    status, body = post(server, "/v1/chat/completions", n=4, temperature=1.0, seed=3, max_tokens=400,
                        response_format={"type": "json_object"})
    assert status == 200, body
    ended = [c["message"]["content"] for c in body["choices"] if c["finish_reason"] == "stop"]
    assert ended, body  # random weights may write one endless string; not all of them
    for text in ended:
        assert isinstance(json.loads(text), dict)


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
def test_regex_choice_and_grammar(server, path):
    status, body = post(server, path, n=3, temperature=1.2, seed=1, guided_regex=r"[A-Z][a-z]{2,5} [0-9]{3}")
    assert status == 200, body
    for text in texts(path, body):
        assert re.fullmatch(r"[A-Z][a-z]{2,5} [0-9]{3}", text), text
    choices = ["alpha", "beta", "gamma delta"]
    status, body = post(server, path, n=3, temperature=1.2, seed=1, structured_outputs={"choice": choices})
    assert status == 200, body
    assert all(text in choices for text in texts(path, body)), body
    grammar = 'root ::= "(" [a-c] ("," [a-c]){0,3} ")"'
    status, body = post(server, path, n=3, temperature=1.2, seed=1, grammar=grammar)
    assert status == 200, body
    for text in texts(path, body):
        assert re.fullmatch(r"\([a-c](,[a-c]){0,3}\)", text), text


def test_streamed_choice_is_the_choice(server):
    client = server.client()
    stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Pick."}],
                                            max_tokens=50, temperature=1.0, seed=5, stream=True,
                                            extra_body={"guided_choice": ["north", "south", "east west"]})
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text in ("north", "south", "east west")


def test_openai_parse_with_a_pydantic_model(server):
    class Pet(pydantic.BaseModel):
        kind: Literal["cat", "dog"]
        name: Annotated[str, pydantic.Field(pattern=r"^[a-z]{1,6}$")]
        age: Annotated[int, pydantic.Field(ge=0, le=30)]
        toys: Annotated[List[Literal["ball", "rope"]], pydantic.Field(max_length=3)]

    client = server.client()
    for seed in range(3):
        completion = client.chat.completions.parse(model=MODEL, messages=[{"role": "user", "content": "A pet?"}],
                                                   response_format=Pet, max_tokens=200, temperature=1.0, seed=seed)
        pet = completion.choices[0].message.parsed
        assert isinstance(pet, Pet), completion
        assert completion.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("fields, param", [
    ({"response_format": {"type": "bogus"}}, "response_format.type"),
    ({"response_format": "json"}, "response_format"),
    ({"response_format": {"type": "json_schema"}}, "response_format.json_schema"),
    ({"response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "nonsense"}}}},
     "response_format"),
    ({"guided_regex": "[a-"}, "guided_regex"),
    ({"guided_choice": []}, "guided_choice"),
    ({"guided_choice": ["a", 3]}, "guided_choice"),
    ({"guided_grammar": "root ::= missing_rule"}, "guided_grammar"),
    ({"structured_outputs": {"regex": "a", "choice": ["b"]}}, "structured_outputs"),
    ({"structured_outputs": {"bogus": 1}}, "structured_outputs.bogus"),
    ({"guided_json": {"type": "object"}, "guided_regex": "a"}, "guided_regex"),
])
@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
def test_bad_specs_name_their_field(server, path, fields, param):
    status, body = post(server, path, **fields)
    assert status == 400, body
    assert body["error"]["param"] == param, body
    status, _ = post(server, path, max_tokens=2)
    assert status == 200  # still serving


def test_text_format_is_unconstrained(server):
    status, body = post(server, "/v1/completions", max_tokens=4, temperature=0, response_format={"type": "text"})
    assert status == 200 and body["choices"][0]["finish_reason"] in ("stop", "length")


def random_schema(rng, depth=0):
    """A random JSON schema: nested objects, arrays, enums, required and
    optional properties, string patterns and lengths, integer bounds."""
    kinds = ["integer", "number", "boolean", "enum", "pattern", "string", "array", "null"] + (["object"] * 2 if depth < 2 else [])
    kind = rng.choice(kinds)
    if kind == "integer":
        low = rng.randint(-50, 50)
        return {"type": "integer", "minimum": low, "maximum": low + rng.randint(0, 200)}
    if kind == "number":
        return {"type": "number"}
    if kind in ("boolean", "null"):
        return {"type": kind}
    if kind == "enum":
        return {"enum": rng.sample(["red", "green", "blue", "a b", "x\"y", 7, True, None], rng.randint(1, 4))}
    if kind == "pattern":
        return {"type": "string", "pattern": rng.choice(["^[a-z]{1,6}$", "^[A-Z][0-9]{2}$", "^(yes|no)$"])}
    if kind == "string":
        return {"type": "string", "maxLength": rng.randint(0, 6)}
    if kind == "array":
        low = rng.randint(0, 2)
        return {"type": "array", "items": random_schema(rng, depth + 1), "minItems": low,
                "maxItems": low + rng.randint(0, 2)}
    names = rng.sample(["id", "name", "tags", "kind", "size", "meta", "ok", "when"], rng.randint(1, 4))
    props = {name: random_schema(rng, depth + 1) for name in names}
    return {"type": "object", "properties": props, "required": rng.sample(names, rng.randint(0, len(names))),
            "additionalProperties": False}


def test_random_schemas_always_validate(server):
    """200 random schemas x 3 seeds (n=3 draws seeds 0, 1, 2): every output parses and validates."""
    import concurrent.futures
    import random
    rng = random.Random(2026)
    schemas = [random_schema(rng) for _ in range(200)]

    def run(schema):
        status, body = post(server, "/v1/completions", n=3, temperature=1.0, seed=0, max_tokens=480,
                            guided_json=schema)
        return schema, status, body

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for schema, status, body in pool.map(run, schemas):
            assert status == 200, (schema, body)
            for choice in body["choices"]:
                assert choice["finish_reason"] == "stop", (schema, choice)
                jsonschema.validate(json.loads(choice["text"]), schema)
