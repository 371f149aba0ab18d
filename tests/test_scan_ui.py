"""Issue 18, "scan for people": columns fitted to the terminal by display width (CJK paths), a pager on a
terminal, --sort/--reverse/--limit/--until/--state/--columns, --by groups and the month x tool chart,
and short ids unique among every session of every tool (docs/scan-show.md)."""
from __future__ import annotations

import json
import os
import pty
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clirun import histmig
from hypothesis import given, settings
from hypothesis import strategies as st
from histmig.core.ids import unique_prefixes
from histmig.cli import samples
from histmig.toolkit.listing.groups import bar, group, month_chart
from histmig.toolkit.listing.width import cut_end, cut_middle, text_width
from jsonschema_lite import validate

ROOT = Path(__file__).resolve().parents[1]
REC = "/tmp/histmig-rec/work"
CJK = f"{REC}/my app/データ"
CODEX_CJK = "01a22acf-1f57-76f3-b07f-2db44aec724e"       # the Codex sample made in the データ folder


@pytest.fixture
def home(isolated_homes, monkeypatch):
    home = Path(isolated_homes["HOME"])
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "MINI_CC_HOME"):
        monkeypatch.delenv(var)
    monkeypatch.delenv("COLUMNS", raising=False)
    samples.install(home)
    return home


def rows(*args) -> list[dict]:
    r = histmig("scan", "--json", *args)
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["sessions"]


def table(*args) -> list[str]:
    r = histmig("scan", *args)
    assert r.exit_code == 0, r.stderr
    return r.stdout.splitlines()


# ---- width ------------------------------------------------------------------------------------------

def test_display_width_counts_wide_characters_twice():
    assert text_width("データ") == 6 and text_width("app") == 3 and text_width("记一下：") == 8
    assert text_width("e\u0301") == 1                                    # a combining accent takes no cell
    cut = cut_middle("/tmp/histmig-rec/work/my app/データ", 16)
    assert text_width(cut) <= 16 and cut.startswith("/tmp") and cut.endswith("データ") and "…" in cut
    assert text_width(cut_middle("データデータデータ", 7)) <= 7
    assert cut_end("记一下：测试命令是", 9) == "记一下：…" and text_width(cut_end("记一下：测试命令是", 9)) == 9


def _cells(line: str) -> list[str]:
    """The line as terminal cells (a wide character, then a '' for its second cell)."""
    out = []
    for ch in line:
        out += [ch] + ([""] * (text_width(ch) - 1))
    return out


def _starts(header: str) -> list[int]:
    cells = _cells(header)
    return [i for i, c in enumerate(cells) if c != " " and (i == 0 or cells[i - 1] == " ")]


def _assert_aligned(lines: list[str], width: int) -> None:
    body = lines[:lines.index("")]
    starts = _starts(body[0])
    for line in body:
        cells = _cells(line)
        assert len(cells) <= width, line
        for s in starts[1:]:
            if s < len(cells):
                assert cells[s - 1] == " " and cells[s] not in (" ", ""), (s, line)


@pytest.mark.parametrize("width", [80, 200])
def test_columns_fit_the_terminal_and_align_by_display_width(home, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    lines = table()
    _assert_aligned(lines, width)
    cjk = [x for x in lines if x.startswith("codex") and CODEX_CJK[:11] in x]
    assert cjk
    if width == 200:                          # everything fits: whole paths, every column
        assert CJK in cjk[0] and lines[0].split() == ["TOOL", "ID", "UPDATED", "CWD", "PROVIDER", "MSGS", "SIZE",
                                                      "STATE", "TITLE"]
    else:                                     # cut in the middle, the project's own folder kept
        assert CJK not in cjk[0] and "…" in cjk[0] and "データ" in cjk[0]
        assert lines[-1] == "hidden to fit 80 columns: provider, size, state (--columns chooses)"
        assert max(text_width(x) for x in lines) <= 80                 # the summary wrapped too


def test_a_pipe_gets_whole_cells_and_cjk_columns_still_align(home):
    lines = table()
    _assert_aligned(lines, 10_000)
    assert any(CJK in x for x in lines) and "hidden" not in lines[-1]


def test_columns_chooses_and_never_hides(home, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    lines = table("--columns", "id,size,path,cwd")
    assert lines[0].split() == ["ID", "SIZE", "PATH", "CWD"]
    _assert_aligned(lines, 60)
    bad = histmig("scan", "--columns", "id,colour")
    assert bad.exit_code == 2 and "colour" in bad.stderr


# ---- order, limit, filters ---------------------------------------------------------------------------

def test_sort_reverse_and_limit(home):
    everything = rows()
    by_size = rows("--sort", "size")
    assert [r["size"] for r in by_size] == sorted((r["size"] for r in everything), reverse=True)
    assert [r["id"] for r in rows("--sort", "size", "--reverse")] == [r["id"] for r in reversed(by_size)]
    assert [r["cwd"] for r in rows("--sort", "cwd")] == sorted(r["cwd"] for r in everything)
    msgs = [r["messages"] for r in rows("--sort", "msgs")]
    assert msgs == sorted(msgs, reverse=True)
    created = [r["created"] for r in rows("--sort", "created") if r["created"]]
    assert created == sorted(created, reverse=True)
    assert rows("--sort", "size", "--limit", "3") == by_size[:3]
    assert rows("--limit", "0") == []
    assert table("--limit", "0") == [f"{len(everything)} more not shown (--limit 0)"]
    lines = table("--sort", "size", "--limit", "2")
    assert len(lines) == 6 and lines[-1] == f"{len(everything) - 2} more not shown (--limit 2)"
    assert histmig("scan", "--sort", "colour").exit_code == 2


def test_until_and_state(home):
    assert {r["tool"] for r in rows("--until", "2026-10-31")} == {"manifest"}       # the others: mtimes of now
    assert rows("--until", "2026-10-19") == []
    assert "no sessions match the filters in:" in histmig("scan", "--until", "2000-01-01").stdout
    assert [r["state"] for r in rows("--state", "archived")] == ["archived"]
    assert [r["state"] for r in rows("--state", "compressed")] == ["compressed"]
    assert {r["state"] for r in rows("--state", "ok")} == {"ok"}
    hidden = rows("--state", "hidden")
    assert hidden and all("not in picker" in r["state"] for r in hidden)
    assert len(rows("--state", "archived,compressed")) == 2 == len(rows("--state", "archived", "--state", "compressed"))
    live = rows("--state", "live")
    assert not any(r["archived"] for r in live) and len(live) == len(rows()) - 1


# ---- short ids ------------------------------------------------------------------------------------

def _id_of(lines: list[str], tool: str) -> str:
    return next(x.split()[1] for x in lines if x.split()[:1] == [tool])


def test_the_cwd_case_of_the_issue_resolves_to_one_session(home):
    """Six Codex samples share their first 9 characters; filtered to one folder, the id shown used to be
    8 characters long, and ``show`` of it matched six sessions."""
    short = _id_of(table("--cwd", f"{REC}/my app"), "codex")
    assert short == "01a22acf-1f"
    assert histmig("show", short).exit_code == 0
    assert rows("--cwd", f"{REC}/my app", "--tool", "codex")[0]["short_id"] == short


def _twin(home: Path) -> str:
    """A mini-cc session whose id shares its first 19 characters with a Codex sample's."""
    src = next((home / ".mini_cc" / "projects").rglob("e4a1f0c2-*.jsonl"))
    twin = CODEX_CJK[:19] + "0000-000000000000"
    shutil.copy2(src, src.with_name(twin + ".jsonl"))
    return twin


@pytest.mark.parametrize("warm", [True, False])
@pytest.mark.parametrize("index", [[], ["--no-index"]])
def test_short_ids_of_one_tool_are_unique_among_every_tool(home, warm, index):
    twin = _twin(home)
    if warm:
        table()                                   # the scan index learns every tool's ids
    shown = _id_of(table("--tool", "codex", "--cwd", f"{REC}/my app", *index), "codex")
    assert shown == CODEX_CJK[:20]
    assert histmig("show", shown).exit_code == 0
    assert histmig("show", CODEX_CJK[:19]).exit_code == 1                     # the two of them
    assert _id_of(table("--tool", "mini-cc", *index), "mini-cc") in (twin[:20], "e4a1f0c2")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="0123456789abcdef-", min_size=1, max_size=14), max_size=40))
def test_short_ids_are_the_shortest_unique_prefixes(ids):
    short = unique_prefixes(ids)
    for ident, prefix in short.items():
        assert ident.startswith(prefix) and (len(prefix) >= 8 or prefix == ident)
        others = [o for o in short if o != ident]
        assert not [o for o in others if o.startswith(prefix) and o != prefix] or prefix == ident
        if len(prefix) > 8:                     # one shorter would be shared
            assert any(o.startswith(prefix[:-1]) for o in others)


# ---- groups and chart ----------------------------------------------------------------------------------

def test_grouped_tables(home):
    everything = rows()
    lines = table("--by", "tool")
    assert lines[0].split() == ["TOOL", "SESSIONS", "MSGS", "SIZE", "LAST", "USED"]
    counted = {x.split()[0]: int(x.split()[1]) for x in lines[1:lines.index("")]}
    assert counted == {t: sum(1 for r in everything if r["tool"] == t) for t in counted}
    assert lines[-1] == f"{len(counted)} tools, {len(everything)} sessions"
    cwd = table("--by", "cwd", "--sort", "cwd")
    keys = [x.split("  ")[0] for x in cwd[1:cwd.index("")]]
    assert keys == sorted(keys) and CJK in keys
    assert table("--by", "tool", "--limit", "2")[3] == ""
    doc = json.loads(histmig("scan", "--by", "provider", "--json").stdout)
    schema = json.loads((ROOT / "histmig" / "schemas" / "scan.groups.json").read_text())
    assert validate(doc, schema) == []
    assert sum(g["sessions"] for g in doc["groups"]) == len(everything)
    assert {g["key"] for g in doc["groups"]} >= {"openai", "-"}


def test_month_table_and_chart_show_an_empty_month(home):
    lines = table("--by", "month")
    assert lines[0].split()[:2] == ["MONTH", "SESSIONS"]
    chart = lines[lines.index("sessions per month and tool (a full bar: 6)"):]
    assert chart[1].split()[:3] == ["MONTH", "codex", "claude-code"]
    months = [x.split()[0] for x in chart[2:]]
    assert months[-1] == "2026-10" and len(months) >= 3          # manifest's October, then a hole, then now
    assert "█" in chart[2] and any(x.split() == [m] for x in chart for m in months[1:-1])


def test_bars_and_month_chart_data():
    from histmig.core.model import SessionRef
    assert bar(8, 8, 4) == "████" and bar(1, 8, 4) == "▌" and bar(0, 8, 4) == "" and bar(1, 1000, 4) == "▏"
    jan, mar = time.mktime((2026, 1, 15, 12, 0, 0, 0, 0, -1)), time.mktime((2026, 3, 15, 12, 0, 0, 0, 0, -1))
    refs = [SessionRef("codex", "a", Path("a"), updated=jan), SessionRef("claude-code", "b", Path("b"), updated=mar),
            SessionRef("claude-code", "c", Path("c"), updated=mar, cwd="/w")]
    chart = month_chart(refs, ["codex", "claude-code"])
    assert chart.months == ["2026-03", "2026-02", "2026-01"] and chart.top == 2
    assert chart.counts == {("2026-01", "codex"): 1, ("2026-03", "claude-code"): 2}
    assert [g.key for g in group(refs, "cwd")] == ["-", "/w"]


# ---- pager ---------------------------------------------------------------------------------------------

PAGER = "import sys\nopen(sys.argv[1], 'wb').write(sys.stdin.buffer.read())\nprint('PAGED')\n"


def _on_a_terminal(home: Path, tmp_path: Path, *args: str, pager: str | None, cols: int = 100,
                   command: tuple[str, ...] = ("scan",)) -> tuple[str, Path]:
    import fcntl
    import struct
    import termios
    script = tmp_path / "pager.py"
    script.write_text(PAGER)
    paged = tmp_path / "paged.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "PAGER", "NO_COLOR")}
    env["NO_COLOR"] = "1"
    if pager is not None:
        env["PAGER"] = pager.format(py=sys.executable, script=script, out=paged)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "histmig", "--home", str(home), *command, *args],
                            stdin=slave, stdout=slave, stderr=slave, env=env, cwd=tmp_path)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:                            # the child closed its end
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=60) == 0
    os.close(master)
    return out.decode(errors="replace"), paged


def test_a_terminal_gets_the_pager_and_its_width(home, tmp_path):
    out, paged = _on_a_terminal(home, tmp_path, pager="{py} {script} {out}")
    assert "PAGED" in out and "TOOL" not in out
    text = paged.read_text()
    assert text.splitlines()[0].startswith("TOOL") and "sessions (codex 6" in text
    _assert_aligned(text.splitlines(), 100)                     # the terminal's 100 columns, not a pipe's


@pytest.mark.parametrize("args", [["--no-pager"], ["--json"], ["--by", "tool", "--no-pager"]])
def test_no_pager_with_no_pager_or_json(home, tmp_path, args):
    out, paged = _on_a_terminal(home, tmp_path, *args, pager="{py} {script} {out}")
    assert "PAGED" not in out and not paged.exists()
    assert ("TOOL" in out) or ('"schema"' in out)


def test_pager_empty_or_cat_prints_directly(home, tmp_path):
    for pager in ("", "cat"):
        out, paged = _on_a_terminal(home, tmp_path, pager=pager)
        assert "TOOL" in out and not paged.exists()


def test_the_demo_on_a_terminal_does_not_stop_in_a_pager(home, tmp_path):
    out, paged = _on_a_terminal(home, tmp_path, pager="{py} {script} {out}", command=("demo",))
    assert "$ histmig scan --no-pager" in out and "$ histmig doctor" in out and not paged.exists()


def test_a_pipe_never_pages(home, tmp_path):
    script = tmp_path / "pager.py"
    script.write_text(PAGER)
    env = dict(os.environ, PAGER=f"{sys.executable} {script} {tmp_path / 'paged.txt'}")
    out = subprocess.run([sys.executable, "-m", "histmig", "--home", str(home), "scan"], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 0 and out.stdout.startswith("TOOL") and not (tmp_path / "paged.txt").exists()


# ---- the manual ------------------------------------------------------------------------------------------

TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}")


def _doc_examples() -> list[tuple[dict, list[str], list[str]]]:
    """The scan examples of docs/scan-show.md that print the same on any day: (env, argv, lines shown)."""
    text = (ROOT / "docs" / "scan-show.md").read_text()
    out = []
    for block in re.findall(r"^```\n(.*?)^```", text, flags=re.S | re.M):
        first, *shown = block.splitlines()
        m = re.fullmatch(r"\$ (COLUMNS=(\d+) )?histmig (scan.*)", first)
        if not m or "#" in first or "--by month" in first or not shown:
            continue
        shown = shown[:next((i for i, x in enumerate(shown) if x.startswith("$ ")), len(shown))]
        out.append(({"COLUMNS": m.group(2)} if m.group(2) else {}, shlex.split(m.group(3)), shown))
    return out


def test_the_manual_shows_what_scan_prints_on_the_samples(home, monkeypatch):
    examples = _doc_examples()
    assert len(examples) >= 9
    for env, argv, shown in examples:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        r = histmig(*argv)
        for k in env:
            monkeypatch.delenv(k)
        assert r.exit_code == 0, (argv, r.stderr)
        assert [TIME.sub("T", x) for x in r.stdout.splitlines()] == [TIME.sub("T", x) for x in shown], argv
