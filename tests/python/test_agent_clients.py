"""The client libraries agents are built with, pointed at `zerolayer serve`:
langchain-openai (bind_tools, with_structured_output) and instructor (TOOLS
and JSON_SCHEMA modes), on dummy:tiny-4k (random weights) with Qwen 2.5's
chat template. Where the grammar guarantees the form (a required or named
tool call, a JSON schema), random weights suffice: every answer parses into
the library's objects.

instructor's JSON mode asks only for a JSON object (the schema goes in the
system prompt), so the keys must come from the model: it runs on the
released Gemma 3 270M (scripts/fetch_models.sh), greedy, and is skipped
where that file is missing.
"""

from typing import Annotated, List, Literal

import pytest

from qwen_server import server  # noqa: F401 (a fixture)
from test_http_server import MODEL
from test_released_model import gemma_gguf

pydantic = pytest.importorskip("pydantic")


class Pet(pydantic.BaseModel):
    """A pet."""
    kind: Literal["cat", "dog"]
    name: Annotated[str, pydantic.Field(pattern=r"^[a-z]{1,6}$")]
    age: Annotated[int, pydantic.Field(ge=0, le=30)]
    toys: Annotated[List[Literal["ball", "rope"]], pydantic.Field(max_length=3)]


def base_url(server):
    return f"http://127.0.0.1:{server.port}/v1"


def test_langchain_bind_tools(server):
    langchain_openai = pytest.importorskip("langchain_openai")

    def get_weather(city: Annotated[str, pydantic.Field(pattern=r"^[a-z]{1,8}$")], days: int) -> str:
        """Weather forecast for a city."""
        return "sunny"

    llm = langchain_openai.ChatOpenAI(model=MODEL, base_url=base_url(server), api_key=server.api_key,
                                      max_tokens=300, temperature=1.0, seed=3, max_retries=0)
    message = llm.bind_tools([get_weather], tool_choice="required").invoke("Weather in Paris for 2 days?")
    assert message.tool_calls, message
    for call in message.tool_calls:
        assert call["name"] == "get_weather" and call["id"].startswith("call_")
        assert set(call["args"]) <= {"city", "days"} and isinstance(call["args"]["city"], str)


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_langchain_with_structured_output(server, method):
    langchain_openai = pytest.importorskip("langchain_openai")
    llm = langchain_openai.ChatOpenAI(model=MODEL, base_url=base_url(server), api_key=server.api_key,
                                      max_tokens=300, temperature=1.0, seed=4, max_retries=0)
    pet = llm.with_structured_output(Pet, method=method).invoke("Describe a pet.")
    assert isinstance(pet, Pet)


@pytest.mark.parametrize("mode", ["TOOLS", "JSON_SCHEMA"])
def test_instructor(server, mode):
    instructor = pytest.importorskip("instructor")
    client = instructor.from_openai(server.client(), mode=getattr(instructor.Mode, mode))
    pet = client.chat.completions.create(model=MODEL, response_model=Pet, max_retries=0, max_tokens=300,
                                         temperature=1.0, seed=5,
                                         messages=[{"role": "user", "content": "Describe a pet."}])
    assert isinstance(pet, Pet)


class Person(pydantic.BaseModel):
    name: str
    age: int


def test_instructor_json_mode_on_a_released_model():
    instructor = pytest.importorskip("instructor")
    from test_http_server import Server
    gguf = gemma_gguf()
    # The file has no chat template (a base model); ChatML carries the system prompt JSON mode sends.
    s = Server("--model", str(gguf), "--served-model-name", MODEL, "--kv-cache-memory", "64M", "--max-seq-len", "1024",
               "--chat-template", "chatml")
    try:
        client = instructor.from_openai(s.client(), mode=instructor.Mode.JSON)
        person = client.chat.completions.create(
            model=MODEL, response_model=Person, max_retries=0, max_tokens=100, temperature=0,
            messages=[{"role": "user", "content": "John Smith is 31 years old. Extract the person."}])
        assert isinstance(person, Person), person
    finally:
        assert s.stop() == 0
