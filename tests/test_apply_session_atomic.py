"""A session is changed completely or not at all, also when one of its files changes at the apply's last
check (histmig/apply/skipping.py ``held_back``): the rest of the session — its database rows, its other
files in the same batch, a Gemini project's registry and markers — is not written either."""
from __future__ import annotations

import os

from histmig.apply import apply_plan, fsio
from histmig.verbs.flip import plan_flip

from codex_fixtures import home_with, rollout, tid
from test_move_fixtures import homes
from test_undo_inverse import row


def changes_at_last_check(path):
    """An fs whose hook changes ``path``'s mtime just before the apply's last check of it."""
    fired = []

    def touch(label):
        if label == str(path) and not fired:
            fired.append(label)
            st = os.lstat(path)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    fs = fsio.FS()
    fs.hooks["before-final-check"] = touch
    return fs, fired


def test_a_flip_leaves_the_row_of_a_rollout_that_changed_at_its_last_check():
    h = homes()
    sessions = {tid(i): rollout(tid(i)) for i in (1, 2, 3)}
    paths = home_with(h.codex, sessions)
    fs, fired = changes_at_last_check(paths[tid(2)])
    with fsio.using(fs):
        res = apply_plan(plan_flip(h, "openai", "my-provider"), h)
    assert fired and res.exit_code == 3
    assert paths[tid(2)].read_bytes() == sessions[tid(2)]
    providers = {i: row(h.codex / "state_5.sqlite", "SELECT model_provider FROM threads WHERE id=?", tid(i))
                 for i in (1, 2, 3)}
    assert providers == {1: [("my-provider",)], 2: [("openai",)], 3: [("my-provider",)]}
    assert {s.code for s in res.skips} == {"changed", "session-skipped"}


def test_a_gemini_move_changes_the_registry_and_its_markers_together_or_not_at_all(tmp_path):
    """A marker changed at its last check: the registry and the other markers wait with it (one unit:
    tools/gemini/move.py), so no project's key says NEW while its marker says OLD."""
    from histmig.cli import samples
    from histmig.verbs.move import plan_move
    from test_undo_partial_tools import changed, tree
    h = samples.install(tmp_path / "home", tools=("gemini",))
    before = tree(h.gemini)
    fs, fired = changes_at_last_check(h.gemini / "tmp" / "app" / ".project_root")
    with fsio.using(fs):
        res = apply_plan(plan_move(h, "/tmp/histmig-rec/work", str(tmp_path / "w2")), h)
    assert fired and res.exit_code == 3 and "session-skipped" in {s.code for s in res.skips}
    after = tree(h.gemini)
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in before.items()}, changed(before, after)


def test_a_file_that_changed_at_its_last_check_holds_back_its_session_in_the_same_batch(tmp_path):
    """Every file of a batch is checked before the first rename: the session's other file stays too."""
    from histmig.core.plan import Fingerprint, Patch, Plan, WriteFile
    h = homes()
    folder = h.codex / "sessions" / "s"
    folder.mkdir(parents=True)
    old, new = b'"provider":"openai"', b'"provider":"mine!!"'
    files = []
    for i in (1, 2):
        p = folder / f"f{i}.jsonl"
        p.write_bytes(b'{"n":%d,' % i + old + b'}\n')
        files.append((p, p.read_bytes()))
    ops = [WriteFile(path=str(p), expect=Fingerprint.of(str(p)), patches=(Patch(data.index(old), old, new),),
                     session={"tool": "review", "id": "s1"}) for p, data in files]
    fs, fired = changes_at_last_check(files[1][0])
    with fsio.using(fs):
        res = apply_plan(Plan("review", {}, [str(h.codex)], ops), h)
    assert fired and res.exit_code == 3
    assert [p.read_bytes() for p, _ in files] == [data for _, data in files]
    assert {s.code for s in res.skips} == {"changed", "session-skipped"}
