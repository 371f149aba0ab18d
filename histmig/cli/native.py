"""A lossless JSON dump of the model (``histmig show --format native``), used by golden tests.

Every field of every Record is kept, including the exact source bytes: as text when they are valid
UTF-8 (``raw``), else base64 (``raw_b64``).
"""
from __future__ import annotations

import base64
import dataclasses
from pathlib import Path
from typing import Any

from histmig.cli.jsonout import iso_text, iso_utc
from histmig.core.model import Record, Session


def _value(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _value(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, dict):
        return {str(k): _value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, bytes):
        return _bytes(v)
    if hasattr(v, "to_dict"):
        return v.to_dict()
    return v


def _bytes(b: bytes) -> dict[str, str]:
    try:
        return {"raw": b.decode("utf-8")}
    except UnicodeDecodeError:
        return {"raw_b64": base64.b64encode(b).decode()}


def record_to_native(rec: Record) -> dict[str, Any]:
    d = {f.name: _value(getattr(rec, f.name)) for f in dataclasses.fields(rec) if f.name != "raw"}
    d["raw"] = _bytes(rec.raw) if rec.raw is not None else None
    d["timestamp"] = iso_text(rec.timestamp)     # the recorded text stays in raw (docs/json.md: one time format)
    return d


def session_to_native(session: Session) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for f in dataclasses.fields(session):
        v = getattr(session, f.name)
        if f.name == "records":
            d["records"] = [record_to_native(r) for r in v]
        elif f.name == "subagents":
            d["subagents"] = [session_to_native(s) for s in v]
        else:
            d[f.name] = _value(v)
    return _times(d)


def _times(d: dict[str, Any]) -> dict[str, Any]:
    d["created"], d["updated"] = iso_text(d.get("created")), iso_utc(d.get("updated"))
    return d


def native_view(session: Session) -> dict[str, Any]:
    """:func:`session_to_native` for :func:`histmig.jsonio.jsonstream.write_json`: records (and each
    sub-agent's) are converted one at a time as they are written."""
    from histmig.jsonio.jsonstream import Fields, Lazy
    d: dict[str, Any] = {}
    for f in dataclasses.fields(session):
        v = getattr(session, f.name)
        if f.name == "records":
            d["records"] = Lazy(Fields(record_to_native(r)) for r in v)
        elif f.name == "subagents":
            d["subagents"] = [native_view(s) for s in v]
        else:
            d[f.name] = _value(v)
    return _times(d)
