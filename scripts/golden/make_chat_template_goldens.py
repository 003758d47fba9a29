#!/usr/bin/env python3
"""Writes the chat-template goldens: every template in ../shared/tokenizers
rendered by transformers for a fixed suite of conversations.

Regenerate (needs the shared folder ../shared/tokenizers beside the repo and a
venv with transformers >= 5 and jinja2 >= 3.1.6; no model download, no torch):

    python3 -m venv .venv-golden
    .venv-golden/bin/pip install transformers jinja2
    .venv-golden/bin/python scripts/golden/make_chat_template_goldens.py [--shared DIR] [--out DIR]

(Any Python that already has both will do.) --shared defaults to $ZL_SHARED_DIR,
else ../shared beside the repository root; --out to tests/golden/chat_template.

Rendering goes through transformers.utils.chat_template_utils.render_jinja_template,
the function apply_chat_template uses, so the sandboxed environment, tojson
override and globals are transformers' own. strftime_now is pinned to
2025-07-26 (UTC midnight, unix 1753488000) so outputs are stable; the C++ test
pins the same time.

Outputs, under tests/golden/chat_template/ (see README.md there):

  conversations.json   the suite: a list of {"name", "messages", "add_generation_prompt",
                       "tools" (or null), "documents" (or null), "extra" (kwargs)}
  <template id>.json   {"template": path under shared/tokenizers, "select": named
                       template or null, "bos_token", "eos_token", "results": [
                       {"conversation": i, "output": text} or {"conversation": i, "error": message}]}
"""
import argparse
import datetime
import json
import os
import pathlib

import transformers.utils.chat_template_utils as ctu

FIXED_NOW = datetime.datetime(2025, 7, 26, 0, 0, 0)


class _FixedDatetime(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


ctu.datetime = _FixedDatetime

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for"},
                "max_results": {"type": "integer", "description": "How many results"},
                "sites": {"type": "array", "items": {"type": "string"}, "description": "Limit to these sites"},
            },
            "required": ["query"],
        },
    },
}


def call(name, arguments, call_id):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def conversations():
    sys_msg = {"role": "system", "content": "You are a helpful assistant."}
    u1 = {"role": "user", "content": "Hello! How are you?"}
    a1 = {"role": "assistant", "content": "I'm fine, thank you. How can I help?"}
    u2 = {"role": "user", "content": "Tell me a joke about cats."}
    weather_call = call("get_weather", {"city": "Paris", "unit": "celsius"}, "a1b2c3d4e")
    weather_result = {"role": "tool", "tool_call_id": "a1b2c3d4e", "name": "get_weather",
                      "content": "{\"temperature\": 21, \"sky\": \"sunny\"}"}
    ask_weather = {"role": "user", "content": "What's the weather in Paris?"}
    c = []

    def add(name, messages, gen=True, tools=None, documents=None, extra=None):
        c.append({"name": name, "messages": messages, "add_generation_prompt": gen, "tools": tools,
                  "documents": documents, "extra": extra or {}})

    add("single_user", [u1])
    add("single_user_no_gen", [u1], gen=False)
    add("system_user", [sys_msg, u1])
    add("multi_turn", [u1, a1, u2])
    add("system_multi_turn", [sys_msg, u1, a1, u2])
    add("ends_with_assistant", [sys_msg, u1, a1], gen=False)
    add("non_ascii", [{"role": "system", "content": "Réponds en français, s'il te plaît."},
                      {"role": "user", "content": "日本語で「こんにちは」は？ 🐱 \"quotes\" and \\backslash\\ — ok?"},
                      {"role": "assistant", "content": "こんにちは！ Ça va 😊"},
                      {"role": "user", "content": "Ελληνικά: καλημέρα\nи русский: привет"}])
    add("whitespace", [{"role": "user", "content": "  \n  leading and trailing spaces and newlines \n\n"},
                       {"role": "assistant", "content": "\n  answer with spaces  \n"},
                       {"role": "user", "content": "\tTabbed\tcontent\t"}])
    add("content_parts", [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
                          {"role": "user", "content": [{"type": "text", "text": "First part."},
                                                       {"type": "text", "text": "Second part."}]}])
    add("empty_content", [{"role": "user", "content": ""}])
    add("tools_defined", [sys_msg, ask_weather], tools=[WEATHER_TOOL, SEARCH_TOOL])
    add("tool_call_and_result", [ask_weather, {"role": "assistant", "content": "", "tool_calls": [weather_call]},
                                 weather_result], tools=[WEATHER_TOOL])
    add("tool_call_then_answer", [sys_msg, ask_weather,
                                  {"role": "assistant", "content": "", "tool_calls": [weather_call]},
                                  weather_result,
                                  {"role": "assistant", "content": "It is 21 °C and sunny in Paris."},
                                  {"role": "user", "content": "Thanks!"}], tools=[WEATHER_TOOL, SEARCH_TOOL])
    add("parallel_tool_calls",
        [{"role": "user", "content": "Weather in Paris and Tokyo?"},
         {"role": "assistant", "content": "",
          "tool_calls": [call("get_weather", {"city": "Paris"}, "aaaaaaaa1"),
                         call("get_weather", {"city": "Tokyo"}, "bbbbbbbb2")]},
         {"role": "tool", "tool_call_id": "aaaaaaaa1", "name": "get_weather", "content": "21 C"},
         {"role": "tool", "tool_call_id": "bbbbbbbb2", "name": "get_weather", "content": "28 C"}],
        tools=[WEATHER_TOOL])
    add("tool_call_string_arguments",
        [ask_weather, {"role": "assistant", "content": "",
                       "tool_calls": [call("get_weather", "{\"city\": \"Paris\"}", "ccccccccc")]},
         {"role": "tool", "tool_call_id": "ccccccccc", "name": "get_weather", "content": "sunny"}],
        tools=[WEATHER_TOOL])
    add("reasoning", [u1, {"role": "assistant", "content": "Fine, thanks!", "reasoning_content": "The user greets me."},
                      u2])
    add("two_users_in_a_row", [{"role": "user", "content": "One."}, {"role": "user", "content": "Two."}])
    add("system_only", [sys_msg])
    add("documents", [{"role": "user", "content": "What does the document say?"}],
        documents=[{"title": "Cats", "text": "Cats sleep 16 hours a day."},
                   {"title": "Dogs", "text": "Dogs like walks."}])
    add("enable_thinking_false", [sys_msg, u1], extra={"enable_thinking": False})
    add("code_and_braces", [{"role": "user", "content": "Explain {{ x }} and {% if %} in Jinja, and print('%s' % y)."}])
    return c


def collect_templates(shared):
    tok = shared / "tokenizers"
    out = []  # (id, path, select, source, bos, eos)
    for p in sorted((tok / "chat-templates").glob("*.jinja")):
        out.append((p.stem, p, None, p.read_text(encoding="utf-8"), "<s>", "</s>"))
    for p in sorted((tok / "chat-templates").glob("*.json")):
        src = json.loads(p.read_text(encoding="utf-8"))["chat_template"]
        out.append((p.stem, p, None, src, "<s>", "</s>"))
    for p in sorted(tok.glob("*/tokenizer_config.json")):
        cfg = json.loads(p.read_text(encoding="utf-8"))
        tmpl = cfg.get("chat_template")
        if tmpl is None:
            continue

        def token(key, default):
            v = cfg.get(key)
            if isinstance(v, dict):
                v = v.get("content")
            return default if v is None else v

        bos, eos = token("bos_token", "<s>"), token("eos_token", "</s>")
        if isinstance(tmpl, list):
            for entry in tmpl:
                out.append((f"{p.parent.name}.{entry['name']}", p, entry["name"], entry["template"], bos, eos))
        else:
            out.append((p.parent.name, p, None, tmpl, bos, eos))
    return out


def render(source, conv, bos, eos):
    kwargs = {"bos_token": bos, "eos_token": eos, **conv["extra"]}
    try:
        rendered, _ = ctu.render_jinja_template(
            conversations=[conv["messages"]], tools=conv["tools"], documents=conv["documents"],
            chat_template=source, add_generation_prompt=conv["add_generation_prompt"], **kwargs)
        return {"output": rendered[0]}
    except Exception as e:  # noqa: BLE001 - any template failure is a golden
        return {"error": str(e), "error_type": type(e).__name__}


def main():
    repo = pathlib.Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.environ.get("ZL_SHARED_DIR") or str(repo.parent / "shared"),
                    help="the shared data folder (default: $ZL_SHARED_DIR, else ../shared beside the repository)")
    ap.add_argument("--out", default=str(repo / "tests" / "golden" / "chat_template"),
                    help="where the goldens go (default: tests/golden/chat_template)")
    args = ap.parse_args()
    shared, out = pathlib.Path(args.shared), pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    convs = conversations()
    (out / "conversations.json").write_text(json.dumps(convs, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for old in out.glob("*.json"):
        if old.name != "conversations.json":
            old.unlink()
    for tid, path, select, source, bos, eos in collect_templates(shared):
        results = []
        for i, conv in enumerate(convs):
            results.append({"conversation": i, **render(source, conv, bos, eos)})
        doc = {"template": str(path.relative_to(shared / "tokenizers")), "select": select,
               "bos_token": bos, "eos_token": eos, "results": results}
        (out / f"{tid}.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        errors = sum("error" in r for r in results)
        print(f"{tid}: {len(results)} conversations, {errors} errors")


if __name__ == "__main__":
    main()
