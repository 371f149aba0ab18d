"""histmig as a library: one function per verb (alembic's ``command.py``, sqlite-utils).

Each function imports its verb when called and hands over, so ``from histmig import api`` costs nothing
and a command loads only what it runs (docs/ARCHITECTURE.md). Planners return a
:class:`~histmig.core.plan.Plan` and never write; :func:`apply` is the one way a plan reaches the disk.
Errors are typed (histmig/core/diagnostics.py); nothing here prints or exits. ``homes`` is a
:class:`~histmig.core.homes.Homes` (``histmig.tools.resolve_homes()``).

    refs = api.scan(homes, tools=["codex"])                     # sessions, lazily
    plan = api.plan_move(homes, "/code/app", "/work/app")
    result = api.apply(plan, homes)
    api.undo(homes, result.txid)
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

if TYPE_CHECKING:
    from histmig.apply import ApplyOptions, ApplyResult, RecoverResult, TxInfo
    from histmig.apply.gc import GcResult
    from histmig.core.diagnostics import Warning
    from histmig.core.model import Session, SessionRef
    from histmig.core.plan import Plan
    from histmig.verbs.convert import ConvertOptions, Outcome
    from histmig.verbs.convert.batches import Converted
    from histmig.verbs.doctor import Report
    from histmig.verbs.search import Search
    from histmig.verbs.export import ExportReport
    from histmig.verbs.undo.run import UndoResult

# Types a caller builds or catches, loaded on first use like the verbs.
_TYPES = {"ConvertOptions": "histmig.verbs.convert", "LossyError": "histmig.verbs.convert.batches",
          "ApplyOptions": "histmig.apply", "ProviderTypoError": "histmig.toolkit.flip"}


def __getattr__(name: str) -> Any:
    if name in _TYPES:
        return getattr(importlib.import_module(_TYPES[name]), name)
    raise AttributeError(f"module 'histmig.api' has no attribute {name!r}")


# -- reading ------------------------------------------------------------------------------------
def scan(homes, *, tools: Iterable[str] | None = None, provider: str | None = None, cwd: str | None = None,
         since: float | None = None, use_index: bool = True) -> Iterator[SessionRef]:
    """Every session of the chosen tools (all by default), lazily, filtered; ``since`` is a Unix time.
    ``use_index=False`` neither reads nor writes the scan index (docs/scan-show.md, "The scan index")."""
    from histmig.tools.catalog import discover_all, filter_refs
    return filter_refs(discover_all(homes, tools, use_index=use_index), provider=provider, cwd=cwd, since=since)


def parse_since(text: str, *, flag: str = "--since") -> float:
    """``7d``, ``12h``, ``30m`` or an ISO date/time -> a Unix time (``scan --since``; ``flag="--until"``:
    a date alone is the end of that day)."""
    from histmig.tools.catalog import parse_since as parse
    return parse(text, flag=flag)


def listing(homes, **query: Any) -> Any:
    """What ``scan`` lists: the sessions filtered (``tools``, ``provider``, ``cwd``, ``since``, ``until``,
    ``states``), sorted (``sort``, ``reverse``), cut (``limit``), with short ids unique among every
    session of every tool (histmig/tools/catalog.py ``Listing``)."""
    from histmig.tools.catalog import listing as run
    return run(homes, **query)


def group_sessions(refs: Iterable[SessionRef], by: str, **order: Any) -> list[Any]:
    """``scan --by cwd|month|tool|provider``: per group sessions, messages, size, last use, tools."""
    from histmig.toolkit.listing.groups import group
    return group(refs, by, **order)


def month_chart(refs: Iterable[SessionRef]) -> Any:
    """Sessions per month and tool, for ``scan --by month``'s chart."""
    from histmig.tools import FORMATS
    from histmig.toolkit.listing.groups import month_chart as chart
    return chart(refs, FORMATS)


def find(homes, spec: str, *, tools: Iterable[str] | None = None) -> SessionRef:
    """One session by full id, unique id prefix, or path to its file."""
    from histmig.tools.catalog import resolve
    return resolve(homes, spec, tools)


def show(homes, spec: str, *, tools: Iterable[str] | None = None) -> Session:
    """One session (as :func:`find` names it), its records streamed from the file as they are read."""
    from histmig.tools import adapter
    ref = find(homes, spec, tools=tools)
    tool = adapter(ref.format)
    return getattr(tool, "stream", tool.read)(ref)


def search(homes, pattern: str, *, regex: bool = False, case: str = "smart", tools: Iterable[str] | None = None,
           cwd: str | None = None, since: float | None = None, until: float | None = None,
           include_tools: bool = False, files_only: bool = False, use_index: bool = True) -> Search:
    """Full-text search (histmig/verbs/search): iterate the result for its hits, session by session
    (newest first); its counters and warnings are filled as it goes. ``case``: smart, ignore or sensitive."""
    from histmig.verbs.search import Query, Search
    return Search(homes, Query.make(pattern, regex=regex, case=case), tools=tools, cwd=cwd, since=since,
                  until=until, include_tools=include_tools, files_only=files_only, use_index=use_index)
def write_markdown(session: Session, write: Callable[[str], Any], *, injected: bool = False) -> int:
    """One session as Markdown (``show --format markdown``; the renderer ``export --to markdown`` uses)."""
    from histmig.toolkit.export.blocks import meta_of
    from histmig.toolkit.export.markdown import write_markdown as render
    return render(session, write, meta_of(session), injected=injected)


def export_sessions(homes, session: str | None = None, *, tools: Iterable[str] | None = None,
                    cwd: str | None = None, since: str | None = None, until: str | None = None,
                    all_: bool = False) -> list[SessionRef]:
    """The sessions ``export`` takes: the one named, those scan's filters keep, or with ``all_`` every one."""
    from histmig.verbs.export import choose
    return choose(homes, session, tools=tools, cwd=cwd, since=since, until=until, all_=all_)


def export(homes, refs: list[SessionRef], to: str, out, *, redact: bool = False, injected: bool = False,
           progress: Callable[[SessionRef], Any] | None = None) -> ExportReport:
    """Write ``refs`` as Markdown, HTML or ATIF files under ``out`` with an index page (histmig/verbs/export)."""
    from histmig.verbs.export import export as run
    return run(homes, refs, to, out, redact=redact, injected=injected, progress=progress)


def providers(homes, *, archived: bool = True) -> dict[str, Any]:
    """Sessions by recorded model provider, and what each side store holds (``flip --list``), from
    the tools with a flip hook (histmig/verbs/flip)."""
    from histmig.verbs.flip import provider_census
    return provider_census(homes, archived=archived)


# -- planning -----------------------------------------------------------------------------------
def check_flip_names(old: str, new: str, *, strip_encrypted: bool = False) -> None:
    """Raise ``UsageError`` for provider ids no flip can take (OLD == NEW only with ``strip_encrypted``)."""
    from histmig.verbs.flip import check_names
    check_names(old, new, strip_encrypted=strip_encrypted)


def check_flip_new(homes, new: str, *, force: bool = False, set_config: bool = False) -> None:
    """Raise ``ProviderTypoError`` for a NEW provider a tool cannot load, before anything is scanned."""
    from histmig.verbs.flip import check_new
    check_new(homes, new, force=force, set_config=set_config)


def check_flip_old(homes, plan: Plan, old: str, new: str, *, force: bool = False) -> Warning | None:
    """After :func:`plan_flip`: raise ``ProviderTypoError`` for an OLD that matched nothing and looks
    like a typo; else the ``old-provider-absent`` warning, or None when OLD matched."""
    from histmig.verbs.flip import check_old
    return check_old(homes, plan, old, new, force=force)


def plan_flip(homes, old: str, new: str, **options: Any) -> Plan:
    """Re-label sessions from model provider ``old`` to ``new`` in every tool with a flip hook (histmig/verbs/flip)."""
    from histmig.verbs.flip import plan_flip as plan
    return plan(homes, old, new, **options)


def plan_move(homes, old: str, new: str, **options: Any) -> Plan:
    """Re-point every tool's history from project folder ``old`` to ``new`` (histmig/verbs/move)."""
    from histmig.verbs.move import plan_move as plan
    return plan(homes, old, new, **options)


def convert_sessions(homes, target: str, sessions: Iterable[str] = (), *, from_tool: str | None = None,
                     cwd: str | None = None, all_: bool = False) -> list[SessionRef]:
    """The sessions a conversion to ``target`` takes: named ones, ``from_tool`` [``cwd``], or all.
    Without ``cwd``, a tool whose adapter can gives its files alone (``PathRef``: nothing read yet;
    each is read once, when converted: docs/convert.md, "Choosing sessions")."""
    from histmig.verbs.convert.batches import choose
    return choose(homes, target, sessions, from_tool=from_tool, cwd=cwd, all_=all_)


def refuse_lossy(homes, refs: list[SessionRef], opts: ConvertOptions) -> None:
    """Raise ``LossyError`` (naming them) when any of these conversions would lose content."""
    from histmig.verbs.convert.batches import refuse_lossy as refuse
    refuse(homes, refs, opts)


def plan_convert(homes, refs: Iterable[SessionRef], opts: ConvertOptions) -> tuple[Plan, list[Outcome]]:
    """The whole conversion as one plan, every new file's bytes in memory (small runs, tests)."""
    from histmig.verbs.convert.batches import plan_convert as plan
    return plan(homes, refs, opts)


def plan_convert_whole(homes, refs: list[SessionRef], opts: ConvertOptions, *, named: bool = False,
                       on_outcome: Callable[[Outcome], None] | None = None) -> Plan:
    """One plan for ``--plan-out``: every new file embedded, each capped (histmig/verbs/convert/batches.py)."""
    from histmig.verbs.convert.batches import whole_plan
    return whole_plan(homes, refs, opts, named=named, on_outcome=on_outcome)


def convert(homes, refs: list[SessionRef], opts: ConvertOptions, *, apply: bool = False, named: bool = False,
            on_outcome: Callable[[Outcome], None] | None = None, apply_batch: Callable[[Plan], int] | None = None,
            options: ApplyOptions | None = None) -> Converted:
    """Convert streaming: a dry run writes nothing; with ``apply`` the sessions are applied in bounded
    transactions (by ``apply_batch(plan) -> exit code``, else :func:`apply` with ``options``)."""
    from histmig.verbs.convert.batches import stream
    return stream(homes, refs, opts, apply=apply, named=named, on_outcome=on_outcome, apply_batch=apply_batch,
                  options=options)


def resume_command(target: str, cwd: str | None, new_id: str) -> str | None:
    """The shell line that resumes a converted session in its tool (``tools/<tool>/target.py``), or
    None when the tool has no such line or the session records no folder."""
    import shlex
    from histmig.tools import hook
    rules = hook(target, "target")
    if rules is None or not rules.resume or ("{cwd}" in rules.resume and not cwd):
        return None
    return rules.resume.format(cwd=shlex.quote(cwd or ""), id=shlex.quote(new_id))


def diagnose(homes, *, tools: Iterable[str] | None = None, ignore: Iterable[str] = ()) -> Report:
    """Why history is missing, per tool (histmig/verbs/doctor); pure reads."""
    from histmig.verbs.doctor import diagnose as run
    chosen = {"tools": tuple(tools)} if tools else {}     # default: every tool of the table
    return run(homes, ignore=ignore, **chosen)


def plan_repair(homes, report: Report) -> Plan:
    """The safe repairs of a :func:`diagnose` report, as one plan."""
    from histmig.verbs.doctor import plan_repair as plan
    return plan(homes, report)


def pack_sessions(homes, sessions: Iterable[str] = (), *, tools: Iterable[str] | None = None, cwd: str | None = None,
                  since: float | None = None, until: float | None = None, all_: bool = False) -> list[SessionRef]:
    """The sessions ``pack`` takes: named ones, else every session scan's filters pass (or ``all_``)."""
    from histmig.verbs.pack import choose
    return choose(homes, sessions, tools=tools, cwd=cwd, since=since, until=until, all_=all_)


def pack(homes, refs: list[SessionRef], out: str, *, filters: dict | None = None,
         on_file: Callable[[int], None] | None = None) -> Any:
    """Write ``refs`` into the new bundle ``out`` (histmig/verbs/pack); returns what was packed."""
    from histmig.verbs.pack import pack as run
    return run(homes, refs, out, filters=filters, on_file=on_file)


def plan_unpack(homes, bundle: str, rehome: Iterable[str] = (), *, apply: bool = False) -> Any:
    """Verify a bundle and plan its import (histmig/verbs/unpack); ``.plan`` is applied with :func:`apply`,
    then ``.close()`` removes the spooled bytes."""
    from histmig.verbs.unpack import parse_rehome, plan_unpack as plan
    return plan(homes, bundle, parse_rehome(list(rehome)), apply=apply)


# -- the write path ------------------------------------------------------------------------------
def apply(plan: Plan, homes, *, options: ApplyOptions | None = None) -> ApplyResult:
    """Apply a plan through the journaled write path (histmig/apply); undo with :func:`undo`."""
    from histmig.apply import apply_plan
    from histmig.tools import guards_for
    return apply_plan(plan, homes, options=options, guards=guards_for(homes))


def load_plan(data: bytes) -> Plan:
    """A plan written with ``--plan-out``; loading its verb registers its rule for appended lines."""
    from histmig.core.plan import Plan
    plan = Plan.loads(data)
    if plan.op in _VERBS:
        importlib.import_module(_VERBS[plan.op])
    return plan


# The verb behind each plan kind: importing it registers its rule for lines appended after the plan
# was made (histmig/core/tail_rules.py); the write path itself never imports a verb.
_VERBS = {"flip": "histmig.verbs.flip", "move": "histmig.verbs.move"}


def undo(homes, txid: str | None = None, *, force: bool = False, restore_deleted: bool = False,
         dry_run: bool = False, argv: list[str] | None = None) -> UndoResult:
    """Undo a transaction (default: the latest still applied) with an inverse plan (histmig/verbs/undo)."""
    from histmig.verbs.undo.run import undo as run
    return run(homes, txid, force=force, restore_deleted=restore_deleted, dry_run=dry_run, argv=argv)


def recover(homes) -> RecoverResult:
    """Roll back an apply that did not finish."""
    from histmig.apply import recover as run
    return run(homes)


def transactions(homes) -> list[TxInfo]:
    from histmig.apply import transactions as listed
    return listed(homes)


def gc(homes, older_than_s: float, *, apply: bool = False) -> GcResult:
    """Remove (or, by default, list) the backups of old finished transactions."""
    from histmig.apply.gc import gc as run
    return run(homes, older_than_s, apply=apply)


# -- archive and restore (histmig/verbs/archive) -------------------------------------------------------
def archive(homes, *, to: str | None = None, tools: Iterable[str] | None = None,
            on_session: Callable[[Any], None] | None = None) -> Any:
    """Copy every session of every tool (or ``tools``) into the archive, storing only new bytes; an ``ArchiveReport``."""
    from histmig.verbs.archive import run_archive
    return run_archive(homes, to=to, tools=tools, on_session=on_session)


def plan_restore(homes, spec: str | None = None, *, deleted: bool = False, to: str | None = None,
                 tools: Iterable[str] | None = None, data: str = "count", keep_mtime: bool = False) -> Any:
    """Archived sessions back where their clients look for them: a ``Restore`` (``.plan``; ``close()`` removes
    its spool files once applied). ``data``: ``count`` (dry run), ``spool`` (apply), ``memory`` (--plan-out)."""
    from histmig.verbs.archive.restore import plan_restore as plan
    return plan(homes, spec, deleted=deleted, to=to, tools=tools, data=data, keep_mtime=keep_mtime)
