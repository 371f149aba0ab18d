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


_PLAIN = (str, int, float, bool, type(None))
_NAMES: dict[type, tuple[str, ...]] = {}      # a dataclass's field names, once per class


def _value(v: Any) -> Any:
    t = type(v)
    if t in _PLAIN:               # the common leaves and containers first: this runs for every value
        return v
    if t is dict:
        return {str(k): _value(x) for k, x in v.items()}
    if t is list or t is tuple:
        return [_value(x) for x in v]
    names = _field_names(t)
    if names is not None:
        return {name: _value(getattr(v, name)) for name in names}
    return _other(v)


def _field_names(t: type) -> tuple[str, ...] | None:
    """A dataclass's field names (None for any other type), looked up once per class."""
    names = _NAMES.get(t)
    if names is None and dataclasses.is_dataclass(t):
        names = _NAMES[t] = tuple(f.name for f in dataclasses.fields(t))
    return names


def _other(v: Any) -> Any:
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
    d = {name: _value(getattr(rec, name)) for name in _field_names(type(rec)) if name != "raw"}
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
    from histmig.jsonio.jsonstream import Lazy
    d: dict[str, Any] = {}
    for f in dataclasses.fields(session):
        v = getattr(session, f.name)
        if f.name == "records":
            d["records"] = Lazy(_streamed(record_to_native(r)) for r in v)
        elif f.name == "subagents":
            d["subagents"] = [native_view(s) for s in v]
        else:
            d[f.name] = _value(v)
    return _times(d)


# a record read from fewer source bytes than this is written with its neighbours in one orjson call
# (jsonstream's batches of 64: a Python step per field of every record cost more than the records'
# encoding); any other a field at a time, so a large raw text is never copied whole twice. A record
# without source bytes (one a reader rebuilt, as Gemini's resolved messages) goes field by field too:
# its parts were not read from a few bytes, so nothing bounds them here
SMALL_RAW = 64 << 10


def _streamed(rec: dict[str, Any]) -> Any:
    from histmig.jsonio.jsonstream import Fields, Plain, spread
    raw = rec.get("raw") or {}
    size = len(raw.get("raw") or raw.get("raw_b64") or "")
    if 0 < size < SMALL_RAW:
        return Plain(rec)
    out = spread(rec, SMALL_RAW)      # (each long text written alone: the raw and the parts holding it)
    return out if isinstance(out, Fields) else Fields(rec)
