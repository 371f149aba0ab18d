"""How Qwen Code receives a converted session (docs/qwen.md): uuid4 ids as Qwen mints, folders as the
umask makes them (Qwen's own), no retention clean-up (0.24.4 has none), resumed by id from its folder."""
from __future__ import annotations

from histmig.toolkit.convert.common import TargetRules

RULES = TargetRules(new_id="uuid4", dir_mode=None, resume="cd {cwd} && qwen -r {id}")
