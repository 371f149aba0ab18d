"""How Pi receives a converted session (docs/pi.md): a UUIDv7 id, as Pi mints them, and the line that
resumes it (the full id: 8-character UUIDv7 prefixes are shared by sessions made close together)."""
from __future__ import annotations

from histmig.toolkit.convert.common import TargetRules

RULES = TargetRules(new_id="uuid7", resume="cd {cwd} && pi --session {id}")
