"""What every target writer receives and returns."""
from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any, Callable

from histmig.toolkit.convert.ids import Ids
from histmig.toolkit.convert.sink import Sink, Spooled
from histmig.core.valueclass import FACTORY, value


@value
class Target:
    """Where and how one converted session is written."""

    root: Path                    # the target tool's home (CODEX_HOME, CLAUDE_CONFIG_DIR, ...)
    sid: str                      # the new session id
    cwd: str                      # the session's cwd (validated absolute)
    ids: Ids
    source_tool: str
    source_id: str
    keep_reasoning_text: bool = False
    provider: str = "openai"      # Codex: the configured model_provider
    model: str | None = None      # Codex: the model to record for resume
    sink: Callable[[], Sink] = Sink   # where each new file's lines go (memory unless the planner says)
    tables: Any = None            # the rules' ``tables(homes)`` object, read once per run (None without one)

    def __init__(self, root: Path, sid: str, cwd: str, ids: Ids, source_tool: str, source_id: str,
                 keep_reasoning_text: bool = False, provider: str = "openai", model: str | None = None,
                 sink: Callable[[], Sink] = Sink, tables: Any = None) -> None:
        self.root = root
        self.sid = sid
        self.cwd = cwd
        self.ids = ids
        self.source_tool = source_tool
        self.source_id = source_id
        self.keep_reasoning_text = keep_reasoning_text
        self.provider = provider
        self.model = model
        self.sink = sink
        self.tables = tables


@value(frozen=True)
class TargetRules:
    """How a tool receives converted sessions, beyond its writer (``tools/<tool>/target.py``'s ``RULES``;
    a tool without that module gets these defaults)."""

    new_id: Any = "uuid4"                 # "uuid7": the id kind the tool itself mints; or (Ids) -> id
    dir_mode: int | None = 0o700          # folders it creates (None: left to the umask)
    cleanup_days: int | None = None       # the tool deletes sessions older than this at start-up ...
    cleanup_note: str = ""                # ... and this says so: "<who> deletes it ... unless <setting> is raised"
    settings: Callable[[Any, Any], tuple[str | None, str | None]] | None = None   # (homes, opts) -> provider, model
    tables: Callable[[Any], Any] | None = None   # homes -> rows that register a new session (``inserts``)
    resume: str = ""                      # the shell line that resumes a new session, "{cwd}" and "{id}"

    def __init__(self, new_id: Any = "uuid4", dir_mode: int | None = 0o700, cleanup_days: int | None = None,
                 cleanup_note: str = "", settings: Callable[[Any, Any], tuple[str | None, str | None]] | None = None,
                 tables: Callable[[Any], Any] | None = None, resume: str = "") -> None:
        object.__setattr__(self, "new_id", new_id)
        object.__setattr__(self, "dir_mode", dir_mode)
        object.__setattr__(self, "cleanup_days", cleanup_days)
        object.__setattr__(self, "cleanup_note", cleanup_note)
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "tables", tables)
        object.__setattr__(self, "resume", resume)
                                          # filled in and shell-quoted (docs/convert.md); "" prints none


@value
class Written:
    files: list[tuple[Path, bytes | Spooled]]   # absolute paths and their bytes (new files only)
    session_id: str
    last_ts: str | None                       # the last record's time (for --keep-times)
    title: str | None
    info: dict[str, Any] = field(default_factory=dict)   # target-specific facts (Codex: row values)
    location: str | None = None               # a target that writes rows, not files: where the session is
    row_bytes: int = 0                        # ... and the size of its rows (counted toward a run's batches)

    def __init__(self, files: list[tuple[Path, bytes | Spooled]], session_id: str, last_ts: str | None,
                 title: str | None, info: dict[str, Any] = FACTORY, location: str | None = None, row_bytes: int = 0) -> None:
        self.files = files
        self.session_id = session_id
        self.last_ts = last_ts
        self.title = title
        self.info = {} if info is FACTORY else info
        self.location = location
        self.row_bytes = row_bytes
