"""Codex ``apply_patch`` bodies: parse them, render them, and translate to and from Claude's
``Edit``/``Write`` inputs.

Grammar (codex-rs apply-patch)::

    *** Begin Patch
    *** Add File: path          then "+line" lines
    *** Delete File: path
    *** Update File: path       [*** Move to: new] then hunks: "@@ [header]" and " ", "-", "+" lines
    *** End of File             (optional, closes a hunk at EOF)
    *** End Patch

Edit strings are split on "\\n" and joined back with "\\n", so Edit -> patch -> Edit is exact.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import field

from histmig.core.valueclass import FACTORY, value

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
EOF_MARK = "*** End of File"


class PatchError(ValueError):
    """The text is not an apply_patch body this module understands."""


@value
class Hunk:
    header: str = ""                                        # text after "@@ " (a locating line)
    lines: list[tuple[str, str]] = field(default_factory=list)  # (" " | "-" | "+", text)
    eof: bool = False

    def __init__(self, header: str = "", lines: list[tuple[str, str]] = FACTORY, eof: bool = False) -> None:
        self.header = header
        self.lines = [] if lines is FACTORY else lines
        self.eof = eof

    def old(self) -> str:
        return "\n".join(t for tag, t in self.lines if tag in " -")

    def new(self) -> str:
        return "\n".join(t for tag, t in self.lines if tag in " +")


@value
class FileOp:
    kind: str                      # "add" | "delete" | "update"
    path: str
    move_to: str | None = None
    content: str = ""              # add: the new file's text
    hunks: list[Hunk] = field(default_factory=list)

    def __init__(self, kind: str, path: str, move_to: str | None = None, content: str = "",
                 hunks: list[Hunk] = FACTORY) -> None:
        self.kind = kind
        self.path = path
        self.move_to = move_to
        self.content = content
        self.hunks = [] if hunks is FACTORY else hunks


def _strip_heredoc(text: str) -> str:
    """Accept the body as Codex's shell form passes it (``apply_patch <<'EOF' ... EOF``)."""
    start = text.find(BEGIN)
    end = text.rfind(END)
    if start < 0 or end < start:
        raise PatchError("no *** Begin Patch / *** End Patch")
    return text[start:end + len(END)]


def parse_patch(text: str) -> list[FileOp]:
    lines = _strip_heredoc(text).split("\n")
    ops: list[FileOp] = []
    i = 1
    while i < len(lines) and lines[i].rstrip("\r") != END:
        line = lines[i].rstrip("\r")
        if line.startswith(ADD):
            op = FileOp("add", line[len(ADD):].strip())
            i += 1
            body = []
            while i < len(lines) and lines[i].startswith("+"):
                body.append(lines[i][1:])
                i += 1
            op.content = "".join(b + "\n" for b in body)
            ops.append(op)
        elif line.startswith(DELETE):
            ops.append(FileOp("delete", line[len(DELETE):].strip()))
            i += 1
        elif line.startswith(UPDATE):
            op = FileOp("update", line[len(UPDATE):].strip())
            i += 1
            if i < len(lines) and lines[i].startswith(MOVE):
                op.move_to = lines[i][len(MOVE):].strip()
                i += 1
            i = _parse_hunks(lines, i, op)
            ops.append(op)
        elif not line.strip():
            i += 1
        else:
            raise PatchError(f"unexpected line {i + 1}: {line[:60]!r}")
    if not ops:
        raise PatchError("empty patch")
    return ops


def _parse_hunks(lines: list[str], i: int, op: FileOp) -> int:
    hunk: Hunk | None = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("*** ") and line.rstrip("\r") != EOF_MARK:
            break
        if line.rstrip("\r") == EOF_MARK:
            if hunk is not None:
                hunk.eof = True
        elif line.startswith("@@"):
            hunk = Hunk(header=line[2:].strip())
            op.hunks.append(hunk)
        else:
            if hunk is None:             # Codex accepts a first hunk without "@@"
                hunk = Hunk()
                op.hunks.append(hunk)
            tag = line[:1] if line[:1] in (" ", "-", "+") else " "
            hunk.lines.append((tag, line[1:] if line[:1] in (" ", "-", "+") else line))
        i += 1
    if not op.hunks:
        raise PatchError(f"update of {op.path} has no hunks")
    return i


def render_patch(ops: list[FileOp]) -> str:
    out = [BEGIN]
    for op in ops:
        if op.kind == "add":
            out.append(ADD + op.path)
            if op.content:
                body = op.content[:-1] if op.content.endswith("\n") else op.content
                out.extend("+" + ln for ln in body.split("\n"))
        elif op.kind == "delete":
            out.append(DELETE + op.path)
        else:
            out.append(UPDATE + op.path)
            if op.move_to:
                out.append(MOVE + op.move_to)
            for h in op.hunks:
                out.append("@@" + (" " + h.header if h.header else ""))
                out.extend(tag + text for tag, text in h.lines)
                if h.eof:
                    out.append(EOF_MARK)
    out.append(END)
    return "\n".join(out) + "\n"


def hunk_from_strings(old: str, new: str) -> Hunk:
    """The line diff of ``old`` -> ``new``; ``hunk.old() == old`` and ``hunk.new() == new``."""
    a, b = old.split("\n"), new.split("\n")
    hunk = Hunk()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            hunk.lines.extend((" ", t) for t in a[i1:i2])
            continue
        hunk.lines.extend(("-", t) for t in a[i1:i2])
        hunk.lines.extend(("+", t) for t in b[j1:j2])
    return hunk


def hunk_from_structured(patch: dict) -> Hunk | None:
    """A hunk from Claude's ``toolUseResult.structuredPatch`` entry (whole lines, real context)."""
    lines = patch.get("lines") if isinstance(patch, dict) else None
    if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
        return None
    hunk = Hunk()
    for ln in lines:
        if ln.startswith("\\"):          # "\ No newline at end of file"
            continue
        tag = ln[:1] if ln[:1] in (" ", "-", "+") else " "
        hunk.lines.append((tag, ln[1:] if ln[:1] in (" ", "-", "+") else ln))
    return hunk if hunk.lines else None


def to_abs(path: str, cwd: str | None) -> str:
    if os.path.isabs(path) or not cwd:
        return path
    return os.path.normpath(os.path.join(cwd, path))


def to_rel(path: str, cwd: str | None) -> str:
    """apply_patch paths are relative to the session's cwd when the file lies below it."""
    if cwd and os.path.isabs(path):
        root = cwd.rstrip("/") + "/"
        if path.startswith(root):
            return path[len(root):]
    return path
