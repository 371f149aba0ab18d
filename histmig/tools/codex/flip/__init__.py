"""Codex's flip hook (histmig/tools/__init__.py, hook ``flip``): re-label Codex sessions from one model
provider to another, for ``histmig flip OLD NEW`` (histmig/verbs/flip).

Pure planner: reads the Codex home and returns a Plan; never writes. What a correct flip is was
measured on Codex 0.171.0 (docs/specs/codex.md §0.4, §15.1): the provider value in every same-id
``session_meta`` and every ``thread_settings_applied`` line, edited in place (only the value's bytes;
the Codex tool's ``tools/codex/provider.py`` finds and edits them), **plus** ``threads.model_provider``
in every state DB, **plus** the thread's byte offsets in ``thread_history_1.sqlite`` when a line
changes length.

Speed: deciding whether a session is affected needs only line 1 (``head_meta``). The exact patches
need the whole file; a dry run (``exact=False``) stops at the heads.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from histmig.core import progress
from histmig.core.diagnostics import HistmigError, Skip, Warning
from histmig.core.forkmap import file_size, fork_map
from histmig.core.plan import Plan, SqlShift, WriteFile
from histmig.tools.codex.census import Census, Target, census
from histmig.tools.codex.census import provider_census  # noqa: F401 (the hook's census, ``flip --list``)
from histmig.tools.codex.flip.names import check_new, check_old  # noqa: F401 (the hook's name checks)
from histmig.tools.codex import config as codex_config
from histmig.tools.codex import state as codex_state


# ---- the plan ----------------------------------------------------------------------------

def plan_flip(homes, old: str, new: str, *, archived: bool = True, strip_encrypted: bool = False,
              set_config: bool = False, exact: bool = True, counts_only: bool = False,
              hash_files: bool = True) -> Plan:
    """The flip as a Plan (the verb has checked the names). ``exact=False`` (dry run) decides from
    line 1 only and plans the database rows but not the file patches. ``counts_only`` (with
    ``exact=False``; what the CLI shows for a dry run) counts those rows instead of planning them:
    the same summary, warnings and skips, but ``operations`` holds only the config edit; such a
    plan must never be applied. OLD == NEW (only with ``strip_encrypted``) strips in place: no
    provider value, row or config warning about the provider; only the sessions with something to
    strip are planned, always exactly. ``hash_files=False``: the plan is applied by this process and
    never written out, so the rollouts are not hashed whole (``Fingerprint.spans``; the apply hashes
    each one while it writes it)."""
    strip_only = old == new
    exact = exact or strip_only                   # what has something to strip shows only in the whole file
    cfg = codex_config.load_config(homes)
    default = codex_config.model_provider(cfg)
    c = census(homes, old, default, archived=archived)
    plan = Plan(op="flip", args={"old": old, "new": new, "archived": archived, "strip_encrypted": strip_encrypted,
                                 "set_config": set_config, "exact": exact},
                roots=[str(r) for r in homes.roots()], warnings=c.warnings, skips=c.skips)
    plan.warnings += config_warnings(cfg, old, new, default, set_config=set_config, strip=strip_encrypted,
                                     strip_only=strip_only)
    if counts_only and not exact:
        from histmig.tools.codex.census import count_provider_updates
        providers = {db: codex_state.thread_providers(db) for db in codex_state.state_dbs(homes, cfg)}
        _row_warnings(plan, providers, c.targets, old, new)
        if set_config and (op := codex_config.set_model_provider_op(homes, new)) is not None:
            plan.operations.append(op)
        plan.summary = _summary(c.targets, c, plan, default, old, exact,
                                state_rows=count_provider_updates(c.targets, providers, new))
        return plan
    rows = {db: codex_state.thread_providers(db) for db in codex_state.state_dbs(homes, cfg)}
    hdbs = codex_state.HistoryIndex(codex_state.history_dbs(homes, cfg)) if exact else None
    if exact:
        progress.note("files", len(c.targets))  # the whole-file reads: the long part, with a total
    scanned = scan_all(c.targets, old, new, strip=strip_encrypted, hash_files=hash_files) if exact else {}
    flipped: list[Target] = []
    for t in c.targets:
        if exact and not _plan_file(plan, t, c, homes, hdbs, scanned[id(t)]):
            continue
        if strip_only:                            # the rows already say OLD; a file without encrypted items is left
            if t.patches:
                flipped.append(t)
            continue
        plan.operations += codex_state.provider_update_ops(homes, t.thread_id, new, providers=rows,
                                                           reason=f"flip {old} -> {new}")
        flipped.append(t)
    if not strip_only:
        _row_warnings(plan, rows, flipped, old, new)
    if set_config:
        op = codex_config.set_model_provider_op(homes, new)
        if op is not None:
            plan.operations.append(op)
    plan.summary = _summary(flipped, c, plan, default, old, exact)
    if strip_only:                                # only in such plans: a flip's plan keeps its bytes
        plan.summary.update(strip_only=True, provider_sessions=len(c.targets))
    return plan


def scan_all(targets: list[Target], old: str, new: str, *, strip: bool,
             hash_files: bool = True) -> dict[int, str | None]:
    """``tools/codex/provider.scan_patches`` for every target, on every CPU (forked workers: the marker search
    and the parsing hold the GIL). Fills each target as the sequential loop would and returns
    each one's error message (None when it was scanned), by ``id``."""
    import histmig.tools.codex.provider  # noqa: F401, PLC0415 (loaded once, before the workers fork)
    results = fork_map(_scan_one, [(t, old, new, strip, hash_files) for t in targets],
                       [file_size(t.path) for t in targets])
    out: dict[int, str | None] = {}
    for t, (patches, fingerprint, stripped, error) in zip(targets, results):
        if error is None:
            t.patches, t.fingerprint, t.stripped = list(patches), fingerprint, stripped
        out[id(t)] = error
    return out


def _scan_one(task: tuple) -> tuple:
    """One file's scan as plain data (it may run in a forked worker)."""
    from histmig.jsonio.lineedit import EditError  # noqa: PLC0415 (lazy: a dry run never edits)
    from histmig.tools.codex.provider import scan_patches  # noqa: PLC0415
    t, old, new, strip, hash_file = task
    try:
        scan_patches(t, old, new, strip=strip, hash_file=hash_file)
    except (HistmigError, EditError, OSError) as e:
        return None, None, 0, str(e)
    return t.patches, t.fingerprint, t.stripped, None


def _plan_file(plan: Plan, t: Target, c: Census, homes, hdbs, error: str | None) -> bool:
    """Add the scanned file's WriteFile (+ offset shifts) to the plan; False when it is skipped."""
    if error is not None:
        plan.skips.append(Skip(str(t.path), f"cannot plan the edit ({error})", code="unplannable"))
        return False
    edits = [(p.offset, p.delta) for p in t.patches if p.delta]
    moved = [(child, off) for child, off in c.children.get(t.rollout_id, [])
             if codex_state.shift(off, edits) != off]
    if moved:
        names = ", ".join(str(ch) for ch, _ in moved)
        plan.skips.append(Skip(str(t.path), f"forks point into this file by byte offset (history_base) and the "
                               f"edit changes its length: {names}", code="fork-offsets"))
        return False
    if t.stripped:
        plan.warnings.append(Warning("encrypted-stripped", f"{t.stripped} provider-bound item(s) (encrypted "
                                     "reasoning/compaction) taken out of the history Codex sends", path=str(t.path)))
    if t.patches:
        plan.operations.append(WriteFile(
            path=str(t.path), expect=t.fingerprint, patches=tuple(t.patches),
            compression="zstd" if t.compressed else None, level=3,
            in_place_ok=not edits and not t.compressed, session=codex_state.session_of(t.thread_id),
            reason=_reason(plan.args["old"], plan.args["new"])))
        plan.operations += codex_state.offset_shift_ops(homes, t.thread_id, edits, index=hdbs)
    return True


@functools.lru_cache(maxsize=8)
def _reason(old: str, new: str) -> str:
    """A rewrite's ``reason``: one string for a plan's thousands of files."""
    return f"model_provider {old} -> {new}" if old != new else "strip encrypted items"


def config_warnings(cfg: dict, old: str, new: str, default: str, *, set_config: bool, strip: bool,
                    strip_only: bool = False) -> list[Warning]:
    out = []
    if not codex_config.is_known_provider(cfg, new):
        out.append(Warning("provider-not-defined", f"{new!r} is neither built in nor defined under "
                           f"[model_providers] in config.toml; resume would fail with \"Model provider not found\""))
    old_url, new_url = codex_config.base_url(cfg, old), codex_config.base_url(cfg, new)
    if not strip and old_url != new_url:
        out.append(Warning("encrypted-content-bound", f"{new!r} points at {new_url or 'an unknown base_url'}, "
                           f"{old!r} at {old_url or 'an unknown base_url'}: encrypted reasoning issued by the old "
                           "backend is rejected elsewhere (invalid_encrypted_content); consider --strip-encrypted"))
    if set_config and isinstance(codex_config.active_profile(cfg).get("model_provider"), str):
        out.append(Warning("profile-overrides-provider", "the active profile sets model_provider; the top-level "
                           "key set by --set-config will not take effect"))
    if not set_config and default != new and not strip_only:
        out.append(Warning("config-provider-differs", f"config.toml uses {default!r}: Codex lists and resumes "
                           f"the flipped sessions only under {new!r} (add --set-config to switch it)"))
    return out


def _row_warnings(plan: Plan, rows: dict, flipped: list[Target], old: str, new: str) -> None:
    """``rows``: db -> {thread id: its model_provider} (:func:`codex_state.thread_providers`)."""
    ids = {t.thread_id for t in flipped}
    for db, by_id in rows.items():
        stale = [i for i, provider in by_id.items() if provider == old and i not in ids]
        if stale:
            plan.warnings.append(Warning("row-not-flipped", f"{len(stale)} thread row(s) say {old!r} but their "
                                         "rollout is not flipped (other provider in the file, missing, skipped or "
                                         "excluded); left unchanged", path=str(db), extra={"ids": stale[:20]}))
    for t in flipped:
        if not any(t.thread_id in by_id for by_id in rows.values()) and rows:
            plan.warnings.append(Warning("no-state-row", "no threads row; Codex adds one when it next scans",
                                         path=str(t.path)))


def _summary(flipped: list[Target], c: Census, plan: Plan, default: str, old: str, exact: bool,
             *, state_rows: int | None = None) -> dict[str, Any]:
    """``state_rows``: counted by the caller when the row updates are not planned (counts_only)."""
    writes = [o for o in plan.operations if isinstance(o, WriteFile) and o.path.endswith((".jsonl", ".zst"))]
    if state_rows is None:
        state_rows = sum(1 for o in plan.operations if getattr(o, "table", None) == "threads")
    return {
        "sessions": len(flipped),
        "compressed": sum(t.compressed for t in flipped),
        "archived": sum(t.archived for t in flipped),
        "assumed_provider": sum(t.assumed for t in flipped),
        "assumed_note": (f"sessions without a recorded provider count as {default!r} (what Codex assumes)"
                         if default == old else None),
        "other_providers": dict(c.others.most_common()),
        "skipped": len(plan.skips),
        "state_rows": state_rows,
        "offset_rows": sum(o.rows for o in plan.operations if isinstance(o, SqlShift)),
        "files_in_place": sum(o.in_place_ok for o in writes) if exact else None,
        "files_rewritten": sum(not o.in_place_ok for o in writes) if exact else None,
        "exact": exact,
        "sample": [t.sample() for t in flipped[:10]],
    }


# ---- lines appended between plan and apply --------------------------------------------------

def tail_transform(args: dict[str, Any]):
    """The flip's per-line edit for bytes appended to a rollout after it was planned (apply's
    ``tail_transform``: --allow-appended, append races, salvage), for the ops whose session is a
    Codex one (the verb dispatches by ``op.session["tool"]``). Deterministic; a line that does not
    parse or whose edit does not verify is kept as it is."""
    from histmig.tools.codex.provider import patch_appended  # noqa: PLC0415 (lazy: a dry run never edits)
    old, new, strip = args["old"], args["new"], bool(args.get("strip_encrypted"))

    def transform(op, data: bytes) -> bytes:
        sid = (getattr(op, "session", None) or {}).get("id")
        if not sid:
            return data
        t = Target(Path(op.paths()[0]), sid, False, False, False, rollout_id=sid)
        return patch_appended(data, t, old, new, strip=strip)
    return transform
