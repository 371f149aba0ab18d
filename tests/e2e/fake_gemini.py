"""The Gemini API part of the fake API (tests/e2e/fake_api.py hooks it in): what Gemini CLI needs offline.

Routes (any prefix, e.g. ``/v1beta/models/<model>``): ``:streamGenerateContent?alt=sse`` (SSE, one
``data:`` event per chunk), ``:generateContent`` (one JSON answer) and ``:countTokens``.

Scripted replies (decided by the last ``contents`` turn):
- plain text by default (``ANSWER_PREFIX`` + the start of the prompt);
- ``RUN: <cmd>`` -> one ``functionCall`` of Gemini CLI's shell tool ``run_shell_command`` ``{command}``;
- a last turn of ``functionResponse`` parts -> a text answer.

Refused with 400 as the real service refuses them (docs/specs/agents.md "Later measurements"): a model
turn with N ``functionCall`` parts not followed by a user turn with exactly N ``functionResponse`` parts.
"""
from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

SHELL_TOOL = "run_shell_command"
ROUTE = re.compile(r".*:(streamGenerateContent|generateContent|countTokens)$")


@dataclass
class Wire:
    """A reply already in its wire form (the handler sends ``data`` as is)."""

    data: bytes
    ctype: str


def matches(route: str) -> str | None:
    """The Gemini method a route names, or None."""
    m = ROUTE.fullmatch(route)
    return m.group(1) if m else None


def check(body: Any) -> str | None:
    """Why the real service would refuse this request body, or None."""
    contents = body.get("contents") if isinstance(body, dict) else None
    if not isinstance(contents, list):
        return "contents is required"
    for i, turn in enumerate(contents):
        parts = turn.get("parts") or [] if isinstance(turn, dict) else []
        calls = sum(1 for p in parts if isinstance(p, dict) and "functionCall" in p)
        if not calls:
            continue
        nxt = contents[i + 1] if i + 1 < len(contents) else None
        if nxt is None:
            return f"contents[{i}] ends with a function call and no response"
        answers = sum(1 for p in nxt.get("parts") or [] if isinstance(p, dict) and "functionResponse" in p)
        if answers != calls:
            return ("Please ensure that the number of function response parts is equal to the number of "
                    f"function call parts of the function call turn (contents[{i}]: {calls} call(s), {answers} response(s))")
    return None


def _last_prompt(contents: list) -> tuple[str, bool]:
    last = contents[-1] if contents else {}
    parts = [p for p in last.get("parts") or [] if isinstance(p, dict)]
    if any("functionResponse" in p for p in parts):
        return "", True
    return "\n".join(p.get("text", "") for p in parts if "text" in p), False


def reply_parts(body: dict, answer_prefix: str) -> list[dict]:
    prompt, after_tool = _last_prompt(body.get("contents") or [])
    if after_tool:
        return [{"text": f"{answer_prefix} the tool finished."}]
    run = re.search(r"RUN:\s*(.+)", prompt)
    tools = {d.get("name") for t in body.get("tools") or [] if isinstance(t, dict)
             for d in t.get("functionDeclarations") or [] if isinstance(d, dict)}
    if run and SHELL_TOOL in tools:
        return [{"functionCall": {"name": SHELL_TOOL, "args": {"command": run.group(1).strip()}}}]
    lines = [ln for ln in prompt.strip().splitlines() if ln.strip()]
    return [{"text": f"{answer_prefix} {lines[-1][:80] if lines else ''}"}]


def response(parts: list[dict], model: str) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": model, "responseId": uuid.uuid4().hex[:16]}


def handle(entry: Any, method: str, body: Any, answer_prefix: str) -> tuple[int, Any, bool]:
    """Answer one Gemini request: (status, payload, stream) like ``FakeAPI.handle``."""
    entry.api = "gemini"
    model = entry.path.split("/models/", 1)[-1].split(":", 1)[0]
    if method == "countTokens":
        entry.status = 200
        return 200, {"totalTokens": 10}, False
    err = check(body)
    if err:
        entry.status, entry.error = 400, err
        return 400, {"error": {"code": 400, "message": err, "status": "INVALID_ARGUMENT"}}, False
    parts = reply_parts(body, answer_prefix)
    entry.status, entry.reply = 200, parts
    payload = response(parts, model)
    if method == "streamGenerateContent":
        return 200, Wire(f"data: {json.dumps(payload)}\n\n".encode(), "text/event-stream"), False
    return 200, payload, False
