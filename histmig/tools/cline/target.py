"""How Cline CLI receives a converted session (docs/cline.md): ids of Cline's own shape
(``<epoch ms>_<5 [a-z0-9]>``), folders as the umask makes them, no retention clean-up, resumed by id
from any folder (history is global; ``--id`` needs a terminal)."""
from __future__ import annotations

from histmig.toolkit.convert.common import TargetRules
from histmig.tools.cline.write import new_id

RULES = TargetRules(new_id=new_id, dir_mode=None, resume="cd {cwd} && cline --id {id}")
