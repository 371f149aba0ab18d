"""Re-key Codex's ``[projects."<path>"]`` trust tables in ``config.toml`` for a project move.

The usual forms (``[projects."/p"]`` headers, ``[projects."/p".x]`` sub-tables and top-level dotted
``projects."/p".k = v`` lines) are edited as text: only the key token changes, so comments, order,
spacing and every other byte stay. Anything else (inline tables, keys inside a ``[projects]`` table,
or a merge with an existing entry for the new path) goes through tomlkit, which keeps comments. Either
way the result is parsed with ``tomllib`` and must equal the intended data, or nothing is written.
"""
from __future__ import annotations

import re
import tomllib
from typing import Callable


from histmig.core.diagnostics import RefusedError, Warning
from histmig.core.plan import Fingerprint, WriteFile
from histmig.tools.codex.config import config_path
from histmig.core.merge import merge_entry

_KEY = r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|[A-Za-z0-9_-]+'
_HEADER = re.compile(rf'^([ \t]*\[[ \t]*projects[ \t]*\.[ \t]*)({_KEY})(?=[ \t]*[.\]])', re.M)
_DOTTED = re.compile(rf'^([ \t]*projects[ \t]*\.[ \t]*)({_KEY})(?=[ \t]*\.)', re.M)


def _decode_key(token: str) -> str | None:
    try:
        return next(iter(tomllib.loads(f"{token} = 0")))
    except (tomllib.TOMLDecodeError, StopIteration):
        return None


def encode_key(key: str, like: str = '"') -> str:
    """A TOML key token for ``key``: literal quotes when the original used them and can hold it."""
    if like.startswith("'") and "'" not in key and not any(ord(c) < 32 or ord(c) == 127 for c in key):
        return f"'{key}'"
    out = []
    for c in key:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 32 or ord(c) == 127:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def plan_rekey(projects: dict, rebase: Callable[[str], str | None], *, force: bool
               ) -> tuple[dict[str, str], dict, list[str]]:
    """``({old: new}, expected projects, conflicts)``."""
    renames = {k: n for k in projects if (n := rebase(k)) is not None and n != k}
    expected: dict = {}
    conflicts: list[str] = []
    for k, v in projects.items():
        if k in renames and renames[k] in projects:
            continue
        if k in renames.values() and k not in renames:
            old = next(o for o, n in renames.items() if n == k)
            v = merge_entry(v, projects[old], f'projects."{k}"', force, conflicts)
        expected[renames.get(k, k)] = v
    return renames, expected, conflicts



def _text_rekey(text: str, renames: dict[str, str]) -> str:
    def sub(m: re.Match) -> str:
        key = _decode_key(m.group(2))
        if key in renames:
            return m.group(1) + encode_key(renames[key], m.group(2))
        return m.group(0)
    return _DOTTED.sub(sub, _HEADER.sub(sub, text))


def _tomlkit_rekey(text: str, renames: dict[str, str], expected: dict) -> str:
    import tomlkit  # noqa: PLC0415 (only the unusual forms: importing it costs a move dry run ~5 ms)
    doc = tomlkit.parse(text)
    table = doc["projects"]
    for old, new in renames.items():
        if new in table and new not in renames:
            for f, v in expected[new].items():
                table[new][f] = v
            del table[old]
        else:
            value = table[old]
            body = table.value.body if hasattr(table, "value") else None
            key = next((k for k, _ in body if k is not None and k.key == old), None) if body else None
            if key is None:
                raise RefusedError(f"cannot re-key projects.{old!r} in config.toml")
            from tomlkit.items import KeyType, SingleKey
            table.value._replace(key, SingleKey(new, t=KeyType.Basic), value)
            if hasattr(value, "display_name"):
                value.display_name = None
    return doc.as_string()


def projects_op(homes, rebase: Callable[[str], str | None], *, force: bool = False
                ) -> tuple[WriteFile | None, list[Warning], int]:
    """The WriteFile re-keying config.toml, its warnings and the number of keys moved."""
    path = config_path(homes)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, [], 0
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise RefusedError(f"config.toml is not valid TOML ({e}); nothing changed", path=str(path)) from None
    projects = data.get("projects")
    if not isinstance(projects, dict):
        return None, [], 0
    renames, expected_projects, conflicts = plan_rekey(projects, rebase, force=force)
    if not renames:
        return None, [], 0
    if conflicts and not force:
        raise RefusedError("config.toml has trust entries for both the old and the new path with different "
                           f"values ({', '.join(conflicts)}); re-run with --force to let the old entry win, "
                           "nothing changed", path=str(path))
    expected = dict(data, projects=expected_projects)
    new_text = _text_rekey(text, renames)
    if _loads(new_text) != expected:
        new_text = _tomlkit_rekey(text, renames, expected_projects)
        if _loads(new_text) != expected:
            raise RefusedError("could not re-key [projects] in config.toml safely; nothing changed", path=str(path))
    warnings = [Warning("config-overwritten", "--force: old values won for " + ", ".join(conflicts),
                        path=str(path))] if conflicts else []
    op = WriteFile(path=str(path), expect=Fingerprint.of(path), new_bytes=new_text.encode("utf-8"),
                   reason=f"{len(renames)} [projects] key(s) re-keyed")
    return op, warnings, len(renames)


def _loads(text: str) -> dict | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
