"""Short flags spelt long before click parses them (``-q`` → ``--quiet``), for start-up (issues 15, 16).

click's parser tries every ``-x`` as a long option first and only on the ``NoSuchOption`` it raises goes
on to the short ones; building that exception imports ``difflib`` and asks ``gettext`` for its message
(about 1 ms of a 60 ms start-up; every bench command runs ``histmig -q ...``). An exact token naming a
flag (no value) means the same under either of its names, so it is handed over by its first long name.
Anything this cannot read for sure (a short cluster ``-qv``, an unknown or optional-value option, ``--``)
ends the rewriting: the rest goes to click as typed. docs/bench.md, "Start-up"."""
from __future__ import annotations

import click

_STOP = object()   # a token after which the parse cannot be followed here


def spell_long(args: list[str], command: click.Command) -> list[str]:
    """``args`` with each exact short name of a flag of ``command`` replaced by the flag's first long name,
    following click's own reading: a value-taking option's values are skipped, never rewritten, and where
    the command takes no option after an argument (a group: its command's name) the rewriting ends there."""
    names = _names(command.params)
    out = list(args)
    i = 0
    while i < len(out):
        arg = out[i]
        if not arg.startswith("-") or arg == "-":      # an argument
            if not command.allow_interspersed_args:
                break
            i += 1
            continue
        kind = names.get(arg.split("=", 1)[0] if arg.startswith("--") else arg, _STOP)
        if kind is _STOP:
            break
        if isinstance(kind, str):
            out[i] = kind
            i += 1
        else:                                          # takes `kind` values: next tokens, or one after "="
            i += 1 if "=" in arg else 1 + kind
    return out


def _names(params: list) -> dict[str, object]:
    """option name -> the long name to write (a short flag), the number of values it takes, or _STOP."""
    names: dict[str, object] = {}
    for p in params:
        if not isinstance(p, click.Option):
            continue
        every = p.opts + p.secondary_opts
        if p.is_flag or p.count:
            long = next((n for n in p.opts if n.startswith("--")), None)
            for n in every:
                names[n] = long if long and _is_short(n) and n in p.opts else 0
        elif getattr(p, "_flag_needs_value", False) or p.nargs < 1:
            for n in every:
                names[n] = _STOP                       # an optional value: click looks at the next token
        else:
            for n in every:
                names[n] = p.nargs
    return names


def _is_short(name: str) -> bool:
    return len(name) == 2 and name[0] == "-" and name[1] != "-"
