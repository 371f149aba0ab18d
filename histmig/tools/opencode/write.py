"""Write a conversation as a new OpenCode session: rows for ``session``, ``message`` and ``part``
(docs/opencode.md, "convert to OpenCode"). No file is written and no ``event`` row: OpenCode 1.18.33
lists and continues a session from those three tables alone (/work/shared/specs/agents.md §3, import
recipe; tests/e2e/test_opencode_e2e.py). The rows go into the database through the plan's
``SqlInsert`` operations (tools/opencode/target.py): one transaction, journaled, undone by deleting
exactly them.

Shape, as the client writes it: a ``user`` message with one ``text`` part per prompt; one ``assistant``
message per model step (``parentID`` = its prompt), parts ``step-start``, ``reasoning``/``text``/``tool``
in order, ``step-finish``; ``finish`` is ``tool-calls`` when the step called tools, else ``stop``. A
tool part carries its call and its result (``state.status`` completed or error); a call without a
result is dropped and reported (OpenCode would replay it as a call still running).

Ids are OpenCode's own time-ordered ids (``msg_``/``prt_`` + 12 hex of ms*4096+counter + 14 base62,
``ses_`` the same bit-inverted, histmig's :func:`new_id`), minted from the source's own times so the
messages sort as they happened; OpenCode orders a session by id.

Thinking is replayed only to its own provider: a reasoning part keeps its signature
(``metadata.anthropic.signature``) when the source's turns came from Anthropic (Claude-style sources)
and the new session's model is Anthropic's too; otherwise it is dropped (or kept as plain text with
``--keep-reasoning-text``) and the loss report says so. OpenCode itself sends a reasoning part as a
signed thinking block only when the step's ``providerID/modelID`` is the model it now asks, else as
plain text (MessageV2's model-message conversion in the 1.18.33 client): the loss report says
"approximated" for a step another Claude model made. User messages record the model OpenCode is
configured with (``opencode.json``'s ``model``, or ``--model provider/model``), which is the model a
continued session asks; assistant steps record where each turn really came from.
"""
from __future__ import annotations

import json
from typing import Any

from histmig import tools as registry
from histmig.core.diagnostics import HistmigInputError, NotFoundError
from histmig.core.model import Reasoning, ToolResult
from histmig.core.times import iso_z
from histmig.toolkit.convert import provenance
from histmig.toolkit.convert import writer
from histmig.toolkit.convert.calls import Mapped
from histmig.toolkit.convert.common import Target, Written
from histmig.toolkit.convert.flatten import Conversation, Item
from histmig.toolkit.convert.ids import Clock
from histmig.toolkit.convert.writer import args_dict
from histmig.tools.opencode.calls import CALLS

VERSION = "1.18.33"                                      # the client version the rows are shaped for
MARK = "histmigProvenance"                               # key in ``session.metadata`` (tools/opencode/provenance.py)
SIGNED_SOURCES = ("claude-code", "mini-cc", "manifest")  # thinking signed by Anthropic
ORIGIN = {"codex": "openai"}                             # source tool -> provider of its turns
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_MASK = (1 << 48) - 1
ZERO_TOKENS = {"total": 0, "input": 0, "output": 0, "reasoning": 0, "cache": {"write": 0, "read": 0}}


def oc_id(ids: Any, prefix: str, ms: int, counter: int, descending: bool = False) -> str:
    """OpenCode's identifier: ``<prefix>_`` + 12 hex of ``ms*4096+counter`` (inverted for sessions, so
    the newest sort first) + 14 base62 characters."""
    value = ms * 4096 + counter
    value = ~value & _MASK if descending else value & _MASK
    return f"{prefix}_{value:012x}" + "".join(_B62[ids.bits(8) % 62] for _ in range(14))


def new_id(ids: Any) -> str:
    """A ``ses_`` id for now (the table's ``new_id``: convert mints the session id before writing)."""
    return oc_id(ids, "ses", int(ids.time() * 1000), 1, descending=True)


class Minter:
    """Ascending ids from the source's times: never earlier than the one before (same ms: counter + 1)."""

    def __init__(self, ids: Any):
        self.ids, self.ms, self.n = ids, 0, 0

    def __call__(self, prefix: str, ms: int) -> str:
        if ms > self.ms:
            self.ms, self.n = ms, 0
        self.n += 1
        return oc_id(self.ids, prefix, self.ms, self.n)


def tokens(u: dict | None) -> dict[str, Any]:
    """Canonical usage (histmig/toolkit/convert/flatten.py) in OpenCode's ``tokens`` shape."""
    if not u:
        return json.loads(json.dumps(ZERO_TOKENS))
    inp, out, cr, cw = (int(u.get(k, 0) or 0) for k in ("input", "output", "cached", "cache_write"))
    return {"total": inp + out + cr + cw, "input": inp, "output": out, "reasoning": int(u.get("reasoning", 0) or 0),
            "cache": {"write": cw, "read": cr}}


def result_text(output: Any) -> str:
    return writer.result_text(output, lambda o: json.dumps(o, ensure_ascii=False))


def split_model(value: str | None) -> tuple[str | None, str | None]:
    """``provider/model`` (OpenCode's form) -> (provider, model); a bare name has no provider."""
    if not value:
        return None, None
    provider, sep, model = value.partition("/")
    return (provider, model) if sep else (None, value)


def origin(conv: Conversation, source: str) -> str:
    """The provider the source's turns came from (what an assistant step records as ``providerID``)."""
    return ORIGIN.get(source) or ("anthropic" if source in SIGNED_SOURCES else conv.source.provider or source)


class _Writer(writer.ItemWriter):
    """``issued``: source call id -> its open tool parts."""

    ANSWERED_ONLY = True

    def __init__(self, conv: Conversation, t: Target, model: tuple[str, str], root: str):
        super().__init__(conv, source=t.source_tool, source_calls=registry.hook(t.source_tool, "calls"),
                         target_calls=CALLS, cwd=t.cwd, keep_reasoning_text=t.keep_reasoning_text)
        self.t, self.root = t, root
        self.clock = Clock(conv.source.created, t.ids.time())
        self.mint = Minter(t.ids)
        self.model = model                        # (provider, model) the user turns ask: what continues it
        self.origin = origin(conv, t.source_tool)
        self.messages: list[dict[str, Any]] = []   # message rows, each with "parts": its part rows
        self.user: dict[str, Any] | None = None
        self.step: dict[str, Any] | None = None
        self.usage = {"input": 0, "output": 0, "reasoning": 0, "cache_read": 0, "cache_write": 0}

    def ms(self, ts: str | None) -> int:
        return int(self.clock.at(ts).timestamp() * 1000)

    def row(self, prefix: str, ms: int, data: dict[str, Any]) -> dict[str, Any]:
        return {"id": self.mint(prefix, ms), "time_created": ms, "time_updated": ms, "data": data, "parts": []}

    def part(self, msg: dict[str, Any], ms: int, data: dict[str, Any]) -> dict[str, Any]:
        p = {"id": self.mint("prt", ms), "time_created": ms, "time_updated": ms, "data": data}
        msg["parts"].append(p)
        return p

    # ---- steps ----

    def close_step(self) -> None:
        s = self.step
        if s is None:
            return
        self.step = None
        d = s["data"]
        calls = any(p["data"].get("type") == "tool" for p in s["parts"])
        d["finish"] = "tool-calls" if calls else "stop"
        end = max([s["time_created"]] + [p["time_updated"] for p in s["parts"]])
        d["time"]["completed"] = end
        s["time_updated"] = end
        self.part(s, end, {"type": "step-finish", "reason": d["finish"], "tokens": d["tokens"], "cost": 0})

    def current(self, item: Item) -> dict[str, Any]:
        """The open assistant step; a new one after tool results (the model's next step)."""
        if self.step is not None and self.step.get("answered"):
            self.close_step()
        if self.step is None:
            if self.user is None:           # an assistant turn before any prompt: OpenCode needs a parent
                self.on_user(Item("user", item.ts, text="(conversation continued)"))
                self.conv.loss.add("approximated", "assistant turn before the first prompt given an empty prompt")
            ms = self.ms(item.ts)
            model = item.model or self.conv.source.model or ""
            self.step = self.row("msg", ms, {
                "parentID": self.user["id"], "role": "assistant", "mode": "build", "agent": "build",
                "path": {"cwd": self.t.cwd, "root": self.root}, "cost": 0, "tokens": tokens(None),
                "modelID": model, "providerID": self.origin, "time": {"created": ms}})
            self.messages.append(self.step)
            self.part(self.step, ms, {"type": "step-start"})
        return self.step

    # ---- items ----

    def on_user(self, item: Item) -> None:
        self.close_step()
        ms = self.ms(item.ts)
        self.user = self.row("msg", ms, {"role": "user", "time": {"created": ms}, "agent": "build",
                                         "model": {"providerID": self.model[0], "modelID": self.model[1]}})
        self.messages.append(self.user)
        self.part(self.user, ms, {"type": "text", "text": item.text})

    def on_assistant(self, item: Item) -> None:
        step = self.current(item)
        ms = self.ms(item.ts)
        self.part(step, ms, {"type": "text", "text": item.text, "time": {"start": ms, "end": ms}})

    def signed(self, item: Item, p: Reasoning) -> bool:
        if not (self.source in SIGNED_SOURCES and self.model[0] == "anthropic" and p.signature and not p.redacted):
            return False
        ms = self.ms(item.ts)
        self.part(self.current(item), ms, {"type": "reasoning", "text": p.text, "time": {"start": ms, "end": ms},
                                           "metadata": {"anthropic": {"signature": p.signature}}})
        model = item.model or self.conv.source.model or ""
        if model != self.model[1]:     # OpenCode replays a thinking block only to the model that made it
            self.conv.loss.add("approximated", f"reasoning (made by {model or 'another model'}: OpenCode sends it to "
                               f"{self.model[1]} as plain text)")
        return True

    def reasoning_text(self, item: Item, text: str) -> None:
        ms = self.ms(item.ts)
        self.part(self.current(item), ms, {"type": "text", "text": text, "time": {"start": ms, "end": ms}})

    def reasoning_dropped(self, p: Reasoning) -> str:
        if self.source in SIGNED_SOURCES and p.signature and not p.redacted:
            return f"reasoning ({self.source}: signed for anthropic, the session asks {self.model[0]})"
        return super().reasoning_dropped(p) if self.source not in SIGNED_SOURCES else "thinking without a signature"

    def call_holder(self, item: Item) -> tuple[dict[str, Any], int]:
        return self.current(item), self.ms(item.ts)      # the step, and one time for all its calls

    def add_call(self, holder: tuple[dict[str, Any], int], cid: str, mapped: Mapped, item: Item) -> dict[str, Any]:
        step, ms = holder
        return self.part(step, ms, {"type": "tool", "tool": mapped.name, "callID": cid, "state": {
            "status": "running", "input": args_dict(mapped.arguments), "time": {"start": ms}}})

    def on_result(self, item: Item) -> None:
        res: ToolResult = item.part
        parts = self.answers(res.call_id)
        if not parts:
            return
        ms = self.ms(item.ts)
        text = result_text(res.output)
        for part in parts:
            state = part["data"]["state"]
            title = str(state["input"].get("command") or state["input"].get("filePath") or part["data"]["tool"])[:200]
            if res.is_error:
                state.update(status="error", error=text)
            else:
                state.update(status="completed", output=text, metadata={}, title=title)
            state["time"]["end"] = max(ms, state["time"]["start"])
            part["time_updated"] = state["time"]["end"]
        if self.step is not None:
            self.step["answered"] = True

    def on_attachment(self, item: Item) -> None:
        self.conv.loss.add("dropped", "attachment")

    def on_usage(self, item: Item) -> None:
        if self.step is None or not item.usage:
            return
        t = tokens(item.usage)
        self.step["data"]["tokens"] = t
        for k, v in (("input", t["input"]), ("output", t["output"]), ("reasoning", t["reasoning"]),
                     ("cache_read", t["cache"]["read"]), ("cache_write", t["cache"]["write"])):
            self.usage[k] += v

    def run(self) -> None:
        self.items()
        self.close_step()
        for parts in self.issued.values():        # calls whose result never came after them
            for part in parts:
                part["data"]["state"].update(status="error", error="(no result recorded)")
                part["data"]["state"]["time"]["end"] = part["data"]["state"]["time"]["start"]
        for m in self.messages:
            m.pop("answered", None)


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def write(conv: Conversation, t: Target) -> Written:
    """The rows of the new session in ``Written.info["rows"]`` (table, row) in insert order; no files.
    Which database and project they go to is the target's tables object (``t.tables``,
    tools/opencode/target.py), read once before the run."""
    place = t.tables
    if place is None or place.db is None:
        unreadable = [w for w in (place.warnings if place else []) if w.code == "db-unreadable"]
        if unreadable:      # "run opencode once" would be wrong advice for a corrupt or locked file
            raise HistmigInputError(f"the OpenCode database cannot be read: {unreadable[0].detail}",
                                    path=unreadable[0].path)
        raise NotFoundError(f"no OpenCode database in {t.root}: run opencode once first, then convert")
    project_id, worktree, note = place.project_for(t.cwd)
    if note:
        conv.loss.add("approximated", note)
    configured = split_model(t.model) if t.model and "/" in t.model else None
    model = configured or (origin(conv, t.source_tool), t.model or conv.source.model or "")
    w = _Writer(conv, t, (model[0] or "", model[1] or ""), "/" if project_id == "global" else worktree)
    w.run()
    first = w.messages[0]["time_created"] if w.messages else int(w.clock.last.timestamp() * 1000)
    last = max([first] + [m["time_updated"] for m in w.messages])
    title = (conv.first_prompt or "").strip().splitlines()[0][:100] if (conv.first_prompt or "").strip() else \
        "Converted session"
    mark = provenance.key_marker(t.source_tool, t.source_id, iso_z(Clock(None, t.ids.time()).last))
    path = t.cwd.lstrip("/") if project_id == "global" else _relative(t.cwd, worktree)
    u = w.usage
    session = {"id": t.sid, "project_id": project_id, "slug": "converted-" + t.sid[-6:].lower(),
               "directory": t.cwd, "path": path, "title": title, "version": VERSION,
               "metadata": _json({MARK: mark}), "cost": 0, "tokens_input": u["input"], "tokens_output": u["output"],
               "tokens_reasoning": u["reasoning"], "tokens_cache_read": u["cache_read"],
               "tokens_cache_write": u["cache_write"], "agent": "build",
               "model": _json({"id": w.model[1], "providerID": w.model[0]}),
               "time_created": first, "time_updated": last}
    rows: list[tuple[str, dict[str, Any]]] = [("session", session)]
    for m in w.messages:
        rows.append(("message", {"id": m["id"], "session_id": t.sid, "time_created": m["time_created"],
                                 "time_updated": m["time_updated"], "data": _json(m["data"])}))
        for p in m["parts"]:
            rows.append(("part", {"id": p["id"], "message_id": m["id"], "session_id": t.sid,
                                  "time_created": p["time_created"], "time_updated": p["time_updated"],
                                  "data": _json(p["data"])}))
    last_ts = iso_z(w.clock.last) if w.messages else None
    size = sum(len(r["data"]) for table, r in rows if table != "session")
    return Written([], t.sid, last_ts, title, info={"rows": rows, "db": str(place.db)},
                   location=f"{place.db}#{t.sid}", row_bytes=size)


def _relative(cwd: str, worktree: str) -> str:
    """``session.path`` under a git project: the folder relative to the worktree ('' at its root)."""
    rel = cwd[len(worktree):].lstrip("/") if cwd == worktree or cwd.startswith(worktree.rstrip("/") + "/") else ""
    return rel
