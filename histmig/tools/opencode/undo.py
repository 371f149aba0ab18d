"""OpenCode's part of ``histmig undo`` (histmig/toolkit/undo.py): a session ``convert`` inserted as rows
and OpenCode continued since holds messages of the user's that the transaction never wrote. Deleting
the inserted rows would leave those messages pointing at no session, so the session is kept whole
(``kept-continued``, as for a continued session file; docs/opencode.md)."""
from __future__ import annotations

from contextlib import closing
from typing import Any

from histmig.core.plan import Op, SqlDelete
from histmig.toolkit.undo import Extra, UndoHook


class OpenCodeUndo(UndoHook):
    def rows_added(self, homes: Any, session: dict[str, Any], ops: list[Op]) -> Extra | None:
        dels = [op for op in ops if isinstance(op, SqlDelete)]
        created = [op for op in dels if op.table == "session" and "id" in op.where]
        if not created:
            return None
        db, sid = created[0].db, created[0].where["id"]
        ours = {op.where.get("id") for op in dels if op.table == "message"}
        from pathlib import Path
        from histmig.tools.opencode.dbrows import open_db
        con = open_db(Path(db))
        if con is None:
            return None
        with closing(con):
            ids = [r[0] for r in con.execute("SELECT id FROM message WHERE session_id = ?", (sid,))]
        new = [i for i in ids if i not in ours]
        if not new:
            return None
        return Extra(f"{db}#{sid}", problem=(f"OpenCode continued session {sid} since the conversion ({len(new)} "
                                             "new message(s)); kept", "kept-continued"))


UNDO = OpenCodeUndo()
