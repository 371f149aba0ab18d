"""`export --to html --all` on the samples (issue 18's acceptance): every page parses with html5lib, holds
every message of its session, loads in headless Chromium (Debian's package, .ci/install-clients.sh) with
no network request and no console error, checked through the DevTools protocol (tests/cdp.py); the
index links resolve."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from export_helpers import expected_strings, export_all, sessions

html5lib = pytest.importorskip("html5lib")


def _parse(path: Path):
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parse(path.read_bytes(), transport_encoding="utf-8")


def _text(tree) -> str:
    return "".join(tree.itertext())


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """One export for the module. It runs before the per-test home isolation (tests/conftest.py), so it
    points HOME and the state dir at its scratch folder itself (--home and --state-dir beat any variable)."""
    base = tmp_path_factory.mktemp("export-html")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(base / "home"))
        mp.setenv("HISTMIG_STATE_DIR", str(base / "state"))
        home, out, _ = export_all(base, "html")
        found = list(sessions(home))
    return home, out, found


def test_every_page_parses_and_holds_every_message(exported):
    _home, out, found = exported
    assert len(found) >= 30
    for ref, session in found:
        page = out / ref.format / f"{ref.id}.html"
        tree = _parse(page)                       # strict: any parse error raises
        text = _text(tree)
        for wanted in expected_strings(session):
            assert wanted in text, (page, wanted)
        raw = page.read_text()
        assert "<script" not in raw and "@import" not in raw and "url(" not in raw
        assert not re.search(r"""(?:src|href)\s*=\s*["'](?:https?:|//)""", raw)


def test_index_links_every_page_and_every_link_resolves(exported):
    _home, out, found = exported
    index = out / "index.html"
    tree = _parse(index)
    hrefs = [a.get("href") for a in tree.iter("a")]
    assert len(hrefs) == len(found)
    for href in hrefs:
        assert not urlsplit(href).scheme and (out / unquote(href)).is_file(), href
    for ref, _s in found:
        assert f"{ref.format}/{ref.id}.html" in hrefs
    for page in out.rglob("*.html"):          # each page's own links (back to the index) resolve too
        for a in _parse(page).iter("a"):
            assert (page.parent / unquote(a.get("href"))).resolve().is_file(), (page, a.get("href"))


def test_special_characters_are_escaped(tmp_path):
    from histmig.core.model import Record, Session, Text, ToolCall, ToolResult
    from histmig.toolkit.export.blocks import meta_of
    from histmig.toolkit.export.html import write_html
    evil = "<script>alert(1)</script> & \"quotes\" <img src=x onerror=alert(2)>"
    s = Session(id="x", format="toy", title=evil, records=[
        Record(kind="message", role="user", parts=[Text(evil)]),
        Record(kind="tool_call", role="assistant", parts=[ToolCall("c1", evil, {"k": evil})]),
        Record(kind="tool_result", role="tool", parts=[ToolResult("c1", evil * 100)])])
    out: list[str] = []
    write_html(s, out.append, meta_of(s))
    page = "".join(out)
    assert "<script>" not in page and "<img" not in page
    (tmp_path / "p.html").write_text(page)
    text = _text(_parse(tmp_path / "p.html"))
    assert text.count(evil) >= 3


cdp = pytest.importorskip("cdp")


@pytest.mark.skipif(cdp.CHROMIUM is None, reason="chromium is not installed (.ci/install-clients.sh installs it)")
def test_pages_load_in_headless_chromium_offline_without_errors(exported):
    _home, out, found = exported
    browser = cdp.Browser()
    try:
        bad = out.parent / "bad.html"      # the check itself sees a request and a console error
        bad.write_text('<!DOCTYPE html><title>t</title><img src="http://127.0.0.1:9/x.png">'
                       '<script>console.error("boom")</script>')
        seen = browser.load(bad.resolve().as_uri())
        assert "http://127.0.0.1:9/x.png" in seen["requests"] and seen["console_errors"]
        pages = [out / "index.html"] + [out / r.format / f"{r.id}.html" for r, _s in found]
        by_page = {r.format + "/" + r.id: s for r, s in found}
        for page in pages:
            url = page.resolve().as_uri()
            seen = browser.load(url)
            assert [u for u in seen["requests"] if u != url] == [], (page, seen["requests"])
            assert not seen["console_errors"] and not seen["exceptions"] and not seen["log_errors"], (page, seen)
            session = by_page.get(f"{page.parent.name}/{page.stem}")
            if session is not None:       # what the browser shows (collapsed blocks' text is in the DOM)
                assert session.id in seen["text"]
            else:
                assert "Exported sessions" in seen["text"]
    finally:
        browser.close()
