"""The flags every mutating command shares (``apply_options``), without the apply machinery.

A dry run parses these flags but never applies, so this module imports only click: the safety
flags are kept as a plain dict and turned into ``ApplyOptions`` (``histmig.apply``, ~17 ms to
import) only when something asks for them (:func:`current_options`, ``run_plan``).
"""
from __future__ import annotations

import contextlib
import functools
import gc
import sys
from typing import TYPE_CHECKING, Any, Callable

import click

if TYPE_CHECKING:
    from histmig.apply import ApplyOptions

_META_KEY = "histmig.apply_options"
SAFETY_FLAGS = ("follow_symlinks", "break_hardlinks", "allow_appended", "quiet_seconds", "include_active")


def safety_flags(f: Callable) -> Callable:
    for opt in reversed([
        click.option("--follow-symlinks", is_flag=True, help="Rewrite a symlink's target (inside the tool homes only)."),
        click.option("--break-hardlinks", is_flag=True, help="Rewrite files with other hard links (those keep the old bytes)."),
        click.option("--allow-appended", is_flag=True,
                     help="Apply to files that only grew since the plan; the new tail is kept."),
        click.option("--quiet-seconds", type=float, default=None, metavar="N",
                     help="Skip files modified in the last N seconds (an agent may be writing)."),
        click.option("--include-active", is_flag=True, help="Do not skip recently modified files."),
    ]):
        f = opt(f)
    return f


def pop_flags(kwargs: dict) -> dict[str, Any]:
    """Take the safety flags out of a command's kwargs (with the argv they came with)."""
    raw = {name: kwargs.pop(name) for name in SAFETY_FLAGS}
    raw["argv"] = list(sys.argv)
    return raw


def options_from(raw: dict[str, Any]) -> ApplyOptions:
    from histmig.apply import ApplyOptions
    return ApplyOptions(**raw)


GC_YOUNG = 20_000    # the cyclic GC's first threshold while a mutating command runs (Python's default: 700)


@contextlib.contextmanager
def fewer_collections():
    """Fewer cyclic-GC passes while a plan is built, applied or undone (also a decorator). A plan
    and its journal are ~10^5 objects that live to the end (a 2,000-session flip: 27,413 operations,
    one journaled row each); with the default threshold a collection starts every ~700 allocations
    and every tenth of those walks them again: 0.2 s of the flip's apply and 0.5 s of its undo
    (docs/bench.md). Garbage cycles are still collected, at most ``GC_YOUNG`` allocations later,
    so memory stays bounded and flat."""
    old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


def apply_options(f: Callable) -> Callable:
    """Adds --apply, --json, --plan-out and the safety flags. The command receives ``apply``,
    ``as_json`` and ``plan_out``; the safety flags are stored for :func:`current_options`."""
    @functools.wraps(f)
    @fewer_collections()
    def wrapper(*args, **kwargs):
        click.get_current_context().meta[_META_KEY] = pop_flags(kwargs)
        return f(*args, **kwargs)

    wrapper = safety_flags(wrapper)
    wrapper = click.option("--plan-out", type=click.Path(dir_okay=False), default=None,
                           help="Write the plan to FILE (apply it later with `histmig apply FILE`).")(wrapper)
    wrapper = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")(wrapper)
    wrapper = click.option("--apply", "apply", is_flag=True, help="Make the changes (default: dry run).")(wrapper)
    return wrapper


def current_options() -> ApplyOptions:
    """The safety flags of the running command as ``ApplyOptions`` (defaults outside one)."""
    ctx = click.get_current_context(silent=True)
    raw = ctx.meta.get(_META_KEY) if ctx is not None else None
    if raw is None:
        return options_from({"argv": list(sys.argv)})
    if isinstance(raw, dict):            # built once: every caller in this command shares the object
        raw = ctx.meta[_META_KEY] = options_from(raw)
    return raw
