"""``histmig export``: sessions as Markdown, HTML or ATIF files in a folder of their own, with an index
page (docs/export.md).

The sessions come through each tool's adapter in the common model (histmig/core/model.py) and are
rendered by histmig/toolkit/export; nothing here names a tool. Export reads the homes and writes only
below ``--out``, which may not lie inside a tool's home: no history file is ever written. Each page is
written to a temporary file and renamed, one session at a time (records streamed, memory bounded)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from histmig.core.diagnostics import RefusedError, UsageError
from histmig.core.model import SessionRef
from histmig.core.paths import is_under

FORMATS = ("markdown", "html", "atif")
SUFFIX = {"markdown": ".md", "html": ".html", "atif": ".json"}
INDEX = {to: "index" + SUFFIX["markdown" if to == "atif" else to] for to in FORMATS}    # index.md, index.html


@dataclass
class Page:
    tool: str
    id: str
    path: Path            # the file written
    href: str             # its path relative to the index
    title: str
    items: int            # records shown (markdown, html) or steps (atif)
    meta: Any = None


@dataclass
class ExportReport:
    out: Path
    to: str
    index: Path
    pages: list[Page] = field(default_factory=list)
    redacted: dict[str, int] | None = None     # pattern -> how many were masked (with --redact)
    skipped: list[tuple[str, str]] = field(default_factory=list)   # (path, why): listed but unreadable


def choose(homes, session: str | None = None, *, tools: Iterable[str] | None = None, cwd: str | None = None,
           since: str | None = None, until: str | None = None, all_: bool = False) -> list[SessionRef]:
    """The sessions to export: the one named (an id, id prefix or path, as ``show`` resolves it), else
    those the filters keep (scan's filters), else with ``all_`` every session; newest first."""
    from histmig.tools.catalog import discover_all, filter_refs, resolve
    if session:
        if cwd or since or until or all_:
            raise UsageError("export: name one SESSION, or filter (--tool --cwd --since --until), or --all")
        return [resolve(homes, session, list(tools) if tools else None)]
    if not (tools or cwd or since or until or all_):
        raise UsageError("export: name a SESSION, a filter (--tool --cwd --since --until), or --all")
    refs = list(filter_refs(discover_all(homes, list(tools) if tools else None), cwd=cwd,
                            since=_when(since, "--since"), until=_when(until, "--until")))
    refs.sort(key=lambda r: (r.updated or 0), reverse=True)
    return refs


def _when(text: str | None, flag: str) -> float | None:
    from histmig.tools.catalog import parse_since
    return parse_since(text, flag=flag) if text else None


def check_out(homes, out: Path) -> Path:
    """``--out`` as an absolute path, refused when it lies inside a tool's home or is a file."""
    from histmig.tools import TABLE
    target = Path(os.path.abspath(os.path.expanduser(str(out))))
    real = os.path.realpath(target)
    for name, row in TABLE.items():
        home = os.path.realpath(row.home(homes))
        if is_under(real, home):
            raise RefusedError(f"export: --out {target} lies inside the {name} home {home}; "
                               "choose a folder outside every tool's history")
    if target.exists() and not target.is_dir():
        raise UsageError(f"export: --out {target} is a file, not a folder")
    return target


def export(homes, refs: list[SessionRef], to: str, out: Path, *, redact: bool = False, injected: bool = False,
           progress: Callable[[SessionRef], Any] | None = None) -> ExportReport:
    """Write one file per session under ``out/<tool>/`` and the index page; return what was written."""
    from histmig.tools import adapter
    from histmig.toolkit.export import blocks
    from histmig.toolkit.export.redact import Redactor
    if to not in FORMATS:
        raise UsageError(f"export: --to must be one of {', '.join(FORMATS)}, not {to!r}")
    out = check_out(homes, out)
    redactor = Redactor() if redact else None
    report = ExportReport(out=out, to=to, index=out / INDEX[to])
    used: set[str] = set()
    for ref in refs:
        if ref.error and "unreadable" in (ref.state or []):    # (a corrupt opencode.db): the others still go
            report.skipped.append((str(ref.path), ref.error))
            continue
        tool = adapter(ref.format)
        session = getattr(tool, "stream", tool.read)(ref)
        if redactor is not None:
            session = redactor.session(session)
            ref = _masked_ref(ref, redactor)
        meta = blocks.meta_of(session, ref)
        href = _unique(f"{blocks.safe_name(ref.format)}/{blocks.safe_name(ref.id)}", SUFFIX[to], used)
        items = _write(out / href, lambda write, s=session, m=meta: _render(to, s, write, m, injected))
        report.pages.append(Page(ref.format, ref.id, out / href, href, meta.title, items, meta))
        if progress is not None:
            progress(ref)
    _write(report.index, lambda write: _index(to, report, write))
    if redactor is not None:
        report.redacted = redactor.totals()
    return report


def _unique(stem: str, suffix: str, used: set[str]) -> str:
    """``stem + suffix``, numbered when two sessions share a file name (one id in two places of a
    tool, a shadowed pair: docs/export.md)."""
    href, n = stem + suffix, 1
    while href in used:
        n += 1
        href = f"{stem}-{n}{suffix}"
    used.add(href)
    return href


def _masked_ref(ref: SessionRef, redactor) -> SessionRef:
    """The listing's title masked too (it becomes the page title when the session has none)."""
    import dataclasses
    return dataclasses.replace(ref, title=redactor.text(ref.title)) if ref.title else ref


def _render(to: str, session, write, meta, injected: bool) -> int:
    if to == "markdown":
        from histmig.toolkit.export.markdown import write_markdown
        return write_markdown(session, write, meta, injected=injected)
    if to == "html":
        from histmig.toolkit.export.html import write_html
        return write_html(session, write, meta, injected=injected)
    from histmig.toolkit.export.atif import write_atif
    return write_atif(session, write, meta)


def _index(to: str, report: ExportReport, write) -> None:
    note = f"{len(report.pages)} session(s) exported by histmig"
    if to == "html":
        from histmig.toolkit.export.html import write_index
        write_index(((p.href, p.meta, p.items) for p in report.pages), write, title="Exported sessions", note=note)
        return
    from histmig.toolkit.export.markdown import code
    what = "steps" if to == "atif" else "messages"
    write(f"# Exported sessions\n\n{note}" + (" as ATIF v1.8 trajectories" if to == "atif" else "") + ".\n\n")
    write(f"| session | tool | started | updated | {what} | cwd |\n|---|---|---|---|---|---|\n")
    for p in report.pages:
        title = p.title.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")
        cwd = code(p.meta.cwd).replace("|", "\\|") if p.meta.cwd else ""
        write(f"| [{title}]({p.href}) | {p.tool} | {p.meta.created or ''} | {p.meta.updated or ''} | {p.items} | {cwd} |\n")


def _write(path: Path, render: Callable[[Callable[[str], Any]], Any]) -> Any:
    """Render into ``path`` through a temporary file renamed over it when complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            result = render(fh.write)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return result
