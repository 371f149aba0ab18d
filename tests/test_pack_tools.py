"""pack / unpack of the tools beside Codex and Claude Code (docs/pack.md): each tool's bundled samples packed
in home A and unpacked with ``--rehome`` into home B land where the client looks for them (Pi's and Qwen's
folder named after the new cwd, Gemini's slug folder the local Gemini uses for the project) and scan lists
them under the new cwd. tests/e2e/test_pack_more_e2e.py does the same with the real clients."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from test_pack import cli
from histmig.cli.samples import install
from histmig.tools.gemini import files as gemfiles
from histmig.tools.pi.layout import pi_slug
from histmig.tools.qwen.adapter import qwen_slug

TOOLS = ("pi", "qwen", "gemini", "copilot", "cline", "opencode")


def pack(capsys, tmp_path: Path, tool: str) -> Path:
    a = tmp_path / "A"
    install(a, tools=(tool,))
    bundle = tmp_path / f"{tool}.tar.zst"
    code, out, err = cli(capsys, "--home", str(a), "pack", "--tool", tool, "--all", "-o", str(bundle))
    assert code == 0, out + err
    return bundle


def rec(capsys, tmp_path: Path, tool: str) -> str:
    """The folder the tool's samples were recorded under (``/tmp/histmig-rec-<tool>/work``, ...)."""
    return os.path.commonpath([s["cwd"] for s in scanned(capsys, tmp_path / "A", tool)])


def unpack(capsys, b: Path, bundle: Path, old: str) -> str:
    b.mkdir(exist_ok=True)
    code, out, err = cli(capsys, "--home", str(b), "unpack", str(bundle), "--rehome", f"{old}={b / 'code'}", "--apply")
    assert code == 0, out + err
    return out


def scanned(capsys, b: Path, tool: str) -> list[dict]:
    code, out, err = cli(capsys, "--home", str(b), "scan", "--tool", tool, "--json")
    assert code == 0, out + err
    return json.loads(out)["sessions"]


def opencode_db(home: Path) -> None:
    """An OpenCode database with the client's schema and no session (OpenCode ran once here)."""
    import shutil
    import sqlite3
    src = next(Path(__file__).resolve().parents[1].joinpath("histmig", "samples", "opencode").rglob("opencode.db"))
    dst = home / ".local" / "share" / "opencode" / "opencode.db"
    dst.parent.mkdir(parents=True)
    shutil.copyfile(src, dst)
    with sqlite3.connect(dst) as con:
        for table in ("part", "message", "session", "project"):
            con.execute(f"DELETE FROM {table}")


@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_unpacked_with_rehome_is_listed_under_the_new_cwd(capsys, isolated_homes, tmp_path, tool):
    bundle = pack(capsys, tmp_path, tool)
    before, old = scanned(capsys, tmp_path / "A", tool), rec(capsys, tmp_path, tool)
    b = tmp_path / "B"
    if tool == "opencode":
        opencode_db(b)
    unpack(capsys, b, bundle, old)
    after = scanned(capsys, b, tool)
    assert sorted(s["id"] for s in after) == sorted(s["id"] for s in before)
    assert all(s["cwd"] == s0["cwd"].replace(old, str(b / "code"), 1) for s0 in before for s in after
               if s["id"] == s0["id"]), (before, after)


def test_pi_sessions_go_to_the_folder_of_the_new_cwd(capsys, isolated_homes, tmp_path):
    bundle = pack(capsys, tmp_path, "pi")
    b = tmp_path / "B"
    unpack(capsys, b, bundle, rec(capsys, tmp_path, "pi"))
    folders = {p.parent.name for p in (b / ".pi" / "agent" / "sessions").rglob("*.jsonl")}
    cwds = {s["cwd"] for s in scanned(capsys, b, "pi")}
    assert folders == {pi_slug(c) for c in cwds} and all(c.startswith(str(b / "code")) for c in cwds)


def test_qwen_sessions_go_to_the_folder_of_the_new_cwd(capsys, isolated_homes, tmp_path):
    bundle = pack(capsys, tmp_path, "qwen")
    b = tmp_path / "B"
    unpack(capsys, b, bundle, rec(capsys, tmp_path, "qwen"))
    chats = list((b / ".qwen" / "projects").rglob("*.jsonl"))
    assert chats and all(p.parent.name in ("chats", "archive") for p in chats)
    folders = {p.parents[1 if p.parent.name == "chats" else 2].name for p in chats}
    assert folders == {qwen_slug(s["cwd"]) for s in scanned(capsys, b, "qwen")}


def gemini_projects(capsys, b: Path) -> dict[str, str]:
    """cwd -> the slug folder its sessions are in (and its marker names the cwd)."""
    out = {}
    for s in scanned(capsys, b, "gemini"):
        slug = Path(s["path"]).parents[1]
        assert gemfiles.read_marker(slug / gemfiles.MARKER) == s["cwd"]
        out[s["cwd"]] = slug.name
    return out


def test_gemini_sessions_keep_their_slug_in_an_empty_home(capsys, isolated_homes, tmp_path):
    bundle = pack(capsys, tmp_path, "gemini")
    packed = {p.name for p in (tmp_path / "A" / ".gemini" / "tmp").iterdir()}
    b = tmp_path / "B"
    unpack(capsys, b, bundle, rec(capsys, tmp_path, "gemini"))
    assert set(gemini_projects(capsys, b).values()) <= packed


def test_gemini_session_beside_a_local_project_of_the_same_slug_gets_the_next_one(capsys, isolated_homes, tmp_path):
    bundle = pack(capsys, tmp_path, "gemini")
    b = tmp_path / "B"
    gdir = b / ".gemini"
    taken = {p.name for p in (tmp_path / "A" / ".gemini" / "tmp").iterdir()}
    for slug in taken:                                   # B's own projects hold every packed slug
        (gdir / "tmp" / slug).mkdir(parents=True)
        (gdir / "tmp" / slug / gemfiles.MARKER).write_text(f"/elsewhere/{slug}")
    own = {p: p.read_bytes() for p in gdir.rglob("*") if p.is_file()}
    unpack(capsys, b, bundle, rec(capsys, tmp_path, "gemini"))
    assert {p: p.read_bytes() for p in own} == own        # B's markers untouched
    projects = gemini_projects(capsys, b)
    assert projects and not set(projects.values()) & taken
    assert all(slug.startswith(gemfiles.slug_of(cwd)) for cwd, slug in projects.items())


def test_gemini_session_goes_to_the_slug_the_local_registry_names(capsys, isolated_homes, tmp_path):
    bundle = pack(capsys, tmp_path, "gemini")
    old = rec(capsys, tmp_path, "gemini")
    cwds = {s["cwd"].replace(old, str(tmp_path / "B" / "code"), 1) for s in scanned(capsys, tmp_path / "A", "gemini")}
    b = tmp_path / "B"
    gdir = b / ".gemini"
    gdir.mkdir(parents=True)
    registry = {cwd: f"mine-{i}" for i, cwd in enumerate(sorted(cwds))}
    (gdir / "projects.json").write_text(json.dumps({"projects": registry}))
    unpack(capsys, b, bundle, rec(capsys, tmp_path, "gemini"))
    projects = {s["cwd"]: Path(s["path"]).parents[1].name for s in scanned(capsys, b, "gemini")}
    assert projects == registry
