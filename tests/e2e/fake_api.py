"""A loopback stand-in for the Anthropic Messages API and the OpenAI Responses API.

It answers the real Codex and Claude Code clients, logs every request body, and refuses (HTTP 400)
requests that the real services would refuse for the reasons converted or flipped history fails in
real life: broken tool-call pairing, foreign thinking signatures, foreign ``encrypted_content``.

Scripted replies (decided by the last user turn):
- plain text by default (``ANSWER_PREFIX`` + the start of the prompt);
- ``RUN: <cmd>`` -> one tool call running ``<cmd>`` (Claude: signed ``thinking``, text, ``tool_use``
  Bash, or Pi's ``bash`` when the request offers it; Codex: ``reasoning`` with ``encrypted_content``, then
  ``function_call`` ``exec_command``);
- ``AGENT: <prompt>`` (Claude only) -> a sub-agent tool call (``Agent``/``Task``) with that prompt;
- a request whose last input is a tool result -> a text answer.

Providers for the Responses API are URL prefixes: ``/v1/responses`` and ``/openai/v1/responses`` are
provider ``openai``; ``/<name>/v1/responses`` is provider ``<name>``. ``encrypted_content`` issued under
one provider is refused under another (``invalid_encrypted_content``), as the real service refuses
reasoning items from another organisation or key.
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import hmac
import json
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import fake_gemini, fake_openai_chat, fake_rules

ANSWER_PREFIX = "FAKE-ANSWER:"
RUN_RE = re.compile(r"RUN:\s*(.+)")
AGENT_RE = re.compile(r"AGENT:\s*(.+)")


class Signer:
    """Issues and checks thinking signatures and ``encrypted_content`` blobs.

    Stateless (HMAC with a secret) so that a second server built with the same secret accepts what the
    first issued: samples recorded once stay resumable.
    """

    def __init__(self, secret: bytes):
        self.secret = secret

    def _mac(self, *parts: bytes) -> bytes:
        return hmac.new(self.secret, b"\0".join(parts), hashlib.sha256).digest()[:24]

    def thinking_signature(self, thinking: str) -> str:
        return base64.b64encode(b"fakesig1" + self._mac(b"thinking", thinking.encode())).decode()

    def thinking_ok(self, thinking: str, signature: Any) -> bool:
        return isinstance(signature, str) and hmac.compare_digest(signature, self.thinking_signature(thinking))

    def redacted_data(self) -> str:
        nonce = os.urandom(12)
        return base64.b64encode(b"fakered1" + nonce + self._mac(b"redacted", nonce)).decode()

    def redacted_ok(self, data: Any) -> bool:
        raw = _b64(data)
        if raw is None or len(raw) != 8 + 12 + 24 or not raw.startswith(b"fakered1"):
            return False
        return hmac.compare_digest(raw[20:], self._mac(b"redacted", raw[8:20]))

    def encrypted_content(self, provider: str) -> str:
        nonce = os.urandom(12)
        return base64.b64encode(b"fakeenc1" + nonce + self._mac(b"enc", provider.encode(), nonce)).decode()

    def encrypted_ok(self, provider: str, blob: Any) -> bool:
        raw = _b64(blob)
        if raw is None or len(raw) != 8 + 12 + 24 or not raw.startswith(b"fakeenc1"):
            return False
        return hmac.compare_digest(raw[20:], self._mac(b"enc", provider.encode(), raw[8:20]))


def _b64(value: Any) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        return None


@dataclass
class Entry:
    """One logged request."""

    method: str
    path: str
    api: str                  # "anthropic" | "responses" | "chat" | "gemini" | "other"
    provider: str | None      # Responses provider prefix, None for Anthropic
    body: Any                 # parsed JSON, or None
    status: int = 0
    error: str | None = None  # the 400 message, when refused
    reply: Any = None         # what the server answered (output items / content blocks)
    time: float = field(default_factory=time.time)


class FakeAPI:
    """Start with ``start()``, stop with ``stop()``; ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self, secret: bytes | None = None):
        self.signer = Signer(secret or os.urandom(32))
        self.log: list[Entry] = []
        self.websocket_status = 426
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> "FakeAPI":
        api = self

        class Handler(_Handler):
            fake = api

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self) -> int:
        assert self._server, "server not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def responses_base(self, provider: str = "openai") -> str:
        """Base URL (ending in /v1) under which Responses requests count as ``provider``."""
        return f"{self.url}/{provider}/v1"

    # -- log --------------------------------------------------------------------------------------
    def mark(self) -> int:
        with self._lock:
            return len(self.log)

    def since(self, mark: int) -> list[Entry]:
        with self._lock:
            return list(self.log[mark:])

    def _record(self, entry: Entry) -> None:
        with self._lock:
            self.log.append(entry)

    # -- request handling (pure enough to call directly from tests) ----------------------------
    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any, bool]:
        """Return (status, payload, stream). Logs the request."""
        route = path.split("?", 1)[0]
        entry = Entry(method, path, "other", None, body)
        self._record(entry)
        if method == "POST" and route.endswith("/v1/messages"):
            entry.api = "anthropic"
            return self._anthropic(entry, body)
        m = re.fullmatch(r"(?:/([^/]+))?/v1/responses", route)
        if m:
            entry.api, entry.provider = "responses", m.group(1) or "openai"
            if method != "POST":  # the websocket upgrade attempt
                entry.status = self.websocket_status
                return entry.status, {"error": {"message": "websockets not supported here"}}, False
            return self._responses(entry, body)
        if fake_openai_chat.matches(method, route):   # Chat Completions (Qwen Code): its own module
            return fake_openai_chat.handle(entry, body)
        gemini = fake_gemini.matches(route)
        if gemini and method == "POST":
            return fake_gemini.handle(entry, gemini, body, ANSWER_PREFIX)
        entry.status = 404
        return 404, {"error": {"type": "not_found_error", "message": f"no route {method} {route}"}}, False

    def _anthropic(self, entry: Entry, body: Any) -> tuple[int, Any, bool]:
        err = fake_rules.check_anthropic(body, self.signer)
        if err:
            entry.status, entry.error = 400, err
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": err}}, False
        content = anthropic_reply(body, self.signer)
        entry.status, entry.reply = 200, content
        return 200, anthropic_message(body, content), bool(body.get("stream"))

    def _responses(self, entry: Entry, body: Any) -> tuple[int, Any, bool]:
        err, code = fake_rules.check_responses(body, entry.provider, self.signer)
        if err:
            entry.status, entry.error = 400, err
            payload = {"error": {"message": err, "type": "invalid_request_error", "param": None, "code": code}}
            return 400, payload, False
        output = responses_reply(body, entry.provider, self.signer)
        entry.status, entry.reply = 200, output
        return 200, responses_object(body, output), bool(body.get("stream", False))


# -- scripted replies ---------------------------------------------------------------------------

def _text_of(content: Any) -> str:
    """The prompt text of a message: its text blocks, without injected <system-reminder> blocks."""
    if isinstance(content, str):
        return content
    out = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") in ("text", "input_text", "output_text"):
            text = block.get("text", "")
            if not text.lstrip().startswith("<system-reminder>"):
                out.append(text)
    return "\n".join(out)


def _answer(prompt: str) -> str:
    lines = [ln for ln in prompt.strip().splitlines() if ln.strip()]
    return f"{ANSWER_PREFIX} {lines[-1][:80] if lines else ''}"


def anthropic_reply(body: dict, signer: Signer) -> list[dict]:
    # Claude Code 2.1.197 appends a role "system" message after the user turn; the prompt is the last user one.
    last = next((m for m in reversed(body["messages"]) if m.get("role") == "user"), {})
    content = last.get("content")
    if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content if isinstance(b, dict)):
        return [{"type": "text", "text": f"{ANSWER_PREFIX} the tool finished."}]
    prompt = _text_of(content)
    tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    run, agent = RUN_RE.search(prompt), AGENT_RE.search(prompt)
    if run and "Bash" in tools:
        cmd = run.group(1).strip()
        return _anthropic_tool(signer, f"I will run {cmd}.", "Bash", {"command": cmd, "description": "run it"})
    if run and "bash" in tools:     # Pi's own shell tool (docs/pi.md)
        cmd = run.group(1).strip()
        return _anthropic_tool(signer, f"I will run {cmd}.", "bash", {"command": cmd})
    agent_tool = next((n for n in ("Agent", "Task") if n in tools), None)
    if agent and agent_tool:
        task = agent.group(1).strip()
        args = {"description": "sub task", "prompt": task, "subagent_type": "general-purpose"}
        return _anthropic_tool(signer, "I will ask a sub-agent.", agent_tool, args)
    return [{"type": "text", "text": _answer(prompt)}]


def _anthropic_tool(signer: Signer, thinking: str, name: str, args: dict) -> list[dict]:
    return [
        {"type": "thinking", "thinking": thinking, "signature": signer.thinking_signature(thinking)},
        {"type": "text", "text": "Calling a tool."},
        {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": name, "input": args},
    ]


def anthropic_message(body: dict, content: list[dict]) -> dict:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return {
        "id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
        "model": body.get("model", "fake"), "content": content, "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0},
    }


def responses_reply(body: dict, provider: str, signer: Signer) -> list[dict]:
    items = body.get("input") or []
    last = items[-1] if items else {}
    if last.get("type") in ("function_call_output", "custom_tool_call_output"):
        return [_message(f"{ANSWER_PREFIX} the tool finished.")]
    prompt = _text_of(last.get("content")) if last.get("type", "message") == "message" else ""
    run = RUN_RE.search(prompt)
    if not run:
        return [_message(_answer(prompt))]
    cmd = run.group(1).strip()
    tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    if "exec_command" in tools or not tools:
        name, args = "exec_command", {"cmd": cmd}
    else:
        name, args = "shell", {"command": ["bash", "-lc", cmd]}
    return [
        {"type": "reasoning", "id": "rs_" + uuid.uuid4().hex,
         "summary": [{"type": "summary_text", "text": f"**Running** {cmd}"}],
         "encrypted_content": signer.encrypted_content(provider)},
        {"type": "function_call", "id": "fc_" + uuid.uuid4().hex, "call_id": "call_" + uuid.uuid4().hex[:24],
         "name": name, "arguments": json.dumps(args)},
    ]


def _message(text: str) -> dict:
    return {"type": "message", "id": "msg_" + uuid.uuid4().hex, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def responses_object(body: dict, output: list[dict]) -> dict:
    return {
        "id": "resp_" + uuid.uuid4().hex, "object": "response", "created_at": int(time.time()),
        "status": "completed", "model": body.get("model", "fake"), "output": output,
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15},
    }


# -- wire formats --------------------------------------------------------------------------------

def anthropic_sse(message: dict) -> bytes:
    start = dict(message, content=[], stop_reason=None)
    events = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        events += _anthropic_block_events(i, block)
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)


def _anthropic_block_events(i: int, block: dict) -> list[tuple[str, dict]]:
    kind = block["type"]
    if kind == "thinking":
        empty, deltas = {"type": "thinking", "thinking": "", "signature": ""}, [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]}]
    elif kind == "text":
        empty, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
    else:  # tool_use
        empty = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
    out = [("content_block_start", {"type": "content_block_start", "index": i, "content_block": empty})]
    out += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
    out.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    return out


def responses_sse(response: dict) -> bytes:
    created = dict(response, status="in_progress", output=[])
    events = [("response.created", {"type": "response.created", "response": created})]
    for i, item in enumerate(response["output"]):
        events.append(("response.output_item.added",
                       {"type": "response.output_item.added", "output_index": i, "item": item}))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(("response.output_text.delta", {"type": "response.output_text.delta",
                                                          "item_id": item["id"], "output_index": i,
                                                          "content_index": 0, "delta": text}))
        events.append(("response.output_item.done",
                       {"type": "response.output_item.done", "output_index": i, "item": item}))
    events.append(("response.completed", {"type": "response.completed", "response": response}))
    return _sse(events)


def _sse(events: list[tuple[str, dict]]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeAPI

    def log_message(self, *args):  # keep pytest output clean; the FakeAPI log is the record
        pass

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        enc = (self.headers.get("Content-Encoding") or "").lower()
        if enc == "zstd":
            import zstandard
            raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
        elif enc == "gzip":
            raw = gzip.decompress(raw)
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _serve(self, method: str) -> None:
        body = self._body() if method == "POST" else None
        status, payload, stream = self.fake.handle(method, self.path, body)
        if isinstance(payload, fake_gemini.Wire):
            data, ctype = payload.data, payload.ctype
        elif stream and status == 200 and fake_openai_chat.is_payload(payload):
            data, ctype = fake_openai_chat.sse(payload), "text/event-stream"
        elif stream and status == 200:
            is_anthropic = "object" not in payload
            data = anthropic_sse(payload) if is_anthropic else responses_sse(payload)
            ctype = "text/event-stream"
        else:
            data, ctype = json.dumps(payload).encode(), "application/json"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if status == 200 and isinstance(payload, dict) and "object" not in payload:
            self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        self._serve("POST")

    def do_GET(self):
        self._serve("GET")

    def do_HEAD(self):
        self._serve("HEAD")


def main() -> None:  # pragma: no cover - manual debugging aid
    with FakeAPI() as api:
        print(api.url, flush=True)
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
