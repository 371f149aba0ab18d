"""Issue 13: adding a tool touches one folder plus one row of the tool table (histmig/tools/__init__.py).

A toy tool lives in a package written to tmp_path; one ``register`` call makes ``scan``, ``show`` and
``move`` work for it, through the library and through the CLI, with no other module edited.
"""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from histmig import tools as registry
from histmig.tools import resolve_homes

ADAPTER = '''
"""A toy history format: ``~/.toy/<id>.jsonl``, one ``{"cwd": ..., "role": ..., "text": ...}`` per line."""
import json
from pathlib import Path

from histmig.core.model import Record, Session, SessionRef, Text
from histmig.tools.base import FunctionAdapter

NAME = "toy"


def detect(path):
    return Path(path).suffix == ".jsonl" and Path(path).parent.name == ".toy"


def discover(homes):
    for path in sorted((homes.home / ".toy").glob("*.jsonl")):
        first = json.loads(path.read_text().splitlines()[0])
        st = path.stat()
        yield SessionRef(format=NAME, id=path.stem, path=path, cwd=first["cwd"], updated=st.st_mtime,
                         size=st.st_size, title=first["text"])


def read(ref):
    path = Path(getattr(ref, "path", ref))
    records = [Record(kind="message", role=o["role"], parts=[Text(o["text"])])
               for o in map(json.loads, path.read_text().splitlines())]
    return Session(id=path.stem, format=NAME, path=path, cwd=records and json.loads(
        path.read_text().splitlines()[0])["cwd"], records=records)


def serialize(session):
    return session.path.read_bytes()


ADAPTER = FunctionAdapter(NAME, frozenset({"text"}), detect=detect, discover=discover, read=read,
                          serialize=serialize)
'''

MOVE = '''
"""The toy's part of a project move: ``cwd`` of every line rewritten in place."""
import os

from histmig.toolkit.move.common import field_at, scan_file


def line_fields(obj, pm):
    return field_at(obj, ("cwd",), pm) if isinstance(obj, dict) else []


def plan(homes, pm, plans, opts):
    tplan = plans["toy"]
    folder = homes.home / ".toy"
    for name in sorted(os.listdir(folder)) if folder.is_dir() else []:
        scan = scan_file(str(folder / name), pm, line_fields, rewrite_content=opts["rewrite_content"])
        tplan.add_scan(scan, session={"tool": "toy", "id": name[:-6]}, reason="project move")
'''

UNDO = '''
"""The toy's part of undo: its client "archives" a session into ``~/.toy/archive/``."""
import os

from histmig.toolkit.undo import UndoHook


class ToyUndo(UndoHook):
    def relocator(self, homes):
        archive = homes.home / ".toy" / "archive"
        return lambda path: str(archive / os.path.basename(path)) if (archive / os.path.basename(path)).exists() else None


UNDO = ToyUndo()
'''

SID = "70790000-0000-4000-8000-000000000001"


@pytest.fixture
def toy(tmp_path, monkeypatch, isolated_homes):
    """The toy package on sys.path, registered by one table call; the table restored afterwards."""
    pkg = tmp_path / "pkgs" / "toytool"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "adapter.py").write_text(textwrap.dedent(ADAPTER))
    (pkg / "move.py").write_text(textwrap.dedent(MOVE))
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    monkeypatch.setattr(registry, "TABLE", dict(registry.TABLE))
    registry.register(registry.Tool("toy", "toytool", lambda homes: homes.home / ".toy", aliases=("toy-cli",)))
    yield resolve_homes()
    for name in [m for m in sys.modules if m == "toytool" or m.startswith("toytool.")]:
        del sys.modules[name]


@pytest.fixture
def toy_session(toy, tmp_path):
    old = tmp_path / "work" / "app"
    old.mkdir(parents=True)
    lines = [{"cwd": str(old), "role": "user", "text": "make the toy"},
             {"cwd": str(old), "role": "assistant", "text": "the toy is made"}]
    path = toy.home / ".toy" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    return toy, old, path


def test_a_registered_tool_is_scanned_shown_and_moved_by_the_library(toy_session):
    from histmig.tools.catalog import discover_all, resolve
    from histmig.verbs.move import plan_move
    homes, old, path = toy_session
    assert "toy" in registry.names() and registry.canonical("TOY-CLI") == "toy"
    [ref] = [r for r in discover_all(homes) if r.format == "toy"]
    assert ref.id == SID and ref.cwd == str(old)
    assert list(discover_all(homes, ["toy"])) == [ref]
    assert resolve(homes, SID[:12]).path == path
    assert [r.parts[0].text for r in registry.adapter("toy").read(ref).records] == ["make the toy", "the toy is made"]

    plan = plan_move(homes, str(old), str(old.parent / "moved"), tools=["toy"])
    assert plan.summary["tools"] == {"toy": {"files": 1, "fields": 2, "skipped": 0}}
    assert [op.paths()[0] for op in plan.operations] == [str(path)]
    assert str(homes.home / ".toy") in plan.roots
    everyone = plan_move(homes, str(old), str(old.parent / "moved"))
    assert list(everyone.summary["tools"]) == [*registry.names()]


def test_a_registered_tool_is_scanned_shown_and_moved_by_the_cli(toy_session):
    from clirun import histmig
    homes, old, path = toy_session
    r = histmig("scan", "--tool", "toy", "--json")
    assert r.exit_code == 0, r.stderr
    assert [(s["tool"], s["id"]) for s in json.loads(r.stdout)["sessions"]] == [("toy", SID)]
    r = histmig("show", "--tool", "toy-cli", SID[:8])
    assert r.exit_code == 0 and "make the toy" in r.stdout and "the toy is made" in r.stdout, r.stderr
    assert "toy" in histmig("move", "--help").stdout

    before = path.read_bytes()
    new = old.parent / "moved"
    r = histmig("move", old, new, "--tool", "toy", "--apply")
    assert r.exit_code == 0, r.stderr
    assert path.read_bytes() == before.replace(str(old).encode(), str(new).encode())
    r = histmig("undo")
    assert r.exit_code == 0, r.stderr
    assert path.read_bytes() == before


def test_a_registered_tools_undo_hook_gets_its_part_of_undo(toy_session, tmp_path):
    """Undo asks every tool's undo hook (histmig/toolkit/undo.py) where its client moved a file since:
    the toy archived its session after the move, and undo follows it there."""
    from histmig.apply import apply_plan
    from histmig.verbs.move import plan_move
    from histmig.verbs.undo.run import undo
    homes, old, path = toy_session
    (tmp_path / "pkgs" / "toytool" / "undo.py").write_text(textwrap.dedent(UNDO))
    before = path.read_bytes()
    apply_plan(plan_move(homes, str(old), str(old.parent / "moved"), tools=["toy"]), homes)
    archived = path.parent / "archive" / path.name
    archived.parent.mkdir()
    path.rename(archived)
    out = undo(homes)
    assert out.exit_code == 0 and not out.skips
    assert archived.read_bytes() == before and not path.exists()


def test_every_hook_is_imported_only_when_asked_for(toy):
    """The table imports nothing itself; a tool without a hook module has no part in that verb."""
    assert "toytool.move" not in sys.modules
    assert registry.hook("toy", "writer") is None and registry.hook("toy", "doctor") is None
    assert registry.hook("toy", "move") is not None and "toytool.move" in sys.modules


TOY_FLIP = '''
"""The toy's flip hook: it records no provider, so it plans nothing but says so."""
from histmig.core.plan import Plan


def plan_flip(homes, old, new, **options):
    return Plan(op="flip", args={"old": old, "new": new}, roots=[str(homes.home / ".toy")],
                summary={"sessions": 2, "sample": [{"id": "toy"}], "other_providers": {"x": 1}, "exact": True})


def provider_census(homes, archived=True):
    return {"files": {"toy-provider": 2}}


def check_new(homes, new, force, set_config):
    pass


def check_old(homes, plan, old, new, force):
    return None


def tail_transform(args):
    return lambda op, data: data.replace(args["old"].encode(), args["new"].encode())
'''


def test_the_flip_verb_runs_every_tool_with_a_flip_hook(toy, tmp_path):
    """verbs/flip names no tool: a second tool with a flip hook takes part by its module alone."""
    from types import SimpleNamespace

    from histmig.verbs import flip
    (tmp_path / "pkgs" / "toytool" / "flip.py").write_text(TOY_FLIP)
    assert flip.flip_tools() == ["codex", "toy"]
    plan = flip.plan_flip(toy, "openai", "my-provider", exact=True)
    assert plan.summary["sessions"] == 2 and plan.summary["sample"] == [{"id": "toy"}]
    assert plan.summary["other_providers"] == {"x": 1} and str(toy.home / ".toy") in plan.roots
    census = flip.provider_census(toy)
    assert list(census["tools"]) == ["codex", "toy"] and census["tools"]["toy"] == {"files": {"toy-provider": 2}}
    edit = flip.tail_transform({"old": "openai", "new": "my-provider"})
    assert edit(SimpleNamespace(session={"tool": "toy", "id": "1"}), b'"openai"\n') == b'"my-provider"\n'
    assert edit(SimpleNamespace(session=None), b'"openai"\n') == b'"openai"\n'


def test_move_planning_runs_a_needed_tool_first_and_lays_plans_out_in_table_order():
    first = ["claude-code", "manifest", "codex", "mini-cc"]
    assert registry.move_order(set(registry.names())) == first + [n for n in registry.names() if n not in first]
    assert registry.move_order({"manifest"}) == ["claude-code", "manifest"]
    assert registry.move_order({"mini-cc", "codex"}) == ["codex", "mini-cc"]
    assert registry.names()[:4] == ("codex", "claude-code", "mini-cc", "manifest")


def test_every_row_names_a_package_that_holds_its_adapter():
    """Every built-in row's package exists and holds an adapter (a typo in a row fails here, not in use)."""
    for row in registry.TABLE.values():
        assert Path(__import__(row.package, fromlist=["_"]).__file__).parent.name == row.package.rsplit(".", 1)[1]
        assert registry.adapter(row.name).name == row.name


# ---- a row declares its homes; its folder declares its write guards ----------------------------------

GUARDS = '''
"""The toy's write guards: a session whose id is in LIVE is open in the toy client."""
from histmig.apply.guards import WriteGuards

LIVE = set()


def guards(homes):
    def start():
        return lambda s: ("toy session is open", "live-session") if s.get("id") in LIVE else None
    return WriteGuards(live={"toy": start})
'''


@pytest.fixture
def toy_declared(toy, tmp_path):
    """The toy row again, now declaring its home (env TOY_HOME, flag --toy-home) and with a guards hook."""
    from operator import attrgetter
    from histmig.core.homes import HomeDir
    (tmp_path / "pkgs" / "toytool" / "guards.py").write_text(textwrap.dedent(GUARDS))
    registry.register(registry.Tool("toy", "toytool", attrgetter("toy"), aliases=("toy-cli",), homes=(
        HomeDir("toy", "TOY_HOME", ".toy", "toy-home", "Toy home (default $TOY_HOME or ~/.toy)."),)))
    return resolve_homes()


def test_a_declared_home_is_resolved_like_every_other(toy_declared, tmp_path):
    homes = toy_declared
    assert homes.toy == homes.home / ".toy" and homes.toy in homes.roots()
    env = {"HOME": "/h", "TOY_HOME": "/env/toy"}
    assert resolve_homes(env=env).toy == Path("/env/toy")                   # env > default
    assert resolve_homes(env=env, home="/o").toy == Path("/o/.toy")          # --home > env
    assert resolve_homes(env=env, home="/o", toy_home="/f").toy == Path("/f")  # flag > --home
    keys = list(resolve_homes(env=env).to_dict())
    assert keys[keys.index("toy"):keys.index("codex_sqlite") + 1] == ["toy", "state", "codex_sqlite"]
    with pytest.raises(TypeError, match="no_such_home"):
        resolve_homes(env=env, no_such_home="/x")


def test_a_tools_guards_hook_makes_its_live_sessions_wait_in_every_apply(toy_declared, toy_session):
    from histmig.apply import apply_plan
    from histmig.verbs.move import plan_move
    _, old, path = toy_session
    homes = resolve_homes()                   # the homes now the row declares one
    live = registry.hook("toy", "guards").__globals__["LIVE"]
    live.add(SID)
    before = path.read_bytes()
    assert "toy" in registry.guards_for(homes).live
    res = apply_plan(plan_move(homes, str(old), str(old.parent / "moved"), tools=["toy"]), homes)   # no guards passed
    assert res.exit_code == 3 and [s.code for s in res.skips] == ["live-session"] and path.read_bytes() == before
    live.clear()
    res = apply_plan(plan_move(homes, str(old), str(old.parent / "moved"), tools=["toy"]), homes)
    assert res.exit_code == 0 and path.read_bytes() != before


def test_the_engine_takes_the_tables_guards_when_its_caller_passes_none():
    """A fresh interpreter that imports only the homes and the write path still gets every tool's locks
    and live-session probes: resolving the homes loads the table, which installs them."""
    import subprocess
    probe = ("from histmig.tools import resolve_homes\nfrom histmig.apply.guards import default_guards\n"
             "h = resolve_homes(env={'HOME': '/h'})\ng = default_guards(h)\n"
             "print([str(x.root) for x in g.folder_locks], [str(x.path) for x in g.file_locks], sorted(g.live))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ("['/h/.codex'] ['/h/.claude.json', '/h/.gemini/projects.json'] "
                           "['claude', 'claude-code', 'codex', 'copilot', 'manifest', 'pi', 'qwen']")


# ---- tool calls: a tool's ``calls`` hook maps its calls to and from every other tool -----------------

TOY_CALLS = """
\"\"\"The toy's tools: ``sh {line}``, ``put {file, text}``, ``fix {file, from, to}``.\"\"\"
from histmig.toolkit.convert.calls import Change, Edit, Mapped, Other, Shell, Vocabulary, Write, as_dict


def to_neutral(call, result=None):
    a = as_dict(call.arguments) or {}
    if call.name == "sh":
        return Shell(name="sh", arguments=a, command=a["line"])
    if call.name == "put":
        return Write(name="put", arguments=a, path=a["file"], content=a["text"])
    if call.name == "fix":
        return Edit(name="fix", arguments=a, path=a["file"], changes=[Change(a["from"], a["to"])])
    return Other(name=call.name, arguments=call.arguments)


def from_neutral(call, cwd):
    if isinstance(call, Shell):
        return [Mapped("sh", {"line": call.command}, [("mapped", f"{call.name} -> sh")])]
    if isinstance(call, Edit) and len(call.changes) == 1:
        c = call.changes[0]
        return [Mapped("fix", {"file": call.path, "from": c.old, "to": c.new}, [("mapped", f"{call.name} -> fix")])]
    return [Mapped(call.name, call.arguments, [("mapped", f"{call.name} kept")])]


CALLS = Vocabulary(to_neutral, from_neutral)
"""

TOY_READ_CALLS = """
\"\"\"Toy lines may also be ``{"cwd", "call", "id", "args"}`` and ``{"cwd", "result", "output"}``.\"\"\"
import json
from pathlib import Path

from histmig.core.model import Record, Session, Text, ToolCall, ToolResult


def read_calls(ref):
    path = Path(getattr(ref, "path", ref))
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    records = []
    for o in lines:
        if "call" in o:
            records.append(Record(kind="message", role="assistant", parts=[ToolCall(o["id"], o["call"], o["args"])]))
        elif "result" in o:
            records.append(Record(kind="message", role="user", parts=[ToolResult(o["result"], o["output"])]))
        else:
            records.append(Record(kind="message", role=o["role"], parts=[Text(o["text"])]))
    return Session(id=path.stem, format="toy", path=path, cwd=lines[0]["cwd"], records=records)
"""

TOY_WRITE = """
\"\"\"The toy's convert writer: every call in the toy's own tools (through its ``calls`` hook).\"\"\"
import json

from histmig import tools as registry
from histmig.toolkit.convert.calls import translate
from histmig.toolkit.convert.common import Written
from toytool.calls import CALLS


def write(conv, t):
    source = registry.hook(conv.source.format, "calls")
    out = []
    for item in conv.items:
        if item.kind in ("user", "assistant"):
            out.append({"cwd": t.cwd, "role": item.kind, "text": item.text})
        elif item.kind == "call":
            for m in translate(item.part, source, CALLS, t.cwd, conv.patches.get(item.part.call_id)):
                conv.loss.add(*m.notes[0])
                out.append({"cwd": t.cwd, "call": m.name, "id": item.part.call_id, "args": m.arguments})
    data = "".join(json.dumps(o) + "\\n" for o in out).encode()
    return Written([(t.root / f"{t.sid}.jsonl", data)], t.sid, None, conv.first_prompt)
"""


@pytest.fixture
def toy_calls(toy, tmp_path):
    """The toy with tool calls: a ``calls`` hook, a reader that knows call lines, a convert writer."""
    pkg = tmp_path / "pkgs" / "toytool"
    (pkg / "calls.py").write_text(textwrap.dedent(TOY_CALLS))
    (pkg / "write.py").write_text(textwrap.dedent(TOY_WRITE))
    (pkg / "read_calls.py").write_text(textwrap.dedent(TOY_READ_CALLS))
    (pkg / "adapter.py").write_text(textwrap.dedent(ADAPTER).replace(
        "read=read,", "read=__import__('toytool.read_calls').read_calls.read_calls,"))
    return toy


def _converted(homes, target, tools):
    import orjson
    from histmig.verbs.convert import ConvertOptions
    from histmig.verbs.convert.batches import plan_convert
    from histmig.verbs.convert.select import discover
    plan, outcomes = plan_convert(homes, list(discover(homes, tools)), ConvertOptions(target, seed=3, now=1.8e9))
    files = [[orjson.loads(x) for x in op.data.splitlines()] for op in plan.operations if op.kind == "create"]
    return files, outcomes


def test_a_tools_calls_hook_maps_codex_and_claude_calls_into_its_own_tools(toy_calls, tmp_path):
    from convert_fixtures import write_claude, write_codex
    homes, cwd = toy_calls, str(tmp_path / "proj")
    write_codex(homes.codex, cwd)
    write_claude(homes.claude, cwd)
    files, outcomes = _converted(homes, "toy", ["codex", "claude-code"])
    calls = sorted((o["call"], json.dumps(o["args"], sort_keys=True)) for f in files for o in f if "call" in o)
    assert [c for c, _ in calls] == ["apply_patch", "fix", "sh", "sh"]     # no patch form: kept as it was
    assert ("fix", json.dumps({"file": f"{cwd}/src/app.py", "from": "y = 2", "to": "y = 3"}, sort_keys=True)) in calls
    assert ("sh", '{"line": "ls -la"}') in calls and ("sh", '{"line": "ls"}') in calls
    notes = {k for o in outcomes for k in o.loss.to_dict().get("mapped", {})}
    assert {"exec_command -> sh", "Bash -> sh", "Edit -> fix", "apply_patch kept"} <= notes


def test_a_tools_calls_hook_maps_its_calls_into_codex_and_claude_tools(toy_calls):
    from histmig.toolkit.convert.patch import parse_patch
    homes = toy_calls
    cwd = str(homes.home / "proj")
    lines = [{"cwd": cwd, "role": "user", "text": "tidy up"},
             {"cwd": cwd, "call": "sh", "id": "c1", "args": {"line": "make"}}, {"cwd": cwd, "result": "c1", "output": "ok"},
             {"cwd": cwd, "call": "put", "id": "c2", "args": {"file": f"{cwd}/n.txt", "text": "hi\n"}},
             {"cwd": cwd, "result": "c2", "output": "ok"},
             {"cwd": cwd, "call": "fix", "id": "c3", "args": {"file": f"{cwd}/a.py", "from": "1", "to": "2"}},
             {"cwd": cwd, "result": "c3", "output": "ok"},
             {"cwd": cwd, "role": "assistant", "text": "done"}]
    path = homes.home / ".toy" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))

    [codex], [out] = _converted(homes, "codex", ["toy"])
    items = [r["payload"] for r in codex if r["type"] == "response_item" and "call" in r["payload"]["type"]]
    items = [p for p in items if not p["type"].endswith("_output")]
    assert [(p["type"], p["name"]) for p in items] == [("function_call", "exec_command"),
                                                       ("custom_tool_call", "apply_patch"), ("custom_tool_call", "apply_patch")]
    assert json.loads(items[0]["arguments"]) == {"cmd": "make"}
    assert [(o.kind, o.path) for o in parse_patch(items[1]["input"])] == [("add", "n.txt")]
    assert parse_patch(items[2]["input"])[0].hunks[0].new() == "2"
    assert out.loss.to_dict()["mapped"] == {"sh -> exec_command": 1, "put -> apply_patch": 1, "fix -> apply_patch": 1}

    [claude], _ = _converted(homes, "claude-code", ["toy"])
    uses = [b for r in claude if r.get("type") == "assistant" for b in r["message"]["content"] if b["type"] == "tool_use"]
    assert [(u["name"], u["input"]) for u in uses] == [
        ("Bash", {"command": "make"}), ("Write", {"file_path": f"{cwd}/n.txt", "content": "hi\n"}),
        ("Edit", {"file_path": f"{cwd}/a.py", "old_string": "1", "new_string": "2"})]


# ---- counting: no module outside tools/<tool>/ names a specific tool ---------------------------------

ROOT = Path(__file__).resolve().parent.parent / "histmig"

# What still names a tool outside its folder, each with why. The test fails when an entry is no longer
# needed (remove it) and when a module not listed starts naming a tool (move that part to the tool's folder).
ALLOWLIST = {
    "tools/__init__.py": "THE tool table: the one place that lists the tools",
    "cli/demo.py": "help text: the demo's script is example command lines (a Codex -> Claude Code convert)",
}


def _tool_words() -> tuple[set[str], set[str], set[str]]:
    names = {n for row in registry.TABLE.values() for n in (row.name, *row.aliases)}
    packages = {p.name for p in (ROOT / "tools").iterdir() if (p / "__init__.py").is_file()}
    attrs = {spec.name for spec in registry.specs()}      # a tool's declared home: ``homes.codex``
    return names, packages, attrs


def _namings(path: Path) -> list[str]:
    """String literals equal to a tool name or alias (docstrings aside: they are help text), imports of
    ``histmig.tools.<tool>``, and reads of a tool's home field (``homes.codex``)."""
    import ast
    names, packages, attrs = _tool_words()
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}

    def tool_module(name: str | None) -> bool:
        parts = (name or "").split(".")
        return parts[:2] == ["histmig", "tools"] and len(parts) > 2 and parts[2] in packages

    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and n.value in names and id(n) not in docs:
            out.append(f"{n.lineno}: {n.value!r}")
        elif isinstance(n, ast.ImportFrom) and (tool_module(n.module) or (
                n.module == "histmig.tools" and any(a.name in packages for a in n.names))):
            out.append(f"{n.lineno}: from {n.module} import")
        elif isinstance(n, ast.Import) and any(tool_module(a.name) for a in n.names):
            out.append(f"{n.lineno}: import")
        elif isinstance(n, ast.Attribute) and n.attr in attrs:
            out.append(f"{n.lineno}: .{n.attr}")
        elif isinstance(n, (ast.FunctionDef, ast.ClassDef)) and _names_a_tool(n.name, packages):
            out.append(f"{n.lineno}: def {n.name}")
    return out


def _names_a_tool(identifier: str, packages: set[str]) -> bool:
    """``codex_thread_locked``, ``ClaudeJson``: a function or class named after a tool's package."""
    import re
    # whole words only (CamelCase split first), so a short package such as ``pi`` does not match ``pid_alive``
    words = [w for w in re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", identifier).lower().split("_") if w]
    return any("".join(words[:k]) == p.replace("_", "") for p in packages if p != "claude_family"
               for k in range(1, len(words) + 1))


def tool_namings() -> dict[str, list[str]]:
    """Every module outside ``histmig/tools/<tool>/`` that names a specific tool, with where."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("tools/") and rel.count("/") >= 2:
            continue                          # inside a tool's own folder: that is where it belongs
        if rel.startswith("samples/"):
            continue                          # the bundled sample data and its generator scripts, not histmig's code
        hits = _namings(path)
        if hits:
            found[rel] = hits
    return found


def test_no_module_outside_its_tool_folder_names_a_tool():
    found = tool_namings()
    new = {m: hits[:3] for m, hits in found.items() if m not in ALLOWLIST}
    assert not new, f"move these tool-specific parts into histmig/tools/<tool>/ (or dispatch via the table): {new}"
    stale = sorted(set(ALLOWLIST) - set(found))
    assert not stale, f"no longer names a tool; drop from ALLOWLIST: {stale}"
    assert all(reason.strip() for reason in ALLOWLIST.values())


def test_the_counter_sees_each_way_of_naming_a_tool(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('"""codex in a docstring is help text."""\nimport histmig.tools.codex.state\n'
                     'from histmig.tools.mini_cc import move\nfrom histmig.tools import claude_code\n'
                     'x = "claude"\ny = homes.mini_cc\nz = "codex is mentioned"\n'
                     'def codex_thread_locked(): pass\ndef locked(): pass\nclass MiniCcState: pass\n'
                     'def pid_alive(): pass\n')
    assert sorted(int(h.split(":")[0]) for h in _namings(probe)) == [2, 3, 4, 5, 6, 8, 10]


def test_no_alias_is_a_canonical_name():
    """``canonical`` answers a canonical name as it is, before the alias look-up (issue 15: convert
    asks for several hooks per session): no alias may spell another row's name."""
    aliases = {a.lower() for row in registry.TABLE.values() for a in row.aliases}
    assert not aliases & set(registry.TABLE)
