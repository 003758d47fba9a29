"""The server the agent-facing suites share: dummy:tiny-4k (random weights,
a 4096-token context for the template's tool prompt) with Qwen 2.5's chat
template from ../shared (tool calls in the hermes syntax), and the function
schema they call with."""

import pytest

from test_http_server import MODEL, SHARED, Server

TEMPLATE = SHARED / "tokenizers" / "chat-templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"

# Bounded strings and numbers: random weights end each call quickly.
WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "pattern": "^[a-z]{1,8}$"},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city", "days"], "additionalProperties": False}


@pytest.fixture(scope="module")
def server():
    if not TEMPLATE.is_file():
        pytest.skip(f"{TEMPLATE} is missing")
    s = Server("--model", "dummy:tiny-4k", "--served-model-name", MODEL, "--max-num-seqs", "16",
               "--kv-cache-memory", "64M", "--chat-template", str(TEMPLATE))
    assert "tool calls parsed as hermes" in s.output()
    yield s
    assert s.stop() == 0
