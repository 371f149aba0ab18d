"""A session as an ATIF trajectory: Harbor's Agent Trajectory Interchange Format v1.8
(https://github.com/harbor-framework/harbor/blob/main/rfcs/0001-trajectory-format.md; the mapping is in
docs/export.md, "ATIF"). Written as JSON a step at a time (histmig/jsonio/jsonstream.py), without the
``atif`` package: the tests validate every exported trajectory with its models.

Steps: a user message is a ``user`` step; system and developer messages are ``system`` steps; an
agent step gathers the assistant's text, reasoning and tool calls until the tool results for them
arrive (its ``observation``); the next assistant content after a result starts the next agent step."""
from __future__ import annotations

from typing import Any, Callable, Iterator

from histmig.core.model import Attachment, Reasoning, Record, Session, Text, ToolCall, ToolResult
from histmig.jsonio.jsonstream import Later, Lazy, write_json
from histmig.toolkit.export.blocks import Meta, iso, output_text, turns

SCHEMA_VERSION = "ATIF-v1.8"
_INPUT = ("input_tokens", "inputTokens", "prompt_tokens", "promptTokenCount", "input")
_OUTPUT = ("output_tokens", "outputTokens", "completion_tokens", "candidatesTokenCount", "output")
_CACHED = ("cache_read_input_tokens", "cacheReadTokens", "cachedContentTokenCount", "cacheRead", "cached_tokens")


def _first_int(usage: dict, keys: tuple[str, ...]) -> int | None:
    return next((usage[k] for k in keys if isinstance(usage.get(k), int) and not isinstance(usage[k], bool)), None)


def metrics(usage: dict | None) -> dict | None:
    """The step's token counts as its tool recorded them (field names vary by tool: the raw usage is
    kept in ``extra.usage``)."""
    if not usage:
        return None
    out = {"prompt_tokens": _first_int(usage, _INPUT), "completion_tokens": _first_int(usage, _OUTPUT),
           "cached_tokens": _first_int(usage, _CACHED)}
    return {k: v for k, v in out.items() if v is not None} | {"extra": {"usage": usage}}


def arguments(value: Any) -> tuple[dict, dict | None]:
    """ATIF wants an object: free-form input (an apply_patch body) goes under ``input``."""
    if isinstance(value, dict):
        return value, None
    if isinstance(value, str):
        return {"input": value}, {"arguments_format": "free-form"}
    return {"value": value}, {"arguments_format": type(value).__name__}


class _Agent:
    """The agent step being gathered."""

    def __init__(self, rec: Record):
        self.timestamp, self.model = iso(rec.timestamp), None
        self.texts: list[str] = []
        self.reasoning: list[str] = []
        self.hidden_reasoning = 0
        self.calls: list[dict] = []
        self.results: list[dict] = []
        self.usage: list[dict] = []

    def add(self, rec: Record) -> None:
        for p in rec.parts:
            if isinstance(p, Text) and p.text.strip():
                self.texts.append(p.text)
            elif isinstance(p, Reasoning):
                what = p.summary or p.text
                if what.strip():
                    self.reasoning.append(what)
                else:
                    self.hidden_reasoning += 1
            elif isinstance(p, ToolCall):
                args, extra = arguments(p.arguments)
                call = {"tool_call_id": p.call_id, "function_name": p.name, "arguments": args}
                if extra or p.namespace:
                    call["extra"] = (extra or {}) | ({"namespace": p.namespace} if p.namespace else {})
                self.calls.append(call)
        if rec.usage and isinstance(rec.usage, dict):
            self.usage.append(rec.usage)

    def step(self, n: int) -> dict:
        out: dict[str, Any] = {"step_id": n, "timestamp": self.timestamp, "source": "agent",
                               "message": "\n\n".join(self.texts)}
        if self.reasoning:
            out["reasoning_content"] = "\n\n".join(self.reasoning)
        if self.calls:
            out["tool_calls"] = self.calls
        if self.results:
            out["observation"] = {"results": self.results}
        if len(self.usage) == 1:
            out["metrics"] = metrics(self.usage[0])
        elif self.usage:            # several requests in one step: kept as recorded, not summed
            out["metrics"] = {"extra": {"usage": self.usage}}
        if self.hidden_reasoning:
            out["extra"] = {"reasoning_not_readable": self.hidden_reasoning}
        return {k: v for k, v in out.items() if v is not None}


def _result(p: ToolResult, call_ids: set[str]) -> dict:
    out: dict[str, Any] = {"content": output_text(p.output)}
    extra: dict[str, Any] = {}
    if p.call_id in call_ids:
        out["source_call_id"] = p.call_id
    else:
        extra["call_id"] = p.call_id      # a result whose call is not in this step (resumed, orphaned)
    if p.is_error:
        extra["is_error"] = True
    if extra:
        out["extra"] = extra
    return out


def _message_step(rec: Record, n: int) -> dict:
    texts = [p.text for p in rec.parts if isinstance(p, Text)]
    attachments = sum(isinstance(p, Attachment) for p in rec.parts)
    extra: dict[str, Any] = {}
    if rec.parts and all(isinstance(p, Text) and p.injected for p in rec.parts):
        extra["injected"] = True
    if rec.role not in ("user", "system"):
        extra["role"] = rec.role
    if attachments:
        extra["attachments"] = attachments
    out = {"step_id": n, "timestamp": iso(rec.timestamp), "source": "user" if rec.role == "user" else "system",
           "message": "\n\n".join(texts)}
    if extra:
        out["extra"] = extra
    return {k: v for k, v in out.items() if v is not None}


def steps(session: Session, count: list[int]) -> Iterator[dict]:
    """The trajectory's steps, numbered from 1; ``count[0]`` ends as how many."""
    cur: _Agent | None = None
    n = 0

    def flush() -> Iterator[dict]:
        nonlocal cur, n
        if cur is not None:
            n += 1
            yield cur.step(n)
            cur = None

    for rec in turns(session, injected=True):
        results = [p for p in rec.parts if isinstance(p, ToolResult)]
        if results:
            if cur is None:
                cur = _Agent(rec)
            ids = {c["tool_call_id"] for c in cur.calls}
            cur.results.extend(_result(p, ids) for p in results)
            if not any(isinstance(p, (Text, Attachment)) for p in rec.parts):
                continue
            rec = rec.evolve(parts=[p for p in rec.parts if not isinstance(p, ToolResult)])
        if rec.role == "assistant":
            if cur is not None and cur.results:
                yield from flush()
            if cur is None:
                cur = _Agent(rec)
            cur.add(rec)
        elif any(isinstance(p, (Text, Attachment)) for p in rec.parts):
            yield from flush()
            n += 1
            yield _message_step(rec, n)
    yield from flush()
    count[0] = n


def trajectory(session: Session, meta: Meta, *, trajectory_id: str | None = None) -> dict:
    """The trajectory as a value for :func:`write_json` (steps streamed)."""
    count = [0]
    version = session.meta.get("version") if isinstance(session.meta.get("version"), str) else None
    agent = {"name": meta.tool, "version": version or "unknown"}
    if meta.model:
        agent["model_name"] = meta.model
    extra = {"histmig": {k: v for k, v in (("tool", meta.tool), ("title", meta.title), ("cwd", meta.cwd),
                                           ("started", meta.created), ("updated", meta.updated),
                                           ("provider", meta.provider)) if v}}
    out: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "session_id": meta.id,
                           "trajectory_id": trajectory_id or meta.id, "agent": agent,
                           "steps": Lazy(steps(session, count)),
                           "final_metrics": Later(lambda: {"total_steps": count[0]}), "extra": extra}
    if session.subagents:
        out["subagent_trajectories"] = Lazy(
            trajectory(sub, Meta(tool=sub.format, id=sub.id, title=f"sub-agent {sub.id}", cwd=sub.cwd,
                                 created=iso(sub.created), model=sub.model), trajectory_id=sub.id)
            for sub in session.subagents)
    return out


def write_atif(session: Session, write: Callable[[str], Any], meta: Meta) -> int:
    """Write the trajectory; returns how many steps it has."""
    value = trajectory(session, meta)
    write_json(value, write)
    write("\n")
    return value["final_metrics"].compute()["total_steps"]
