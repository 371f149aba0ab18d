"""The Adapter protocol and the one explicit table of adapters.

Each format module (``histmig/tools/<tool>/adapter.py``) exposes ``ADAPTER``, an object with:

- ``name``: "codex" | "claude-code" | "mini-cc" | "manifest"
- ``lossless_parts``: the Part kinds it stores without loss (used by conversion property tests)
- ``detect(path) -> bool``: cheap test whether a file belongs to this format
- ``discover(homes) -> Iterator[SessionRef]``: lazy; reads at most heads and tails; a broken file
  becomes a ref with ``error`` set, never an exception
- ``read(path_or_ref) -> Session``: the whole session; every line kept (opaque ones too)
- ``serialize(session) -> bytes``: the main file's bytes; records with ``raw`` are emitted verbatim,
  so ``serialize(read(f)) == f.read_bytes()`` for every file of the format
"""
from __future__ import annotations

import importlib
from typing import Any, Iterator

FORMATS = {
    "codex": "histmig.tools.codex.adapter",
    "claude-code": "histmig.tools.claude_code.adapter",
    "mini-cc": "histmig.tools.mini_cc.adapter",
    "manifest": "histmig.tools.manifest.adapter",
}


# Other spellings users type (doctor's finding codes say ``claude.``), each to its canonical name.
ALIASES = {"claude": "claude-code", "claude_code": "claude-code", "claudecode": "claude-code",
           "codex-cli": "codex", "mini_cc": "mini-cc", "minicc": "mini-cc"}


def canonical(name: str) -> str:
    """The canonical tool name for ``name`` or one of its aliases (any case)."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in FORMATS:
        from histmig.core.diagnostics import UsageError
        raise UsageError(f"unknown tool {name!r} (choose from {', '.join(FORMATS)}; "
                         f"also accepted: {', '.join(ALIASES)})")
    return key


def adapter(name: str) -> Any:
    return importlib.import_module(FORMATS[canonical(name)]).ADAPTER


def adapters() -> Iterator[Any]:
    """Every adapter that is available, in table order."""
    for _name, module in FORMATS.items():
        try:
            yield importlib.import_module(module).ADAPTER
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
