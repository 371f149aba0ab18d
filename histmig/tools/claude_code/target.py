"""How Claude Code receives a converted session (docs/specs/claude-code.md §12): folders 0700, and
transcripts older than ``cleanupPeriodDays`` (30 by default) are deleted at its next start."""
from __future__ import annotations

from histmig.toolkit.convert.common import TargetRules

RULES = TargetRules(cleanup_days=30,
                    cleanup_note="Claude Code deletes it at its next start unless cleanupPeriodDays is raised",
                    resume="cd {cwd} && claude --resume {id}")   # `--resume <id>` finds it only from its folder
