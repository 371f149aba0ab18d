"""``histmig unpack BUNDLE``: a bundle written by ``pack`` planned into the local homes (docs/pack.md).

Every checksum is verified first (histmig/verbs/pack/bundle.py ``verify``): a changed byte refuses the
whole bundle before anything is planned. Then each file is copied to a spool file, re-homed by the
tool's own move field rule for every ``--rehome OLD=NEW`` (histmig/verbs/unpack/content.py), and
becomes a create where the tool's ``pack`` hook places it (default: the same path inside the local
home). A session whose files already exist is skipped when they are identical and refused (named)
when they differ; its database rows are inserted by the tool's hook so the client lists it. The plan
goes through the one write path (histmig/apply): journaled, undoable.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import HistmigError, RefusedError, Skip, UsageError, Warning
from histmig.core.paths import safe_component
from histmig.core.plan import CreateFile, Op, Plan
from histmig.toolkit.move.common import PathMap, make_pathmap
from histmig.toolkit.pack import default_place
from histmig.toolkit.winpath import is_windows, windows_pathmap
from histmig.tools import canonical, hook, tool
from histmig.verbs.pack.bundle import members, verify
from histmig.verbs.unpack.content import rehome, sha_of, spool_member, suffix_of


@dataclass
class Unpacking:
    """The plan and where its spooled bytes live (removed with :meth:`close` once applied or dropped)."""

    plan: Plan
    manifest: dict[str, Any]
    spool: str
    sessions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # (tool, id) -> rel -> one list of (offset, delta) per --rehome pass that changed the file
    edits: dict[tuple[str, str], dict[str, list]] = field(default_factory=dict)

    def close(self) -> None:
        import shutil  # noqa: PLC0415
        shutil.rmtree(self.spool, ignore_errors=True)


def parse_rehome(specs: list[str]) -> list[tuple[str, str]]:
    out = []
    for spec in specs:
        old, sep, new = spec.partition("=")
        if not sep or not old or not new:
            raise UsageError(f"--rehome takes OLD=NEW, got {spec!r}")
        out.append((old, new))
    return out


def path_maps(pairs: list[tuple[str, str]]) -> tuple[list[PathMap], list[Warning]]:
    """One move path map per ``--rehome`` (move's own ``make_pathmap``); a Windows OLD (``C:\\Users\\x``,
    a bundle packed on Windows) gets the same rule with Windows' spelling (histmig/toolkit/winpath.py)."""
    pms, warnings = [], []
    for old, new in pairs:
        if is_windows(old):
            pms.append(windows_pathmap(old, new))
            continue
        pm, w = make_pathmap(old, new)
        pms.append(pm)
        warnings += [x for x in w if x.code != "paths-missing"]
    return pms, warnings


def plan_unpack(homes: Any, bundle: str | os.PathLike, rehome_pairs: list[tuple[str, str]] = (), *,
                apply: bool = False) -> Unpacking:
    """Verify ``bundle`` and plan its import. ``apply``: the spool lives under the state dir (apply
    copies from it); a dry run spools to the system's temporary folder and removes it at once."""
    manifest = verify(bundle)
    pms, warnings = path_maps(list(rehome_pairs))

    def rebase(value: Any) -> str | None:
        for pm in pms:
            if (new := pm.rebase(value)) is not None:
                return new
        return None

    sessions = {(s["tool"], s["id"]): s for s in manifest.get("sessions", [])}
    files = {f["name"]: f for f in manifest.get("files", [])}
    for name in {s["tool"] for s in sessions.values()}:
        canonical(name)        # a tool this histmig does not know: UsageError, named
    spool = _spool_dir(homes) if apply else tempfile.mkdtemp(prefix="histmig-unpack-")
    plan = Plan(op="unpack", args={"bundle": str(bundle), "rehome": [f"{o}={n}" for o, n in rehome_pairs]},
                roots=sorted({str(r) for r in homes.roots()}),
                summary={"sessions": len(sessions), "new": 0, "identical": 0, "partial": 0, "differ": 0,
                         "files": 0, "bytes": 0, "fields": 0, "rows": 0, "tools": {}})
    plan.warnings += warnings
    out = Unpacking(plan, manifest, spool)
    try:
        states = _files(homes, bundle, files, sessions, pms, rebase, out, keep=apply)
        _sessions(homes, sessions, states, rebase, out)
    except BaseException:
        out.close()
        raise
    if not apply:
        out.close()
    return out


def _spool_dir(homes: Any) -> str:
    from histmig.toolkit.convert.sink import SpoolDir
    sd = SpoolDir(homes.state)
    return sd.path


def _files(homes, bundle, files, sessions, pms, rebase, out: Unpacking, *, keep: bool) -> dict:
    """Each file: spooled, re-homed, compared with what is already there. -> (tool, id) -> {rel: state}."""
    states: dict[tuple[str, str], dict[str, tuple[str, Path]]] = {}
    for info, fh in members(bundle):
        meta = files.get(info.name)
        if meta is None:
            continue            # manifest.json and its seal
        key = (meta["tool"], meta["session"])
        session = sessions.get(key)
        if session is None or not all(safe_component(part) for part in meta["rel"].split("/")):
            raise RefusedError(f"{info.name}: not a path inside a tool's home, or no session of the bundle "
                               "names it; nothing written", path=bundle)
        target = _place(homes, meta, session, rebase)
        suffix = suffix_of(meta["rel"])
        path = spool_member(fh, out.spool, suffix)
        shifts: list[list[tuple[int, int]]] = []
        path, fields = rehome(path, pms, _rule(meta["tool"], meta["rel"]), out.spool, suffix, shifts)
        if shifts:
            out.edits.setdefault(key, {})[meta["rel"]] = shifts
        sha, size = sha_of(path)
        state = "new"
        if target.exists() or target.is_symlink():
            state = "identical" if target.is_file() and sha_of(target)[0] == sha else "differs"
            os.unlink(path)
        else:
            out.plan.operations.append(CreateFile(
                path=str(target), data=b"", mode=meta.get("mode", 0o600) or 0o600, mtime_ns=meta.get("mtime_ns"),
                session={"tool": meta["tool"], "id": meta["session"]}, reason="unpacked session",
                data_path=path if keep else None, sha256=sha, size=size))
            if not keep:
                os.unlink(path)
            out.plan.summary["files"] += 1
            out.plan.summary["bytes"] += size
            out.plan.summary["fields"] += fields
        states.setdefault(key, {})[meta["rel"]] = (state, target)
    return states


def _rule(name: str, rel: str) -> Any:
    """How ``--rehome`` rewrites this file: the tool's ``pack.rule``, else its move ``fields`` on every line."""
    mod = hook(name, "pack")
    if mod is not None and hasattr(mod, "rule"):
        return mod.rule(rel)
    fields = hook(name, "fields")
    return ("lines", fields) if fields is not None else None


def _place(homes: Any, meta: dict[str, Any], session: dict[str, Any], rebase) -> Path:
    mod = hook(meta["tool"], "pack")
    fn = getattr(mod, "place", None) if mod is not None else None
    if fn is not None:
        return fn(homes, meta["rel"], session, rebase)
    return default_place(Path(tool(meta["tool"]).home(homes)), meta["rel"])


def _first(op: Any, inserted: set[tuple]) -> bool:
    """A row two sessions share (OpenCode's project row) is inserted once."""
    key = (op.db, op.table, tuple(op.row.get(k) for k in op.key))
    if key in inserted:
        return False
    inserted.add(key)
    return True


def _rows(homes, name: str, session, placed, rebase, edits) -> tuple[list, Any]:
    """The tool's ``rows`` hook: (inserts, present) where present is False, True, "identical" or "differs".
    A hook that takes ``edits`` gets how re-homing changed each file's bytes (rel -> passes)."""
    import inspect  # noqa: PLC0415
    mod = hook(name, "pack")
    rows_fn = getattr(mod, "rows", None) if mod is not None else None
    if rows_fn is None:
        return [], False
    if "edits" in inspect.signature(rows_fn).parameters:
        return rows_fn(homes, session, placed, rebase, edits=edits)
    return rows_fn(homes, session, placed, rebase)


def _merged(homes, pending: dict[str, list], args: dict[str, Any]) -> list:
    """Per tool, what its sessions add to files they share (toolkit.pack.Append and the like), made
    into its writes by the tool's ``merge`` hook: one write per file, whatever the number of sessions.
    A hook may also name the entries it adds (path -> keys): kept in the plan's ``args["added"]``
    (journaled), so undo can take them out of a file its client saved again since."""
    ops: list = []
    for name, items in pending.items():
        mod = hook(name, "pack")
        fn = getattr(mod, "merge", None) if mod is not None else None
        if fn is not None and items:
            got = fn(homes, items)
            if isinstance(got, tuple):
                got, added = got
                if added:
                    args.setdefault("added", {}).update(added)
            ops += got
    return ops


def _sessions(homes, sessions, states, rebase, out: Unpacking) -> None:
    """Per session: new, identical (skipped), partial (the missing files created) or differs (refused)."""
    differ: list[str] = []
    inserted: set[tuple] = set()
    pending: dict[str, list] = {}
    s = out.plan.summary
    for key, session in sessions.items():
        by_rel = states.get(key, {})
        kinds = {state for state, _ in by_rel.values()}
        name = f"{key[0]} {key[1]}"
        if "differs" in kinds:
            differ.append(f"{name} ({', '.join(str(t) for st, t in by_rel.values() if st == 'differs')})")
            continue
        status = "identical" if kinds == {"identical"} else "partial" if "identical" in kinds else "new"
        placed = {rel: target for rel, (_, target) in by_rel.items()}
        try:
            ops, present = _rows(homes, key[0], session, placed, rebase, out.edits.get(key, {}))
        except HistmigError as e:       # e.g. no OpenCode database here yet: this session waits, named
            out.plan.skips.append(Skip(e.path or name, f"{name}: {e}", "no-database"))
            out.plan.operations = [op for op in out.plan.operations if getattr(op, "session", None) != {
                "tool": key[0], "id": key[1]}]
            continue
        if present == "differs":        # a session kept as rows only (OpenCode): its row differs here
            differ.append(f"{name} (its rows in the local database)")
            continue
        if not by_rel and present == "identical":
            status = "identical"
        s[status] += 1
        per = s["tools"].setdefault(key[0], {"new": 0, "identical": 0, "partial": 0})
        per[status] += 1
        out.sessions.setdefault(status, []).append({"tool": key[0], "id": key[1]})
        pending.setdefault(key[0], []).extend(op for op in ops if not isinstance(op, Op))
        ops = [op for op in ops if isinstance(op, Op) and _first(op, inserted)]
        out.plan.operations += ops
        s["rows"] += len(ops)
    if differ:
        s["differ"] = len(differ)
        raise RefusedError(f"{len(differ)} session(s) in the bundle already exist here with different content; "
                           f"nothing written: {'; '.join(differ)}")
    merged = _merged(homes, pending, out.plan.args)
    out.plan.operations += merged
    s["shared"] = len(merged)
    files = {os.path.abspath(f) for f in homes.root_files()}     # ~/.claude.json lies outside the homes
    out.plan.roots += sorted({p for op in merged for p in op.paths() if os.path.abspath(p) in files} - set(out.plan.roots))
