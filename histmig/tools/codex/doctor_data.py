"""What the Codex checks look at: every rollout ``walk.rollouts`` lists with the values Codex's databases
derive from it and its offset rows checked while it was read (``doctor_scan``), config.toml, and the
state databases (``state``)."""
from __future__ import annotations

import os
import stat
from dataclasses import field
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigError, HistmigInputError
from histmig.core.forkmap import fork_stream
from histmig.tools.codex.adapter import ThreadFacts
from histmig.tools.codex.doctor_history import Histories
from histmig.tools.codex.doctor_scan import Resolved, scan_rollout
from histmig.core.homes import Homes
from histmig.tools.codex import config as codex_config
from histmig.tools.codex import doctor_index
from histmig.tools.codex import state as codex_state
from histmig.tools.codex import walk
from histmig.core.valueclass import FACTORY, value


@value
class Rollout:
    path: Path
    archived: bool = False
    facts: ThreadFacts = field(default_factory=ThreadFacts)
    # history db -> (table, key) -> its offset row, resolved while the file was read; only rows that
    # are off, or every row when a repair may edit the file (two providers recorded)
    offsets: dict[str, dict[tuple[str, tuple], Resolved]] = field(default_factory=dict)
    error: str | None = None
    needs: str | None = None      # the digest of the offset rows the read was given (doctor_index)

    def __init__(self, path: Path, archived: bool = False, facts: ThreadFacts = FACTORY,
                 offsets: dict[str, dict[tuple[str, tuple], Resolved]] = FACTORY, error: str | None = None,
                 needs: str | None = None) -> None:
        self.path = path
        self.archived = archived
        self.facts = ThreadFacts() if facts is FACTORY else facts
        self.offsets = {} if offsets is FACTORY else offsets
        self.error = error
        self.needs = needs


def read_rollout(path: Path, *, archived: bool = False, needs_of=lambda thread_id: None) -> Rollout:
    r = Rollout(path, archived=archived)
    asked: list = []

    def needs(thread_id: str):
        asked.append(needs_of(thread_id))
        return asked[-1]
    try:
        r.facts, rows = scan_rollout(path, needs, keep_all=_may_be_edited)
        r.needs = doctor_index.digest(asked[0]) if asked else None
    except (HistmigError, OSError) as e:
        r.error = str(e)
        rows = []
    if r.error is None and r.facts.id is None:
        r.error = "no session_meta line"
    if r.error is None:
        keep_all = _may_be_edited(r.facts)
        for res in rows:
            if keep_all or res.off:
                r.offsets.setdefault(res.hist, {})[(res.table, res.key)] = res
    return r


def _may_be_edited(facts: ThreadFacts) -> bool:
    """Whether ``doctor_split`` may plan an edit of this file (its condition, or more)."""
    return isinstance(facts.provider, str) and bool(facts.provider) and bool(facts.providers - {facts.provider})


# ---- config.toml ---------------------------------------------------------------------------------

@value
class CodexConfig:
    provider: str = "openai"
    raw: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    path: Path | None = None

    def __init__(self, provider: str = "openai", raw: dict[str, Any] = FACTORY, error: str | None = None,
                 path: Path | None = None) -> None:
        self.provider = provider
        self.raw = {} if raw is FACTORY else raw
        self.error = error
        self.path = path

    def known(self, provider: str) -> bool:
        return codex_config.is_known_provider(self.raw, provider)


def load_config(homes: Homes) -> CodexConfig:
    path = codex_config.config_path(homes)
    try:
        raw = codex_config.load_config(homes)
    except HistmigInputError as e:
        return CodexConfig(error=str(e), path=path)
    return CodexConfig(provider=codex_config.model_provider(raw), raw=raw, path=path)


# ---- the whole home ---------------------------------------------------------------------------

@value
class CodexHome:
    homes: Homes
    config: CodexConfig
    rollouts: list[Rollout]
    shadowed: list[Path]
    dbs: list[Path]

    def __init__(self, homes: Homes, config: CodexConfig, rollouts: list[Rollout], shadowed: list[Path],
                 dbs: list[Path]) -> None:
        self.homes = homes
        self.config = config
        self.rollouts = rollouts
        self.shadowed = shadowed
        self.dbs = dbs

    @property
    def configured(self) -> str:
        return self.config.provider

    def by_id(self) -> dict[str, Rollout]:
        out: dict[str, Rollout] = {}
        for r in self.rollouts:   # sessions/ before archived_sessions/: the first one wins
            if r.facts.id and r.error is None:
                out.setdefault(r.facts.id, r)
        return out


def load(homes: Homes, use_index: bool = True) -> CodexHome:
    config = load_config(homes)
    dbs = codex_state.state_dbs(homes, config.raw)
    hists = [h for db in dbs if (h := db.parent / codex_state.HISTORY_DB).is_file()]
    histories = Histories(hists)
    files, shadowed = [], []
    for where, archived, zst in walk.rollouts(homes.codex, newest_first=False):
        if zst is not None:
            shadowed.append(Path(zst))     # Codex reads the plain file; the .zst is ignored
        st = _lstat(where)
        if st is not None and stat.S_ISREG(st.st_mode):   # the checks read regular files only (no symlink)
            files.append((Path(where), archived, st))
    index = doctor_index.DoctorIndex(homes.state if use_index else None, [str(h) for h in hists])
    try:
        rollouts = _read_all(files, histories, index)
    finally:
        histories.close()
    index.save()
    return CodexHome(homes, config, rollouts, shadowed, dbs)


def _read_all(files: list[tuple[Path, bool, os.stat_result]], histories: Histories,
              index: doctor_index.DoctorIndex) -> list[Rollout]:
    """Each rollout as one read gives it: from the index when the file and its rows are unchanged
    (doctor_index), else read, on both CPUs (``fork_stream``: this process and a forked worker each
    take the next file when free, so a busy CPU costs only its share; the result is the sequential
    one). Each file is stat'ed (when listed) before it is read, so a change during the read is seen next time."""
    out: list[Rollout | None] = []
    todo = []
    for i, (path, archived, st) in enumerate(files):
        facts = index.lookup(str(path), st, histories.needs_of)
        out.append(None if facts is None else Rollout(path, archived=archived, facts=facts))
        if facts is None:
            todo.append(i)

    def read(i: int):
        yield read_rollout(files[i][0], archived=files[i][1], needs_of=histories.needs_of)
    # the stream first: zip takes its end (the worker waited for, not killed) before it stops
    for events, i in zip(fork_stream(read, todo, [files[i][2].st_size for i in todo]), todo):
        r = next(iter(events))
        out[i] = r
        keep = r.error is None and not r.offsets
        index.store(str(r.path), files[i][2], r.facts if keep else None, r.needs)
    return out


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None
