"""Tool calls in Claude's schema, shared with the other Claude-family tools (histmig/tools/claude_family/calls.py):
between them calls are copied as they are."""
from __future__ import annotations

from histmig.tools.claude_family import calls as family

CALLS = family.CALLS
