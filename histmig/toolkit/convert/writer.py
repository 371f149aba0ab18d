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

import os
from typing import Any, Callable

import orjson

from histmig.core.model import Reasoning, ToolCall
from histmig.core.times import iso_z
from histmig.toolkit.convert.calls import Mapped, Vocabulary, map_call, safe_tool_id
from histmig.toolkit.convert.common import Target
from histmig.toolkit.convert.flatten import Conversation, Item
from histmig.toolkit.convert.ids import Clock
from histmig.toolkit.convert.provenance import key_marker


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

    def run(self) -> None:
        self.items()
        self.flush()

    def flush(self) -> None:
        """Write what is still held once the items are done."""

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

    def answers(self, call_id: str, *, once: bool = True) -> list[Any]:
        """What :meth:`add_call` kept for the calls a result answers (``once``: forgotten then, so a second
        result of the same call is an orphan); none: the result is an orphan, dropped and counted."""
        issued = self.issued.pop(call_id, None) if once else self.issued.get(call_id)
        if not issued:
            self.conv.loss.add("dropped", "tool result without its call")
        return issued or []


class TargetWriter(ItemWriter):
    """An :class:`ItemWriter` for a :class:`Target`: calls mapped against the cwd as the target records it
    (its real path), times from the source's clock."""

    def __init__(self, conv: Conversation, t: Target, *, source_calls: Vocabulary | None, target_calls: Vocabulary):
        self.cwd = os.path.realpath(t.cwd)
        super().__init__(conv, source=t.source_tool, source_calls=source_calls, target_calls=target_calls,
                         cwd=self.cwd, keep_reasoning_text=t.keep_reasoning_text)
        self.t = t
        self.clock = Clock(conv.source.created, t.ids.time())

    def provenance(self) -> dict[str, Any]:
        """The mark that lets converting again find this copy (provenance.key_marker), stamped now."""
        return key_marker(self.t.source_tool, self.t.source_id, iso_z(Clock(None, self.t.ids.time()).last))


def args_dict(arguments: Any) -> dict:
    """Arguments for a target whose calls take an object: a free-form tool's text as ``{"input": ...}``."""
    return arguments if isinstance(arguments, dict) else {"input": arguments}
