"""Issue 12, case 7: typos and unsafe config are refused before anything is written, and every
home path is made absolute at start (one place: ``histmig.core.homes.resolve_homes``)."""
from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import orjson
import pytest

from histmig.tools import resolve_homes
from histmig.apply.journal import read_records, tx_root
from histmig.tools.codex.flip.names import known_providers
from histmig.verbs.flip.names import did_you_mean
from histmig.tools.codex import config as codex_config

from clirun import histmig
from codex_fixtures import home_with, rollout, tid

DEFINED = '[model_providers.my-provider]\nname = "Mine"\nbase_url = "http://127.0.0.1:9/v1"\n'


def codex_tree(root: Path | None = None, config: str | None = DEFINED) -> Path:
    """``<root>/.codex``; by default the test's own CODEX_HOME (conftest points it at tmp)."""
    codex = root / ".codex" if root is not None else Path(os.environ["CODEX_HOME"])
    home_with(codex, {tid(1): rollout(tid(1)), tid(2): rollout(tid(2)), tid(3): rollout(tid(3), "zz")},
              provider_rows={tid(3): "zz"})
    if config is not None:
        (codex / "config.toml").write_text(config)
    return codex


def tree_digest(root: Path) -> dict[str, str]:
    """Every file's sha256 and mtime (databases included: a refused flip touches none)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() + f"@{p.stat().st_mtime_ns}"
            for p in sorted(root.rglob("*")) if p.is_file()}


def providers(codex: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(codex / "state_5.sqlite")
    try:
        return con.execute("SELECT id, model_provider FROM threads ORDER BY id").fetchall()
    finally:
        con.close()


def state_dir() -> Path:
    return Path(os.environ["HISTMIG_STATE_DIR"])


# ---- NEW must be a provider Codex can load --------------------------------------------------

@pytest.mark.parametrize("apply", [False, True])
def test_case7_flip_to_unknown_provider_refused(tmp_path, apply):
    codex = codex_tree()
    before = tree_digest(codex)
    r = histmig("flip", "openai", "my-provder", *(["--apply"] if apply else []))
    assert r.exit_code == 1, r.stdout + r.stderr
    assert "'my-provder' is not a provider Codex knows" in r.stderr
    assert "did you mean 'my-provider'?" in r.stderr
    assert "built in: openai, ollama, lmstudio, amazon-bedrock, amazon-bedrock-runtime" in r.stderr
    assert "defined in config.toml: my-provider" in r.stderr and "--force" in r.stderr
    assert "Nothing was written" in r.stderr and r.stdout == ""
    assert tree_digest(codex) == before and not tx_root(state_dir()).exists()


def test_case7_flip_refusal_without_config_names_the_builtins(tmp_path):
    codex_tree(config=None)
    r = histmig("flip", "openai", "olama", "--apply")
    assert r.exit_code == 1 and "did you mean 'ollama'?" in r.stderr and "defined in config.toml: none" in r.stderr


@pytest.mark.parametrize("new", ["my-provider", "ollama", "amazon-bedrock-runtime"])
def test_case7_flip_to_defined_or_builtin_provider_applies(tmp_path, new):
    codex = codex_tree()
    r = histmig("flip", "openai", new, "--apply")
    assert r.exit_code == 0, r.stderr
    assert providers(codex) == [(tid(1), new), (tid(2), new), (tid(3), "zz")]
    assert "provider-not-defined" not in r.stderr


def test_case7_force_flips_to_an_undefined_provider_with_the_warning(tmp_path):
    codex = codex_tree()
    r = histmig("flip", "openai", "later-provider", "--apply", "--force")
    assert r.exit_code == 0, r.stderr
    assert "warning: provider-not-defined" in r.stderr
    assert providers(codex)[0] == (tid(1), "later-provider")


@pytest.mark.parametrize("force", [False, True])
def test_case7_set_config_to_undefined_provider_refused(tmp_path, force):
    """Codex would fail on every command, not just on the flipped sessions: --force does not help."""
    codex = codex_tree()
    before = tree_digest(codex)
    r = histmig("flip", "openai", "my-provder", "--apply", "--set-config", *(["--force"] if force else []))
    assert r.exit_code == 1
    assert "--set-config would make Codex fail on every command" in r.stderr
    assert "define [model_providers.my-provder] in config.toml first" in r.stderr
    assert "did you mean 'my-provider'?" in r.stderr
    assert tree_digest(codex) == before and (codex / "config.toml").read_text() == DEFINED


def test_case7_set_config_to_defined_provider_applies(tmp_path):
    codex = codex_tree()
    r = histmig("flip", "openai", "my-provider", "--apply", "--set-config")
    assert r.exit_code == 0, r.stderr
    assert (codex / "config.toml").read_text().startswith('model_provider = "my-provider"')


def test_case7_known_providers_match_codex_0_171():
    """Built-in ids of Codex 0.171.0 (codex.md §16; checked with the real client: `oss` is the
    --oss flag, not a provider id, and is refused with "Model provider `oss` not found")."""
    cfg = {"model_providers": {"zeta": {"name": "z"}, "alpha": {"name": "a"}, "bad": 3}}
    assert known_providers(cfg) == ["openai", "ollama", "lmstudio", "amazon-bedrock", "amazon-bedrock-runtime",
                                    "alpha", "zeta"]
    assert not codex_config.is_known_provider({}, "oss")


def test_case7_did_you_mean_is_case_insensitive_and_never_the_name_itself():
    assert did_you_mean("OpenAI", ["openai", "ollama"]) == "openai"
    assert did_you_mean("openai", ["openai"]) is None
    assert did_you_mean("xyz", ["openai", "ollama"]) is None


# ---- OLD with no sessions: did you mean ---------------------------------------------------

def test_case7_old_typo_gets_did_you_mean_from_the_providers_present(tmp_path):
    codex = codex_tree()
    before = tree_digest(codex)
    r = histmig("flip", "opena", "my-provider", "--apply")
    assert r.exit_code == 1
    assert "no session or threads row is recorded under 'opena'; did you mean 'openai'?" in r.stderr
    assert "providers present: openai, zz" in r.stderr
    assert tree_digest(codex) == before
    dry = histmig("flip", "opena", "my-provider")
    assert dry.exit_code == 1 and "did you mean 'openai'?" in dry.stderr


def test_case7_old_only_in_threads_rows_is_not_a_typo(tmp_path):
    """A provider recorded only in a threads row (its rollout says another) is real, not a typo."""
    codex = codex_tree()
    con = sqlite3.connect(codex / "state_5.sqlite")
    con.execute("UPDATE threads SET model_provider = 'openai2' WHERE id = ?", (tid(3),))
    con.commit()
    con.close()
    r = histmig("flip", "openai2", "my-provider")
    assert r.exit_code == 0, r.stderr
    assert "row-not-flipped" in r.stderr and "did you mean" not in r.stderr


def test_case7_rerun_after_a_flip_is_not_refused(tmp_path):
    """OLD is gone after the flip; NEW is never offered as the correction, so a re-run says what is
    present and does nothing (exit 0), instead of calling the user's own command a typo."""
    codex_tree()
    assert histmig("flip", "openai", "my-provider", "--apply").exit_code == 0
    again = histmig("flip", "openai", "my-provider", "--apply")
    assert again.exit_code == 0, again.stderr
    assert "warning: old-provider-absent: no session or threads row is recorded under 'openai'" in again.stderr
    assert "did you mean" not in again.stderr and "nothing to do" in again.stdout


def test_case7_force_plans_a_typo_old_anyway(tmp_path):
    codex_tree()
    r = histmig("flip", "opena", "my-provider", "--force", "--json")
    assert r.exit_code == 0, r.stderr
    out = orjson.loads(r.stdout)["plan"]
    assert out["summary"]["sessions"] == 0
    assert any(w["code"] == "old-provider-absent" and "did you mean 'openai'" in w["detail"] for w in out["warnings"])


# ---- relative home paths are made absolute at start ---------------------------------------

def test_case7_relative_codex_home_made_absolute(tmp_path, monkeypatch):
    """A relative --codex-home used to plan, then fail as an "invalid plan"."""
    codex_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CODEX_HOME")
    r = histmig("--codex-home", ".codex", "flip", "openai", "my-provider", "--apply")
    assert r.exit_code == 0, r.stderr
    assert providers(tmp_path / ".codex")[0] == (tid(1), "my-provider")
    (tx,) = tx_root(state_dir()).iterdir()
    paths = [rec["path"] for rec in read_records(tx) if rec["kind"] == "intent"]
    assert paths and all(p.startswith(str(tmp_path) + "/") for p in paths)
    assert histmig("--codex-home", ".codex", "undo").exit_code == 0
    assert providers(tmp_path / ".codex")[0] == (tid(1), "openai")


@pytest.mark.parametrize("how", ["flag", "env"])
def test_case7_relative_state_dir_made_absolute(tmp_path, monkeypatch, how):
    codex_tree()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    args = ["--state-dir", "st"] if how == "flag" else []
    if how == "env":
        monkeypatch.setenv("HISTMIG_STATE_DIR", "st")
    r = histmig(*args, "flip", "openai", "my-provider", "--apply")
    assert r.exit_code == 0, r.stderr
    assert len(list((work / "st" / "tx").iterdir())) == 1
    monkeypatch.chdir(tmp_path)               # later commands from elsewhere find it by its absolute path
    assert histmig("--state-dir", "work/st", "log").stdout.count("committed") == 1


def test_case7_relative_codex_home_env_made_absolute(tmp_path, monkeypatch):
    codex_tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CODEX_HOME", ".codex")
    r = histmig("flip", "openai", "my-provider", "--apply")
    assert r.exit_code == 0, r.stderr


def test_case7_relative_home_flag_made_absolute(tmp_path, monkeypatch):
    codex_tree(tmp_path)
    monkeypatch.chdir(tmp_path.parent)
    r = histmig("--home", tmp_path.name, "--state-dir", str(tmp_path / "st"), "flip", "openai", "my-provider",
                "--apply")
    assert r.exit_code == 0, r.stderr


def test_case7_every_home_path_is_resolved_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"HOME": "h", "CODEX_HOME": "c", "CLAUDE_CONFIG_DIR": "cl", "MINI_CC_HOME": "m",
           "HISTMIG_STATE_DIR": "s", "CODEX_SQLITE_HOME": "sq"}
    h = resolve_homes(env=env)
    assert (h.home, h.codex, h.claude, h.claude_json, h.mini_cc, h.state, h.codex_sqlite) == (
        tmp_path / "h", tmp_path / "c", tmp_path / "cl", tmp_path / "cl/.claude.json", tmp_path / "m",
        tmp_path / "s", tmp_path / "sq")
    h = resolve_homes(env={"HOME": "/h"}, home="x/./y", codex_home="a//b", claude_home="./cl", mini_cc_home="m",
                      state_dir="s/")
    assert (h.home, h.codex, h.claude, h.mini_cc, h.state) == (
        tmp_path / "x/y", tmp_path / "a/b", tmp_path / "cl", tmp_path / "m", tmp_path / "s")
    assert all(p.is_absolute() for p in h.roots())


def test_case7_dotdot_in_a_home_follows_the_kernel_not_the_text(tmp_path, monkeypatch):
    """``link/..`` is the parent of the link's target (what the kernel opens), not the folder the
    link sits in; the part after the last ``..`` keeps the name the user gave."""
    real = tmp_path / "real" / "deep"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.chdir(tmp_path)
    h = resolve_homes(env={"HOME": str(tmp_path)}, codex_home="link/../.codex", state_dir="../" + tmp_path.name)
    assert h.codex == tmp_path / "real" / ".codex"
    assert h.state == tmp_path


def test_case7_relative_xdg_state_home_is_ignored(tmp_path, monkeypatch):
    """The XDG spec: a relative path in XDG_* is invalid and ignored."""
    monkeypatch.chdir(tmp_path)
    assert resolve_homes(env={"HOME": "/h", "XDG_STATE_HOME": "rel"}).state == Path("/h/.local/state/histmig")
