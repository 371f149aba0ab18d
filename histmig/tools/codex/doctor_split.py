"""Codex check: a rollout that records two providers, and the lasting repair of it.

Codex lists a thread by its first ``session_meta``'s provider, but when it rebuilds a ``threads`` row
from the file (startup backfill, a deleted or reset ``state_5.sqlite``) the *last* same-id
``session_meta`` / ``thread_settings_applied`` value wins (docs/specs/codex.md §14, §15.1). A line-1-only flip
(the seed's naive script) leaves ``thread_settings_applied.model_provider_id`` on the old provider: a
row repaired from line 1 is right today and wrong after the next rebuild.

The repair is flip's own byte-level edit (``tools/codex/provider.py``'s ``scan_patches``): the stale values are flipped to
line 1's provider. When the edit changes the file's length, the ``thread_history_1.sqlite`` offsets
are planned by ``doctor_codex_db.check_offsets`` against the edited file (``Split.edits``), so the
offset rows and the file change together.
"""
from __future__ import annotations

import shlex
from dataclasses import field

from histmig.core.diagnostics import HistmigError
from histmig.jsonio.lineedit import EditError
from histmig.toolkit.doctor.base import Finding, session_tag
from histmig.tools.codex.doctor_data import CodexHome, Rollout
from histmig.tools.codex.census import Target
from histmig.tools.codex.provider import scan_patches
from histmig.core.plan import WriteFile
from histmig.tools.codex.state import shift
from histmig.core.valueclass import FACTORY, value

REPAIR = "histmig doctor --repair --apply"


@value
class Split:
    """The findings, and per repaired thread the file edits ``[(offset, delta)]`` and its finding
    (which also receives the offset rows that only the edit moves)."""
    findings: list[Finding] = field(default_factory=list)
    edits: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    by_thread: dict[str, Finding] = field(default_factory=dict)

    def __init__(self, findings: list[Finding] = FACTORY, edits: dict[str, list[tuple[int, int]]] = FACTORY,
                 by_thread: dict[str, Finding] = FACTORY) -> None:
        self.findings = [] if findings is FACTORY else findings
        self.edits = {} if edits is FACTORY else edits
        self.by_thread = {} if by_thread is FACTORY else by_thread


def check_split(home: CodexHome) -> Split:
    out = Split()
    children = _fork_children(home)
    for r in home.rollouts:
        want = r.facts.provider
        if r.error is not None or not isinstance(want, str) or not want:
            continue
        stale = sorted(r.facts.providers - {want})
        if stale:
            _one(home, r, want, stale, children.get(r.facts.id, []), out)
    return out


def _one(home: CodexHome, r: Rollout, want: str, stale: list[str], children: list[tuple[str, int]],
         out: Split) -> None:
    tid = r.facts.id
    detail = (f"thread {tid}: first session_meta says {want!r}, later lines say {', '.join(map(repr, stale))}; "
              f"a rebuilt database would store {r.facts.row_provider!r}")
    if want != home.configured and set(stale) == {home.configured}:
        # line 1 is the stale side (the later lines already use the configured provider)
        fix = f"histmig flip {shlex.quote(want)} {shlex.quote(home.configured)} --apply"
        out.findings.append(Finding("codex.rollout-provider-split", detail, path=str(r.path), fix=fix))
        return
    t = Target(r.path, tid, r.archived, r.path.name.endswith(".zst"), False, rollout_id=tid)
    try:
        for old in stale:          # one pass per stale value; the patches do not overlap
            scan_patches(t, old, want)
    except (HistmigError, EditError, OSError) as e:
        out.findings.append(Finding("codex.rollout-provider-split", f"{detail}; cannot plan the edit ({e})",
                                    path=str(r.path), fix=f"inspect the file: histmig show {shlex.quote(str(r.path))}"))
        return
    edits = [(p.offset, p.delta) for p in t.patches if p.delta]
    moved = [child for child, end in children if shift(end, edits) != end]
    if moved:
        out.findings.append(Finding("codex.rollout-provider-split", f"{detail}; forks point into it by byte offset "
                                    f"({', '.join(moved)}), so the edit is not made", path=str(r.path),
                                    fix="re-open the thread in Codex under the configured provider"))
        return
    op = WriteFile(path=str(r.path), expect=t.fingerprint, patches=tuple(t.patches),
                   compression="zstd" if t.compressed else None, in_place_ok=not edits and not t.compressed,
                   session=session_tag("codex", tid), reason=f"provider values -> {want} (as in session_meta)")
    finding = Finding("codex.rollout-provider-split", detail, path=str(r.path), count=len(t.patches), fix=REPAIR,
                      repair=[op], data={"id": tid, "provider": want, "stale": stale})
    out.findings.append(finding)
    out.by_thread[tid] = finding
    if edits:
        out.edits[tid] = edits


def _fork_children(home: CodexHome) -> dict[str, list[tuple[str, int]]]:
    """parent thread id -> [(child rollout, end_byte_offset into the parent)]."""
    out: dict[str, list[tuple[str, int]]] = {}
    for r in home.rollouts:
        base = r.facts.history_base if isinstance(r.facts.history_base, dict) else {}
        parent, end = base.get("thread_id"), base.get("end_byte_offset")
        if isinstance(parent, str) and isinstance(end, int):
            out.setdefault(parent, []).append((str(r.path), end))
    return out
