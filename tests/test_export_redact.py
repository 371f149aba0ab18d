"""`export --redact`: seeded fake keys of every pattern, in assistant and user text and in tool output, are
masked in every format, counted per pattern, and the rest of each page equals the unredacted export."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import histmig

from histmig.cli import samples
from histmig.toolkit.export.redact import MASK, PATTERNS, Redactor

# pattern -> (what is seeded, the part of it that is masked); all fake
SEEDS = {
    "private-key": ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAEbm9uZQ==\n"
                    "-----END OPENSSH PRIVATE KEY-----", None),
    "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", None),
    "anthropic": ("sk-ant-api03-FAKEabcDEF123456ghiJKL789012mnoPQR", None),
    "openai": ("sk-proj-FAKE1b2C3d4E5f6G7h8I9j0K1l2M3n4", None),
    "github": ("ghp_FAKE567890abcdefghijABCDEFGHIJ123456", None),
    "aws": ("AKIAFAKEFAKEFAKE1234", None),
    "slack": ("xoxb-123456789012-1234567890123-FAKEfGhIjKlMnOpQrStUvWx", None),
    "google": ("AIzaFAKE567890abcdefghijklmnopqrstuvwxy", None),
    "stripe": ("sk_live_FAKEC39HqLyjWDarjtT1zdp7dc", None),
    "bearer": ("Authorization: Bearer FAKEdefghijklmnop1234567890", "FAKEdefghijklmnop1234567890"),
    "password": ("password=hunter2-Correct-Horse", "hunter2-Correct-Horse"),
    "env-secret": ("MY_SERVICE_TOKEN=FAKEtok3n-value-123456", "FAKEtok3n-value-123456"),
}
SEEDED = "\n".join(seed for seed, _ in SEEDS.values())


def test_every_pattern_has_a_seed():
    assert [name for name, _w, _r in PATTERNS] == list(SEEDS)


@pytest.mark.parametrize("name", list(SEEDS))
def test_each_pattern_masks_its_seed_and_keeps_the_text_around(name):
    seed, secret = SEEDS[name]
    masked = Redactor().text(f"before {seed} after")
    assert masked == f"before {seed.replace(secret or seed, MASK.format(name))} after"


def _seed_claude_session(home: Path) -> str:
    """The Claude Code tool-thinking sample with every seed appended to its tool output and its two
    assistant texts: three of each (the title, its first prompt, stays as it was)."""
    path = next((home / ".claude" / "projects").rglob("e2d95dee-*.jsonl"))
    lines = []
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        content = obj.get("message", {}).get("content") if isinstance(obj.get("message"), dict) else None
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                    block["content"] += "\n" + SEEDED
                elif block.get("type") == "text" and obj.get("type") == "assistant":
                    block["text"] += "\n" + SEEDED
        lines.append(json.dumps(obj, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n")
    return "e2d95dee-659e-435a-81a4-eddf3b1e0bae"


def _unmask(text: str, *, json_text: bool = False) -> str:
    """The unredacted page with each seeded secret replaced by its mask: what --redact must give."""
    for name, (seed, secret) in SEEDS.items():
        s = secret or seed
        if json_text:
            s = json.dumps(s)[1:-1]
        text = text.replace(s, MASK.format(name))
    return text


@pytest.mark.parametrize("to", ["markdown", "html", "atif"])
def test_redact_masks_seeded_keys_and_leaves_the_rest_byte_identical(tmp_path, to):
    samples.install(tmp_path, tools=("claude-code",))
    sid = _seed_claude_session(tmp_path)
    plain, masked = tmp_path / "plain", tmp_path / "masked"
    r1 = histmig("--home", tmp_path, "export", sid, "--to", to, "--out", plain)
    r2 = histmig("--home", tmp_path, "export", sid, "--to", to, "--out", masked, "--redact")
    assert r1.exit_code == 0 and r2.exit_code == 0, r2.stderr
    assert "redacted" not in r1.stdout
    counts = dict(part.rsplit(" ", 1) for part in r2.stdout.split("secret(s): ")[1].strip().split(", "))
    assert list(counts) == list(SEEDS) and all(int(n) == 3 for n in counts.values()), r2.stdout
    files = sorted(p.relative_to(plain) for p in plain.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(masked) for p in masked.rglob("*") if p.is_file())
    for rel in files:
        before, after = (plain / rel).read_text(), (masked / rel).read_text()
        assert after == _unmask(before, json_text=to == "atif" and rel.suffix == ".json"), rel
        for seed, secret in SEEDS.values():
            assert (secret or seed) not in after
    page = (plain / "claude-code" / f"{sid}.{ {'markdown': 'md', 'html': 'html', 'atif': 'json'}[to]}").read_text()
    assert "sk-ant-api03-FAKE" in page          # the seeds did reach the unredacted page


def test_redacting_the_samples_masks_nothing(tmp_path):
    samples.install(tmp_path)
    r = histmig("--home", tmp_path, "export", "--all", "--to", "markdown", "--out", tmp_path / "o", "--redact")
    assert r.exit_code == 0 and "redacted 0 secret(s)" in r.stdout


def test_a_json_field_named_password_is_masked_whole():
    r = Redactor()
    args = {"user": "me", "password": "hunter2", "nested": [{"PWD": "abc123"}], "note": "password=opensesame"}
    assert r.value(args) == {"user": "me", "password": "[REDACTED:password]",
                             "nested": [{"PWD": "[REDACTED:password]"}], "note": "password=[REDACTED:password]"}
