"""The Claude project slug (claude-code.md §2.2) and path-prefix rules."""
from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from histmig.core.paths import claude_slug, is_under, rebase, safe_component, slug_prefix

LONG = "/home/user/" + "/".join(f"a-very-long-folder-name-{i:02d}" for i in range(9)) + "/app"
# computed with the JavaScript rule of Claude Code (tests/test_paths.py::JS_SLUG) under node 20
LONG_SLUG = ("-home-user-a-very-long-folder-name-00-a-very-long-folder-name-01-a-very-long-folder-name-02"
             "-a-very-long-folder-name-03-a-very-long-folder-name-04-a-very-long-folder-name-05"
             "-a-very-long-folder-name-06--6oor7m")


@pytest.mark.parametrize("path, slug", [
    ("/x/work/my app/データ", "-x-work-my-app----"),      # verified on a live 2.1.197 run
    ("/srv/é😀x", "-srv----x"),                           # the emoji is two UTF-16 units: two dashes
    ("/home/me/t_bat/w", "-home-me-t-bat-w"),            # "_" becomes "-" (peers got this wrong)
    ("C:\\Users\\me\\proj", "C--Users-me-proj"),         # case kept, "\" and ":" become "-"
    (LONG, LONG_SLUG),                                   # > 200: 200 chars + "-" + base36(|hash|)
])
def test_claude_slug_reference_outputs(path, slug):
    assert claude_slug(path) == slug


def test_long_slug_is_cut_at_200_and_suffixed():
    slug = claude_slug(LONG)
    assert len(LONG) > 200 and len(slug) > 200
    assert slug[200] == "-" and slug[:200] == slug_prefix(LONG)
    assert 202 <= len(slug) <= 207


def test_naive_codepoint_regex_would_differ_for_astral_characters():
    import re
    path = "/srv/é😀x"
    assert re.sub(r"[^a-zA-Z0-9]", "-", path) != claude_slug(path)


JS_SLUG = r"""
function hash(s){let h=0;for(let i=0;i<s.length;i++){h=(h<<5)-h+s.charCodeAt(i);h|=0;}return h;}
function slug(p){const s=p.replace(/[^a-zA-Z0-9]/g,"-");
  if(s.length<=200) return s; return s.slice(0,200)+"-"+Math.abs(hash(p)).toString(36);}
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(input.map(slug)));
"""


def _random_paths(n: int) -> list[str]:
    rng = random.Random(20261130)
    alphabet = "abcXYZ019 _-.:\\/éデ😀\u00a0"
    out = []
    for _i in range(n):
        parts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
                 for _ in range(rng.randint(1, 12))]
        out.append("/" + "/".join(parts))
    return out


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_claude_slug_matches_the_javascript_rule_on_generated_paths():
    paths = _random_paths(300)
    assert any(len(claude_slug(p)) > 200 for p in paths)
    assert any("😀" in p for p in paths)
    done = subprocess.run(["node", "-e", JS_SLUG], input=json.dumps(paths), capture_output=True,
                          text=True, check=True, timeout=60)
    assert [claude_slug(p) for p in paths] == json.loads(done.stdout)


def test_is_under_and_rebase_respect_component_boundaries():
    assert is_under("/a/app/sub", "/a/app") and is_under("/a/app", "/a/app/")
    assert not is_under("/a/app2", "/a/app")
    assert rebase("/a/app/sub/x", "/a/app", "/b/new") == "/b/new/sub/x"
    assert rebase("/a/app2", "/a/app", "/b/new") is None


@pytest.mark.parametrize("name, ok", [("abc", True), ("..", False), ("a/b", False), ("a\\b", False),
                                      ("", False), ("x" * 256, False), ("a\x00", False)])
def test_safe_component(name, ok):
    assert safe_component(name) is ok
