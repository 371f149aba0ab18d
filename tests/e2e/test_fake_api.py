"""The fake API over real HTTP: scripted replies, and each validation rule firing with a 400.

No clients needed; these run in the fast loop (not marked e2e).
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from .fake_api import ANSWER_PREFIX, FakeAPI


@pytest.fixture
def api():
    with FakeAPI() as server:
        yield server


def post(url: str, body: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def sse_events(raw: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


def user(text):
    return {"role": "user", "content": text}


# -- Anthropic -------------------------------------------------------------------------------------

def claude_tool_turn(api: FakeAPI, cmd="ls") -> list[dict]:
    """A real first exchange: ask for RUN, get the signed thinking + tool_use reply."""
    status, raw = post(api.url + "/v1/messages", {"messages": [user(f"RUN: {cmd}")], "tools": [{"name": "Bash"}]})
    assert status == 200
    content = json.loads(raw)["content"]
    tool_id = content[-1]["id"]
    return [user(f"RUN: {cmd}"), {"role": "assistant", "content": content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}]}]


def anthropic_400(api: FakeAPI, messages: list[dict]) -> str:
    status, raw = post(api.url + "/v1/messages", {"messages": messages, "tools": [{"name": "Bash"}]})
    assert status == 400, raw
    err = json.loads(raw)
    assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
    return err["error"]["message"]


def test_anthropic_plain_answer_echoes_prompt(api):
    status, raw = post(api.url + "/v1/messages", {"messages": [user("hello world")]})
    assert status == 200
    assert json.loads(raw)["content"] == [{"type": "text", "text": f"{ANSWER_PREFIX} hello world"}]


def test_anthropic_run_gives_signed_thinking_text_and_bash_tool_use_as_sse(api):
    body = {"messages": [user("RUN: echo hi")], "tools": [{"name": "Bash"}], "stream": True}
    status, raw = post(api.url + "/v1/messages", body)
    assert status == 200
    events = sse_events(raw)
    starts = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use"]
    deltas = {e["delta"]["type"]: e["delta"] for e in events if e["type"] == "content_block_delta"}
    assert json.loads(deltas["input_json_delta"]["partial_json"]) == {"command": "echo hi", "description": "run it"}
    assert deltas["signature_delta"]["signature"]
    assert events[-1]["type"] == "message_stop"


def test_anthropic_tool_result_gets_text_answer_and_full_history_is_accepted(api):
    status, raw = post(api.url + "/v1/messages", {"messages": claude_tool_turn(api)})
    assert status == 200
    assert json.loads(raw)["content"][0]["text"].startswith(ANSWER_PREFIX)


def test_anthropic_rejects_first_message_from_assistant(api):
    msg = anthropic_400(api, [{"role": "assistant", "content": "hi"}, user("x")])
    assert "first message must use the \"user\" role" in msg


def test_anthropic_rejects_tool_use_without_tool_result_in_next_message(api):
    history = claude_tool_turn(api)
    msg = anthropic_400(api, history[:2] + [user("no result here")])
    assert "`tool_use` ids were found without `tool_result` blocks immediately after" in msg


def test_anthropic_rejects_orphan_tool_result(api):
    history = claude_tool_turn(api)
    orphan = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_nobody", "content": "x"}]}
    msg = anthropic_400(api, history + [{"role": "assistant", "content": "ok"}, orphan])
    assert "unexpected `tool_use_id` found in `tool_result` blocks: toolu_nobody" in msg


def test_anthropic_rejects_duplicate_tool_use_ids(api):
    history = claude_tool_turn(api)
    again = [{"role": "assistant", "content": [history[1]["content"][-1]]}, history[2]]
    msg = anthropic_400(api, history + [{"role": "assistant", "content": "ok"}, user("more")] + again)
    assert "`tool_use` ids must be unique" in msg


def test_anthropic_rejects_thinking_signature_it_did_not_issue(api):
    history = claude_tool_turn(api)
    history[1]["content"][0]["signature"] = "c2lnbmVkIGJ5IHNvbWVvbmUgZWxzZQ=="
    assert "Invalid `signature` in `thinking` block" in anthropic_400(api, history)


def test_anthropic_rejects_edited_thinking_text_under_a_real_signature(api):
    history = claude_tool_turn(api)
    history[1]["content"][0]["thinking"] += " (edited)"
    assert "Invalid `signature` in `thinking` block" in anthropic_400(api, history)


def test_anthropic_signature_from_another_server_is_rejected(api):
    with FakeAPI() as other:
        history = claude_tool_turn(other)
    assert "Invalid `signature`" in anthropic_400(api, history)


def test_anthropic_redacted_thinking_needs_issued_data(api):
    history = claude_tool_turn(api)
    good = {"type": "redacted_thinking", "data": api.signer.redacted_data()}
    history[1]["content"].insert(0, good)
    assert post(api.url + "/v1/messages", {"messages": history})[0] == 200
    history[1]["content"][0] = {"type": "redacted_thinking", "data": "Zm9yZ2Vk"}
    assert "Invalid `data` in `redacted_thinking` block" in anthropic_400(api, history)


def test_same_secret_accepts_signatures_across_server_restarts():
    with FakeAPI(secret=b"k" * 32) as first:
        history = claude_tool_turn(first)
    with FakeAPI(secret=b"k" * 32) as second:
        assert post(second.url + "/v1/messages", {"messages": history})[0] == 200


# -- Responses ---------------------------------------------------------------------------------------

def msg_item(text, role="user"):
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


def codex_tool_turn(api: FakeAPI, provider="openai") -> list[dict]:
    url = api.responses_base(provider) + "/responses"
    status, raw = post(url, {"input": [msg_item("RUN: ls")]})
    assert status == 200
    output = json.loads(raw)["output"]
    call = output[-1]
    return [msg_item("RUN: ls"), *output,
            {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"}]


def responses_400(api: FakeAPI, items: list[dict], provider="openai") -> dict:
    status, raw = post(api.responses_base(provider) + "/responses", {"input": items})
    assert status == 400, raw
    return json.loads(raw)["error"]


def test_responses_run_gives_reasoning_then_exec_command_call(api):
    items = codex_tool_turn(api)
    reasoning, call = items[1], items[2]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
    assert call["type"] == "function_call" and call["name"] == "exec_command"
    assert json.loads(call["arguments"]) == {"cmd": "ls"}


def test_responses_streams_sse_ending_in_completed(api):
    status, raw = post(api.url + "/v1/responses", {"input": [msg_item("hi")], "stream": True})
    events = sse_events(raw)
    assert status == 200 and events[-1]["type"] == "response.completed"
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert done[0]["content"][0]["text"] == f"{ANSWER_PREFIX} hi"


def test_responses_accepts_its_own_history_and_answers_the_tool_output(api):
    status, raw = post(api.responses_base("openai") + "/responses", {"input": codex_tool_turn(api)})
    assert status == 200
    assert json.loads(raw)["output"][0]["content"][0]["text"].startswith(ANSWER_PREFIX)


def test_responses_rejects_output_without_earlier_call(api):
    items = codex_tool_turn(api)
    items[-1]["call_id"] = "call_unknown"
    err = responses_400(api, items)
    assert "No tool call found for function call output with call_id call_unknown" in err["message"]


def test_responses_rejects_custom_tool_output_without_earlier_call(api):
    items = [msg_item("x"), {"type": "custom_tool_call_output", "call_id": "call_x", "output": "y"}]
    assert "call_id call_x" in responses_400(api, items)["message"]


def test_responses_rejects_encrypted_content_from_another_provider(api):
    items = codex_tool_turn(api, provider="openai")
    err = responses_400(api, items, provider="my-provider")
    assert err["code"] == "invalid_encrypted_content"
    assert "invalid_encrypted_content" in err["message"]


def test_responses_rejects_forged_or_missing_encrypted_content(api):
    items = codex_tool_turn(api)
    items[1]["encrypted_content"] = "Zm9yZ2Vk"
    assert responses_400(api, items)["code"] == "invalid_encrypted_content"
    del items[1]["encrypted_content"]
    assert responses_400(api, items)["code"] == "invalid_encrypted_content"


def test_responses_rejects_unknown_item_type(api):
    err = responses_400(api, [msg_item("x"), {"type": "mystery_item"}])
    assert err["code"] == "invalid_value" and "'mystery_item'" in err["message"]


def test_websocket_attempt_is_refused_and_every_request_is_logged(api):
    req = urllib.request.Request(api.url + "/v1/responses", method="GET")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 426  # Codex 0.171.0 falls back to HTTPS at once on 426 (after 5 retries on 404)
    post(api.url + "/v1/messages", {"messages": [user("x")]})
    assert [(x.method, x.api, x.status) for x in api.since(0)] == [("GET", "responses", 426),
                                                                    ("POST", "anthropic", 200)]
    assert api.since(0)[1].body == {"messages": [user("x")]}
