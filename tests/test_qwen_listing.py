"""issue 16/15: the Qwen listing reads bytes (histmig/tools/qwen/listing.py) and gives exactly what the
Record reader gives (``list_ends`` over ``records_from_lines`` and ``_summarize``), for small files read
whole, large ones read at their ends, broken, blank, BOM, unterminated and grown files; a listing
shared out to forked workers gives the same refs and fills the same scan index."""
from __future__ import annotations

import uuid

import orjson
import pytest

from histmig.core.model import SessionRef
from histmig.core.scanindex import ScanIndex
from histmig.tools.claude_family.listing import list_ends
from histmig.tools.qwen import adapter
from histmig.tools.qwen.adapter import FIELDS, NAME, records_from_lines


def rec(t: str, text: str | None = None, *, thought: bool = False, **extra) -> bytes:
    o = {"uuid": str(uuid.uuid4()), "parentUuid": None, "sessionId": "s", "timestamp": "2026-01-01T00:00:00Z",
         "type": t, "cwd": "/w/app", "version": "0.24.4", **extra}
    if text is not None:
        parts = [{"text": "think", "thought": True}, {"text": text}] if thought else [{"text": text}]
        o["message"] = {"role": "user" if t == "user" else "model", "parts": parts}
    return orjson.dumps(o) + b"\n"


HEAD = rec("user", "first question") + rec("system") + rec("assistant", "answer") + rec("tool_result") * 2


def big(n: int, t: str = "assistant") -> bytes:
    return rec(t, "x" * n)


FILES = {
    "plain": HEAD,
    "broken": HEAD[:200] + b"\n{not json\n\n[1,2]\nnull\n" + HEAD,
    "bom": b"\xef\xbb\xbf" + HEAD,
    "bom-blank": b"\xef\xbb\xbf\n" + HEAD,
    "unterminated": HEAD[:-1],
    "partial": HEAD + b'{"type":"assistant","uuid":"x',
    "empty": b"",
    "blank": b"\n\n  \n",
    "no-timestamp": b'{"type":"user","timestamp":"","message":{"parts":[{"text":"hi"}]}}\n' + rec("assistant", "b"),
    "thought-title": rec("system") + rec("user", "   ") + rec("user", "real title", thought=True),
    "big": HEAD + big(200_000),
    "big-partial": HEAD + big(200_000) + b'{"type":"user","cw',
    "big-unterminated": HEAD + big(200_000)[:-1],
    "big-middle": HEAD + big(70_000) + HEAD * 40 + b"{broken\n" + rec("user", "late"),
    "big-tail-broken": HEAD + big(100_000) + HEAD * 60 + b"{tail\n[3]\n" + HEAD[:300],
    "spaced": HEAD + b'{"type" : "user", "message": {"parts":[{"text":"spaced"}]}}\n' * 3 + big(140_000),
    "over-1mb": HEAD + b"".join(rec("user" if i % 2 else "assistant", "m%d " % i + "y" * 3000) for i in range(400))
                + b"{oops\n",
    "head-line-over-8mb": HEAD[:300] + big(9 << 20) + HEAD,
}


def reference(path, index=None) -> SessionRef:
    """The Record reader's row (what ``ref_for`` gave before it read bytes)."""
    ref = SessionRef(format=NAME, id=path.stem, path=path, archived=path.parent.name == "archive")
    st = path.stat()
    ref.size, ref.updated = st.st_size, st.st_mtime
    list_ends(ref, path, st, records_from_lines, adapter._summarize, index=index, fields=FIELDS, grouped=False)
    return ref


@pytest.fixture
def chats(tmp_path):
    folder = tmp_path / "projects" / "-w-app" / "chats"
    (folder / "archive").mkdir(parents=True)
    for i, (name, data) in enumerate(FILES.items()):
        where = folder / "archive" if name in ("broken", "big") else folder
        (where / f"{uuid.UUID(int=i + 1, version=4)}.jsonl").write_bytes(data)
    return folder


def _paths(folder):
    return adapter.chat_files(folder.parent)


@pytest.mark.parametrize("name", list(FILES))
def test_the_byte_listing_gives_what_the_record_reader_gives(chats, name):
    path = next(p for p in _paths(chats) if p.read_bytes() == FILES[name])
    assert adapter.ref_for(path).to_dict() == reference(path).to_dict()


def test_the_index_records_and_a_grown_file_match(chats, tmp_path):
    new, old = ScanIndex(str(tmp_path / "a.json")), ScanIndex(str(tmp_path / "b.json"))
    for p in _paths(chats):
        adapter.ref_for(p, index=new)
        reference(p, index=old)
    assert new.records == old.records
    for p in _paths(chats):
        with open(p, "ab") as fh:
            fh.write(b'er":1}\n' + rec("user", "grown") + b'{"type":"assistant"')
    for p in _paths(chats):
        assert adapter.ref_for(p, index=new).to_dict() == reference(p, index=old).to_dict(), p
    assert new.records == old.records


def test_a_forked_listing_gives_the_same_refs_and_index(chats, tmp_path, monkeypatch):
    from histmig.core import forkmap
    here, forked = ScanIndex(str(tmp_path / "a.json")), ScanIndex(str(tmp_path / "b.json"))
    homes = type("H", (), {"qwen": chats.parent.parent.parent})()
    alone = [r.to_dict() for r in adapter.discover(homes, index=here)]
    real = forkmap.fork_map
    monkeypatch.setattr(forkmap, "fork_map", lambda *a, **kw: real(*a, **{**kw, "min_weight": 0, "ncpu": 2}))
    assert [r.to_dict() for r in adapter.discover(homes, index=forked)] == alone
    assert forked.records == here.records and forked.touched == here.touched
    assert [r.to_dict() for r in adapter.discover(homes, index=forked)] == alone   # every one a hit now
