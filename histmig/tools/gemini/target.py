"""How Gemini CLI receives a converted session (docs/specs/gemini.md §4, §8): UUIDv4 ids as the client
mints, folders left to the umask, a new project's marker made once per run (write.Markers). The file's
``lastUpdated`` is the conversion time, so retention (30 days by default) counts from the import, and
``--keep-times`` (the file's mtime) cannot make the client delete it."""
from __future__ import annotations

from histmig.toolkit.convert.common import TargetRules
from histmig.tools.gemini.write import Markers

RULES = TargetRules(new_id="uuid4", dir_mode=None, tables=Markers, resume="cd {cwd} && gemini --resume {id}")
