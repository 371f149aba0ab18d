"""Typos refused before anything is written (issue 12, case 7).

``flip openai my-provder --apply`` used to write and exit 0, leaving every flipped session under a
provider Codex cannot load ("Model provider `my-provder` not found"; verified with Codex 0.171.0:
built-in ids are exactly ``codex_config.BUILTIN_PROVIDERS``, ``oss`` is not one). So:

* NEW must be built in or defined under ``[model_providers.<id>]`` in config.toml, or the user
  passes ``--force``; ``--set-config`` to an undefined NEW is refused even then, because Codex would
  then fail on every command, not just on the flipped sessions.
* OLD that no session or threads row records, with a close match among the providers present, is
  refused as a probable typo (``--force`` plans it anyway: it flips nothing).

Pure: reads config and plan data, raises :class:`~histmig.toolkit.flip.ProviderTypoError`; the CLI
prints it. ``cfg`` (config.toml as loaded) is read here when the caller has not loaded it already.
"""
from __future__ import annotations

from histmig.core.diagnostics import Warning
from histmig.toolkit.flip import ProviderTypoError, did_you_mean
from histmig.tools.codex import config as codex_config
from histmig.tools.codex import state as codex_state


def known_providers(cfg: dict) -> list[str]:
    """Built-in ids first (Codex's order), then the ones config.toml defines, sorted."""
    defined = sorted(set(codex_config.defined_providers(cfg)) - set(codex_config.BUILTIN_PROVIDERS))
    return [*codex_config.BUILTIN_PROVIDERS, *defined]


def check_new(homes, new: str, *, force: bool, set_config: bool, cfg: dict | None = None) -> None:
    """Refuse a NEW that Codex cannot load (see the module doc for ``force`` and ``set_config``)."""
    cfg = codex_config.load_config(homes) if cfg is None else cfg
    if codex_config.is_known_provider(cfg, new):
        return
    if force and not set_config:
        return
    known = known_providers(cfg)
    hint = did_you_mean(new, known)
    defined = known[len(codex_config.BUILTIN_PROVIDERS):]
    text = (f"{new!r} is not a provider Codex knows (built in: {', '.join(codex_config.BUILTIN_PROVIDERS)}; "
            f"defined in config.toml: {', '.join(defined) or 'none'})")
    text += f"; did you mean {hint!r}?" if hint else "."
    if set_config:
        text += (f" --set-config would make Codex fail on every command (\"Model provider `{new}` not found\"); "
                 f"define [model_providers.{new}] in config.toml first. Nothing was written")
    else:
        text += (f" The flipped sessions would not load (\"Model provider `{new}` not found\"); define "
                 f"[model_providers.{new}] in config.toml first, or pass --force. Nothing was written")
    path = codex_config.config_path(homes)
    raise ProviderTypoError(text, known=known, suggestion=hint, path=path)


def present_providers(homes, cfg: dict, summary: dict) -> dict[str, int]:
    """Providers recorded in the rollouts (from the plan's census) and in the threads rows."""
    present: dict[str, int] = dict(summary.get("other_providers") or {})
    for db in codex_state.state_dbs(homes, cfg):
        for value in codex_state.thread_providers(db).values():
            if isinstance(value, str) and value:
                present.setdefault(value, 0)
    return present


def old_absent(plan) -> bool:
    """True when OLD matched nothing: no session flipped, none skipped as OLD's (census skips of
    unreadable files say nothing about OLD), and no threads row left saying OLD."""
    s = plan.summary
    if s.get("sessions") or s.get("state_rows") or s.get("provider_sessions"):
        return False
    if any(k.code != "unreadable" for k in plan.skips):
        return False
    return not any(w.code == "row-not-flipped" for w in plan.warnings)


def check_old(homes, plan, old: str, new: str, *, force: bool, cfg: dict | None = None) -> Warning | None:
    """After planning: OLD that matched nothing is refused when a present provider is close to it
    (a typo), else reported as a warning (``old-provider-absent``, e.g. a re-run after a flip)."""
    if not old_absent(plan):
        return None
    cfg = codex_config.load_config(homes) if cfg is None else cfg
    present = present_providers(homes, cfg, plan.summary)
    listed = ", ".join(sorted(present)) or "none"
    hint = did_you_mean(old, [p for p in present if p != new])
    if hint and not force:
        raise ProviderTypoError(f"no session or threads row is recorded under {old!r}; did you mean {hint!r}? "
                                f"providers present: {listed} (pass --force to plan it anyway)",
                                known=sorted(present), suggestion=hint)
    return Warning("old-provider-absent", f"no session or threads row is recorded under {old!r}; "
                   f"providers present: {listed}" + (f"; did you mean {hint!r}?" if hint else ""))
