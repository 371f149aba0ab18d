"""``histmig flip OLD NEW``: re-label sessions recorded under model provider OLD as NEW.

What a provider is, where a session records it and what else must change with it is a tool's own
knowledge: the verb checks the names, then hands the work to every tool with a ``flip`` hook (the
module ``histmig.tools.<tool>.flip``, docs/ARCHITECTURE.md) and names no tool. A hook module has:

- ``plan_flip(homes, old, new, **options) -> Plan`` (never writes; options as :func:`plan_flip`)
- ``provider_census(homes, archived=...) -> dict`` (``flip --list``)
- ``check_new(homes, new, force=..., set_config=...)``: raise ``toolkit.flip.ProviderTypoError`` for a NEW
  the tool cannot load
- ``check_old(homes, plan, old, new, force=...) -> Warning | None``: after planning, OLD that matched nothing
- ``tail_transform(args) -> (op, data) -> data``: the edit of lines appended after the plan was made

Pure: reads, returns a Plan; the CLI prints. Importing this module registers the flip's rule for
appended lines (core/tail_rules.py), which apply, undo and ``histmig apply plan.json`` rely on.
"""
from __future__ import annotations

from typing import Any

from histmig import tools as registry
from histmig.core import progress, tail_rules
from histmig.core.diagnostics import UsageError, Warning
from histmig.core.plan import Plan


def check_names(old: str, new: str, *, strip_encrypted: bool = False) -> None:
    """Refuse ids no tool could hold, and OLD == NEW unless the flip only strips (``--strip-encrypted``)."""
    for name in (old, new):
        if not name or any(ch.isspace() or ord(ch) < 32 for ch in name):
            raise UsageError(f"invalid provider id {name!r}")
    if old == new and not strip_encrypted:
        raise UsageError("OLD and NEW are the same provider (add --strip-encrypted to strip encrypted "
                         "reasoning from its sessions in place)")


def flip_tools() -> list[str]:
    """The tools with a flip hook, in table order."""
    return [name for name in registry.names() if registry.hook(name, "flip") is not None]


def _hooks() -> list[tuple[str, Any]]:
    out = [(name, registry.hook(name, "flip")) for name in flip_tools()]
    if not out:
        raise UsageError("no tool has a flip hook (histmig/tools/__init__.py)")
    return out


def plan_flip(homes, old: str, new: str, *, archived: bool = True, strip_encrypted: bool = False,
              set_config: bool = False, exact: bool = True, counts_only: bool = False,
              hash_files: bool = True) -> Plan:
    """The flip as one Plan. ``exact=False`` (dry run) decides from what is cheap to read (a rollout's
    line 1) and plans no file patches; ``counts_only`` (with ``exact=False``) counts the database rows
    instead of planning them: such a plan must never be applied. OLD == NEW with ``strip_encrypted``
    strips provider-bound items and changes no provider. ``hash_files=False``: for a plan applied by
    this process and never written out (``Fingerprint.spans``, docs/safety.md)."""
    check_names(old, new, strip_encrypted=strip_encrypted)
    hooks = _hooks()
    plans = []
    for n, (name, hook) in enumerate(hooks, 1):     # each tool's part, like move's (verbs/move)
        progress.note("step", (name, n, len(hooks)))
        plans.append(hook.plan_flip(homes, old, new, archived=archived, strip_encrypted=strip_encrypted,
                                    set_config=set_config, exact=exact, counts_only=counts_only,
                                    **({} if hash_files else {"hash_files": False})))
    return plans[0] if len(plans) == 1 else _merged(plans)


def _merged(plans: list[Plan]) -> Plan:
    """Several tools' flips as one plan: operations, warnings and skips in table order, each summary
    number added up, lists joined, count tables merged."""
    first = plans[0]
    out = Plan(op=first.op, args=first.args, roots=list(dict.fromkeys(r for p in plans for r in p.roots)))
    for p in plans:
        out.operations += p.operations
        out.warnings += p.warnings
        out.skips += p.skips
        for key, value in p.summary.items():
            have = out.summary.get(key)
            if key not in out.summary:
                out.summary[key] = dict(value) if isinstance(value, dict) else value
            elif isinstance(value, bool) or value is None or have is None:
                continue
            elif isinstance(value, (int, list)):
                out.summary[key] = have + value
            elif isinstance(value, dict):
                for k, v in value.items():
                    have[k] = have.get(k, 0) + v
    return out


def provider_census(homes, *, archived: bool = True) -> dict[str, Any]:
    """``flip --list``: the providers in history, with counts. One tool with a flip hook: its census;
    several: ``{"tools": {name: census}}``."""
    found = {name: hook.provider_census(homes, archived=archived) for name, hook in _hooks()}
    return next(iter(found.values())) if len(found) == 1 else {"tools": found}


def check_new(homes, new: str, *, force: bool, set_config: bool) -> None:
    """Refuse (``ProviderTypoError``) a NEW that a tool cannot load; before anything is scanned."""
    for _name, hook in _hooks():
        hook.check_new(homes, new, force=force, set_config=set_config)


def check_old(homes, plan: Plan, old: str, new: str, *, force: bool) -> Warning | None:
    """After planning: refuse an OLD that matched nothing and looks like a typo, else the warning
    that it matched nothing (None when it matched)."""
    found = [w for _name, hook in _hooks() if (w := hook.check_old(homes, plan, old, new, force=force)) is not None]
    return found[0] if found else None


# ---- lines appended between plan and apply --------------------------------------------------

def tail_transform(args: dict[str, Any]):
    """The flip's per-line edit for bytes appended to a file after it was planned (apply's
    ``tail_transform``), by the op's session's tool. ``args`` are the plan's (``old``, ``new``,
    ``strip_encrypted``); a hand-made plan without them raises here, so its appends stay verbatim."""
    _ = (args["old"], args["new"])                  # checked now, not per line
    built: dict[str | None, Any] = {}

    def transform(op, data: bytes) -> bytes:
        tool = (getattr(op, "session", None) or {}).get("tool")
        if tool not in built:
            hook = registry.hook(tool, "flip") if tool in registry.TABLE else None
            built[tool] = hook.tail_transform(args) if hook is not None else None
        edit = built[tool]
        return data if edit is None else edit(op, data)
    return transform


tail_rules.register("flip", lambda plan: tail_transform(plan.args))
