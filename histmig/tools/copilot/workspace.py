"""Copilot CLI's ``workspace.yaml``: one ``key: value`` line per field, written by the client's YAML
library (docs/copilot.md). Read and rewritten line by line, so a field histmig changes is the only line
whose bytes change; a value in quotes is read as YAML reads it."""
from __future__ import annotations

import json
import re
from pathlib import Path

from histmig.core.diagnostics import HistmigInputError
from histmig.jsonio.regular import read_regular

KEY_RE = re.compile(rb"^([A-Za-z_][A-Za-z0-9_]*):(?: (.*))?$")
PLAIN_RE = re.compile(r"^[A-Za-z0-9/_.@+=,~-][A-Za-z0-9/_.@+=,~ :-]*$")


def _scalar(text: str) -> str | None:
    text = text.strip()
    if text in ("", "null", "~"):
        return None
    if text.startswith('"') and text.endswith('"') and len(text) >= 2:
        try:
            return json.loads(text)
        except ValueError:
            return text[1:-1]
    if text.startswith("'") and text.endswith("'") and len(text) >= 2:
        return text[1:-1].replace("''", "'")
    return text


def parse(data: bytes) -> dict[str, str | None]:
    """Top-level scalar fields (a nested or folded value is left out: histmig reads none of them)."""
    out: dict[str, str | None] = {}
    for raw in data.splitlines():
        m = KEY_RE.match(raw)
        if m:
            out[m.group(1).decode()] = _scalar((m.group(2) or b"").decode("utf-8", "replace"))
    return out


def read(path: Path) -> dict[str, str | None]:
    try:
        return parse(read_regular(path, 1 << 20))      # a FIFO would block; a YAML file of GBs is no workspace
    except (OSError, HistmigInputError):
        return {}


def quote(value: str) -> str:
    """A scalar as the client's YAML writer would put it: plain when safe, else double-quoted."""
    if PLAIN_RE.match(value) and ": " not in value and not value.endswith(":") and value not in (
            "true", "false", "null", "~") and not re.match(r"^[-+]?[0-9.]", value):
        return value
    return json.dumps(value, ensure_ascii=False)


def replace_field(data: bytes, key: str, value: str) -> bytes | None:
    """``data`` with the one line of ``key`` set to ``value``; None when that line is absent."""
    lines = data.splitlines(keepends=True)
    for i, raw in enumerate(lines):
        m = KEY_RE.match(raw.rstrip(b"\r\n"))
        if m and m.group(1).decode() == key:
            end = raw[len(raw.rstrip(b"\r\n")):]
            lines[i] = f"{key}: {quote(value)}".encode() + end
            return b"".join(lines)
    return None


def dump(fields: dict[str, object]) -> bytes:
    out = []
    for key, value in fields.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = str(value)
        else:
            text = quote(str(value))
        out.append(f"{key}: {text}\n")
    return "".join(out).encode()
