"""Build Anthropic Messages (the history Claude Code, mini-cc and manifest sessions hold) from a
flattened conversation, with every rule the Messages API enforces on history:

- tool_use ids match ``[A-Za-z0-9_-]+`` and are unique; every tool_use is answered by a tool_result
  in the very next (user) message, and every tool_result answers a tool_use of the message before;
  unanswered calls and orphan results are dropped and reported;
- ``thinking`` only with a genuine Anthropic signature (docs/specs/pitfalls.md #24): reasoning from other
  providers is dropped, or carried as plain text with ``keep_reasoning_text``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator

import orjson

from histmig import tools as registry
from histmig.toolkit.convert.calls import Mapped, safe_tool_name, translate
from histmig.toolkit.convert.flatten import Conversation, Item
from histmig.tools.claude_family import ANTHROPIC
from histmig.toolkit.convert.loss import LossReport
from histmig.toolkit.convert.writer import ItemWriter
from histmig.tools.claude_family.blocks import part_to_block
from histmig.core.model import Reasoning, ToolCall, ToolResult


@dataclass
class Msg:
    role: str                                   # "user" | "assistant"
    blocks: list[dict] = field(default_factory=list)
    stamps: list[str | None] = field(default_factory=list)   # one timestamp per block
    prompt: bool = False                        # a user prompt (not tool results)
    rec: int = -1
    usage: dict | None = None
    model: str | None = None
    structured: dict[str, Any] = field(default_factory=dict)  # tool_use_id -> toolUseResult

    def add(self, block: dict, ts: str | None) -> None:
        self.blocks.append(block)
        self.stamps.append(ts)

    def content(self) -> Any:
        """A plain prompt as a string (how clients write typed prompts), anything else as blocks."""
        if self.prompt and len(self.blocks) == 1 and self.blocks[0]["type"] == "text":
            return self.blocks[0]["text"]
        return self.blocks


def anthropic_usage(u: dict | None) -> dict[str, int]:
    """Anthropic ``usage`` from canonical usage (``flatten.usage_from``)."""
    if not u:
        return {"input_tokens": 0, "output_tokens": 0}
    return {"input_tokens": u["input"], "cache_creation_input_tokens": u["cache_write"],
            "cache_read_input_tokens": u["cached"], "output_tokens": u["output"]}


@dataclass
class Options:
    keep_reasoning_text: bool = False
    cwd: str | None = None


class _Builder(ItemWriter):
    """Messages are yielded in order as soon as nothing can change them any more: a message is
    paired once the message after it is complete, and the last assistant message stays (a later
    usage item attaches to it). Only that short window is held, never the conversation.
    ``issued``: source call id -> tool_use ids."""

    ID_PREFIX = "toolu_"
    REASONING_KEPT = "reasoning summary carried as plain text"

    def __init__(self, conv: Conversation, target: str, opts: Options):
        super().__init__(conv, source=conv.source.format, source_calls=registry.hook(conv.source.format, "calls"),
                         target_calls=registry.hook(target, "calls"), cwd=opts.cwd,
                         keep_reasoning_text=opts.keep_reasoning_text)
        self.target, self.opts = target, opts
        self.loss: LossReport = conv.loss
        self.msgs: list[Msg] = []                    # the window: messages not yielded yet
        self.paired = 0                              # msgs[:paired] are paired
        self.before: Msg | None = None               # the message just before the window
        self.call_names: dict[str, str] = {}         # tool_use id -> target tool name

    def current(self, role: str, *, prompt: bool = False, rec: int = -1) -> Msg:
        last = self.msgs[-1] if self.msgs else None
        if last and last.role == role and last.prompt == prompt and (not prompt or last.rec == rec):
            return last
        msg = Msg(role, prompt=prompt, rec=rec)
        self.msgs.append(msg)
        return msg

    def run(self) -> Iterator[Msg]:
        for item in self.conv.items:
            getattr(self, "on_" + item.kind)(item)
            yield from self._ready(final=False)
        yield from self._ready(final=True)

    def _ready(self, *, final: bool) -> Iterator[Msg]:
        msgs = self.msgs
        # pair msgs[i] once msgs[i + 1] can no longer grow (it is not the current message)
        while self.paired < len(msgs) and (final or self.paired + 2 < len(msgs)):
            i = self.paired
            _pair_one(msgs[i - 1] if i else self.before, msgs[i], msgs[i + 1] if i + 1 < len(msgs) else None,
                      self.loss)
            self.paired += 1
        while self.paired and (final or msgs[0].role != "assistant"
                               or any(m.role == "assistant" for m in msgs[1:])):
            self.before = msgs.pop(0)
            self.paired -= 1
            if self.before.blocks:
                yield self.before

    def on_user(self, item: Item) -> None:
        self.current("user", prompt=True, rec=item.rec).add({"type": "text", "text": item.text}, item.ts)

    def on_assistant(self, item: Item) -> None:
        msg = self.current("assistant")
        msg.model = msg.model or item.model
        msg.add({"type": "text", "text": item.text}, item.ts)

    def on_attachment(self, item: Item) -> None:
        block = item.part.data
        if item.text == "user" and isinstance(block, dict) and block.get("type") in ("image", "document"):
            self.current("user", prompt=True, rec=item.rec).add(block, item.ts)
        else:
            self.loss.add("dropped", "attachment")

    def on_usage(self, item: Item) -> None:
        for msg in reversed(self.msgs):
            if msg.role == "assistant":
                msg.usage = item.usage
                return

    def signed(self, item: Item, p: Reasoning) -> bool:
        if self.source in ANTHROPIC and (p.signature or (p.redacted and p.encrypted)):
            self.current("assistant").add(part_to_block(p), item.ts)   # genuine: thinking as it was
            return True
        return False

    def reasoning_text(self, item: Item, text: str) -> None:
        self.current("assistant").add({"type": "text", "text": text}, item.ts)

    def reasoning_dropped(self, p: Reasoning) -> str:
        if self.source in ANTHROPIC:
            return "thinking without a signature"
        return f"reasoning ({self.source}: encrypted, bound to its provider)"

    def call_holder(self, item: Item) -> Msg:
        msg = self.current("assistant")
        msg.model = msg.model or item.model
        return msg

    def add_call(self, msg: Msg, tid: str, mapped: Mapped, item: Item) -> str:
        self.call_names[tid] = mapped.name
        msg.add({"type": "tool_use", "id": tid, "name": mapped.name, "input": mapped.arguments}, item.ts)
        return tid

    def map(self, call: ToolCall) -> list[Mapped]:
        if self.source_calls is not self.target_calls:     # another schema: through the neutral vocabulary
            return translate(call, self.source_calls, self.target_calls, self.opts.cwd,
                             self.conv.patches.get(call.call_id))
        args = call.arguments if isinstance(call.arguments, dict) else {"input": call.arguments}
        return [Mapped(safe_tool_name(call.name), args)]

    def on_result(self, item: Item) -> None:
        res: ToolResult = item.part
        ids = self.answers(res.call_id, once=False)
        if not ids:
            return
        msg = self.current("user")
        content = result_content(res.output)
        structured, is_error = res.structured, res.is_error
        if self.source == "codex":
            structured, is_error = codex_result(self.call_names.get(ids[0]), res.output, is_error)
        for tid in ids:
            block = {"type": "tool_result", "tool_use_id": tid, "content": content}
            if is_error:
                block["is_error"] = True
            msg.add(block, item.ts)
            if structured is not None:
                msg.structured[tid] = structured


def build_messages(conv: Conversation, target: str, opts: Options) -> Iterator[Msg]:
    """The messages, non-empty ones only, one at a time (see :class:`_Builder`)."""
    return _Builder(conv, target, opts).run()


def _pair_one(prev: Msg | None, msg: Msg, nxt: Msg | None, loss: LossReport) -> None:
    """Drop tool_use blocks not answered by the next message, and tool_results that answer
    nothing in the message before (the API rejects both). Messages are paired in order, so
    ``prev`` is already paired and ``nxt`` is not yet."""
    if msg.role == "assistant":
        nxt = nxt if nxt is not None and nxt.role == "user" else None
        answered = {b.get("tool_use_id") for b in (nxt.blocks if nxt else []) if b["type"] == "tool_result"}
        _keep(msg, lambda b: b["type"] != "tool_use" or b["id"] in answered, loss, "tool call without a result")
    elif not msg.prompt:
        prev = prev if prev is not None and prev.role == "assistant" else None
        offered = {b["id"] for b in (prev.blocks if prev else []) if b["type"] == "tool_use"}
        _keep(msg, lambda b: b["type"] != "tool_result" or b["tool_use_id"] in offered, loss,
              "tool result out of order")


def _keep(msg: Msg, ok, loss: LossReport, kind: str) -> None:
    pairs = [(b, t) for b, t in zip(msg.blocks, msg.stamps) if ok(b)]
    loss.add("dropped", kind, len(msg.blocks) - len(pairs))
    msg.blocks, msg.stamps = [b for b, _ in pairs], [t for _, t in pairs]


def result_content(output: Any) -> Any:
    """A tool output as tool_result content: a string, or text/image blocks."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        blocks = []
        for b in output:
            if not isinstance(b, dict):
                continue
            if b.get("type") in ("input_text", "output_text", "text") and isinstance(b.get("text"), str):
                blocks.append({"type": "text", "text": b["text"]})
            elif b.get("type") == "image" or b.get("type") == "tool_reference":
                blocks.append(b)
            elif b.get("type") == "input_image" and isinstance(b.get("image_url"), str):
                img = data_url_image(b["image_url"])
                blocks.append(img if img else {"type": "text", "text": "[image omitted]"})
        return blocks
    return "" if output is None else orjson.dumps(output).decode()


def data_url_image(url: str) -> dict | None:
    m = re.match(r"data:(image/[\w.+-]+);base64,(.*)$", url, re.S)
    if not m:
        return None
    return {"type": "image", "source": {"type": "base64", "media_type": m.group(1), "data": m.group(2)}}


_EXIT_RE = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")


def exec_output(output: Any) -> tuple[str, int | None]:
    """(what the command printed, exit code) from a Codex shell output in any of its forms."""
    text = result_text(output)
    try:
        obj = orjson.loads(text) if text.lstrip().startswith("{") else None
    except orjson.JSONDecodeError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("output"), str):
        code = (obj.get("metadata") or {}).get("exit_code") if isinstance(obj.get("metadata"), dict) else None
        return obj["output"], code if isinstance(code, int) else None
    m = _EXIT_RE.search(text[:2000])
    code = int(m.group(1)) if m else None
    marker = text.find("\nOutput:\n")
    return (text[marker + len("\nOutput:\n"):] if marker >= 0 else text), code


def result_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(b.get("text", "") for b in output if isinstance(b, dict) and isinstance(b.get("text"), str))
    return "" if output is None else str(output)


def codex_result(tool: str | None, output: Any, is_error: bool) -> tuple[Any, bool]:
    """Claude's ``toolUseResult`` for a converted Codex output, and whether it is an error."""
    if tool != "Bash":
        return None, is_error
    stdout, code = exec_output(output)
    return ({"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False},
            is_error or (code is not None and code != 0))
