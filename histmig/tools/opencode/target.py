"""How OpenCode receives a converted session (docs/opencode.md, "convert to OpenCode"): rows, no files.

- ids of OpenCode's own shape (``ses_`` time-ordered, tools/opencode/write.py ``new_id``);
- the model the session continues with: ``--provider``/``--model``, else ``opencode.json``'s ``model``
  (``$XDG_CONFIG_HOME/opencode/opencode.json``, default ``~/.config/opencode``);
- :class:`SessionRows` (the rules' ``tables``): the database (``opencode.db`` in the data folder, or
  ``$OPENCODE_DB``), the project a folder belongs to, and the ``SqlInsert`` operations of the writer's
  rows: one transaction with every new row, journaled, so ``histmig undo`` deletes exactly them;
- resumed with ``opencode run -s <id>`` in the session's folder (or ``-c`` when it is the newest there).

The project: OpenCode lists the sessions of the current folder's project (the git repository's root
commit, or ``global`` outside git). A converted session joins the project OpenCode already has for the
folder (the deepest ``project.worktree`` holding it), else the id OpenCode cached in ``.git/opencode``,
else ``global``; a git folder OpenCode never opened gets ``global`` and a warning (open it with
opencode once and convert again to have it listed there).
"""
from __future__ import annotations

import json
import os
from contextlib import closing
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import Warning
from histmig.core.plan import SqlInsert
from histmig.toolkit.convert.common import Target, TargetRules, Written
from histmig.tools.opencode.layout import db_path
from histmig.tools.opencode.write import new_id


def config_path(env: Any = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "opencode" / "opencode.json"


def configured_model(path: Path | None = None) -> str | None:
    """``opencode.json``'s ``model`` (``provider/model``), None when absent or unreadable."""
    try:
        cfg = json.loads((path or config_path()).read_text())
    except (OSError, ValueError):
        return None
    model = cfg.get("model") if isinstance(cfg, dict) else None
    return model if isinstance(model, str) and "/" in model else None


def settings(homes: Any, opts: Any) -> tuple[str | None, str | None]:
    """(provider, ``provider/model``) the converted session continues with; (None, None): not configured
    (the writer then records the source's own provider and model)."""
    if opts.model and "/" in opts.model:
        return opts.model.split("/", 1)[0], opts.model
    if opts.model and opts.provider:
        return opts.provider, f"{opts.provider}/{opts.model}"
    found = configured_model()
    if found:
        return found.split("/", 1)[0], found
    return None, opts.model


def git_root(cwd: str) -> Path | None:
    for d in (Path(cwd), *Path(cwd).parents):
        if (d / ".git").exists():
            return d
    return None


class SessionRows:
    """The rules' ``tables``: where a converted session's rows go (verbs/convert asks ``dirs``,
    ``warnings``, ``inserts``; the writer asks ``db`` and :meth:`project_for`)."""

    def __init__(self, homes: Any):
        self.warnings: list[Warning] = []
        self.projects: list[tuple[str, str]] = []
        path = db_path(homes)
        self.db: Path | None = None
        if not path.is_file():
            return
        from histmig.tools.opencode.dbrows import open_db, rows
        from histmig.core.diagnostics import HistmigInputError
        try:
            con = open_db(path)
        except HistmigInputError as e:
            self.warnings.append(Warning("db-unreadable", str(e), str(path)))
            return
        if con is None:
            return
        with closing(con):
            self.projects = [(p["id"], p["worktree"]) for p in rows(con, "SELECT id, worktree FROM project")]
        self.db = path

    @property
    def dirs(self) -> list[Path]:
        return [self.db.parent] if self.db else []

    def project_for(self, cwd: str) -> tuple[str, str, str | None]:
        """(project id, worktree, a note when OpenCode would file it elsewhere) of the folder, as
        OpenCode finds it (the module's docstring)."""
        best = ("global", "/")
        for pid, tree in self.projects:
            if pid != "global" and tree and (cwd == tree or cwd.startswith(tree.rstrip("/") + "/")) \
                    and len(tree) > len(best[1]):
                best = (pid, tree)
        if best[0] != "global":
            return (*best, None)
        root = git_root(cwd)
        if root is not None:
            try:
                cached = (root / ".git" / "opencode").read_text().strip()
            except OSError:
                cached = ""
            if cached:
                return cached, str(root), None
            return (*best, "session filed under the global project: OpenCode never opened this git repository "
                    "(open it with opencode once, undo and convert again to list it there)")
        return (*best, None)

    def inserts(self, w: Written, t: Target, *, updated: float, tag: dict) -> list[SqlInsert]:
        rows = w.info.get("rows") or []
        db = w.info["db"]
        reason = f"convert {t.source_tool} {t.source_id}"
        ops = []
        project_ids = {pid for pid, _ in self.projects}
        for table, row in rows:
            if table == "session":       # listed by time_updated: the conversion's time, or the kept one
                row = {**row, "time_updated": max(row["time_created"], int(updated * 1000))}
            if table == "session" and row["project_id"] not in project_ids:
                ops.append(SqlInsert(db, "project", self._project_row(row), ("id",), tag, reason))
                project_ids.add(row["project_id"])
            ops.append(SqlInsert(db, table, row, ("id",), tag, reason))
        return ops

    def _project_row(self, session: dict[str, Any]) -> dict[str, Any]:
        """A project OpenCode has no row for yet (an empty database; a cached git id): its own shape."""
        pid, ms = session["project_id"], session["time_created"]
        tree = "/" if pid == "global" else (str(git_root(session["directory"])) or session["directory"])
        self.projects.append((pid, tree))
        return {"id": pid, "worktree": tree, "vcs": None if pid == "global" else "git", "time_created": ms,
                "time_updated": ms, "sandboxes": "[]"}


RULES = TargetRules(new_id=new_id, dir_mode=None, settings=settings, tables=SessionRows,
                    resume="cd {cwd} && opencode run -s {id}")
