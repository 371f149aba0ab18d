"""What an undo holds while it plans (issue 15, "flat memory"; docs/safety.md "What undo reads"):
a database intent's rows stay in the journal and are read a slice at a time when they are inverted
(``journal.LazyRows``), each intent is let go once folded into its unit, ``begin``'s list of
operations is dropped, a move's journaled patches are kept as columns, the files' inverses are worked
out a window of intents at a time, the rows of a record share their repeated parts, and an operation
without patches shares one empty list. Each must leave the undo plan exactly as it was. The apply's
threads take a window of calls at a time."""
from __future__ import annotations

import shutil

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from histmig.apply import apply_plan, journal
from histmig.apply.journal import LazyRows, iter_records
from histmig.apply.options import NO_PATCHES, Prepared
from histmig.core.diagnostics import HistmigInputError
from histmig.core.plan import PatchList, SqlUpdate, b64
from histmig.verbs.flip import plan_flip
from histmig.verbs.undo import files as uf
from histmig.verbs.undo import pick_transaction, plan_and_begin, plan_undo
from histmig.verbs.undo.run import undo

from codex_fixtures import home_with, rollout, tid
from test_move_fixtures import homes


def _journal_with(folder, rows: list) -> None:
    """A journal whose database intent ends with its ``rows`` list, as ``Journal.append_stream`` writes it."""
    folder.mkdir(parents=True, exist_ok=True)
    rec = orjson.dumps({"kind": "intent", "t": 1, "n": 0, "method": "sql", "path": "/x.sqlite"})
    line = rec[:-1] + b',"rows":[' + b",".join(orjson.dumps(r) for r in rows) + b"]}\n"
    (folder / journal.JOURNAL).write_bytes(b'{"kind":"begin","t":0}\n' + line + b'{"kind":"commit","t":2}\n')


def _rows(n: int) -> list[dict]:
    return [{"kind": "update", "table": "threads", "key": {"id": f"t{i}"}, "old": {"p": "a"}, "new": {"p": "b"},
             "session": {"tool": "codex", "id": f"t{i}"}} for i in range(n)]


def _small_slices(monkeypatch) -> None:
    monkeypatch.setattr(journal, "LONG", 256)
    monkeypatch.setattr(journal, "SLICE", 300)


# -- journal.LazyRows ------------------------------------------------------------------------------
def test_lazy_rows_count_and_give_back_every_row_in_order_a_slice_at_a_time(tmp_path, monkeypatch):
    _small_slices(monkeypatch)
    _journal_with(tmp_path, _rows(40))
    eager = [r for r in iter_records(tmp_path)]
    lazy = [r for r in iter_records(tmp_path, lazy_rows=True)]
    [rows] = [r["rows"] for r in lazy if r["kind"] == "intent"]
    assert isinstance(rows, LazyRows) and len(rows) == 40 and rows
    assert len(list(rows.slices())) > 1                          # read back in several slices
    assert list(rows) == list(rows) == eager[1]["rows"] == _rows(40)
    assert {k: v for k, v in lazy[1].items() if k != "rows"} == {k: v for k, v in eager[1].items() if k != "rows"}
    assert [r["kind"] for r in lazy] == ["begin", "intent", "commit"]


def test_a_record_whose_rows_hold_the_same_shape_nested_is_parsed_whole(tmp_path, monkeypatch):
    _small_slices(monkeypatch)
    nested = [{"kind": "delete", "table": "t", "rows": [{"kind": f"v{i}", "x": "y" * 40} for i in range(12)]}
              for _ in range(3)]
    _journal_with(tmp_path, nested)
    [rec] = [r for r in iter_records(tmp_path, lazy_rows=True) if r["kind"] == "intent"]
    assert isinstance(rec["rows"], list) and rec["rows"] == nested


def test_a_record_changed_after_it_was_counted_is_refused_with_a_typed_error(tmp_path, monkeypatch):
    _small_slices(monkeypatch)
    _journal_with(tmp_path, _rows(20))
    [rec] = [r for r in iter_records(tmp_path, lazy_rows=True) if r["kind"] == "intent"]
    path = tmp_path / journal.JOURNAL
    path.write_bytes(path.read_bytes()[:40])
    try:
        list(rec["rows"])
    except HistmigInputError as e:
        assert str(path) in e.describe()
    else:
        raise AssertionError("a changed journal line was read as rows")


# strings made of the markers' pieces: a row's text may spell '},{"kind":' or ',"rows":[{' (escaped in JSON)
def _lazy(tmp_path, monkeypatch, rows: list):
    _small_slices(monkeypatch)
    _journal_with(tmp_path, rows)
    [rec] = [r for r in iter_records(tmp_path, lazy_rows=True) if r["kind"] == "intent"]
    return rec["rows"], tmp_path / journal.JOURNAL


def _refused(rows) -> str:
    try:
        list(rows)
    except HistmigInputError as e:
        return e.describe()
    raise AssertionError("a changed journal line was read as rows")


def test_a_same_length_change_that_breaks_the_json_is_refused_with_the_typed_error(tmp_path, monkeypatch):
    rows, path = _lazy(tmp_path, monkeypatch, [{**r, "x": "ab"} for r in _rows(20)])
    data = path.read_bytes()
    at = data.index(b'"x":"ab"')
    path.write_bytes(data[:at] + b'"x":"a\x01"' + data[at + 8:])      # same length, not JSON
    assert "changed while it was read" in _refused(rows)


def test_a_same_length_line_with_other_rows_is_refused_not_read_at_other_indices(tmp_path, monkeypatch):
    three = b'"a"},{"kind":"x"'                                       # three rows in the same bytes
    rows, path = _lazy(tmp_path, monkeypatch, [{"kind": "update", "v": "a" * (len(three) - 2)},
                                               *_rows(10)])
    data = path.read_bytes()
    at = data.index(b'"' + b"a" * (len(three) - 2) + b'"')
    path.write_bytes(data[:at] + three + data[at + len(three):])
    assert len(path.read_bytes()) == len(data)
    assert isinstance(rows, LazyRows) and "holds 12 rows, not the 11 counted" in _refused(rows)


def test_a_journal_gone_before_its_rows_are_read_is_refused_with_the_typed_error(tmp_path, monkeypatch):
    rows, path = _lazy(tmp_path, monkeypatch, _rows(20))
    path.unlink()
    assert "cannot be read again" in _refused(rows)


_text = st.lists(st.sampled_from(['a', '"', '\\', ',', '{', '}', '[', ']', ':', 'kind', 'rows', 'é']),
                 max_size=12).map("".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries({"kind": _text, "v": _text, "w": st.lists(_text, max_size=3)}), min_size=1,
                max_size=30))
def test_lazy_rows_equal_a_whole_parse_of_the_line(tmp_path_factory, rows):
    folder = tmp_path_factory.mktemp("j")
    old = journal.LONG, journal.SLICE
    journal.LONG, journal.SLICE = 64, 80
    try:
        _journal_with(folder, rows)
        [lazy] = [r for r in iter_records(folder, lazy_rows=True) if r["kind"] == "intent"]
        whole = orjson.loads((folder / journal.JOURNAL).read_bytes().splitlines()[1])
        assert list(lazy["rows"]) == whole["rows"] and len(lazy["rows"]) == len(whole["rows"])
    finally:
        journal.LONG, journal.SLICE = old


# -- the undo plan is the same ---------------------------------------------------------------------
def _flipped(n: int):
    h = homes()
    for d in (h.codex, h.state):
        shutil.rmtree(d, ignore_errors=True)
    home_with(h.codex, {tid(i): rollout(tid(i), turns=3) for i in range(1, n + 1)})
    assert apply_plan(plan_flip(h, "openai", "my-provider"), h).exit_code == 0
    return h


def test_an_undo_planned_from_lazy_rows_is_the_plan_made_from_parsed_rows(monkeypatch):
    h = _flipped(6)
    folder = pick_transaction(h.state, None)
    parsed = plan_undo(h, folder).dumps()
    _small_slices(monkeypatch)
    seen = []
    real = LazyRows.slices
    monkeypatch.setattr(LazyRows, "slices", lambda self: seen.append(self) or real(self))
    lazy = plan_undo(h, folder).dumps()
    assert seen and lazy == parsed
    assert undo(h).exit_code == 0


def test_an_undo_worked_out_a_few_intents_at_a_time_is_the_same_plan(monkeypatch):
    """Each window's inverses are worked out ahead and folded in, and its intents let go, before the
    next window is read (``AHEAD_WINDOW``): the plan is the one made with every intent at once."""
    import histmig.verbs.undo as undo_mod
    h = _flipped(7)
    folder = pick_transaction(h.state, None)
    whole = plan_undo(h, folder).dumps()
    windows = []
    real = undo_mod.replaced_ahead
    monkeypatch.setattr(undo_mod, "replaced_ahead", lambda env, intents, **kw: windows.append(len(intents))
                        or real(env, intents, **kw))
    monkeypatch.setattr(undo_mod, "AHEAD_WINDOW", 2)
    assert plan_undo(h, folder).dumps() == whole
    assert len(windows) > 3 and max(windows) == 2
    assert undo(h).exit_code == 0


def test_whether_undo_forks_is_decided_once_for_every_window(monkeypatch):
    """A window of small files would not reach the fork threshold by itself, while the transaction's
    files together do: every window then goes to forked workers, as they all would at once."""
    import histmig.verbs.undo as undo_mod
    from histmig.verbs.undo import ahead
    h = _flipped(7)
    files = sorted(h.codex.rglob("rollout-*.jsonl"))
    for f in files:                       # continued since: each is read to be diffed
        with open(f, "ab") as fh:
            fh.write(b'{"timestamp":"2026-12-05T00:00:00.000Z","type":"event_msg","payload":{"type":"x"}}\n')
    folder = pick_transaction(h.state, None)
    whole = plan_undo(h, folder).dumps()
    forked = []
    monkeypatch.setattr(ahead, "cpus", lambda: 2)
    # more than any window of two files weighs, less than the seven together
    monkeypatch.setattr(ahead, "FORK_MIN", int(2.5 * max(f.stat().st_size for f in files)))
    monkeypatch.setattr(ahead, "fork_map", lambda fn, items, *a, **k: forked.append(len(items)) or [fn(x) for x in items])
    monkeypatch.setattr(undo_mod, "AHEAD_WINDOW", 2)
    assert plan_undo(h, folder).dumps() == whole
    assert len(forked) >= 2 and max(forked) <= 2


def test_the_inverse_rows_of_one_record_share_their_table_names_and_sessions():
    """A row parsed from the journal has its own copy of its table's name and its session; the
    inverse operations keep one of each (rows.share_parts)."""
    h = _flipped(3)
    plan = plan_undo(h, pick_transaction(h.state, None))
    rows = [op for op in plan.operations if hasattr(op, "table")]
    assert len(rows) >= 6
    by_table: dict[str, set[int]] = {}
    by_thread: dict[str, set[int]] = {}
    for op in rows:
        by_table.setdefault(op.table, set()).add(id(op.table))
        by_thread.setdefault((op.db, op.session["id"]), set()).add(id(op.session))
    assert all(len(ids) == 1 for ids in by_table.values())
    assert all(len(ids) == 1 for ids in by_thread.values())


def test_every_inverse_operation_of_a_session_shares_one_session_dict():
    """Its file's and its rows in every database (the file intents' copy: undo/__init__.py _add_rows)."""
    h = _flipped(3)
    plan = plan_undo(h, pick_transaction(h.state, None))
    by_session: dict[str, set[int]] = {}
    kinds: dict[str, set[str]] = {}
    for op in plan.operations:
        by_session.setdefault(op.session["id"], set()).add(id(op.session))
        kinds.setdefault(op.session["id"], set()).add(type(op).__name__)
    assert len(by_session) == 3 and all(len(ids) == 1 for ids in by_session.values())
    assert all({"WriteFile", "SqlUpdate"} <= k for k in kinds.values())


def test_plan_and_begin_gives_the_begin_record_without_its_operations():
    h = _flipped(2)
    plan, begin = plan_and_begin(h, pick_transaction(h.state, None))
    assert begin["op"] == "flip" and begin["args"]["new"] == "my-provider" and "ops" not in begin
    assert plan.operations


# -- a move's journaled patches as columns -----------------------------------------------------------
def _intent(patches: list) -> dict:
    size = 100
    grow = sum(len(new) - len(old) for _o, old, new in patches)
    return {"patches": [[o, b64(old), b64(new)] for o, old, new in patches], "pre": {"size": size},
            "post": {"size": size + grow}}


def test_compacted_patches_give_the_same_inverse_as_the_journaled_lists():
    rec = _intent([(i * 10, b"/old/app", b"/new/app-moved") for i in range(8)])
    listed = uf.journaled_inverse(rec)
    uf.compact_patches(rec)
    assert isinstance(rec["patches"], PatchList) and len(rec["patches"]) == 8
    assert uf.journaled_inverse(rec) == listed and listed


def test_few_or_undecodable_patches_are_left_as_journaled():
    for bad_item in ((2, 1, None), (2, 0, 2 ** 63), (2, 1, 7)):    # not text, no int64 offset, not text
        rec = _intent([(i, b"a", b"b") for i in range(6)])
        rec["patches"][bad_item[0]][bad_item[1]] = bad_item[2]
        uf.compact_patches(rec)
        assert isinstance(rec["patches"], list)
    few = _intent([(0, b"a", b"b")])
    uf.compact_patches(few)
    assert isinstance(few["patches"], list)
    bad = _intent([(i, b"a", b"b") for i in range(6)])
    bad["patches"][2][1] = "not base64!"
    uf.compact_patches(bad)
    assert isinstance(bad["patches"], list)


# -- shared empty patches and sessions -------------------------------------------------------------
def test_operations_without_patches_share_one_empty_list_that_precheck_never_fills():
    a = Prepared(1, SqlUpdate(db="/x", table="t", key={"id": 1}, set={"a": 1}, expect={"a": 0}), "sql", "/x")
    b = Prepared(2, SqlUpdate(db="/x", table="t", key={"id": 2}, set={"a": 1}, expect={"a": 0}), "sql", "/x")
    assert a.patches is b.patches is NO_PATCHES and not NO_PATCHES


def test_a_flips_operations_of_one_thread_share_its_session_dict():
    h = homes()
    for d in (h.codex, h.state):
        shutil.rmtree(d, ignore_errors=True)
    home_with(h.codex, {tid(i): rollout(tid(i), turns=3) for i in (1, 2)})
    plan = plan_flip(h, "openai", "my-provider")
    by_thread: dict[str, set[int]] = {}
    for op in plan.operations:
        by_thread.setdefault(op.session["id"], set()).add(id(op.session))
    assert sorted(by_thread) == sorted([tid(1), tid(2)]) and all(len(ids) == 1 for ids in by_thread.values())
    assert plan.operations[0].session == {"tool": "codex", "id": plan.operations[0].session["id"]}


def test_no_patches_is_still_empty_after_a_flip_and_its_undo():
    h = _flipped(3)
    assert undo(h).exit_code == 0
    assert len(NO_PATCHES) == 0


# -- the apply's threads take a window of calls at a time ----------------------------------------------
def test_parallel_map_gives_every_result_in_order_a_window_at_a_time(monkeypatch):
    from histmig.apply import check
    monkeypatch.setattr(check, "MAP_WINDOW", 3)
    assert check.parallel_map(lambda x: x * x, list(range(20)), workers=2) == [x * x for x in range(20)]


def test_parallel_map_raises_the_first_error_and_starts_no_later_window(monkeypatch):
    from histmig.apply import check
    monkeypatch.setattr(check, "MAP_WINDOW", 4)
    called = []

    def fail_at_5(x):
        called.append(x)
        if x == 5:
            raise ValueError("five")
        return x
    try:
        check.parallel_map(fail_at_5, list(range(40)), workers=2)
    except ValueError as e:
        assert str(e) == "five"
    else:
        raise AssertionError("no error")
    assert max(called) < 8            # the window holding 5 ran out; none after it was handed over


# -- a long journal record is written as it is encoded ---------------------------------------------------
def test_a_long_record_is_written_as_it_is_encoded_and_reads_back_whole(tmp_path, monkeypatch):
    from histmig.apply import fsio
    j = journal.Journal.create(fsio.FS(), tmp_path, "tx1")
    writes = []
    real = fsio.FS.write_parts
    monkeypatch.setattr(fsio.FS, "write_parts", lambda self, fd, parts, label: writes.append(parts)
                        or real(self, fd, parts, label))
    rows = [{"kind": "update", "n": i} for i in range(1_100)]
    try:
        j.append_stream("intent", {"n": 1, "method": "sql"}, "rows", iter(rows))
    finally:
        j.close()
    assert len(writes) == 1 and not isinstance(writes[0], list)      # one counted write, its parts generated
    [rec] = journal.read_records(j.folder)
    assert rec["rows"] == rows and rec["kind"] == "intent" and rec["n"] == 1


def test_a_record_whose_items_fail_part_way_is_torn_and_the_next_one_reads(tmp_path):
    from histmig.apply import fsio
    j = journal.Journal.create(fsio.FS(), tmp_path, "tx2")

    def rows():
        for i in range(2_000):
            if i == 1_500:
                raise RuntimeError("the database went away")
            yield {"kind": "update", "n": i}
    try:
        try:
            j.append_stream("intent", {"n": 1, "method": "sql"}, "rows", rows())
        except RuntimeError:
            pass
        j.append("rolled-back", reason="test")
    finally:
        j.close()
    assert [r["kind"] for r in journal.read_records(j.folder)] == ["rolled-back"]


def test_the_later_transactions_are_read_a_record_at_a_time_and_say_the_same(tmp_path, monkeypatch):
    """Undo of an older transaction reads what each later one touched one record at a time, its rows
    left in the file (``history._light_records``), never its journal parsed whole; what it finds is
    what the whole parse found."""
    from histmig.apply.journal import read_records, tx_root
    from histmig.verbs.undo import history
    state = tmp_path / "state"
    root = tx_root(state)
    rows = _rows(30_000)                          # a 4 MB line: its rows left in the file
    _journal_with(root / "20261205T000002.000000Z-000002", rows)
    mine = root / "20261205T000001.000000Z-000001"
    mine.mkdir(parents=True)
    (mine / journal.JOURNAL).write_bytes(b'{"kind":"begin","t":0}\n')
    later = root / "20261205T000002.000000Z-000002" / journal.JOURNAL
    data = later.read_bytes().replace(b'{"kind":"commit"', b'{"kind":"intent","t":1,"n":1,"method":"replace",'
                                      b'"path":"/h/a","dst":"/h/b"}\n{"kind":"done","t":1,"n":0}\n'
                                      b'{"kind":"done","t":1,"n":1}\n{"kind":"commit"')
    later.write_bytes(data.replace(b'{"kind":"begin","t":0}', b'{"kind":"begin","t":0,"op":"flip","ops":[1]}'))
    whole = history.Later()
    history._add_touches(whole, read_records(later.parent), "20261205T000002.000000Z-000002 (flip)")
    monkeypatch.setattr(journal, "read_records", lambda *a: (_ for _ in ()).throw(AssertionError("read whole")))
    monkeypatch.setattr(history, "read_records", journal.read_records, raising=False)
    found = history.load(state, mine.name, [])
    assert found.later == whole and len(found.later.rows) == 30_000 and found.later.paths == {
        "/h/a": "20261205T000002.000000Z-000002 (flip)", "/h/b": "20261205T000002.000000Z-000002 (flip)"}


def _done_intents_parsed(folder) -> list[dict]:
    """The finished intents as undo read them before they were packed: every record parsed whole,
    the later records' facts laid on the parsed intent (histmig/verbs/undo/__init__.py, before)."""
    latest: dict[int, dict] = {}
    for r in iter_records(folder, lazy_rows=True):
        kind, n = r["kind"], r.get("n")
        if kind == "intent":
            uf.compact_patches(r)
            latest[n] = r
        elif kind in ("done", "salvaged") and n in latest:
            latest[n]["done" if kind == "done" else "salvaged_raw"] = r.get("raw", True)
            if r.get("post"):
                latest[n]["post"] = r["post"]
            if r.get("bst"):
                latest[n]["bst"] = r["bst"]
        elif kind == "taken-back" and n in latest:
            latest[n].pop("done", None)
        elif kind == "settled":
            for m, *stat in r.get("files") or []:
                if m in latest:
                    latest[m]["settled"] = (stat, r["t_s"], r["res"])
        elif kind == "ready" and n in latest and r.get("pre_sha256"):
            latest[n]["pre"] = {**latest[n]["pre"], "sha256": r["pre_sha256"]}
    return [latest[n] for n in sorted(latest) if latest[n].get("done")]


def _same(a, b) -> bool:
    """Equal, and every dict's keys in the same order (a LazyRows or PatchList by its contents)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, LazyRows):
        return isinstance(b, LazyRows) and (a.path, a.offset, a.length, a.count) == (b.path, b.offset, b.length, b.count)
    if isinstance(a, PatchList):
        return isinstance(b, PatchList) and list(a.rows()) == list(b.rows())
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


def test_a_packed_intent_unpacks_to_the_record_undo_parsed_before(tmp_path):
    """A file rewrite's intent is kept as its bytes until it is folded in (histmig/verbs/undo/packed.py):
    unpacked, with the facts of the later records (done, post, bst, settled, a ready record's hash,
    a retried attempt), it is the parsed record key for key, in the same order; many patches as the
    last key are kept as columns beside the bytes, anywhere else the record is kept parsed."""
    from histmig.verbs.undo import _read_journal, packed
    folder = tmp_path / "tx"
    folder.mkdir()
    pre = {"dev": 1, "ino": 2, "size": 30, "mtime_ns": 5, "mode": 420, "sha256": None, "xattrs": {}}
    recs = [{"kind": "begin", "t": 0, "op": "flip"},
            {"kind": "intent", "t": 1, "n": 0, "method": "replace", "path": "/h/a", "tmp": "t0", "pre": pre,
             "post": {"sha256": None, "size": 31}, "session": {"tool": "codex", "id": "a"},
             "patches": [[4, b64(b"x"), b64(b"yy")]] * 5},
            {"kind": "ready", "t": 2, "n": 0, "pre_sha256": "ab" * 32},
            {"kind": "done", "t": 3, "n": 0, "post": {"sha256": "cd" * 32, "size": 31}, "bst": [1, 2, 3]},
            {"kind": "intent", "t": 4, "n": 1, "method": "inplace", "path": "/h/b", "pre": pre, "session": None},
            {"kind": "intent", "t": 5, "n": 1, "method": "inplace", "path": "/h/b", "pre": {**pre, "size": 40}},
            {"kind": "done", "t": 6, "n": 1},
            {"kind": "intent", "t": 7, "n": 2, "method": "create", "path": "/h/c", "dirs": ["/h"]},
            {"kind": "done", "t": 8, "n": 2},
            {"kind": "intent", "t": 9, "n": 3, "method": "replace", "path": "/h/d", "pre": pre},
            {"kind": "done", "t": 10, "n": 3},
            {"kind": "taken-back", "t": 11, "n": 3},
            {"kind": "intent", "t": 11, "n": 4, "method": "replace", "path": "/h/e", "pre": pre,
             "patches": [[8, b64(b"a"), b64(b"b")]] * 4, "session": {"tool": "codex", "id": "e"}},
            {"kind": "done", "t": 11, "n": 4},
            {"kind": "settled", "t": 12, "t_s": 11, "res": 4, "files": [[0, 1, 9, 31, 5, 6]]},
            {"kind": "commit", "t": 13}]
    (folder / journal.JOURNAL).write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    _own, done = _read_journal(folder)
    assert packed.PATCHES in done[0] and packed.RAW in done[1] and packed.RAW not in done[3]
    got = [packed.unpack(r) for r in done]
    want = _done_intents_parsed(folder)
    assert [r["n"] for r in got] == [0, 1, 2, 4] and all(map(_same, got, want))
    assert isinstance(got[0]["patches"], PatchList) and isinstance(got[3]["patches"], PatchList)


def test_a_packed_intent_holds_less_than_the_parsed_one():
    """The point of packing: the bytes (copied to their size: orjson.dumps keeps its whole 4 KiB buffer)
    and four keys hold less than the parsed record's dicts."""
    import tracemalloc
    from histmig.verbs.undo import packed
    line = orjson.dumps({"kind": "intent", "t": 1, "n": 0, "method": "replace", "path": "/h/" + "p" * 100,
                         "tmp": "/s/t/0.0.histmig-tmp", "backup": {"name": "0.0", "kind": "link"},
                         "pre": {"dev": 65024, "ino": 11863042, "size": 156243, "mtime_ns": 1796452632297763045,
                                 "atime_ns": 1796452995611649365, "mode": 420, "uid": 0, "gid": 0, "nlink": 1,
                                 "sha256": None, "xattrs": {}},
                         "post": {"sha256": None, "size": 156253}, "session": {"tool": "codex", "id": "x"},
                         "patches": [[419, "Im9wZW5haSI=", "Im15LXByb3ZpZGVyIg=="]]})
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        parsed = [orjson.loads(line) for _ in range(300)]
        parsed_size = tracemalloc.get_traced_memory()[0] - start
        del parsed
        start = tracemalloc.get_traced_memory()[0]
        sessions: dict = {}
        kept = [packed.pack(orjson.loads(line), sessions) for _ in range(300)]
        packed_size = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert kept and packed_size < parsed_size * 0.7, (packed_size, parsed_size)


def test_the_keys_of_a_later_transactions_rows_are_held_at_their_size():
    """Undo of an older transaction keeps a key for every row a later one changed (history.row_key):
    each an exact-size copy, not orjson's whole encoding buffer (4 KiB a key)."""
    import tracemalloc
    from histmig.verbs.undo.history import row_key
    rows = [{"kind": "update", "table": "threads", "key": {"id": f"thread-{i}"}} for i in range(1000)]
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        keys = {row_key("/h/state_5.sqlite", r): "later" for r in rows}
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert len(keys) == 1000 and held < 400_000, held
    assert row_key("/d", rows[0]) == ("/d", "threads", b'{"id":"thread-0"}')
