"""Plan ``histmig convert``: each chosen session becomes a *new* native session of the target tool.

Pure: reads the source sessions and the target home, returns operations (``CreateFile`` for the new
files, ``SqlInsert`` for a Codex ``threads`` row in every state database that has the table) and a
per-session outcome with its loss report. Sessions stream through one at a time
(:func:`iter_convert`), so thousands convert in one process with bounded memory.
"""
from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from histmig import tools as registry
from histmig.toolkit.convert import provenance
from histmig.toolkit.convert.common import Target, TargetRules, Written
from histmig.toolkit.convert.flatten import flatten
from histmig.core.times import parse_ts
from histmig.toolkit.convert.ids import UUID_RE, Ids
from histmig.toolkit.convert.loss import LossReport
from histmig.toolkit.convert.sink import Sink, SpoolError, Spooled, TooLargeToEmbed, discard, size_of
from histmig.core.diagnostics import HistmigError, Skip, Warning
from histmig.core.model import PathRef, SessionRef
from histmig.core.paths import safe_component, valid_cwd
from histmig.core.plan import CreateFile, Op, Plan
from histmig.core.valueclass import FACTORY, value

WRITERS = registry.hooks("writer")     # tool name -> tools/<tool>/write.py's write, imported on first use


@value
class ConvertOptions:
    target: str
    again: bool = False
    keep_times: bool = False
    keep_reasoning_text: bool = False
    provider: str | None = None
    model: str | None = None
    seed: int | None = None          # reproducible ids (tests)
    now: float | None = None

    def __init__(self, target: str, again: bool = False, keep_times: bool = False, keep_reasoning_text: bool = False,
                 provider: str | None = None, model: str | None = None, seed: int | None = None,
                 now: float | None = None) -> None:
        self.target = target
        self.again = again
        self.keep_times = keep_times
        self.keep_reasoning_text = keep_reasoning_text
        self.provider = provider
        self.model = model
        self.seed = seed
        self.now = now


@value
class Outcome:
    """What happens to one source session."""

    tool: str
    source_id: str
    source_path: str
    status: str                       # convert | already | skip
    new_id: str | None = None
    paths: list[str] = field(default_factory=list)
    loss: LossReport = field(default_factory=LossReport)
    reason: str = ""
    code: str = ""
    title: str | None = None
    bytes: int = 0
    cwd: str | None = None            # the folder the new session was written for (its resume line)

    def __init__(self, tool: str, source_id: str, source_path: str, status: str, new_id: str | None = None,
                 paths: list[str] = FACTORY, loss: LossReport = FACTORY, reason: str = "", code: str = "",
                 title: str | None = None, bytes: int = 0, cwd: str | None = None) -> None:
        self.tool = tool
        self.source_id = source_id
        self.source_path = source_path
        self.status = status
        self.new_id = new_id
        self.paths = [] if paths is FACTORY else paths
        self.loss = LossReport() if loss is FACTORY else loss
        self.reason = reason
        self.code = code
        self.title = title
        self.bytes = bytes
        self.cwd = cwd

    def to_dict(self) -> dict[str, Any]:
        d = {"tool": self.tool, "id": self.source_id, "path": self.source_path, "status": self.status,
             "new_id": self.new_id, "paths": self.paths, "loss": self.loss.to_dict(), "title": self.title}
        return d | ({"reason": self.reason, "code": self.code} if self.reason else {})


class Run:
    """State shared by every session of one run: target config, provenance index, DB schemas."""

    def __init__(self, homes: Any, opts: ConvertOptions, sink: Callable[[], Sink] = Sink):
        self.homes, self.opts = homes, opts
        self.sink = sink          # memory (tests, --plan-out), count (dry run) or spool (apply): see convert.sink
        self.ids = Ids(opts.seed, opts.now)
        self.index = provenance.Index(homes, registry.hook(opts.target, "provenance"))
        self.rules: TargetRules = registry.hook(opts.target, "target") or TargetRules()
        self.root = Path(registry.tool(opts.target).home(homes))
        self.provider, self.model = self.rules.settings(homes, opts) if self.rules.settings else (None, None)
        self.tables = self.rules.tables(homes) if self.rules.tables else None
        self.folders: dict[str, Path] = {}
        self.warnings: list[Warning] = []

    def now(self) -> float:
        return self.ids.time()


def iter_convert(run: Run, refs: Iterable[SessionRef]) -> Iterator[tuple[Outcome, list[Op]]]:
    for ref in refs:
        yield convert_one(run, ref)


def convert_one(run: Run, ref: SessionRef) -> tuple[Outcome, list[Op]]:
    out = Outcome(ref.format, ref.id, str(ref.path), "skip")
    if ref.format == run.opts.target:
        return _skip(out, "same-tool", f"already a {ref.format} session"), []
    if ref.error:
        return _skip(out, "unreadable", ref.error), []
    tool = registry.adapter(ref.format)
    try:     # stream(): the records are read again from the file when flattened, one at a time
        session = getattr(tool, "stream", tool.read)(ref)
    except (HistmigError, OSError) as e:
        if isinstance(ref, PathRef):    # nothing was listed (select.files): the listing's reason, if it has one
            ref = tool.listed(ref)
            out.source_id = ref.id
        return _skip(out, "unreadable", ref.error or _describe(e)), []
    if isinstance(ref, PathRef) and (not session.cwd or getattr(tool, "may_flag", _never)(session)):
        ref = tool.listed(ref)      # nothing was listed: where the listing decides (an error, a cwd), it does
        if ref.error:
            out.source_id = ref.id
            return _skip(out, "unreadable", ref.error), []
    out.source_id = session.id or ref.id
    if not isinstance(out.source_id, str) or not _sane_id(out.source_id):
        out.source_id = str(out.source_id)
        return _skip(out, "invalid-session-id", "invalid session id"), []
    cwd = session.cwd or ref.cwd
    if not cwd or not valid_cwd(cwd) or ".." in Path(cwd).parts:
        return _skip(out, "invalid-cwd", f"no usable cwd ({cwd!r:.80})"), []
    marks = registry.hook(ref.format, "provenance")
    mark = _marker(marks, session, ref.path) if marks is not None else None
    if mark and not run.opts.again:     # convert the original instead (or pass --again)
        return _skip(out, "is-conversion", f"is a conversion of {mark[0]} session {mark[1]}"), []
    done = run.index.find(ref.format, out.source_id, cwd)
    if done and not run.opts.again:
        out.status, out.paths, out.reason, out.code = "already", [done], "already converted", "already-converted"
        return out, []
    try:
        conv = flatten(session, getattr(tool, "usage_of", None))
        return _write(run, session, conv, cwd, out)
    except (TooLargeToEmbed, SpoolError):    # the run's own limits, not this session's: stop, exit 1
        raise
    except (HistmigError, OSError) as e:    # a streamed file that changed, or a record over the limit
        return _skip(out, "unreadable", _describe(e)), []
    except MemoryError:
        # source and target stream (one record, one line at a time): only a single huge record or
        # a memory-mode run (tests) gets here; what it held is freed, so the next session can go on
        return _skip(out, "too-large", "not enough memory to build the converted session "
                     f"({_size(ref.path)} bytes of source)"), []


def _describe(e: BaseException) -> str:
    return e.describe() if isinstance(e, HistmigError) else str(e)


def _never(session: Any) -> bool:
    return False


def _size(path: Any) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def _write(run: Run, session: Any, conv: Any, cwd: str, out: Outcome) -> tuple[Outcome, list[Op]]:
    if callable(run.rules.new_id):   # the tool mints ids of its own shape (tools/<tool>/target.py)
        sid = run.rules.new_id(run.ids)
    else:
        sid = run.ids.uuid7() if run.rules.new_id == "uuid7" else run.ids.uuid4()
        assert UUID_RE.match(sid)
    t = Target(run.root, sid, cwd, run.ids, session.format, out.source_id,
               keep_reasoning_text=run.opts.keep_reasoning_text, provider=run.provider or "openai",
               model=run.model or (session.model if _lends_model(session.format) else None), sink=run.sink,
               tables=run.tables)
    w: Written = WRITERS[run.opts.target](conv, t)
    for path, _ in w.files:
        if not all(safe_component(c) for c in path.relative_to(run.root).parts):
            for _, data in w.files:
                discard(data)
            return _skip(out, "invalid-path", f"unsafe target path {path}"), []
    mtime = _mtime_ns(run, w)
    tag = {"tool": run.opts.target, "id": sid}
    dir_mode = run.rules.dir_mode
    ops: list[Op] = [_create(p, data, mtime, tag, f"convert {session.format} {out.source_id}", dir_mode)
                     for p, data in w.files]
    if run.tables is not None:
        ops += run.tables.inserts(w, t, updated=(mtime / 1e9 if mtime else run.now()), tag=tag)
    out.status, out.new_id, out.loss, out.title, out.cwd = "convert", sid, conv.loss, w.title, cwd
    out.paths, out.bytes = [str(p) for p, _ in w.files], sum(size_of(d) for _, d in w.files) + w.row_bytes
    if not out.paths and w.location:      # a target whose session is rows only (its tables' inserts)
        out.paths = [w.location]
    if out.paths:
        run.index.add(session.format, out.source_id, out.paths[-1])
    return out, ops


def _create(path: Path, data: bytes | Spooled, mtime: int | None, tag: dict, reason: str,
            dir_mode: int | None) -> CreateFile:
    if isinstance(data, bytes):
        return CreateFile(str(path), data, 0o600, mtime, tag, reason, dir_mode=dir_mode)
    # spooled (apply copies it in chunks) or only counted (a dry run: data_path None, never applied)
    return CreateFile(str(path), b"", 0o600, mtime, tag, reason, dir_mode=dir_mode, data_path=data.path,
                      sha256=data.sha256, size=data.size)


def _mtime_ns(run: Run, w: Written) -> int | None:
    """None = "now" (the default: Claude deletes transcripts older than cleanupPeriodDays)."""
    if not run.opts.keep_times:
        return None
    dt = parse_ts(w.last_ts)
    if dt is None:
        return None
    days = run.rules.cleanup_days
    if days is not None and run.now() - dt.timestamp() > days * 86400:
        run.warnings.append(Warning("old-mtime", f"{w.session_id}: kept time {w.last_ts} is older than "
                                    f"{days} days; {run.rules.cleanup_note}", str(w.files[0][0])))
    return (int(dt.timestamp()) - (1 if dt.microsecond and dt.timestamp() < 0 else 0)) * 10**9 + dt.microsecond * 1000


def _lends_model(source: str) -> bool:
    """Whether the source tool's model names are worth recording in the target (an adapter says so)."""
    return bool(getattr(registry.adapter(source), "lends_model", False))


def _marker(marks: Any, session: Any, path: Any) -> tuple[str, str] | None:
    """The source's own provenance marker (is it a conversion?), from the session just read when
    the tool can tell from it (``marker_of_session``), else from its file."""
    of_session = getattr(marks, "marker_of_session", None)
    return of_session(session) if of_session is not None else marks.marker_of(path)


def _sane_id(sid: str) -> bool:
    return bool(sid) and safe_component(sid) and not any(ord(c) < 32 for c in sid)


def _skip(out: Outcome, code: str, reason: str) -> Outcome:
    out.status, out.code, out.reason = "skip", code, reason
    return out


def new_plan(run: Run) -> Plan:
    roots = [str(run.root)] + ([str(d) for d in run.tables.dirs] if run.tables else [])
    return Plan(op="convert", args={"to": run.opts.target, "again": run.opts.again,
                                    "keep_times": run.opts.keep_times}, roots=sorted(set(roots)),
                summary={"sessions": 0, "converted": 0, "already": 0, "skipped": 0, "loss": {}})


def add_outcome(plan: Plan, out: Outcome, ops: list[Op], loss: LossReport | None = None) -> None:
    """One session's outcome counted into ``plan``'s summary, its ops added. ``loss``: the plan's loss
    summed there instead, written into the summary by the caller once (:func:`set_loss`): rebuilding
    the summary's sorted dict per session was an eighth of a streamed run's own work."""
    s = plan.summary
    s["sessions"] += 1
    if out.status == "convert":
        s["converted"] += 1
        plan.operations += ops
        if loss is not None:
            loss.merge(out.loss)
            return
        total = LossReport.from_dict(s["loss"])
        total.merge(out.loss)
        s["loss"] = total.to_dict()
    elif out.status == "already":
        s["already"] += 1
    else:
        s["skipped"] += 1
        plan.skips.append(Skip(out.source_path, out.reason, out.code))


def set_loss(plan: Plan, loss: LossReport) -> Plan:
    """The loss :func:`add_outcome` summed apart, as ``plan``'s summary shows it."""
    plan.summary["loss"] = loss.to_dict()
    return plan
