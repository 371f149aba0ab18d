"""Tool calls between tools: a neutral vocabulary every tool's ``calls`` hook maps from and to.

Each tool renames *and* reshapes its calls (docs/specs/pitfalls.md #23), so a converted call goes
source call -> neutral call (the source tool's ``to_neutral``) -> target call (the target tool's
``from_neutral``): one pair of functions per tool, not one per pair of tools. The neutral kinds are
what at least two tools share (:class:`Shell`, :class:`Patch`, :class:`Edit`, :class:`Write`,
:class:`Read`, :class:`Todos`); anything else is :class:`Other`. Every neutral call keeps the
source's ``name`` and ``arguments``: a target that has no form for a kind keeps the call as it was
(:meth:`Vocabulary.keep`), and loss notes name the source tool (``exec_command -> Bash``).
Paths stay as the source wrote them (a patch's relative, an Edit's absolute); the target resolves
them against the session's cwd. Each mapping returns the loss notes it incurred (docs/convert.md).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson

from histmig.core.model import ToolCall
from histmig.toolkit.convert.patch import FileOp, Hunk
from histmig.core.valueclass import FACTORY, value

_ID_OK = re.compile(r"[^A-Za-z0-9_-]")
Note = tuple[str, str]            # (category, kind) of a loss report


@value
class Mapped:
    """One call in the target's schema. ``arguments`` is a dict, or a str for a free-form tool."""

    name: str
    arguments: Any
    notes: list[Note] = field(default_factory=list)   # (category, kind) loss notes

    def __init__(self, name: str, arguments: Any, notes: list[Note] = FACTORY) -> None:
        self.name = name
        self.arguments = arguments
        self.notes = [] if notes is FACTORY else notes


# ---- the neutral vocabulary ------------------------------------------------------------------------

@dataclass(kw_only=True)
class Call:
    """A call as the source recorded it: ``name`` (with any namespace folded in) and raw ``arguments``."""

    name: str
    arguments: Any


@dataclass(kw_only=True)
class Shell(Call):
    """Run a shell command. ``timeout_ms`` is as the source gave it (a target checks its own range);
    ``options`` are the source's other arguments no neutral field holds (background, escalation ...)."""

    command: str
    workdir: str | None = None
    timeout_ms: Any = None
    description: str | None = None
    options: dict = field(default_factory=dict)


@dataclass(kw_only=True)
class Patch(Call):
    """A multi-file patch (Codex's apply_patch grammar): its text, and its file operations when it parses."""

    body: str | None
    ops: list[FileOp] | None = None


@value
class Change:
    old: str
    new: str
    replace_all: bool = False

    def __init__(self, old: str, new: str, replace_all: bool = False) -> None:
        self.old = old
        self.new = new
        self.replace_all = replace_all


@dataclass(kw_only=True)
class Edit(Call):
    """String replacements in one file, in order. ``lines``: whole-line hunks of the same edit when the
    source recorded its own diff (Claude's ``structuredPatch``); then ``changes`` may be empty."""

    path: str
    changes: list[Change]
    lines: list[Hunk] | None = None


@dataclass(kw_only=True)
class Write(Call):
    """Create or overwrite a file with ``content``."""

    path: str
    content: str


@dataclass(kw_only=True)
class Read(Call):
    path: str
    offset: int | None = None
    limit: int | None = None


@value
class Todo:
    content: str
    status: Any                       # as the source had it; a target maps what it does not know
    active_form: str | None = None

    def __init__(self, content: str, status: Any, active_form: str | None = None) -> None:
        self.content = content
        self.status = status
        self.active_form = active_form


@dataclass(kw_only=True)
class Todos(Call):
    """The agent's plan / todo list, whole."""

    items: list[Todo]


@dataclass(kw_only=True)
class Other(Call):
    """No neutral form: the target keeps it under its own name. ``notes``, when set, replace the
    target's usual "kept" note (the source knows better what was lost)."""

    notes: list[Note] = field(default_factory=list)


@value(frozen=True)
class Vocabulary:
    """A tool's ``calls`` hook (``<pkg>/calls.py`` ``CALLS``).

    ``to_neutral(call, result) -> Call``: ``call`` a :class:`~histmig.core.model.ToolCall` of this tool,
    ``result`` what the source recorded about its outcome (``Conversation.patches``), or None.
    ``from_neutral(call, cwd) -> [Mapped]``: the neutral call in this tool's schema, one or more calls.
    Two tools with the same ``CALLS`` object share a schema: their calls are copied, not mapped."""

    to_neutral: Callable[[ToolCall, Any], Call]
    from_neutral: Callable[[Call, str | None], list[Mapped]]

    def __init__(self, to_neutral: Callable[[ToolCall, Any], Call],
                 from_neutral: Callable[[Call, str | None], list[Mapped]]) -> None:
        object.__setattr__(self, "to_neutral", to_neutral)
        object.__setattr__(self, "from_neutral", from_neutral)


def neutral(call: ToolCall, source: Vocabulary | None, result: Any = None) -> Call:
    """``call`` in the neutral vocabulary; a source tool without a ``calls`` hook gives :class:`Other`."""
    if source is None:
        return Other(name=call.name, arguments=call.arguments)
    return source.to_neutral(call, result)


def translate(call: ToolCall, source: Vocabulary | None, target: Vocabulary, cwd: str | None,
              result: Any = None) -> list[Mapped]:
    """A source tool's call in the target tool's schema, with the loss notes of the way."""
    return target.from_neutral(neutral(call, source, result), cwd)


def map_call(call: ToolCall, source: Vocabulary | None, target: Vocabulary, cwd: str | None,
             result: Any = None) -> list[Mapped]:
    """:func:`translate`, except that a call whose source already speaks the target's schema is copied
    (free-form arguments kept as ``{"input": ...}``)."""
    if source is target:
        return [Mapped(call.name, call.arguments if isinstance(call.arguments, dict) else {"input": call.arguments})]
    return translate(call, source, target, cwd, result)


# ---- shared mechanics ------------------------------------------------------------------------------

def as_dict(arguments: Any) -> dict | None:
    """JSON tool arguments as a dict (Codex stores them as a JSON string)."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, (str, bytes)):
        try:
            value = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None


def safe_tool_id(call_id: str | None, taken: set[str], fallback: str) -> str:
    """Anthropic tool_use ids must match ``[A-Za-z0-9_-]+`` and be unique in a conversation."""
    base = _ID_OK.sub("_", call_id or "") or fallback
    cand, n = base, 2
    while cand in taken:
        cand, n = f"{base}_{n}", n + 1
    taken.add(cand)
    return cand


def safe_tool_name(name: str) -> str:
    return (_ID_OK.sub("_", name) or "tool")[:64]
