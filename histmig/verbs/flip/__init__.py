"""``histmig flip OLD NEW``: re-label Codex sessions from one model provider to another.

Pure planner: reads the Codex home and returns a Plan; never writes. What a correct flip is was
measured on Codex 0.171.0 (docs/specs/codex.md §0.4, §15.1): the provider value in every same-id
``session_meta`` and every ``thread_settings_applied`` line, edited in place (only the value's bytes),
**plus** ``threads.model_provider`` in every state DB, **plus** the thread's byte offsets in
``thread_history_1.sqlite`` when a line changes length.

Speed: deciding whether a session is affected needs only line 1 (``head_meta``). The exact patches
need the whole file (later ``session_meta`` / ``thread_settings_applied`` lines are spread through
it), found by a byte search for the markers before any line is parsed. A dry run (``exact=False``)
stops at the heads.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from histmig.core.diagnostics import HistmigError, HistmigInputError, Skip, UsageError, Warning
from histmig.core.forkmap import file_size, fork_map
from histmig.tools.codex import adapter as codex
from histmig.jsonio.jsonedit import EditError, _end_of_value, _set_path, encode_value, find_span
from histmig.jsonio.jsonl import open_stream, parse_json
from histmig.core import tail_rules
from histmig.core.plan import Fingerprint, Patch, Plan, WriteFile, compact
from histmig.tools.codex.census import Census, Target, census, provider_census  # noqa: F401 (re-exported)
from histmig.tools.codex import config as codex_config
from histmig.tools.codex import state as codex_state

PROVIDER_MARKERS = (b'"session_meta"', b'"thread_settings_applied"')
ENCRYPTED_MARKER = b'"encrypted_content"'
MAX_TARGET_LINE = 64 * 1024 * 1024
CHUNK = 1 << 20


# ---- scanning one file ------------------------------------------------------------------

def marked_lines(fh: BinaryIO, markers: tuple[bytes, ...], *, hasher=None,
                 max_line: int = MAX_TARGET_LINE) -> Iterator[tuple[int, bytes]]:
    """``(offset, line bytes)`` of each line containing one of ``markers``; other lines are never
    split out or parsed. Memory: one chunk plus the longest line that crosses a chunk boundary."""
    buf, base = b"", 0
    while True:
        data = fh.read(CHUNK)
        if hasher is not None and data:
            hasher.update(data)
        buf = buf + data if buf else data
        end = len(buf) if not data else buf.rfind(b"\n") + 1
        if data and end == 0:
            if len(buf) > max_line:
                raise HistmigInputError(f"a line exceeds {max_line} bytes")
            continue
        yield from _hits(buf, end, markers, base)
        buf, base = buf[end:], base + end
        if not data:
            return


def _hits(buf: bytes, end: int, markers: tuple[bytes, ...], base: int) -> Iterator[tuple[int, bytes]]:
    starts: set[int] = set()
    for marker in markers:
        i = buf.find(marker, 0, end)
        while i >= 0:
            start = buf.rfind(b"\n", 0, i) + 1
            starts.add(start)
            nl = buf.find(b"\n", i, end)
            i = buf.find(marker, end if nl < 0 else nl + 1, end)
    for start in sorted(starts):
        nl = buf.find(b"\n", start, end)
        yield base + start, buf[start:(end if nl < 0 else nl + 1)]


def _body(line: bytes) -> tuple[int, bytes]:
    """``(offset of the JSON text in the line, JSON text)``: without BOM and terminator."""
    start = 3 if line.startswith(b"\xef\xbb\xbf") else 0
    end = len(line) - (2 if line.endswith(b"\r\n") else 1 if line.endswith(b"\n") else 0)
    return start, line[start:end]


def _fast_span(body: bytes, path: list) -> tuple[int, int]:
    """Span of the value at ``path`` found by its key's only occurrence (a byte search; no walk
    over the 20 KB of instructions before it). Callers verify the patched line by parsing it, and
    fall back to the full scanner (``find_span``) when the key is not unique or verification fails."""
    needle = encode_value(path[-1]) + b":"
    i = body.find(needle)
    if i <= 0 or body.find(needle, i + 1) >= 0 or body[i - 1:i] == b"\\":
        return find_span(body, path)
    start = i + len(needle)
    while body[start:start + 1] in (b" ", b"\t"):
        start += 1
    return start, _end_of_value(body, start)


def _value_patch(line_off: int, body_off: int, body: bytes, path: list, value: Any, *, pad: bool,
                 fast: bool = True) -> Patch:
    """Replace one value; with ``pad`` a shorter value is followed by spaces inside the old span
    (JSON whitespace before the next ``,`` or ``}``), so the line keeps its length and only the
    provider value's bytes differ."""
    s, e = (_fast_span if fast and isinstance(path[-1], str) else find_span)(body, path)
    new = encode_value(value)
    if pad and len(new) < e - s:
        new += b" " * (e - s - len(new))
    return Patch(line_off + body_off + s, compact(body[s:e]), compact(new))


def _insert_patch(line_off: int, body_off: int, body: bytes, obj_path: list, key: str, value: Any) -> Patch:
    """Insert ``"key":value`` as the last member of the object at ``obj_path``."""
    s, e = find_span(body, obj_path)
    inner = body[s + 1:e - 1].strip()
    member = (b"," if inner else b"") + encode_value(key) + b":" + encode_value(value)
    return Patch(line_off + body_off + e - 1, b"", compact(member))


# An edit is (path, new value, how): "pad" replaces and pads a shorter value, "raw" replaces,
# "insert" adds the last key of ``path`` to the object at ``path[:-1]``.
Edit = tuple[list, Any, str]


def _line_edits(obj: Any, t: Target, old: str, new: str, strip: bool) -> list[Edit]:
    out: list[Edit] = []
    ltype = codex.line_type(obj)
    p = codex.payload(obj)
    if ltype == "session_meta" and p.get("id") == t.thread_id:
        if "model_provider" not in p:
            if t.assumed:
                out.append((["payload", "model_provider"], new, "insert"))
        elif _matches(p["model_provider"], old, t.assumed):
            out.append((["payload", "model_provider"], new, "pad"))
    elif ltype == "event_msg" and p.get("type") == "thread_settings_applied":
        ts = p.get("thread_settings")
        if isinstance(ts, dict) and "model_provider_id" in ts and _matches(ts["model_provider_id"], old, t.assumed):
            out.append((["payload", "thread_settings", "model_provider_id"], new, "pad"))
    if strip:
        out += _strip_edits(ltype, p, t)
    return out


def _matches(value: Any, old: str, assumed: bool) -> bool:
    return value == old or (assumed and value in (None, ""))


STRIPPED_PREFIX = "histmig_stripped_"
BOUND_ITEMS = ("reasoning", "compaction", "compaction_summary", "context_compaction")


def _strip_edits(ltype, p, t: Target) -> list[Edit]:
    """Take provider-bound items out of what Codex sends: an item ``{"type":"reasoning",
    "encrypted_content":"gAAA..."}`` becomes ``{"type":"histmig_stripped_reasoning",
    "encrypted_content":null}``. Codex 0.171.0 reads an unknown item type as ``Other`` and never
    sends it (verified with the real client; a reasoning item with ``encrypted_content: null`` *is*
    still sent and rejected), and the line stays in place, so ordinals keep counting. Top level and
    inside ``compacted.replacement_history`` (which replaces the history on resume)."""
    items: list[tuple[list, dict]] = []
    if ltype == "response_item":
        items.append((["payload"], p))
    if ltype == "compacted" and isinstance(p.get("replacement_history"), list):
        items += [(["payload", "replacement_history", i], it) for i, it in enumerate(p["replacement_history"])]
    out: list[Edit] = []
    for path, item in items:
        if isinstance(item, dict) and item.get("type") in BOUND_ITEMS and isinstance(item.get("encrypted_content"), str):
            out.append((path + ["type"], STRIPPED_PREFIX + item["type"], "raw"))
            out.append((path + ["encrypted_content"], None, "raw"))
            t.stripped += 1
    return out


def _patches(edits: list[Edit], line_off: int, body_off: int, body: bytes, fast: bool) -> list[Patch]:
    out = []
    for path, value, how in edits:
        if how == "insert":
            out.append(_insert_patch(line_off, body_off, body, path[:-1], path[-1], value))
        else:
            out.append(_value_patch(line_off, body_off, body, path, value, pad=how == "pad",
                                    fast=fast and len(edits) == 1))
    return out


def _checked_patches(obj: Any, edits: list[Edit], line_off: int, body_off: int, body: bytes) -> list[Patch]:
    """Patches for one line, verified: the patched text must parse to exactly ``obj`` with the
    edits applied (so a fast locator that hit the wrong bytes can never slip through)."""
    expected = obj
    for path, value, _how in edits:
        expected = _set_path(expected, path, value) if _how != "insert" else _insert(expected, path, value)
    for fast in (True, False):
        try:
            patches = _patches(edits, line_off, body_off, body, fast)
        except EditError:
            continue
        new_obj, err = parse_json(_splice(body, patches, line_off + body_off))
        if err is None and new_obj == expected:
            return patches
    raise EditError("edit did not verify")


def _insert(obj: Any, path: list, value: Any) -> Any:
    parent = obj
    for step in path[:-1]:
        parent = parent[step]
    return _set_path(obj, path[:-1], {**parent, path[-1]: value})


def _splice(body: bytes, patches: list[Patch], base: int) -> bytes:
    out, pos = bytearray(), 0
    for p in sorted(patches, key=lambda p: p.offset):
        rel = p.offset - base
        out += body[pos:rel] + p.new
        pos = rel + len(p.old)
    return bytes(out + body[pos:])


def scan_patches(t: Target, old: str, new: str, *, strip: bool = False) -> None:
    """Fill ``t.patches`` and ``t.fingerprint`` from one streaming pass over the file."""
    markers = PROVIDER_MARKERS + ((ENCRYPTED_MARKER,) if strip else ())
    import hashlib  # noqa: PLC0415 (lazy: the dry run never hashes)
    hasher = None if t.compressed else hashlib.sha256()
    st = os.lstat(t.path)
    with open_stream(t.path) as fh:
        for line_off, line in marked_lines(fh, markers, hasher=hasher):
            body_off, body = _body(line)
            obj, err = parse_json(body)
            if err:
                continue                      # opaque lines are preserved as they are
            edits = _line_edits(obj, t, old, new, strip)
            if edits:
                t.patches += _checked_patches(obj, edits, line_off, body_off, body)
    digest = hasher.hexdigest() if hasher else Fingerprint.of(t.path).sha256
    t.fingerprint = Fingerprint(dev=st.st_dev, ino=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns, sha256=digest,
                                ctime_ns=st.st_ctime_ns)


# ---- the plan ----------------------------------------------------------------------------

def check_names(old: str, new: str) -> None:
    for name in (old, new):
        if not name or any(ch.isspace() or ord(ch) < 32 for ch in name):
            raise UsageError(f"invalid provider id {name!r}")
    if old == new:
        raise UsageError("OLD and NEW are the same provider")


def plan_flip(homes, old: str, new: str, *, archived: bool = True, strip_encrypted: bool = False,
              set_config: bool = False, exact: bool = True, counts_only: bool = False) -> Plan:
    """The flip as a Plan. ``exact=False`` (dry run) decides from line 1 only and plans the
    database rows but not the file patches. ``counts_only`` (with ``exact=False``; what the CLI
    shows for a dry run) counts those rows instead of planning them: the same summary, warnings
    and skips, but ``operations`` holds only the config edit; such a plan must never be applied."""
    check_names(old, new)
    cfg = codex_config.load_config(homes)
    default = codex_config.model_provider(cfg)
    c = census(homes, old, default, archived=archived)
    plan = Plan(op="flip", args={"old": old, "new": new, "archived": archived, "strip_encrypted": strip_encrypted,
                                 "set_config": set_config, "exact": exact},
                roots=[str(r) for r in homes.roots()], warnings=c.warnings, skips=c.skips)
    plan.warnings += config_warnings(cfg, old, new, default, set_config=set_config, strip=strip_encrypted)
    if counts_only and not exact:
        from histmig.tools.codex.census import count_provider_updates
        providers = {db: codex_state.thread_providers(db) for db in codex_state.state_dbs(homes, cfg)}
        _row_warnings(plan, providers, c.targets, old, new)
        if set_config and (op := codex_config.set_model_provider_op(homes, new)) is not None:
            plan.operations.append(op)
        plan.summary = _summary(c.targets, c, plan, default, old, exact,
                                state_rows=count_provider_updates(c.targets, providers, new))
        return plan
    rows = {db: codex_state.thread_rows(db) for db in codex_state.state_dbs(homes, cfg)}
    hdbs = codex_state.HistoryIndex(codex_state.history_dbs(homes, cfg)) if exact else None
    scanned = scan_all(c.targets, old, new, strip=strip_encrypted) if exact else {}
    flipped: list[Target] = []
    for t in c.targets:
        if exact and not _plan_file(plan, t, c, homes, hdbs, scanned[id(t)]):
            continue
        plan.operations += codex_state.provider_update_ops(homes, t.thread_id, new, rows=rows,
                                                           reason=f"flip {old} -> {new}")
        flipped.append(t)
    _row_warnings(plan, {db: {i: r.get("model_provider") for i, r in by_id.items()} for db, by_id in rows.items()},
                  flipped, old, new)
    if set_config:
        op = codex_config.set_model_provider_op(homes, new)
        if op is not None:
            plan.operations.append(op)
    plan.summary = _summary(flipped, c, plan, default, old, exact)
    return plan


def scan_all(targets: list[Target], old: str, new: str, *, strip: bool) -> dict[int, str | None]:
    """:func:`scan_patches` for every target, on every CPU (forked workers: the marker search
    and the parsing hold the GIL). Fills each target as the sequential loop would and returns
    each one's error message (None when it was scanned), by ``id``."""
    results = fork_map(_scan_one, [(t, old, new, strip) for t in targets], [file_size(t.path) for t in targets])
    out: dict[int, str | None] = {}
    for t, (patches, fingerprint, stripped, error) in zip(targets, results):
        if error is None:
            t.patches, t.fingerprint, t.stripped = list(patches), fingerprint, stripped
        out[id(t)] = error
    return out


def _scan_one(task: tuple) -> tuple:
    """One file's scan as plain data (it may run in a forked worker)."""
    t, old, new, strip = task
    try:
        scan_patches(t, old, new, strip=strip)
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
            in_place_ok=not edits and not t.compressed, session={"tool": "codex", "id": t.thread_id},
            reason=f"model_provider {plan.args['old']} -> {plan.args['new']}"))
        plan.operations += codex_state.offset_shift_ops(homes, t.thread_id, edits, index=hdbs)
    return True


def config_warnings(cfg: dict, old: str, new: str, default: str, *, set_config: bool, strip: bool) -> list[Warning]:
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
    if not set_config and default != new:
        out.append(Warning("config-provider-differs", f"config.toml uses {default!r}: Codex lists and resumes "
                           f"the flipped sessions only under {new!r} (add --set-config to switch it)"))
    return out


def _row_warnings(plan: Plan, rows: dict, flipped: list[Target], old: str, new: str) -> None:
    """``rows``: db -> {thread id: its model_provider}."""
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
        "offset_rows": sum(1 for o in plan.operations if getattr(o, "table", "").startswith("thread_")
                           and getattr(o, "table", None) != "threads"),
        "files_in_place": sum(o.in_place_ok for o in writes) if exact else None,
        "files_rewritten": sum(not o.in_place_ok for o in writes) if exact else None,
        "exact": exact,
        "sample": [t.sample() for t in flipped[:10]],
    }


# ---- lines appended between plan and apply --------------------------------------------------

def tail_transform(args: dict[str, Any]):
    """The flip's per-line edit for bytes appended to a rollout after it was planned (apply's
    ``tail_transform``: --allow-appended, append races, salvage). Deterministic; a line that does
    not parse or whose edit does not verify is kept as it is."""
    import io
    old, new, strip = args["old"], args["new"], bool(args.get("strip_encrypted"))
    markers = PROVIDER_MARKERS + ((ENCRYPTED_MARKER,) if strip else ())

    def transform(op, data: bytes) -> bytes:
        sid = (getattr(op, "session", None) or {}).get("id")
        if not sid:
            return data
        t = Target(Path(op.paths()[0]), sid, False, False, False, rollout_id=sid)
        patches: list[Patch] = []
        for line_off, line in marked_lines(io.BytesIO(data), markers):
            body_off, body = _body(line)
            obj, err = parse_json(body)
            edits = [] if err else _line_edits(obj, t, old, new, strip)
            if edits:
                try:
                    patches += _checked_patches(obj, edits, line_off, body_off, body)
                except EditError:
                    continue
        return _splice(data, patches, 0) if patches else data
    return transform


tail_rules.register("flip", lambda plan: tail_transform(plan.args))
