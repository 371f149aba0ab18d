"""The one shape of every ``--json`` output (docs/json.md): an envelope naming its schema, times as
ISO 8601 UTC, tools by canonical name, and plans as summaries (the full plan only with ``--plan-out``).

The schemas themselves ship in ``histmig/schemas/<command>.json`` (tests/test_json_schemas.py checks
every command's output against its file). A field added here is added there and in docs/json.md.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from histmig.core.times import iso_z, parse_ts

SCHEMA_VERSION = 1


def envelope(name: str, body: dict[str, Any]) -> dict[str, Any]:
    """``{"schema": "histmig.<name>/1", ...body}``; ``name`` is the command (``flip.list`` for a mode
    whose document has another shape)."""
    return {"schema": f"histmig.{name}/{SCHEMA_VERSION}", **body}


def iso_utc(seconds: float | int | None) -> str | None:
    """Unix seconds as ``2026-11-30T05:09:33.123Z`` (None stays None)."""
    if seconds is None:
        return None
    dt = datetime.fromtimestamp(seconds, timezone.utc)
    if dt.year >= 1000:     # iso_z's own text, without its conversion to UTC (scan --json: every row)
        return dt.isoformat(timespec="milliseconds")[:-6] + "Z"
    return iso_z(dt)


def iso_ns(ns: int | None) -> str | None:
    return iso_utc(ns / 1e9) if ns else None


def iso_text(text: str | None) -> str | None:
    """A time a tool recorded as text (``+00:00``, ``Z``, other offsets) in the same UTC form; one
    without an offset is taken as UTC (the tools write UTC); one that does not parse is None."""
    if _already_iso_z(text):
        return text
    t = parse_ts(text)
    return iso_z(t) if t is not None else None


# the one form, a year from 1000 (``iso_z`` writes an earlier one its own way), ASCII digits only
_ISO_Z = re.compile(r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")


def _already_iso_z(text: str | None) -> bool:
    """``text`` is a valid time already in the one form, ``2026-11-29T10:00:00.123Z`` (what most tools
    write): printed as it is, not parsed into a datetime and formatted back (``scan --json``: every row)."""
    if type(text) is not str or _ISO_Z.fullmatch(text) is None:
        return False
    try:
        datetime.fromisoformat(text[:23])     # a real date and time (no month 13, no second 60)
    except ValueError:
        return False
    return True


# ---- shared pieces ---------------------------------------------------------------------------

def session_ref(ref, **more: Any) -> dict[str, Any]:
    """A scanned session (``SessionRef.to_dict``) with its times in the one format, then ``more`` fields
    (scan's ``short_id``: added here, not by copying the dict)."""
    d = ref.to_dict()
    d["updated"], d["created"] = iso_utc(ref.updated), iso_text(ref.created)
    if more:
        d.update(more)
    return d


def plan_summary(plan, *, operations: int | None = None, plan_out: str | None = None) -> dict[str, Any]:
    """What a plan will do, without its operations (a move plan with its patches is megabytes:
    ``--plan-out FILE`` writes the whole plan, named here as ``plan_out``)."""
    return {"op": plan.op, "args": plan.args, "roots": plan.roots, "summary": plan.summary,
            "operations": len(plan.operations) if operations is None else operations,
            "warnings": [w.to_dict() for w in plan.warnings], "skips": [s.to_dict() for s in plan.skips],
            "plan_out": plan_out}


def apply_result(res, plan=None) -> dict[str, Any]:
    """An ``ApplyResult``; ``None`` with the plan for an empty plan (nothing applied)."""
    if res is None:
        from histmig.core.diagnostics import EXIT_OK, EXIT_SKIPPED
        return {"applied": False, "txid": None, "done": [], "skips": [s.to_dict() for s in plan.skips],
                "warnings": [w.to_dict() for w in plan.warnings], "salvaged": {},
                "exit_code": EXIT_SKIPPED if plan.skips else EXIT_OK}
    return {"applied": bool(res.txid), **res.to_dict()}


def batches_result(transactions: list[dict[str, Any]], exit_code: int) -> dict[str, Any]:
    """convert --apply: one apply result per batch (docs/convert.md: batches of bounded size)."""
    txs = [{"applied": bool(t.get("txid")), **t} for t in transactions]
    return {"applied": any(t["applied"] for t in txs), "transactions": txs, "exit_code": exit_code}


def transaction(t, backup_bytes: int, gc: dict | None) -> dict[str, Any]:
    """One ``histmig log`` entry: ``started_ns`` becomes ``started``; ``gc`` says when the backups went."""
    d = t.to_dict()
    d["started"] = iso_ns(d.pop("started_ns"))
    gc_info = None if gc is None else {"at": iso_ns(gc.get("t")), "state": gc.get("state"),
                                       "backup_bytes": gc.get("backup_bytes"), "backup_files": gc.get("backup_files")}
    return {**d, "backup_bytes": backup_bytes, "gc": gc_info}


def gc_result(res) -> dict[str, Any]:
    d = res.to_dict()
    for e in d["transactions"]:
        e["last_write"] = iso_ns(e.pop("last_write_ns"))
    return envelope("gc", d)


def change(name: str, plan, *, dry_run: bool, result: dict[str, Any] | None = None,
           plan_out: str | None = None, **extra: Any) -> dict[str, Any]:
    """The document of every command that changes files (flip, move, convert, doctor --repair, apply,
    undo): ``dry_run``, the plan's summary, and the result of the apply (None in a dry run)."""
    return envelope(name, {"dry_run": dry_run, "plan": plan_summary(plan, plan_out=plan_out), **extra,
                           "result": result})


def command_name() -> str:
    """The running command's name (``flip``, ``apply``, ...): the schema of what it prints."""
    import click
    return click.get_current_context().info_name or "histmig"
