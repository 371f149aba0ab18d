"""How Copilot CLI receives a converted session (docs/copilot.md): uuid4 ids as the client mints, folders as
the umask makes them, no retention clean-up, resumed by id from any folder."""
from __future__ import annotations

from histmig.toolkit.convert.common import TargetRules

RULES = TargetRules(new_id="uuid4", dir_mode=None, resume="cd {cwd} && copilot --resume={id}")
