"""Issue 16 acceptance for Gemini CLI (tests/e2e/versions.py GEMINI) against the fake API's Gemini protocol.

- move: after ``mv app app2`` the client lists nothing (and claims a new slug); after ``histmig move
  --apply`` ``gemini -r latest -p`` continues in app2 and the request carries the earlier turns; undo
  restores every byte and mtime under ``~/.gemini``.
"""
from __future__ import annotations

import json
import shutil

import pytest

from . import gemini_client as gem
from .clients import ClientsUnavailable, carried
from .conftest import IN_CI
from .histmig_run import histmig, ok

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def gemini():
    try:
        return gem.install()
    except ClientsUnavailable as e:
        if IN_CI:
            pytest.fail(f"gemini could not be installed in CI: {e}", pytrace=False)
        pytest.skip(f"gemini unavailable: {e}")


def home_state(scratch) -> dict:
    """Every file under ~/.gemini that histmig may touch: bytes and mtime (logs are the client's own)."""
    g = gem.gemini_dir(scratch)
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(g.rglob("*"))
            if p.is_file() and "/logs/" not in str(p)}


def test_move_then_the_client_continues_from_the_new_folder_and_undo_restores(gemini, scratch, fake_api):
    gem.setup(scratch)
    app = scratch.project("app")
    gem.run_gemini(gemini, scratch, fake_api, "GEM-ONE remember this", app).check()
    app2 = app.with_name("app2")
    shutil.move(str(app), str(app2))
    lost = gem.run_gemini(gemini, scratch, fake_api, None, app2, args=("--list-sessions",)).check()
    assert "GEM-ONE" not in lost.stdout           # the break: a new slug, nothing listed
    before = home_state(scratch)
    ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    ok(histmig(scratch, "undo"))
    assert home_state(scratch) == before
    ok(histmig(scratch, "move", str(app), str(app2), "--apply"))
    reg = json.loads((gem.gemini_dir(scratch) / "projects.json").read_text())["projects"]
    assert reg == {str(app2): "app"}
    listed = gem.run_gemini(gemini, scratch, fake_api, None, app2, args=("--list-sessions",)).check()
    assert "Available sessions for this project (1)" in listed.stdout, listed.stdout
    run = gem.run_gemini(gemini, scratch, fake_api, "GEM-TWO after the move", app2, resume="latest").check()
    asks = run.model_requests("gemini")
    assert asks and all(e.status == 200 for e in asks), [(e.status, e.error) for e in asks]
    assert any(carried(e, "GEM-ONE remember this") and carried(e, "GEM-TWO") for e in asks)
