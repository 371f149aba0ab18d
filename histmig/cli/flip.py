"""``histmig flip OLD NEW``: move Codex sessions from one model provider to another."""
from __future__ import annotations

import click

from histmig.cli.common import emit_json, info, planning_progress, print_warnings
from histmig.cli.jsonout import envelope
from histmig.core.diagnostics import EXIT_OK, EXIT_SKIPPED, UsageError
from histmig.cli.tx_options import apply_options

# The planner and the apply machinery are imported where they are used: a dry run is measured
# against `find | head -qn1` (docs/bench.md), and apply's imports alone would cost a third of that.

EXAMPLES = """

\b
Examples:
  histmig flip --list
  histmig flip openai my-provider                 # dry run: what would change
  histmig flip openai my-provider --apply --set-config
  histmig flip openai my-provider --apply --strip-encrypted
  histmig flip openai openai --apply --strip-encrypted   # strip in place, provider unchanged
  histmig flip openai my-provider --force         # NEW not defined in config.toml yet
"""


@click.command("flip", help="Re-label Codex sessions recorded under provider OLD as NEW, in the rollouts "
               "and in every state database, so Codex lists and resumes them under NEW." + EXAMPLES)
@click.argument("old", required=False)
@click.argument("new", required=False)
@click.option("--list", "list_only", is_flag=True, help="Show the providers present in history, with counts.")
@click.option("--no-archived", is_flag=True, help="Leave archived_sessions/ alone.")
@click.option("--strip-encrypted", is_flag=True,
              help="Retype reasoning/compaction items with encrypted content (bound to the old backend) so Codex "
                   "stops sending them; the line stays, the blob goes (docs/codex.md); reported per file. "
                   "With OLD = NEW it only strips.")
@click.option("--set-config", is_flag=True, help='Also set model_provider = "NEW" in config.toml (comments kept).')
@click.option("--exact", is_flag=True, help="Dry run: compute every byte edit (reads whole files).")
@click.option("--force", is_flag=True, help="Flip to a NEW that config.toml does not define (resume fails until "
              "it is defined), or from an OLD that looks like a typo.")
@apply_options
@click.pass_obj
def command(ctx, old, new, list_only, no_archived, strip_encrypted, set_config, exact, force, apply, as_json,
            plan_out):
    if list_only:
        return _list(ctx, as_json, archived=not no_archived)
    if not old or not new:
        raise UsageError("flip needs OLD and NEW (or --list)")
    # a plan that will be applied needs every byte edit; so does stripping in place (OLD == NEW)
    exact = exact or apply or bool(plan_out) or old == new
    from histmig import api
    api.check_flip_names(old, new, strip_encrypted=strip_encrypted)
    given = {"--no-archived": no_archived, "--strip-encrypted": strip_encrypted, "--set-config": set_config,
             "--exact": exact and not apply, "--apply": apply}
    typo = 1                                      # which of (OLD, NEW) a ProviderTypoError is about
    try:
        api.check_flip_new(ctx.homes, new, force=force, set_config=set_config)   # typos refused before any scan
        typo = 0
        with planning_progress(ctx, enabled=exact and not as_json):     # a head-only dry run is quick
            plan = api.plan_flip(ctx.homes, old, new, archived=not no_archived, strip_encrypted=strip_encrypted,
                                 set_config=set_config, exact=exact, counts_only=not exact,
                                 hash_files=bool(plan_out))    # a plan written out is checked by hashes
        if (absent := api.check_flip_old(ctx.homes, plan, old, new, force=force)) is not None:
            plan.warnings.append(absent)
    except api.ProviderTypoError as e:
        _suggest(e, [old, new], typo, given)
        raise
    if not exact:                                 # head-only dry run: counts, rows, a sample
        if as_json:
            emit_json(envelope("flip", {"dry_run": True, "plan": plan_summary(plan, rows_counted=True), "result": None}))
        else:
            render(ctx, plan)
            print_warnings([*plan.warnings, *plan.skips])
            info(ctx, "dry run: nothing was written; add --apply to flip")
        return EXIT_SKIPPED if plan.skips else EXIT_OK
    if apply and not as_json:
        info(ctx, headline(plan, doing=True))
    from histmig.cli.tx import run_plan
    return run_plan(ctx, plan, apply=apply, as_json=as_json, plan_out=plan_out,
                    render_dry_run=lambda p: render(ctx, p))


def _suggest(e, names: list[str], typo: int, given: dict) -> None:
    """Add the corrected command line to a typo's error (the home flags join it when printed)."""
    if not e.suggestion:
        return
    import shlex
    names[typo] = e.suggestion
    words = ["histmig", "flip", *names, *[flag for flag, on in given.items() if on]]
    e.args = (f"{e}\n  did you mean: {shlex.join(words)}",)


def plan_summary(plan, *, rows_counted: bool = False) -> dict:
    """``rows_counted``: a ``counts_only`` plan, whose row updates are in ``summary["state_rows"]``
    rather than in ``operations``; ``operations`` is the number a full plan would hold."""
    ops = len(plan.operations) + (plan.summary["state_rows"] if rows_counted else 0)
    from histmig.cli import jsonout
    return jsonout.plan_summary(plan, operations=ops)


def headline(plan, *, doing: bool = False) -> str:
    s = plan.summary
    strip_only = bool(s.get("strip_only"))        # flip X X --strip-encrypted
    verb = ("stripping" if doing else "would strip") if strip_only else "flipping" if doing else "would flip"
    what = "encrypted items in " if strip_only else ""
    text = (f"{verb} {what}{s['sessions']:,} session{'s' * (s['sessions'] != 1)} "
            f"({s['compressed']} compressed, {s['archived']} archived)")
    if strip_only:
        text += f" of {s['provider_sessions']:,} recorded under {plan.args['old']!r}"
    if plan.skips:
        reasons = sorted({k.code for k in plan.skips})
        text += f"; {len(plan.skips)} skipped: {', '.join(reasons)}"
    if not strip_only:
        text += f"; state db: {s['state_rows']:,} row{'s' * (s['state_rows'] != 1)}"
    if s.get("offset_rows"):
        text += f"; thread history offsets: {s['offset_rows']:,} row(s)"
    return text


def render(ctx, plan) -> None:
    s = plan.summary
    args = plan.args
    info(ctx, headline(plan))
    if s["other_providers"]:
        others = ", ".join(f"{k} {v:,}" for k, v in s["other_providers"].items())
        info(ctx, f"left alone (other providers): {others}")
    if s.get("assumed_note") and s["assumed_provider"]:
        info(ctx, f"{s['assumed_provider']:,} of them have no recorded provider; {s['assumed_note']}")
    if s["exact"]:
        info(ctx, f"files: {s['files_in_place']:,} patched in place (same length), "
                  f"{s['files_rewritten']:,} rewritten (offsets shifted)")
    else:
        info(ctx, f"line 1 of each file changes by {len(args['new']) - len(args['old']):+d} bytes "
                  "(exact edits are computed on --apply or --exact)")
    shown = s["sample"][: 5 if not ctx.verbose else 10]
    from histmig.core.ids import unique_prefixes
    short = unique_prefixes([item["id"] for item in shown])
    width = max((len(v) for v in short.values()), default=0)
    for item in shown:
        flags = [f for f in ("compressed", "archived") if item[f]]
        info(ctx, f"  {short[item['id']]:<{width}}  {item['path']}" + (f"  ({', '.join(flags)})" if flags else ""))
    if (more := s["sessions"] - len(shown)) > 0:
        hint = "; -v lists up to 10" if not ctx.verbose and len(s["sample"]) > len(shown) else ""
        info(ctx, f"  ... and {more:,} more file{'s' * (more != 1)}{hint}")


def _list(ctx, as_json: bool, *, archived: bool) -> int:
    from histmig import api
    c = api.providers(ctx.homes, archived=archived)
    if as_json:
        emit_json(envelope("flip.list", c))
        return 0
    info(ctx, f"configured provider: {c['configured']}")
    info(ctx, "sessions by recorded provider (rollout files):")
    for name, n in c["files"].items():
        mark = "" if name in c["known"] or name.startswith("(") else "   (not defined in config.toml)"
        info(ctx, f"  {name:<24} {n:>7,}{mark}")
    if c["assumed"]:
        info(ctx, f"  ({c['assumed']:,} without a recorded provider, counted as {c['configured']})")
    for db, counts in c["state_dbs"].items():
        info(ctx, f"{db}: " + (", ".join(f"{k} {v:,}" for k, v in counts.items()) or "no threads"))
    return 0
