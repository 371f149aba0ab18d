"""The fake API's Chat Completions route (tests/e2e/fake_openai_chat.py). No clients needed (not marked e2e)."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from .fake_api import FakeAPI

TOOLS = [{"type": "function", "function": {"name": "run_shell_command", "parameters": {}}}]


@pytest.fixture
def api():
    with FakeAPI() as a:
        yield a


def post(api: FakeAPI, body: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(f"{api.url}/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_run_asks_for_the_shell_tool_and_a_tool_message_gets_an_answer(api):
    status, raw = post(api, {"model": "m", "tools": TOOLS, "messages": [{"role": "user", "content": "RUN: echo x"}]})
    msg = json.loads(raw)["choices"][0]["message"]
    assert status == 200 and msg["tool_calls"][0]["function"]["name"] == "run_shell_command"
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"command": "echo x"}
    history = [{"role": "user", "content": "RUN: echo x"}, msg,
               {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"], "content": "x"}]
    status, raw = post(api, {"model": "m", "tools": TOOLS, "messages": history})
    assert status == 200 and "the tool finished" in json.loads(raw)["choices"][0]["message"]["content"]
    assert [e.api for e in api.log] == ["chat", "chat"]


def test_clines_run_commands_gets_a_list_of_commands(api):
    tools = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("read_files", "run_commands")]
    status, raw = post(api, {"model": "m", "tools": tools, "messages": [{"role": "user", "content": "RUN: echo x"}]})
    call = json.loads(raw)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert status == 200 and call["name"] == "run_commands" and json.loads(call["arguments"]) == {"commands": ["echo x"]}


def test_streaming_sends_chunks_usage_and_done(api):
    status, raw = post(api, {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    events = [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert status == 200 and events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["content"] == "FAKE-ANSWER: hi"
    assert chunks[-1]["usage"]["total_tokens"] == 120


@pytest.mark.parametrize("messages,why", [
    ([{"role": "tool", "tool_call_id": "c1", "content": "x"}], "answers no earlier tool call"),
    ([{"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                             "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "user", "content": "next"}], "must be followed by tool messages"),
    ([{"role": "model", "content": "x"}], "invalid"),
])
def test_broken_histories_are_refused_as_the_service_refuses_them(api, messages, why):
    status, raw = post(api, {"model": "m", "messages": messages})
    assert status == 400 and why in json.loads(raw)["error"]["message"]
    assert api.log[-1].status == 400
