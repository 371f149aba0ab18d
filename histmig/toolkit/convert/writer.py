"""What every converting writer does the same way with a flattened conversation (flatten.py), whatever
the target: the item loop, reasoning that is never replayed to another provider (a signature or
encrypted reasoning is bound to its issuer: dropped, or carried as plain text with
``--keep-reasoning-text``, counted either way; docs/convert.md), and tool calls mapped into the target's
schema (calls.py) under ids that stay unique, with the loss notes of both.

A writer (``tools/<tool>/write.py``) subclasses :class:`ItemWriter` and keeps only its tool's shapes:
where a call goes (:meth:`ItemWriter.add_call`), where reasoning text goes, which reasoning it keeps
signed; and its own ``on_user``, ``on_assistant``, ``on_result``, ``on_usage``, ``on_attachment``.
"""
from __future__ import annotations

from typing import Any, Callable

import orjson

from histmig.core.model import Reasoning, ToolCall
from histmig.toolkit.convert.calls import Mapped, Vocabulary, map_call, safe_tool_id
from histmig.toolkit.convert.flatten import Conversation, Item


def result_text(output: Any, dump: Callable[[Any], str] = lambda o: orjson.dumps(o).decode()) -> str:
    """A tool result's output as one text: a string as it is, text blocks joined by lines, else JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(b.get("text", "") for b in output if isinstance(b, dict) and isinstance(b.get("text"), str))
    return "" if output is None else dump(output)


class ItemWriter:
    ID_PREFIX = "call_"              # a replacement tool-call id is <prefix><n>
    ANSWERED_ONLY = False            # drop calls the conversation never answers (the target refuses them)
    REASONING_KEPT = "reasoning carried as plain text"      # the loss note of --keep-reasoning-text

    def __init__(self, conv: Conversation, *, source: str, source_calls: Vocabulary | None,
                 target_calls: Vocabulary, cwd: str | None, keep_reasoning_text: bool):
        self.conv, self.source = conv, source
        self.source_calls, self.target_calls = source_calls, target_calls
        self.map_cwd = cwd                      # what relative paths of mapped calls resolve against
        self.keep_reasoning_text = keep_reasoning_text
        self.taken: set[str] = set()            # tool-call ids issued
        self.issued: dict[str, list[Any]] = {}  # source call id -> what add_call returned, per target call

    def items(self) -> None:
        for item in self.conv.items:
            getattr(self, "on_" + item.kind)(item)

    # ---- reasoning ------------------------------------------------------------------------------
    def on_reasoning(self, item: Item) -> None:
        p: Reasoning = item.part
        if self.signed(item, p):
            return
        readable = (p.summary or p.text).strip()
        if self.keep_reasoning_text and readable:
            self.reasoning_text(item, readable)
            self.conv.loss.add("approximated", self.REASONING_KEPT)
        else:
            self.conv.loss.add("dropped", self.reasoning_dropped(p))

    def signed(self, item: Item, p: Reasoning) -> bool:
        """Keep reasoning the target may replay as it is (a genuine signature of the target's provider)."""
        return False

    def reasoning_text(self, item: Item, text: str) -> None:
        raise NotImplementedError

    def reasoning_dropped(self, p: Reasoning) -> str:
        return f"reasoning ({self.source}: bound to its provider)"

    # ---- tool calls -----------------------------------------------------------------------------
    def on_call(self, item: Item) -> None:
        call: ToolCall = item.part
        if self.ANSWERED_ONLY and call.call_id not in self.conv.answered:
            self.conv.loss.add("dropped", "tool call without a result")
            return
        holder = self.call_holder(item)
        for k, mapped in enumerate(self.map(call)):
            for cat, kind in mapped.notes:
                self.conv.loss.add(cat, kind)
            cid = self.tool_id(call.call_id + (f"_{k + 1}" if k else ""))
            self.issued.setdefault(call.call_id, []).append(self.add_call(holder, cid, mapped, item))

    def map(self, call: ToolCall) -> list[Mapped]:
        """The call in the target's schema: through the neutral vocabulary, or copied when the source
        already speaks the target's (calls.map_call)."""
        return map_call(call, self.source_calls, self.target_calls, self.map_cwd, self.conv.patches.get(call.call_id))

    def tool_id(self, wanted: str) -> str:
        return safe_tool_id(wanted, self.taken, f"{self.ID_PREFIX}{len(self.taken)}")

    def call_holder(self, item: Item) -> Any:
        """The message the calls of ``item`` go in."""
        raise NotImplementedError

    def add_call(self, holder: Any, cid: str, mapped: Mapped, item: Item) -> Any:
        """Put one mapped call in ``holder``; the return value is what :attr:`issued` keeps for its result."""
        raise NotImplementedError


def args_dict(arguments: Any) -> dict:
    """Arguments for a target whose calls take an object: a free-form tool's text as ``{"input": ...}``."""
    return arguments if isinstance(arguments, dict) else {"input": arguments}
