"""Cline CLI checks (docs/cline.md, docs/doctor.md): sessions whose recorded folder is gone, tool results
without the ``name`` Cline needs to resume, a manifest whose ``messages_path`` names another file, files
that do not parse. Read-only; each manifest is read whole (small), each messages file once."""
from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

import orjson

from histmig.core.diagnostics import HistmigInputError
from histmig.jsonio.jsonl import DEFAULT_MAX_LINE_BYTES
from histmig.jsonio.jsonpull import PullError, pieces
from histmig.jsonio.regular import read_regular
from histmig.toolkit.doctor.base import Finding, dir_missing
from histmig.toolkit.doctor.locate import HomeIndex, move_fix
from histmig.tools.cline.adapter import MAX_DOC, SID_RE, sessions_root


def _load(path: Path) -> tuple[Any, str | None]:
    try:
        return json.loads(read_regular(path, MAX_DOC)), None        # a FIFO would block
    except OSError as e:
        return None, e.strerror or str(e)
    except HistmigInputError as e:
        return None, str(e)
    except (ValueError, RecursionError) as e:          # RecursionError: "[" * 100000
        return None, str(e)


def check(homes: Any, index: HomeIndex, now: datetime, ignored=lambda code: False) -> list[Finding]:
    """The table's doctor hook (histmig/tools/__init__.py)."""
    out: list[Finding] = []
    missing: dict[str, list[Path]] = defaultdict(list)
    root = sessions_root(homes)
    try:
        folders = sorted(p for p in root.iterdir() if SID_RE.match(p.name) and p.is_dir() and not p.is_symlink())
    except OSError:
        return out
    for folder in folders:
        manifest, messages = folder / f"{folder.name}.json", folder / f"{folder.name}.messages.json"
        if manifest.is_file():
            obj, err = _load(manifest)
            if err:
                out.append(Finding("cline.unreadable", f"manifest: {err}", path=str(manifest)))
            elif isinstance(obj, dict):
                cwd, mp = obj.get("cwd"), obj.get("messages_path")
                if isinstance(cwd, str) and dir_missing(cwd):
                    missing[cwd].append(folder)
                if isinstance(mp, str) and mp != str(messages):
                    out.append(Finding("cline.messages-path", f"messages_path names {mp}", path=str(manifest),
                                       fix=f"set messages_path to {messages}", data={"messages_path": mp}))
        if messages.is_file() and not ignored("cline.tool-result-name"):
            out += _messages(messages)
    for cwd, found in sorted(missing.items()):
        new = index.suggest(cwd)
        out.append(Finding("cline.cwd-missing", f"{len(found)} session(s) were recorded in {cwd}, which no longer "
                           "exists" + (f"; likely moved to {new}" if new else ""), path=str(found[0]),
                           count=len(found), fix=move_fix(cwd, new), data={"cwd": cwd, "suggested": new}))
    return out


def _unnamed(msgs: Iterable[Any]) -> list[int]:
    return [n for n, m in enumerate(msgs, 1) if isinstance(m, dict)
            for b in (m.get("content") if isinstance(m.get("content"), list) else [])
            if isinstance(b, dict) and b.get("type") == "tool_result" and not b.get("name")]


def _messages(path: Path) -> list[Finding]:
    try:        # one message at a time (histmig/jsonio/jsonpull.py); a file it refuses is read whole for the error
        with open(path, "rb") as fh:
            # a message over the readers' line limit (64 MiB) is not read (not loaded, not checked)
            unnamed = _unnamed(None if p.oversize else orjson.loads(p.raw)
                               for p in pieces(fh, "messages", limit=DEFAULT_MAX_LINE_BYTES) if p.item)
    except (OSError, PullError, orjson.JSONDecodeError):
        doc, err = _load(path)
        if err:
            return [Finding("cline.unreadable", err, path=str(path))]
        msgs = doc.get("messages") if isinstance(doc, dict) else None
        unnamed = _unnamed(msgs if isinstance(msgs, list) else [])
    if not unnamed:
        return []
    return [Finding("cline.tool-result-name", f"{len(unnamed)} tool result(s) without a name (first: message "
                    f"{unnamed[0]})", path=str(path), count=len(unnamed),
                    fix="re-convert the session with histmig, or add each tool_result's name")]
