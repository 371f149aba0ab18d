"""manifest-layout checks: the health checks its spec names (docs/specs/manifest-layout.md §3-5),
evaluated read-only."""
from __future__ import annotations

from pathlib import Path

from histmig.core.diagnostics import HistmigError
from histmig.tools.manifest import adapter as manifest
from histmig.core.homes import Homes
from histmig.jsonio.jsonl import read_lines
from histmig.toolkit.doctor.base import Finding, writable_dir


def check(homes: Homes, index=None, now=None, ignored=lambda code: False) -> list[Finding]:
    """The table's doctor hook (histmig/tools/__init__.py)."""
    out: list[Finding] = []
    for d in manifest.session_dirs(homes):
        out += _manifest_meta(d) + _manifest_transcript(d)
        if (d / ".lock").exists():
            out.append(Finding("manifest.locked", "a .lock file marks the session busy", path=str(d / ".lock"),
                               fix=f"if no writer is running: rm {d / '.lock'}"))
        if not writable_dir(d):
            out.append(Finding("manifest.read-only", "the session folder is not writable", path=str(d),
                               fix=f"chmod u+w {d}"))
    return out


def _manifest_meta(d: Path) -> list[Finding]:
    _raw, _meta, err = manifest.read_json_file(d / "meta.json")
    if err is None:
        return []
    why = {"missing": "is missing", "not a JSON object": "is not a JSON object"}.get(err, f"does not parse ({err})")
    return [Finding("manifest.meta-unreadable", f"meta.json {why}; `-c` skips this session", path=str(d / "meta.json"),
                    fix="restore meta.json from a backup")]


def _manifest_transcript(d: Path) -> list[Finding]:
    path = d / "transcript.jsonl"
    if not path.exists():
        return []
    messages, last_bad = 0, None
    try:
        for line in read_lines(path):
            if line.blank:
                continue
            last_bad = None if line.error is None else line.number
            messages += last_bad is None
    except (HistmigError, OSError) as e:
        return [Finding("manifest.tail-invalid", f"cannot read: {e}", path=str(path))]
    out = []
    if last_bad is not None:
        out.append(Finding("manifest.tail-invalid", "the last line is not valid JSON", path=str(path), line=last_bad,
                           fix="nothing to do if no writer is active; histmig never truncates"))
    out += _manifest_checkpoint(d, messages)
    return out


def _manifest_checkpoint(d: Path, messages: int) -> list[Finding]:
    """Only the latest checkpoint matters: it is the one the loader resumes from (or discards)."""
    cps = manifest.read_checkpoints(d / "checkpoints")
    if not cps:
        return []
    path = d / "checkpoints" / cps[-1]["name"]
    index = (cps[-1]["data"] or {}).get("atMessageIndex")
    if isinstance(index, int) and index <= messages:
        return []
    what = f"atMessageIndex {index} > {messages} message(s)" if isinstance(index, int) else "has no valid atMessageIndex"
    return [Finding("manifest.checkpoint-beyond-end", f"the latest checkpoint {what}; the loader discards it",
                    path=str(path), fix="delete the checkpoint by hand if you want it gone")]
