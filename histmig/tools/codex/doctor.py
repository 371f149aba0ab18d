"""Codex checks: why sessions are hidden or fail to resume, and the safe database re-syncs.

The rollout file is authoritative for a thread's provider, cwd and path, except when the database row
already matches the configured provider (or an existing folder) and the file does not: then the file
is the stale side and the user is told which `histmig flip` / `histmig move` brings it along.
"""
from __future__ import annotations

import shlex
from collections import Counter, defaultdict

from histmig.core.homes import Homes
from histmig.tools.codex import doctor_data as data
from histmig.tools.codex import doctor_db as doctor_codex_db
from histmig.toolkit.doctor.base import Finding, dir_missing
from histmig.tools.codex.doctor_split import Split, check_split
from histmig.toolkit.doctor.locate import HomeIndex, move_fix


def check(homes: Homes, index: HomeIndex, now=None, ignored=lambda code: False) -> list[Finding]:
    """The table's doctor hook (histmig/tools/__init__.py). When ``codex.rollout-provider-split`` is
    ignored it is not checked at all, so no offset is planned against a file edit that will not be made."""
    split_ignored = ignored("codex.rollout-provider-split")
    if not homes.codex.is_dir():
        return []
    home = data.load(homes)
    split = Split() if split_ignored else check_split(home)   # first: its edits move the offsets checked below
    out = check_config(home) + check_unreadable(home) + check_provider_hidden(home) + split.findings
    for db in home.dbs:
        out += doctor_codex_db.check_db(home, db, split)
    return out + check_cwd_missing(home, index) + check_shadowed(home)


# ---- configuration and files -------------------------------------------------------------------

def check_config(home: data.CodexHome) -> list[Finding]:
    cfg = home.config
    if cfg.error:
        return [Finding("codex.unreadable", f"config.toml does not parse: {cfg.error}", path=str(cfg.path))]
    if cfg.known(cfg.provider):
        return []
    return [Finding("codex.provider-undefined",
                    f"model_provider = {cfg.provider!r} is neither built in nor defined under [model_providers]",
                    path=str(cfg.path), fix=f"add [model_providers.{cfg.provider}] to {cfg.path}")]


def check_unreadable(home: data.CodexHome) -> list[Finding]:
    return [Finding("codex.unreadable", r.error or "", path=str(r.path)) for r in home.rollouts if r.error]


def check_provider_hidden(home: data.CodexHome) -> list[Finding]:
    counts = Counter(r.facts.provider for r in home.rollouts if r.error is None and r.facts.provider is not None
                     and r.facts.provider != home.configured)
    out = []
    for provider, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        cmd = f"histmig flip {shlex.quote(str(provider))} {shlex.quote(home.configured)} --apply"
        out.append(Finding("codex.provider-hidden",
                           f"{n} session(s) recorded under {provider!r} are hidden: config uses {home.configured!r}",
                           path=str(home.homes.codex / "sessions"), count=n, fix=cmd,
                           data={"provider": provider, "configured": home.configured}))
    return out


def check_shadowed(home: data.CodexHome) -> list[Finding]:
    return [Finding("codex.zst-shadowed", "a plain .jsonl with the same name exists; Codex ignores this .zst",
                    path=str(p), fix=f"compare with {p.with_suffix('')} and delete the copy you do not want")
            for p in home.shadowed]


def check_cwd_missing(home: data.CodexHome, index: HomeIndex) -> list[Finding]:
    groups: dict[str, list[data.Rollout]] = defaultdict(list)
    missing = doctor_codex_db.once_per_path(dir_missing)
    for r in home.rollouts:
        if r.error is None and missing(r.facts.cwd):
            groups[r.facts.cwd].append(r)
    out = []
    for cwd, rs in sorted(groups.items()):
        new = index.suggest(cwd, next((r.facts.git_url for r in rs if r.facts.git_url), None))
        where = f"; likely moved to {new}" if new else ""
        out.append(Finding("codex.cwd-missing", f"{len(rs)} session(s) recorded in {cwd}, which no longer exists{where}",
                           path=cwd, count=len(rs), fix=move_fix(cwd, new), data={"suggested": new}))
    return out
