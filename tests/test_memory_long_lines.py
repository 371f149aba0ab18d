"""Bounded memory with long lines (the rule of tests/test_memory.py: a command's peak RSS under 200 MB).

A first prompt of tens of MB (a pasted file) was the listing's title, whole: every ref, the scan index
and ``scan`` held and rendered it (splitting it into words to fit a column: 337 MB for two 20 MiB lines,
search 460 MB). A ref now keeps 200 characters of its title (histmig/core/model.py ``TITLE_MAX``), a
listing drops the head's records before it counts, a counted line and a search's candidate line are not
copied once more, and doctor keeps of each session's last record only what its repair copies (with
300 sessions whose last record is 1 MiB, doctor peaked at 888 MB; now 34 MB)."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from histmig.core.model import TITLE_MAX, SessionRef
from memgen import big_transcript, scratch_env, under_limit


def test_a_ref_keeps_the_first_200_characters_of_its_title():
    ref = SessionRef("claude-code", "x", Path("/x"), title="é" * 5000)
    assert ref.title == "é" * TITLE_MAX and TITLE_MAX == 200
    ref.title = "short"
    assert ref.title == "short" and ref.to_dict()["title"] == "short"
    ref.title = None
    assert ref.title is None


def test_scan_json_titles_are_cut_for_every_tool(isolated_homes, tmp_path):
    """The listing's title of a session whose first prompt is 100 KB: 200 characters, from scan and
    from the scan index alike."""
    from clirun import histmig
    home = Path(isolated_homes["HOME"])
    big_transcript(Path(isolated_homes["CLAUDE_CONFIG_DIR"]), str(home / "w"), size=200 << 10, line_bytes=100 << 10)
    for _ in range(2):                      # cold, then from the scan index
        out = histmig("scan", "--json")
        assert out.exit_code == 0, out.stderr
        titles = [s["title"] for s in orjson.loads(out.stdout)["sessions"]]
        assert titles and all(len(t) == TITLE_MAX for t in titles), [len(t) for t in titles]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_two_20_mib_lines_are_listed_searched_and_checked_under_200mb(isolated_homes, tmp_path):
    env = scratch_env(isolated_homes, tmp_path, 1, "for a 40 MiB transcript and its moved copy")
    home = Path(isolated_homes["HOME"])
    app = home / "w" / "app"
    app.mkdir(parents=True)
    (home / "w" / "app2").mkdir()
    big_transcript(Path(isolated_homes["CLAUDE_CONFIG_DIR"]), str(app), size=40 << 20, line_bytes=20 << 20)
    for args in (["scan"], ["scan", "--json", "--no-index"], ["search", "-s", "lorem"], ["search", "lorem"],
                 ["search", "--no-index", "--tools", "lorem"], ["doctor"], ["move", app, home / "w" / "app2"]):
        under_limit(args, env, (0, 3))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_doctor_holds_no_last_record_per_session(isolated_homes, tmp_path):
    """300 sessions, each ending with a 1 MiB answer: doctor keeps a few fields of each last record."""
    env = scratch_env(isolated_homes, tmp_path, 1, "for 300 transcripts of 2 MiB")
    home, claude = Path(isolated_homes["HOME"]), Path(isolated_homes["CLAUDE_CONFIG_DIR"])
    for i in range(300):
        big_transcript(claude, str(home / "w" / f"p{i}"), size=2 << 20, line_bytes=1 << 20)
    under_limit(["doctor"], env, (0, 1))          # (1: it finds the 300 copies of one session id)
