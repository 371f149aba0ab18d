"""Line 1 of every rollout: which sessions a flip from OLD touches, which providers are present.

This is all a dry run reads (docs/specs/codex.md §15.1): the provider of a session is in its first line, so
deciding what a flip affects never opens more than the head of each file.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from histmig.core.diagnostics import HistmigError, Skip, Warning
from histmig.tools.codex import adapter as codex
from histmig.tools.codex.lines import head_meta, head_obj
from histmig.tools.codex import config as codex_config
from histmig.tools.codex import state as codex_state
from histmig.tools.codex import walk
from histmig.core.valueclass import FACTORY, value

if TYPE_CHECKING:
    from histmig.core.plan import Fingerprint, Patch


@value
class Target:
    where: str | Path                     # the rollout (the census passes a str: see ``path``)
    thread_id: str
    archived: bool
    compressed: bool
    assumed: bool                         # no provider recorded: counted as Codex's default
    rollout_id: str
    patches: list[Patch] = field(default_factory=list)
    fingerprint: Fingerprint | None = None
    stripped: int = 0

    def __init__(self, where: str | Path, thread_id: str, archived: bool, compressed: bool, assumed: bool,
                 rollout_id: str, patches: list[Patch] = FACTORY, fingerprint: Fingerprint | None = None,
                 stripped: int = 0) -> None:
        self.where = where
        self.thread_id = thread_id
        self.archived = archived
        self.compressed = compressed
        self.assumed = assumed
        self.rollout_id = rollout_id
        self.patches = [] if patches is FACTORY else patches
        self.fingerprint = fingerprint
        self.stripped = stripped

    @property
    def path(self) -> Path:
        """As a Path, made on use: a dry run over thousands of targets never needs one."""
        return self.where if isinstance(self.where, Path) else Path(self.where)

    def sample(self) -> dict[str, Any]:
        return {"id": self.thread_id, "path": os.fspath(self.where), "archived": self.archived,
                "compressed": self.compressed, "assumed_provider": self.assumed,
                "edits": len(self.patches) or None, "delta": sum(p.delta for p in self.patches)}


@value
class Census:
    targets: list[Target] = field(default_factory=list)
    others: Counter = field(default_factory=Counter)
    skips: list[Skip] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    children: dict[str, list[tuple[Path, int]]] = field(default_factory=dict)   # rollout id -> (child, end offset)

    def __init__(self, targets: list[Target] = FACTORY, others: Counter = FACTORY, skips: list[Skip] = FACTORY,
                 warnings: list[Warning] = FACTORY, children: dict[str, list[tuple[Path, int]]] = FACTORY) -> None:
        self.targets = [] if targets is FACTORY else targets
        self.others = Counter() if others is FACTORY else others
        self.skips = [] if skips is FACTORY else skips
        self.warnings = [] if warnings is FACTORY else warnings
        self.children = {} if children is FACTORY else children


def census(homes, old: str, default: str, *, archived: bool = True) -> Census:
    """Line 1 of every rollout: which sessions are OLD's, who else is there, what is broken.
    Str paths throughout (``walk.rollouts``): this loop runs once per session."""
    c = Census()
    for path, is_archived, shadowed in walk.rollouts(homes.codex, archived=archived):
        try:
            first, meta, err = head_obj(path)
        except (HistmigError, OSError) as e:
            first, meta, err = None, None, str(e)
        if meta is None:
            c.skips.append(Skip(path, err or "unreadable", code="unreadable"))
            continue
        if "history_base" in meta:
            _note_fork(c, meta, path)
        recorded = meta.get("model_provider")
        assumed = not isinstance(recorded, str) or not recorded
        provider = default if assumed else recorded
        if provider != old:
            c.others[provider] += 1
            continue
        if "payload" not in first:
            c.skips.append(Skip(path, "pre-envelope rollout (Codex cannot read it); left alone", code="pre-envelope"))
            continue
        if shadowed is not None:
            c.warnings.append(Warning("zst-shadowed", f"{os.path.basename(shadowed)} is shadowed by the plain file "
                                      "(Codex reads the plain one); left unchanged", path=shadowed))
        name = os.path.basename(path)
        names = codex.parse_name(name)
        thread_id = meta.get("id") if isinstance(meta.get("id"), str) else (names[1] if names else Path(name).stem)
        c.targets.append(Target(path, thread_id, is_archived, path.endswith(".zst"), assumed,
                                rollout_id=(names[2] if names and names[2] else thread_id)))
    return c


def _note_fork(c: Census, meta: dict, path: str) -> None:
    base = meta.get("history_base")
    if isinstance(base, dict) and isinstance(base.get("thread_id"), str) and isinstance(base.get("end_byte_offset"), int):
        c.children.setdefault(base["thread_id"], []).append((Path(path), base["end_byte_offset"]))


def count_provider_updates(targets: list[Target], providers: dict[Path, dict[str, Any]], new: str) -> int:
    """How many ``UPDATE threads SET model_provider`` ops ``codex_state.provider_update_ops`` would
    plan for ``targets`` (one per DB whose row exists, has the column and is not NEW yet), from
    ``codex_state.thread_providers`` maps: counting them costs no operation objects."""
    n = 0
    for by_id in providers.values():
        for t in targets:
            value = by_id.get(t.thread_id, codex_state.NO_COLUMN)
            n += value is not codex_state.NO_COLUMN and value != new
    return n


def provider_census(homes, *, archived: bool = True) -> dict[str, Any]:
    """``flip --list``: providers in history (line 1 of each rollout) and in each state DB."""
    cfg = codex_config.load_config(homes)
    default = codex_config.model_provider(cfg)
    files: Counter = Counter()
    assumed = 0
    for path, _a, _s in walk.rollouts(homes.codex, archived=archived):
        try:
            meta, _ = head_meta(path)
        except (HistmigError, OSError):
            meta = None
        if meta is None:
            files["(unreadable)"] += 1
            continue
        recorded = meta.get("model_provider")
        if isinstance(recorded, str) and recorded:
            files[recorded] += 1
        else:
            files[default] += 1
            assumed += 1
    dbs = {str(db): codex_state.provider_counts(db) for db in codex_state.state_dbs(homes, cfg)}
    return {"configured": default, "files": dict(files.most_common()), "assumed": assumed, "state_dbs": dbs,
            "known": sorted(set(codex_config.BUILTIN_PROVIDERS) | set(codex_config.defined_providers(cfg)))}
