"""OpenAI Chat Completions (``POST .../chat/completions``, streaming and not) for the fake API.

Spoken by Qwen Code (``--auth-type openai`` with ``OPENAI_BASE_URL``; docs/qwen.md). The same script as
the other protocols (tests/e2e/fake_api.py): ``RUN: <cmd>`` in the last user message asks for one call
of the client's shell tool (the first offered tool whose name says shell, else the first tool), a
request ending in a tool message gets a text answer, anything else ``ANSWER_PREFIX`` + the prompt.

Refused with 400, as the real service refuses them: a ``tool`` message whose ``tool_call_id`` no
earlier assistant ``tool_calls`` issued, an assistant ``tool_calls`` entry left without its ``tool``
message before the next user or assistant turn, and a message with an unknown role.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

ROUTE = re.compile(r".*/chat/completions")
RUN_RE = re.compile(r"RUN:\s*(.+)")
USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
SHELL_NAMES = ("run_shell_command", "shell", "bash", "Bash", "exec_command", "run_commands")


def matches(method: str, route: str) -> bool:
    return method == "POST" and bool(ROUTE.fullmatch(route))


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text")


def check(body: Any) -> str | None:
    """Why the real service would refuse this request, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return "messages: required"
    open_calls: set[str] = set()
    issued: set[str] = set()
    for i, msg in enumerate(body["messages"]):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"messages[{i}].role: invalid {role!r}"
        if role == "tool":
            cid = msg.get("tool_call_id")
            if cid not in issued:
                return f"messages[{i}]: tool_call_id {cid!r} answers no earlier tool call"
            open_calls.discard(cid)
            continue
        if open_calls and role in ("user", "assistant"):
            return (f"messages[{i}]: an assistant message with 'tool_calls' must be followed by tool messages "
                    f"responding to each 'tool_call_id' ({', '.join(sorted(open_calls))})")
        for call in msg.get("tool_calls") or [] if role == "assistant" else []:
            open_calls.add(call.get("id"))
            issued.add(call.get("id"))
    return None


def reply(body: dict) -> dict:
    """The assistant message (``content`` and/or ``tool_calls``) the script answers with."""
    msgs = body["messages"]
    last = msgs[-1] if msgs else {}
    if last.get("role") == "tool":
        return {"role": "assistant", "content": "FAKE-ANSWER: the tool finished."}
    prompt = text_of(last.get("content")) if last.get("role") == "user" else ""
    run = RUN_RE.search(prompt)
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    if run and tools:
        name = next((n for n in SHELL_NAMES if n in tools), tools[0])
        # Cline's ``run_commands`` takes a list (docs/cline.md); the others one ``command``
        args = {"commands": [run.group(1).strip()]} if name == "run_commands" else {"command": run.group(1).strip()}
        call = {"id": "call_" + uuid.uuid4().hex[:24], "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    lines = [ln for ln in prompt.strip().splitlines() if ln.strip()]
    return {"role": "assistant", "content": f"FAKE-ANSWER: {lines[-1][:80] if lines else ''}"}


def completion(body: dict, message: dict) -> dict:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {"id": "chatcmpl-" + uuid.uuid4().hex[:24], "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake"), "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": USAGE}


def sse(payload: dict) -> bytes:
    """A ``chat.completion`` as the stream of chunks the service sends (usage in a last, choice-less chunk)."""
    base = {k: payload[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = payload["choices"][0]
    delta = dict(choice["message"])
    if delta.get("tool_calls"):
        delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(delta["tool_calls"])]
    chunks = [dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
              dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]),
              dict(base, choices=[], usage=payload["usage"])]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


def handle(entry: Any, body: Any) -> tuple[int, Any, bool]:
    """Answer one logged request (``entry`` is fake_api's Entry: status, error and reply are filled in)."""
    entry.api = "chat"
    err = check(body)
    if err:
        entry.status, entry.error = 400, err
        return 400, {"error": {"message": err, "type": "invalid_request_error", "param": None, "code": None}}, False
    message = reply(body)
    entry.status, entry.reply = 200, message
    return 200, completion(body, message), bool(body.get("stream"))


def is_payload(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("object") == "chat.completion"
