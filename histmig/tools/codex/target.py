"""How Codex receives a converted session (docs/specs/codex.md §0.2c, §14): UUIDv7 thread ids, folders
left to the umask, the configured provider and model recorded for resume, and a ``threads`` row in
every state database that has the table."""
from __future__ import annotations

from typing import Any

from histmig.core.diagnostics import HistmigError
from histmig.toolkit.convert.common import TargetRules
from histmig.tools.codex.config import active_profile, load_config, model_provider
from histmig.tools.codex.threads import ThreadsTables


def settings(homes: Any, opts: Any) -> tuple[str, str | None]:
    """The provider and model a converted session records: the options, else config.toml's."""
    try:
        cfg = load_config(homes)
    except HistmigError:
        cfg = {}
    model = opts.model or active_profile(cfg).get("model") or cfg.get("model")
    return opts.provider or model_provider(cfg), model if isinstance(model, str) else None


RULES = TargetRules(new_id="uuid7", dir_mode=None, settings=settings, tables=ThreadsTables,
                    resume="cd {cwd} && codex resume {id}")
