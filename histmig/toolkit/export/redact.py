"""``export --redact``: mask API keys, tokens and passwords with named patterns (docs/export.md,
"Redaction"). Every string a page shows (text, reasoning, tool arguments and output, the title) goes
through :meth:`Redactor.text` before it is rendered, so the pages differ from an unredacted export
only where a pattern matched: ``[REDACTED:<name>]`` stands for the secret, the text around it is kept.

Patterns run in table order, the specific ones first, so an Anthropic key counts as ``anthropic``, not
``openai``, and a key after ``Bearer`` is masked by its own pattern before ``bearer`` looks."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

from histmig.core.model import Reasoning, RecordStream, Session, Text, ToolCall, ToolResult

MASK = "[REDACTED:{}]"
_NOT_MASKED = r"(?!\[REDACTED:)"

# (name, what it finds, regex); a pattern with a group masks only the group (the name before it stays)
PATTERNS: list[tuple[str, str, str]] = [
    ("private-key", "PEM private key blocks",
     r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
    ("jwt", "JSON Web Tokens (eyJ....eyJ....sig)", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ("anthropic", "Anthropic API keys (sk-ant-...)", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai", "OpenAI API keys (sk-..., sk-proj-...)", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ("github", "GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
     r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("aws", "AWS access key ids (AKIA..., ASIA...)", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("slack", "Slack tokens (xoxb-, xoxp-, ...)", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("google", "Google API keys (AIza...)", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("stripe", "Stripe secret keys (sk_live_, rk_live_, sk_test_)", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("bearer", "the token after Bearer (Authorization headers)",
     r"\b[Bb]earer\s+" + _NOT_MASKED + r"([A-Za-z0-9_.~+/-]{16,}=*)"),
    ("password", "the value of password=, passwd:, pwd= assignments",
     r"(?i)\b(?:password|passwd|pwd)\b[\"']?\s*[:=]\s*[\"']?" + _NOT_MASKED + r"([^\s\"'`,;]{3,})"),
    ("env-secret", "the value of an UPPER_CASE *_SECRET, *_TOKEN, *_API_KEY, *_PASSWORD variable",
     r"\b[A-Z][A-Z0-9_]*(?:SECRET|TOKEN|API_KEY|APIKEY|PASSWORD)[A-Z0-9_]*[\"']?\s*[:=]\s*[\"']?"
     + _NOT_MASKED + r"([^\s\"'`,;]{8,})"),
]
_COMPILED = [(name, re.compile(rx)) for name, _what, rx in PATTERNS]
_PASSWORD_KEY = re.compile(r"(?i)password|passwd|pwd")


class Redactor:
    """Masks secrets and counts them per pattern (:meth:`totals`: name -> how many were masked).

    A session's records are read more than once (its title, then its pages), so each read counts into
    its own tally and a complete read replaces the session's: a secret is counted once however many
    times it was read. Titles are masked but not counted (a title repeats the first prompt)."""

    def __init__(self) -> None:
        self._by_session: dict[int, dict[str, int]] = {}
        self._tally: dict[str, int] | None = None

    def totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for counts in self._by_session.values():
            for name, n in counts.items():
                out[name] = out.get(name, 0) + n
        return {name: out[name] for name, _w, _r in PATTERNS if name in out}

    def text(self, value: str) -> str:
        for name, rx in _COMPILED:
            value = rx.sub(lambda m, n=name: self._mask(m, n), value)
        return value

    def _mask(self, m: re.Match, name: str) -> str:
        if self._tally is not None:
            self._tally[name] = self._tally.get(name, 0) + 1
        if m.groups():
            start, end = m.span(1)
            return m.group(0)[: start - m.start()] + MASK.format(name) + m.group(0)[end - m.start():]
        return MASK.format(name)

    def value(self, v: Any) -> Any:
        """Every string inside a JSON-like value (tool arguments, content blocks), keys included."""
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            return {self.value(k) if isinstance(k, str) else k: self._field(k, x) for k, x in v.items()}
        return v

    def _field(self, key: Any, x: Any) -> Any:
        """A JSON field named like a password (``{"password": "..."}`` in tool arguments) is the
        ``password`` pattern's assignment in another spelling: its whole string value is masked."""
        if isinstance(key, str) and isinstance(x, str) and _PASSWORD_KEY.fullmatch(key) and len(x) >= 3 \
                and not x.startswith("[REDACTED:"):
            if self._tally is not None:
                self._tally["password"] = self._tally.get("password", 0) + 1
            return MASK.format("password")
        return self.value(x)

    def part(self, p: Any) -> Any:
        if isinstance(p, Text):
            return dataclasses.replace(p, text=self.text(p.text))
        if isinstance(p, Reasoning):
            return dataclasses.replace(p, summary=self.text(p.summary), text=self.text(p.text))
        if isinstance(p, ToolCall):
            return dataclasses.replace(p, arguments=self.value(p.arguments))
        if isinstance(p, ToolResult):
            return dataclasses.replace(p, output=self.value(p.output))   # ``structured`` is never shown
        return p

    def session(self, session: Session) -> Session:
        """The session with its records masked as they are read (still streamed), its title too."""
        records, key = session.records, len(self._by_session)
        self._by_session[key] = {}

        def produce():
            tally: dict[str, int] = {}
            for rec in records:
                self._tally = tally
                try:
                    masked = dataclasses.replace(rec, parts=[self.part(p) for p in rec.parts])
                finally:
                    self._tally = None
                yield masked
            self._by_session[key] = tally      # a complete read: the session's count

        return dataclasses.replace(session, records=RecordStream(produce),
                                   title=self.text(session.title) if session.title else session.title,
                                   subagents=[self.session(s) for s in session.subagents])
