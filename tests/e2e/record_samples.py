"""Regenerate the real-client parts of ``histmig/samples/`` with the e2e harness.

    python -m tests.e2e.record_samples [--target /work/main/histmig/samples] [--only codex|claude-code] [CASE ...]

Every case runs the selected clients (tests/e2e/versions.py; the ``codex/`` and ``claude-code/`` cases
were recorded with ``HISTMIG_E2E_CLIENTS=oldest``, other versions go to ``samples/versions/``) from
scratch in the fixed folder ``/tmp/histmig-rec`` (HOME is ``/tmp/histmig-rec/home``, projects live under
``/tmp/histmig-rec/work/``). That path names nobody, so
the recorded files are kept byte for byte: no path rewriting, and the byte offsets in Codex's
``thread_history_1.sqlite`` stay true. The fake API signs with ``SAMPLES_SECRET``, so a
``FakeAPI(secret=SAMPLES_SECRET)`` accepts the samples' thinking signatures and ``encrypted_content``.

What is copied: for Codex ``sessions/``, ``archived_sessions/``, ``state_5.sqlite`` and
``thread_history_1.sqlite`` (checkpointed into one file each, journal mode DELETE so they open from a
read-only checkout, vacuumed), ``session_index.jsonl``/``history.jsonl`` if present, and ``config.toml`` (port
replaced by 8080); for Claude ``projects/``, ``history.jsonl`` and ``.claude.json`` (its
machine-derived ids zeroed). Credentials, logs and caches are left out.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import sys
from pathlib import Path

import zstandard

from . import tui, versions
from .clients import (Clients, Scratch, codex_session_id, codex_setup, install,
                      run, run_claude, run_codex, client_env)
from .fake_api import FakeAPI

REC_ROOT = Path("/tmp/histmig-rec")
SAMPLES_SECRET = b"histmig-samples-secret-0001-0002"
UNICODE_DIR = ("my app", "データ")


class Ctx:
    def __init__(self, clients: Clients, scratch: Scratch, api: FakeAPI):
        self.clients, self.scratch, self.api = clients, scratch, api

    def codex(self, prompt: str, cwd: Path, **kw):
        return run_codex(self.clients, self.scratch, self.api, prompt, cwd, **kw).check()

    def claude(self, prompt: str, cwd: Path, **kw):
        return run_claude(self.clients, self.scratch, self.api, prompt, cwd, **kw).check()


# -- Codex cases ------------------------------------------------------------------------------------

def codex_plain(c: Ctx):
    c.codex("Say hello in one short sentence.", c.scratch.project("app"))


def codex_tool_reasoning(c: Ctx):
    c.codex("RUN: echo hello from the tool", c.scratch.project("app"))


def codex_resumed(c: Ctx):
    app = c.scratch.project("app")
    c.codex("RUN: ls -a", app)
    c.codex("Thanks. Now summarise what you saw.", app, resume="last")


def codex_unicode_cwd(c: Ctx):
    c.codex("Hello from a folder with a space and データ.", c.scratch.project(*UNICODE_DIR))


def codex_archived(c: Ctx):
    sid = codex_session_id(c.codex("This session gets archived.", c.scratch.project("app")))
    cmd = [str(c.clients.codex), "archive", sid]  # Codex's own archive: moves the file, sets threads.archived
    run(cmd, cwd=c.scratch.home, env=client_env(c.scratch, c.api), api=c.api).check()


def codex_zst(c: Ctx):
    c.codex("This rollout gets compressed.", c.scratch.project("app"))
    for plain in (c.scratch.codex_home / "sessions").rglob("*.jsonl"):
        compress_like_codex(plain)


def compress_like_codex(plain: Path) -> Path:
    """zstd level 3 of the exact bytes, same mtime, plain file removed (codex.md 0.2b)."""
    st = plain.stat()
    out = plain.with_name(plain.name + ".zst")
    out.write_bytes(zstandard.ZstdCompressor(level=3).compress(plain.read_bytes()))
    os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
    plain.unlink()
    return out


CODEX_CASES = {"plain": codex_plain, "tool-reasoning": codex_tool_reasoning, "resumed": codex_resumed,
               "unicode-cwd": codex_unicode_cwd, "archived": codex_archived, "zst": codex_zst}


# -- Claude cases -------------------------------------------------------------------------------------

def claude_plain(c: Ctx):
    c.claude("Say hello in one short sentence.", c.scratch.project("app"))


def claude_tool_thinking(c: Ctx):
    c.claude("RUN: echo hello from the tool", c.scratch.project("app"))


def claude_resumed(c: Ctx):
    app = c.scratch.project("app")
    c.claude("RUN: ls -a", app)
    c.claude("Thanks. Now summarise what you saw.", app, continue_=True)


def claude_unicode_cwd(c: Ctx):
    c.claude("Hello from a folder with a space and データ.", c.scratch.project(*UNICODE_DIR))


def claude_subagent(c: Ctx):
    c.claude("AGENT: list the files in this folder", c.scratch.project("app"), allowed_tools=("Bash", "Agent"))
    if not list((c.scratch.claude_dir / "projects").glob("*/*/subagents/agent-*.jsonl")):
        raise RuntimeError("the Agent tool call produced no subagents/agent-*.jsonl")


def claude_interactive(c: Ctx):
    """Typed into the terminal UI: entrypoint "cli", visible in the ``claude --resume`` picker."""
    tui.record_interactive(c.clients, c.scratch, c.api, c.scratch.project("app"),
                           ["Hello from the interactive UI.", "RUN: echo typed"]).check()


CLAUDE_CASES = {"plain": claude_plain, "tool-thinking": claude_tool_thinking, "resumed": claude_resumed,
                "unicode-cwd": claude_unicode_cwd, "subagent": claude_subagent,
                "interactive": claude_interactive}


# -- export ---------------------------------------------------------------------------------------------

def copy_sqlite(src: Path, dst: Path) -> None:
    """One self-contained file: WAL content folded in, journal mode DELETE."""
    with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as s, sqlite3.connect(dst) as d:
        s.backup(d)
    d.execute("PRAGMA journal_mode=DELETE")
    d.execute("VACUUM")  # drop free pages: same rows, smaller file
    s.close()
    d.close()


def export_codex(home: Path, out: Path) -> None:
    for name in ("sessions", "archived_sessions"):
        if (home / name).is_dir():
            shutil.copytree(home / name, out / name)
    for name in ("state_5.sqlite", "thread_history_1.sqlite"):
        if (home / name).exists():
            copy_sqlite(home / name, out / name)
    for name in ("session_index.jsonl", "history.jsonl"):
        if (home / name).exists():
            shutil.copy2(home / name, out / name)
    config = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:8080", (home / "config.toml").read_text())
    (out / "config.toml").write_text(config)


def export_claude(home: Path, out: Path) -> None:
    shutil.copytree(home / "projects", out / "projects")
    if (home / "history.jsonl").exists():
        shutil.copy2(home / "history.jsonl", out / "history.jsonl")
    data = json.loads((home / ".claude.json").read_text())
    for key in ("machineID", "userID"):
        if isinstance(data.get(key), str):
            data[key] = "0" * len(data[key])
    (out / ".claude.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def record(tool: str, case: str, fn, clients: Clients, target: Path) -> Path:
    shutil.rmtree(REC_ROOT, ignore_errors=True)
    scratch = Scratch(REC_ROOT).create()
    with FakeAPI(secret=SAMPLES_SECRET) as api:
        if tool == "codex":
            codex_setup(clients, scratch, api)
        fn(Ctx(clients, scratch, api))
    out = target / tool / case
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (export_codex if tool == "codex" else export_claude)(
        scratch.codex_home if tool == "codex" else scratch.claude_dir, out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=Path, default=Path(__file__).resolve().parents[2] / "histmig" / "samples")
    ap.add_argument("--only", choices=["codex", "claude-code"])
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args(argv)
    clients = install()
    for tool, cases in (("codex", CODEX_CASES), ("claude-code", CLAUDE_CASES)):
        if args.only and tool != args.only:
            continue
        for case, fn in cases.items():
            if args.cases and case not in args.cases:
                continue
            out = record(tool, case, fn, clients, args.target)
            print(f"{tool}/{case}: {sum(1 for p in out.rglob('*') if p.is_file())} files -> {out}")
    versions_note = f"codex {versions.CODEX}, claude-code {versions.CLAUDE_CODE}"
    print(f"recorded with {versions_note}", file=sys.stderr)
    shutil.rmtree(REC_ROOT, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
