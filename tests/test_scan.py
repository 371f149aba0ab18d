"""`histmig scan` on the bundled samples lists exactly the sessions they hold."""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from histmig.cli import samples
from histmig.cli import cli
from histmig.core.ids import unique_prefixes

REC = "/tmp/histmig-rec/work"
# (tool, case) -> [(cwd, provider, title, messages, state)], checked against the prompts the
# recording script (tests/e2e/record_samples.py) and the hand-written samples use
EXPECTED = {
    ("codex", "archived"): [(f"{REC}/app", "openai", "This session gets archived.", 2, "archived")],
    ("codex", "plain"): [(f"{REC}/app", "openai", "Say hello in one short sentence.", 2, "ok")],
    ("codex", "resumed"): [(f"{REC}/app", "openai", "RUN: ls -a", 4, "ok")],
    ("codex", "tool-reasoning"): [(f"{REC}/app", "openai", "RUN: echo hello from the tool", 2, "ok")],
    ("codex", "unicode-cwd"): [(f"{REC}/my app/データ", "openai", "Hello from a folder with a space and データ.", 2, "ok")],
    ("codex", "zst"): [(f"{REC}/app", "openai", "This rollout gets compressed.", 2, "compressed")],
    ("codex", "unhealthy-shadowed-pair"): [(f"{REC}/app", "openai", "Say hello in one short sentence.", 2, "shadows")],
    ("claude-code", "interactive"): [(f"{REC}/app", None, "Hello from the interactive UI.", 6, "ok")],
    ("claude-code", "plain"): [(f"{REC}/app", None, "Say hello in one short sentence.", 2, "not in picker")],
    ("claude-code", "resumed"): [(f"{REC}/app", None, "RUN: ls -a", 6, "not in picker")],
    ("claude-code", "subagent"): [(f"{REC}/app", None, "AGENT: list the files in this folder", 4, "not in picker")],
    ("claude-code", "tool-thinking"): [(f"{REC}/app", None, "RUN: echo hello from the tool", 4, "not in picker")],
    ("claude-code", "unicode-cwd"): [(f"{REC}/my app/データ", None, "Hello from a folder with a space and データ.", 2, "not in picker")],  # noqa: E501 (a literal record)
    ("mini-cc", "basic"): [("/home/user/work/app", None, "How many Python files are in src?", 4, "ok"),
                           ("/home/user/work/py-app", None, "记一下：测试命令是 uv run pytest -q", 4, "ok"),
                           ("/home/user/work/app", None, "记一下：测试命令是 npm test", 4, "ok")],
    ("pi", "plain"): [("/tmp/histmig-rec-pi/work/app", "fake", "Say hello in one short sentence.", 2, "ok")],
    ("pi", "tool-thinking"): [("/tmp/histmig-rec-pi/work/app", "fake", "RUN: echo hello from the tool", 3, "ok")],
    ("pi", "resumed"): [("/tmp/histmig-rec-pi/work/app", "fake", "RUN: ls -a", 5, "ok")],
    ("pi", "unicode-cwd"): [("/tmp/histmig-rec-pi/work/my app/データ", "fake",
                          "Hello from a folder with a space and データ.", 2, "ok")],
    ("gemini", "plain"): [(f"{REC}/app", None, "Say hello in one short sentence.", 2, "ok")],
    ("gemini", "resumed"): [(f"{REC}/app", None, "Say hello in one short sentence.", 4, "ok")],
    ("gemini", "tool-call"): [(f"{REC}/app", None, "RUN: echo hello from the tool", 3, "ok")],
    ("gemini", "unicode-cwd"): [(f"{REC}/my app/データ", None, "Hello from a folder with a space and データ.", 2, "ok")],
    ("manifest", "healthy"): [("/home/user/work/app", None, "Run the tests and tell me what fails.", 6, "ok")],
    ("manifest", "unhealthy-checkpoint-past-end"): [("/home/user/work/lib/src", None,
                                                     "Explain what lib/src/cache.ts does.", 4, "checkpoint")],
    ("qwen", "plain"): [(f"{REC}/app", None, "Say hello in one short sentence.", 2, "ok")],
    ("qwen", "tool-call"): [(f"{REC}/app", None, "RUN: echo hello from the tool", 3, "ok")],
    ("qwen", "resumed"): [(f"{REC}/app", None, "first question", 5, "ok")],
    ("qwen", "unicode-cwd"): [(f"{REC}/my app/データ", None, "hello from a unicode folder", 2, "ok")],
    # OpenCode's titles are model-made (the fake API answers the title request)
    ("opencode", "resumed"): [("/tmp/histmig-rec-opencode/work/app", "anthropic",
                               "FAKE-ANSWER: RUN: echo hello from the tool", 5, "ok")],
    ("opencode", "unicode-cwd"): [("/tmp/histmig-rec-opencode/work/my app/データ", "anthropic",
                                   "FAKE-ANSWER: Hello from a folder with データ.", 2, "ok")],
    ("copilot", "plain"): [(f"{REC}/app", None, "Say hello in one short sentence.", 2, "ok")],
    ("copilot", "tool-call"): [(f"{REC}/app", None, "RUN: echo hello from the tool", 3, "ok")],
    ("copilot", "resumed"): [(f"{REC}/app", None, "first question", 5, "ok")],
    ("copilot", "unicode-cwd"): [(f"{REC}/my app/データ", None, "hello from a unicode folder", 2, "ok")],
    ("cline", "plain"): [(f"{REC}/app", "openai-compatible", "Say hello in one short sentence.", 2, "ok")],
    ("cline", "tool-call"): [(f"{REC}/app", "openai-compatible", "RUN: echo hello from the tool", 4, "ok")],
    ("cline", "resumed"): [(f"{REC}/app", "openai-compatible", "first question", 6, "ok")],
    ("cline", "unicode-cwd"): [(f"{REC}/my app/データ", "openai-compatible", "hello from a unicode folder", 2, "ok")],
}


def scan_json(*args):
    result = CliRunner().invoke(cli, [*args, "scan", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["sessions"]


def test_every_sample_case_has_an_expectation():
    found = {(t, c.name) for t in samples.tools() for c in samples.cases(t)}
    assert found == set(EXPECTED)


@pytest.mark.parametrize("tool,case", sorted(EXPECTED), ids=[f"{t}/{c}" for t, c in sorted(EXPECTED)])
def test_scan_lists_exactly_the_sessions_of_each_sample(tool, case, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(samples.samples_root() / tool / case, root / tool / case)
    homes = samples.install(tmp_path / "home", root=root, include_broken=True, tools=(tool,))
    rows = scan_json("--home", str(tmp_path / "home"))
    got = sorted((r["cwd"], r["provider"], r["title"], r["messages"]) for r in rows)
    want = sorted(e[:4] for e in EXPECTED[(tool, case)])
    assert got == want
    assert {r["tool"] for r in rows} == {tool}
    for row in rows:
        state = next(e[4] for e in EXPECTED[(tool, case)] if e[2] == row["title"])
        assert row["state"].startswith(state)
        for key in ("id", "path", "updated"):
            assert row[key]
    assert homes  # installed


def test_subagent_files_are_attached_to_their_session_not_listed(tmp_path):
    case = samples.samples_root() / "claude-code" / "subagent"
    assert list(case.rglob("subagents/agent-*.jsonl")), "the sample holds a subagent transcript"
    rows = scan_json("--claude-home", str(case))
    assert len(rows) == 1 and "agent-" not in rows[0]["path"]


def test_shadowed_zst_is_reported_and_the_plain_file_listed(tmp_path):
    rows = scan_json("--codex-home", str(samples.samples_root() / "codex" / "unhealthy-shadowed-pair"))
    assert len(rows) == 1
    assert rows[0]["path"].endswith(".jsonl") and "shadows" in rows[0]["state"]


def test_filters_narrow_the_listing(tmp_path):
    samples.install(tmp_path / "h")
    everything = scan_json("--home", str(tmp_path / "h"))
    runner = CliRunner()
    out = runner.invoke(cli, ["--home", str(tmp_path / "h"), "scan", "--json", "--tool", "codex",
                              "--cwd", f"{REC}/my app"]).stdout
    rows = json.loads(out)["sessions"]
    assert [r["title"] for r in rows] == ["Hello from a folder with a space and データ."]
    out = runner.invoke(cli, ["--home", str(tmp_path / "h"), "scan", "--json", "--provider", "openai"]).stdout
    assert {r["tool"] for r in json.loads(out)["sessions"]} == {"codex"}
    out = runner.invoke(cli, ["--home", str(tmp_path / "h"), "scan", "--json", "--since", "2100-01-01"]).stdout
    assert json.loads(out)["sessions"] == [] and len(everything) > 10


def test_short_ids_are_unique_prefixes_of_at_least_eight_characters():
    ids = ["01a22acf-1803-7711", "01a22acf-19d0-7aaa", "e7163394-66a6-4bbb"]
    short = unique_prefixes(ids)
    assert short["e7163394-66a6-4bbb"] == "e7163394"
    assert short["01a22acf-1803-7711"] == "01a22acf-18" and short["01a22acf-19d0-7aaa"] == "01a22acf-19"


def test_table_output_names_tools_and_counts(tmp_path):
    samples.install(tmp_path / "h")
    out = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "scan"]).stdout
    assert out.splitlines()[0].split()[:3] == ["TOOL", "ID", "UPDATED"]
    assert ("sessions (codex 6, claude-code 6, mini-cc 3, manifest 1, qwen 4, gemini 4, pi 4, copilot 4, cline 4, "
            "opencode 2)") in out
