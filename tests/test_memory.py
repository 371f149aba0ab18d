"""Issue 12 case 9: bounded memory. A 3-million-line ``.jsonl.zst`` (20 KB on disk, ~250 MB
inflated) and a 1 GB transcript of 1 MB lines; each command runs in a child process whose peak RSS
(``resource.getrusage`` of that child, reported by a wrapper process) must stay under 200 MB.
A record over the limit gives exit 1 and one line naming the file and line, not a MemoryError."""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from clirun import histmig
from histmig.jsonio import zst
from histmig.jsonio.jsonl import RECORD_MAX_BYTES
from memgen import CLAUDE_ID, big_transcript, scratch_env, under_limit, zst_rollout



@pytest.fixture
def env(isolated_homes, tmp_path):
    return scratch_env(isolated_homes, tmp_path, 4, "in the temporary folder for the 1 GB session and its moved copy")


def _under_limit(args: list, env: dict, expect_rc: int = 0) -> int:
    return under_limit(args, env, (expect_rc,))


@pytest.mark.slow
@pytest.mark.timeout(1200)   # a memory bound, not a timing: up to 460 s on a quiet CI machine, more when shared
def test_case9_three_million_line_zst_show_doctor_move_stay_under_200mb(env, isolated_homes):
    home = Path(isolated_homes["HOME"])
    app = home / "w" / "app"
    app.mkdir(parents=True)
    path = zst_rollout(Path(isolated_homes["CODEX_HOME"]), str(app))
    assert path.stat().st_size < 64 * 1024
    try:
        _under_limit(["show", "019e9625"], env)          # ~60 s: three streamed passes of 3M lines
        _under_limit(["doctor"], env)
        _under_limit(["move", app, home / "w" / "app2"], env)
    finally:
        path.unlink()


@pytest.mark.slow
@pytest.mark.timeout(1200)   # a memory bound, not a timing: up to 460 s on a quiet CI machine, more when shared
def test_case9_one_gb_session_show_doctor_move_stay_under_200mb(env, isolated_homes):
    home = Path(isolated_homes["HOME"])
    big = home / "w" / "big"
    big.mkdir(parents=True)
    path = big_transcript(Path(isolated_homes["CLAUDE_CONFIG_DIR"]), str(big))
    assert path.stat().st_size >= 1 << 30
    try:
        _under_limit(["show", CLAUDE_ID[:8]], env)
        _under_limit(["show", CLAUDE_ID[:8], "--format", "native"], env)
        _under_limit(["show", CLAUDE_ID[:8], "--format", "json"], env)
        _under_limit(["doctor"], env)
        _under_limit(["move", big, home / "w" / "big2"], env)
        _under_limit(["move", big, home / "w" / "big2", "--apply"], env)
    finally:
        for p in Path(isolated_homes["CLAUDE_CONFIG_DIR"]).rglob("*.jsonl"):
            p.unlink()
        shutil.rmtree(Path(isolated_homes["HISTMIG_STATE_DIR"]), ignore_errors=True)


def _remove_big_files(isolated_homes, source: Path, target_home: Path) -> None:
    """A convert test's gigabytes go at once: the source, what was written, the state dir's copies."""
    source.unlink()
    for p in target_home.rglob("*.jsonl"):
        p.unlink()
    shutil.rmtree(Path(isolated_homes["HISTMIG_STATE_DIR"]), ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timeout(1200)   # a memory bound, not a timing: up to 460 s on a quiet CI machine, more when shared
def test_case9_one_gb_session_convert_stays_under_200mb(env, isolated_homes):
    """Source and target stream: a dry run only counts and hashes the new lines, --apply spools
    them under the state dir and copies them in chunks (docs/convert.md "Memory and the spool folder")."""
    big = Path(isolated_homes["HOME"]) / "w" / "big"
    big.mkdir(parents=True)
    path = big_transcript(Path(isolated_homes["CLAUDE_CONFIG_DIR"]), str(big))
    codex = Path(isolated_homes["CODEX_HOME"])
    try:
        _under_limit(["convert", "--to", "codex", CLAUDE_ID[:8]], env)
        assert not list(codex.rglob("*.jsonl")) and not (Path(isolated_homes["HISTMIG_STATE_DIR"]) / "spool").exists()
        _under_limit(["convert", "--to", "codex", CLAUDE_ID[:8], "--apply"], env)
        [made] = codex.rglob("rollout-*.jsonl")
        assert made.stat().st_size > 1 << 30
        assert not any((Path(isolated_homes["HISTMIG_STATE_DIR"]) / "spool").iterdir())
    finally:
        _remove_big_files(isolated_homes, path, codex)


@pytest.mark.slow
@pytest.mark.timeout(1200)   # a memory bound, not a timing: up to 460 s on a quiet CI machine, more when shared
def test_case9_three_million_line_zst_convert_stays_under_200mb(env, isolated_homes):
    home = Path(isolated_homes["HOME"])
    app = home / "w" / "app"
    app.mkdir(parents=True)
    path = zst_rollout(Path(isolated_homes["CODEX_HOME"]), str(app))
    claude = Path(isolated_homes["CLAUDE_CONFIG_DIR"])
    try:
        _under_limit(["convert", "--to", "claude-code", "019e9625"], env)
        assert not list(claude.rglob("*.jsonl"))
        _under_limit(["convert", "--to", "claude-code", "019e9625", "--apply"], env)
        [made] = claude.rglob("*.jsonl")
        with open(made, "rb") as fh:
            # the provenance line, then one line per prompt and per answer (memgen writes 1000-block writes)
            assert sum(1 for _ in fh) == 1 + 2 * 1000 * ((3_000_000 - 2) // 3000)
    finally:
        _remove_big_files(isolated_homes, path, claude)


@pytest.mark.slow
@pytest.mark.timeout(1200)   # a memory bound, not a timing: up to 460 s on a quiet CI machine, more when shared
def test_case9_three_million_line_zst_move_apply_stays_under_200mb(env, isolated_homes):
    """apply/zstdfill.py streams the rewrite: decompress, patch, recompress into the temp, verify."""
    home = Path(isolated_homes["HOME"])
    app = home / "w" / "app"
    app.mkdir(parents=True)
    path = zst_rollout(Path(isolated_homes["CODEX_HOME"]), str(app))
    _under_limit(["move", app, home / "w" / "app2", "--apply"], env)
    with zst.BoundedZstdReader(open(path, "rb"), path=str(path)) as r:   # moved: the new cwd, every line kept
        head = r.read(4096)
        lines = head.count(b"\n") + sum(chunk.count(b"\n") for chunk in iter(lambda: r.read(1 << 20), b""))
    assert f'"cwd":"{home / "w" / "app2"}"'.encode() in head
    assert lines == 2 + (3_000_000 - 2) // 3000 * 3000


# ---- one record over the limit ------------------------------------------------------------------

def _transcript(claude: Path, lines: list[dict]) -> Path:
    folder = claude / "projects" / "-w-app"
    folder.mkdir(parents=True)
    path = folder / f"{CLAUDE_ID}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(rec) + b"\n" for rec in lines))
    return path


def _line(n: int, text: str, *, msg_id: str | None = None) -> dict:
    common = {"uuid": f"00000000-0000-4000-8000-{n:012d}", "timestamp": "2026-11-29T10:00:00.000Z",
              "cwd": "/w/app", "sessionId": CLAUDE_ID}
    if msg_id is None:
        return {"parentUuid": None, "type": "user", "message": {"role": "user", "content": text}, **common}
    return {"parentUuid": None, "type": "assistant", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "text", "text": text}]}, **common}


def test_case9_a_line_over_the_record_limit_is_one_clear_error(isolated_homes):
    path = _transcript(Path(isolated_homes["CLAUDE_CONFIG_DIR"]),
                       [_line(0, "hello"), _line(1, "x" * (RECORD_MAX_BYTES + 10))])
    res = histmig("show", CLAUDE_ID[:8])
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and f"{path}:2:" in res.stderr and "16 MiB limit" in res.stderr
    assert "Traceback" not in res.stderr
    conv = histmig("convert", "--to", "codex", CLAUDE_ID[:8])     # skipped and named, nothing lost silently
    assert conv.exit_code == 3 and f"{path}:2:" in conv.stderr and "16 MiB limit" in conv.stderr


def test_case9_an_assistant_turn_over_the_record_limit_is_one_clear_error(isolated_homes):
    # Claude writes one line per content block; lines sharing message.id are one record
    half = "y" * (RECORD_MAX_BYTES // 2 + 10)
    path = _transcript(Path(isolated_homes["CLAUDE_CONFIG_DIR"]),
                       [_line(0, "hello"), _line(1, half, msg_id="msg_1"), _line(2, half, msg_id="msg_1")])
    res = histmig("show", CLAUDE_ID[:8], "--format", "native")
    assert res.exit_code == 1 and res.stdout == "" and f"{path}:2:" in res.stderr
    assert "Traceback" not in res.stderr


RLIMITED = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20)); "
            "sys.argv = ['histmig'] + sys.argv[1:]; runpy.run_module('histmig', run_name='__main__')")


def test_case9_under_a_600mb_address_limit_a_big_session_shows_and_converts(env, isolated_homes):
    """Under a 600 MB address-space limit (``ulimit -v``, how the issue got its MemoryError) a
    256 MB session still shows, and converts (dry run and --apply): the converted session streams
    through a spool file, so there is no MemoryError to report (a single record too big for memory
    would still be a named ``too-large`` skip, never a traceback)."""
    import subprocess
    import sys
    big = Path(isolated_homes["HOME"]) / "w" / "big"
    big.mkdir(parents=True)
    path = big_transcript(Path(isolated_homes["CLAUDE_CONFIG_DIR"]), str(big), size=256 << 20)
    out = Path(isolated_homes["HOME"]) / "shown.txt"   # to a file: 256 MB captured here would grow pytest itself
    try:
        def run(*args):
            with open(out, "w") as fh:
                return subprocess.run([sys.executable, "-c", RLIMITED, *args], env=env, stdout=fh,
                                      stderr=subprocess.PIPE, text=True)
        shown = run("show", CLAUDE_ID[:8])
        assert shown.returncode == 0 and "Traceback" not in shown.stderr
        with open(out) as fh:
            roles = [ln for ln in fh if ln in ("[user]\n", "[assistant]\n")]
        assert len(roles) == 256 and roles.count("[user]\n") == 128
        for apply in ([], ["--apply"]):
            conv = run("convert", "--to", "codex", CLAUDE_ID[:8], *apply)
            assert conv.returncode == 0 and "Traceback" not in conv.stderr, conv.stderr
        made = list(Path(isolated_homes["CODEX_HOME"]).rglob("rollout-*.jsonl"))
        assert len(made) == 1 and made[0].stat().st_size > 256 << 20
    finally:
        path.unlink()
        out.unlink(missing_ok=True)
        for p in Path(isolated_homes["CODEX_HOME"]).rglob("rollout-*.jsonl"):
            p.unlink()


@pytest.mark.slow
@pytest.mark.timeout(1200)   # a memory bound, not a timing
def test_issue18_export_of_a_big_session_and_a_long_rollout_stays_under_200mb(env, isolated_homes, tmp_path):
    """``export`` streams a session's records into its page (histmig/verbs/export): a 256 MB transcript
    of 1 MB lines and a 600,000-line rollout, in every format, with --redact too (measured 29-46 MB)."""
    home = Path(isolated_homes["HOME"])
    app = home / "w" / "app"
    app.mkdir(parents=True)
    big = big_transcript(Path(isolated_homes["CLAUDE_CONFIG_DIR"]), str(app), size=256 << 20)
    zst = zst_rollout(Path(isolated_homes["CODEX_HOME"]), str(app), lines=600_000)
    try:
        for to in ("markdown", "html", "atif"):
            _under_limit(["export", "--all", "--to", to, "--out", tmp_path / to], env)
            shutil.rmtree(tmp_path / to)
        _under_limit(["export", "--all", "--to", "html", "--out", tmp_path / "r", "--redact"], env)
    finally:
        big.unlink()
        zst.unlink()
