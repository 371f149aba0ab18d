"""What every doctor check shares: the Finding type, the table of check codes, and small helpers.

A check is a small pure function over what is on disk that returns Findings. A Finding is data: a
stable ``code`` (documented in docs/doctor.md), a one-line ``detail``, the ``fix`` the user should
run, and, when the fix is safe and reversible, the plan operations (``repair``) that perform it.
"""
from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path
from typing import Any

from histmig.core.diagnostics import Warning
from histmig.core.plan import Op
from histmig.core.valueclass import FACTORY, value


@value(frozen=True)
class Check:
    code: str
    explanation: str   # one line: what is wrong and what the user sees
    fix: str           # one line: what doctor --repair or the user does about it
    environment: bool = False  # depends on the machine or the clock, not on the history itself

    def __init__(self, code: str, explanation: str, fix: str, environment: bool = False) -> None:
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "explanation", explanation)
        object.__setattr__(self, "fix", fix)
        object.__setattr__(self, "environment", environment)


_TABLE = [
    # --- Codex ---------------------------------------------------------------------------------
    Check("codex.provider-hidden",
          "Sessions were recorded under another model provider than the configured one; Codex lists and "
          "resumes only sessions of the current provider.",
          "`histmig flip <recorded> <configured> --apply` (the exact command is printed)."),
    Check("codex.db-provider-mismatch",
          "The state database row names another provider than the rollout's session_meta (what a line-1-only "
          "flip leaves behind): resume fails with \"Cannot change this thread's model provider\".",
          "`histmig doctor --repair --apply` re-syncs the row from the rollout."),
    Check("codex.rollout-provider-split",
          "A rollout's later lines (thread_settings_applied, a later session_meta) name another provider than "
          "its first session_meta (what a line-1-only flip leaves): when Codex rebuilds its database the row "
          "takes the later value and resume fails again with \"Cannot change this thread's model provider\".",
          "`histmig doctor --repair --apply` flips the later values to the first session_meta's provider "
          "(flip's byte-level edit, offsets kept in step)."),
    Check("codex.db-cwd-mismatch",
          "The state database row names another working folder than the rollout, so `resume --last` looks "
          "for the session in the wrong folder.",
          "`histmig doctor --repair --apply` re-syncs the row's cwd from the rollout."),
    Check("codex.db-rollout-missing",
          "A state database row points at a rollout file that does not exist; Codex drops the thread from "
          "its lists.",
          "Repaired when the rollout is found elsewhere in the home; otherwise restore the file."),
    Check("codex.db-rollout-outside-home",
          "A state database row points at a rollout outside this Codex home (a copied or restored home).",
          "Repaired when the same thread's rollout exists in this home; histmig never follows the outside path."),
    Check("codex.rollout-no-row",
          "A rollout has no row in the state database; the TUI picker (database-first) does not list it.",
          "Codex adds the row itself when it scans the files: run `codex resume --all` once."),
    Check("codex.offsets-stale",
          "thread_history_1.sqlite byte offsets no longer point at the right lines of the rollout (a line "
          "was re-serialized with another length).",
          "`histmig doctor --repair --apply` recomputes the offsets from the lines' ordinals."),
    Check("codex.provider-undefined",
          "config.toml selects a model provider that is neither built in nor defined under [model_providers]; "
          "resume fails with \"Model provider not found\".",
          "Define `[model_providers.<id>]` in config.toml or pick a built-in provider."),
    Check("codex.cwd-missing",
          "Sessions were recorded in a folder that no longer exists; Codex shows them only in that folder.",
          "`histmig move <old> <new> --apply` when the project moved (a likely new location is suggested).",
          environment=True),
    Check("codex.zst-shadowed",
          "Both rollout-….jsonl and rollout-….jsonl.zst exist; Codex reads the plain file and ignores the .zst.",
          "Compare the two and delete the one you do not want; histmig does not pick for you."),
    Check("codex.unreadable",
          "A rollout or state database could not be read (no session_meta, corrupt file, permission).",
          "Inspect the file; `histmig show <path>` names the broken lines."),
    # --- Claude Code ---------------------------------------------------------------------------
    Check("claude.cwd-missing",
          "A project folder's sessions were recorded in a folder that no longer exists; `claude -c` and the "
          "picker look for them under the new folder's name.",
          "`histmig move <old> <new> --apply` when the project moved (a likely new location is suggested).",
          environment=True),
    Check("claude.slug-mismatch",
          "A project folder's name is not the slug of its sessions' cwd, so Claude never looks there.",
          "The printed `mv <folder> <right folder>` (when the right folder holds sessions of that cwd, the "
          "finding is `claude.project-split` instead)."),
    Check("claude.session-cwd-mismatch",
          "A session was recorded in a folder whose Claude project folder is another one than the folder it "
          "is in (a half-done move, or a cwd recorded through a symlink): Claude started there never lists it.",
          "`histmig doctor --repair --apply` moves it into the folder of its cwd; a symlinked cwd: the printed "
          "`histmig move <link> <target> --apply`."),
    Check("claude.project-split",
          "Sessions of one project are split across its folder and another one (a partial undo or an "
          "interrupted move): Claude started in the project sees only those in its own folder.",
          "`histmig doctor --repair --apply` moves the others into the project's folder (the command is printed)."),
    Check("claude.duplicate-session",
          "The same session id exists in two project folders; Claude may write to either copy.",
          "`histmig doctor --repair --apply` moves the copy out of the wrong folder when it holds nothing new."),
    Check("claude.broken-lines",
          "Lines in the middle of a transcript do not parse; Claude skips them.",
          "Nothing to do for resume; histmig keeps the bytes. Inspect with `histmig show <id>`."),
    Check("claude.truncated-tail",
          "The transcript ends with a half-written line (a crash or a write in progress); Claude skips it.",
          "Nothing to do if no client is running; histmig never truncates."),
    Check("claude.dangling-tool-use",
          "The conversation ends with a tool call that has no result (the client died mid-tool).",
          "`histmig doctor --repair --apply` appends the missing tool_result, as an interrupted client does."),
    Check("claude.project-key-missing",
          "A `projects` key in .claude.json names a folder that no longer exists (trust and MCP settings lost).",
          "`histmig move <old> <new> --apply` if the project moved; otherwise harmless.",
          environment=True),
    Check("claude.cleanup-soon",
          "Transcripts are older than, or within 7 days of, cleanupPeriodDays: Claude deletes them at its next start.",
          "Raise `cleanupPeriodDays` in settings.json before starting Claude, or keep a copy: `histmig archive` "
          "(`histmig restore --deleted --apply` puts deleted transcripts back).",
          environment=True),
    # --- mini-cc -------------------------------------------------------------------------------
    Check("mini-cc.broken-lines",
          "Lines in the middle of a session do not parse; mini-cc skips them.",
          "Nothing to do for resume; histmig keeps the bytes."),
    Check("mini-cc.truncated-tail",
          "The session ends with a half-written line; mini-cc skips it on load.",
          "Nothing to do if mini-cc is not running; histmig never truncates."),
    Check("mini-cc.dangling-tool-use",
          "The session ends with a tool_use without tool_result; mini-cc's repair_history appends one on resume.",
          "`histmig doctor --repair --apply` appends the missing tool_result now."),
    Check("mini-cc.cwd-missing",
          "Sessions were recorded in a folder that no longer exists; `mini_cc -c` only lists the current project.",
          "`histmig move <old> <new> --apply` when the project moved.",
          environment=True),
    Check("mini-cc.id-mismatch",
          "A session file's name is not the sessionId inside it; `/resume <id>` cannot find it.",
          "Rename the file to `<sessionId>.jsonl`."),
    Check("mini-cc.read-only",
          "A project folder is not writable; resuming cannot append.",
          "Fix the folder's permissions (or the mount)."),
    # --- gemini (docs/specs/gemini.md) --------------------------------------------------------------
    Check("gemini.project-missing",
          "A registered project folder no longer exists; `gemini --list-sessions` in its new place lists nothing.",
          "`histmig move <old> <new> --apply` when the project moved.",
          environment=True),
    Check("gemini.retention",
          "Sessions are past (or within 7 days of) general.sessionRetention.maxAge (default 30d): Gemini deletes "
          "them at its next start.",
          "Set `general.sessionRetention.enabled: false` (or a longer `maxAge`) in ~/.gemini/settings.json first, "
          "or keep a copy: `histmig archive` (`histmig restore --deleted --apply` puts them back).",
          environment=True),
    Check("gemini.stub-short-id",
          "A prompt-less file shares its 8-character short id with a session; Gemini's next start deletes both "
          "(upstream gemini-cli#27368).",
          "`histmig doctor --repair --apply` deletes the stub now (backed up), so the session survives; "
          "`histmig archive` keeps a copy (`histmig restore --deleted --apply` puts it back)."),
    # environment: whether the doubled results are refused depends on the backend (docs/specs/gemini.md §10)
    Check("gemini.repeated-tool-result",
          "Tool results are stored twice (toolCalls[].result and a functionResponse record); a resume sends both.",
          "`histmig doctor --repair --apply` removes the repeated records (each result stays in its call; "
          "undoable); not when a `$rewindTo` names one.",
          environment=True),
    Check("gemini.broken-lines",
          "Lines of a session do not parse; Gemini skips them.",
          "Nothing to do for resume; histmig keeps the bytes."),
    # --- manifest ------------------------------------------------------------------------------
    Check("manifest.meta-unreadable",
          "meta.json is missing or not valid JSON; `-c` skips the session.",
          "Restore meta.json from a backup."),
    Check("manifest.tail-invalid",
          "The last line of transcript.jsonl is not valid JSON; the loader would try a truncation repair.",
          "Nothing to do if no writer is active; histmig never truncates."),
    Check("manifest.checkpoint-beyond-end",
          "The latest checkpoint's atMessageIndex is past the end of the transcript; the loader discards it.",
          "Delete the invalid checkpoint by hand if you want it gone; histmig never deletes checkpoints."),
    Check("manifest.read-only",
          "The session folder is not writable; the loader refuses to continue in write mode.",
          "Fix the folder's permissions (or the mount)."),
    Check("manifest.locked",
          "A `.lock` file marks the session busy; `-c` refuses it (a crashed writer leaves it for ever).",
          "If no writer is running, delete `<session>/.lock`."),
    # --- Qwen Code (docs/qwen.md) -----------------------------------------------------------------
    Check("qwen.cwd-missing",
          "Sessions were recorded in a folder that no longer exists; Qwen lists and resumes (`-c`, `-r <id>`) only "
          "sessions whose folder name and first-record cwd both match the folder it runs in.",
          "`histmig move <old> <new> --apply` when the project moved (a likely new location is suggested).",
          environment=True),
    Check("qwen.folder-mismatch",
          "A session sits in a project folder whose name is not the slug of the cwd its first record names "
          "(moved by hand, or cwd edited): Qwen lists it from no folder.",
          "The printed `histmig move` when the recorded cwd is gone; else move the file into the printed folder."),
    Check("qwen.id-mismatch",
          "A session file's name is not the sessionId of its first record; `qwen -r <id>` cannot find it.",
          "Rename the file to `<sessionId>.jsonl`."),
    Check("qwen.broken-lines",
          "Lines of a session do not parse; Qwen skips them.",
          "Nothing to do for resume; histmig keeps the bytes."),
    # --- Pi (histmig/tools/pi/doctor.py) ----------------------------------------------------------
    Check("pi.cwd-missing",
          "Sessions were recorded in a folder that no longer exists; `pi -c` in the moved folder starts empty.",
          "`histmig move <old> <new> --apply` when the project moved.",
          environment=True),
    Check("pi.folder-mismatch",
          "A session lies in a folder that is not the one of its header cwd; `pi -c` there and Pi's listings disagree.",
          "`histmig move <header cwd> <project folder> --apply`, or move the file by hand."),
    Check("pi.ambiguous-prefix",
          "Sessions of different projects share an 8-character id prefix (UUIDv7 ids start with the time); "
          "`pi --session <prefix>` may open the wrong one.",
          "Pass the full id (or a longer prefix) to `pi --session`."),
    Check("pi.usage-missing",
          "An assistant message has no `usage`; Pi crashes on resume (`reading 'totalTokens'`).",
          "Re-convert the session with histmig (its writer sets usage), or add a usage object by hand."),
    Check("pi.broken-lines",
          "Lines of a session do not parse; Pi skips them.",
          "Nothing to do for resume; histmig keeps the bytes."),
    # --- OpenCode (histmig/tools/opencode/doctor.py) ------------------------------------------------
    Check("opencode.cwd-missing",
          "Sessions were recorded in a folder that no longer exists; `opencode run -c` in the moved folder starts "
          "a new session and `run -s <id>` fails with UnknownError.",
          "`histmig move <old> <new> --apply` when the project moved.",
          environment=True),
    Check("opencode.orphan-messages",
          "Failed `opencode run`s left prompts with an empty, unfinished answer; OpenCode sends them again, "
          "merged into the next request.",
          "`histmig doctor --repair` deletes those rows (journaled; `histmig undo` puts them back)."),
    Check("opencode.unreadable",
          "The OpenCode database cannot be read (corrupt, not an SQLite file, or locked past the busy timeout); "
          "histmig lists, moves and converts none of its sessions.",
          "Quit OpenCode if it holds a lock; otherwise restore the file from a backup. histmig leaves it as it is."),
    Check("opencode.channel-db",
          "Sessions live in `opencode-<channel>.db`, the database of a non-release OpenCode build; release builds "
          "and histmig read `opencode.db` (or `$OPENCODE_DB`) and do not see them.",
          "`OPENCODE_DB=<that file> histmig scan --tool opencode` (and move, doctor, convert); the same variable "
          "makes a release `opencode` use that database.",
          environment=True),
    # --- Copilot CLI (histmig/tools/copilot/doctor.py) ---------------------------------------------
    Check("copilot.cwd-missing",
          "Sessions list a folder that no longer exists (workspace.yaml cwd, the index row); Copilot still "
          "resumes them from anywhere, but its picker and histmig's listings show the old path.",
          "`histmig move <old> <new> --apply` when the project moved.",
          environment=True),
    Check("copilot.chain-broken",
          "An event's parentId is not the event before it (a lost or hand-edited line); Copilot rebuilds the "
          "conversation by parentId and may drop what follows.",
          "Restore the session from a backup, or leave it: histmig keeps the bytes."),
    Check("copilot.broken-lines",
          "Lines of events.jsonl do not parse; Copilot skips them.",
          "Nothing to do for resume; histmig keeps the bytes."),
    # --- Cline CLI (histmig/tools/cline/doctor.py) --------------------------------------------------
    Check("cline.cwd-missing",
          "Sessions were recorded in a folder that no longer exists; Cline still resumes them (`cline --id`, "
          "history is global), but its manifest and histmig's listings name the old folder.",
          "`histmig move <old> <new> --apply` when the project moved.",
          environment=True),
    Check("cline.tool-result-name",
          "A `tool_result` block has no `name`; Cline 3.0.65 refuses to resume the session (\"Invalid input\") "
          "and sends nothing.",
          "Re-convert the session with histmig (its writer names every result), or add the tool's name by hand."),
    Check("cline.messages-path",
          "The manifest's `messages_path` does not name the session's own messages file (the folder was copied "
          "or moved by hand).",
          "Set `messages_path` in `<sid>.json` to the printed path."),
    Check("cline.unreadable",
          "A session's messages file or manifest is not valid JSON; Cline cannot list or resume it.",
          "Restore the file from a backup; histmig leaves it as it is."),
    # --- every tool (histmig/verbs/doctor/archived.py, docs/archive.md) -------------------------------
    Check("archive.unarchived",
          "Sessions their client is about to delete (the findings above that name them) have no current copy "
          "in histmig's archive (<state dir>/archive).",
          "`histmig archive` now (or from cron); after the client deleted them, `histmig restore --deleted --apply`.",
          environment=True),
]

CHECKS: dict[str, Check] = {c.code: c for c in _TABLE}


@value
class Finding:
    """One problem. ``count`` is how many sessions/files/rows it covers; ``repair`` holds the safe
    plan operations that fix it (empty when the user must act, see ``fix``)."""

    code: str
    detail: str
    path: str | None = None
    line: int | None = None
    count: int = 1
    fix: str | None = None
    repair: list[Op] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    # the canonical name of the tool whose check found it (doctor sets it from the table: codes keep
    # their short prefix, ``claude.``); the code's prefix until then
    tool: str = ""

    def __init__(self, code: str, detail: str, path: str | None = None, line: int | None = None, count: int = 1,
                 fix: str | None = None, repair: list[Op] = FACTORY, data: dict[str, Any] = FACTORY, tool: str = "") -> None:
        self.code = code
        self.detail = detail
        self.path = path
        self.line = line
        self.count = count
        self.fix = fix
        self.repair = [] if repair is FACTORY else repair
        self.data = {} if data is FACTORY else data
        self.tool = tool
        self.__post_init__()

    def __post_init__(self) -> None:
        if self.code not in CHECKS:
            raise ValueError(f"unknown doctor code {self.code!r}")
        self.tool = self.tool or self.code.split(".", 1)[0]

    def to_warning(self) -> Warning:
        extra = {"count": self.count, **({"fix": self.fix} if self.fix else {})}
        return Warning(self.code, self.detail, self.path, self.line, extra)

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "tool": self.tool, "detail": self.detail, "path": self.path,
                "line": self.line, "count": self.count, "fix": self.fix,
                "repairable": bool(self.repair), "repair": [o.describe() for o in self.repair],
                **({"data": self.data} if self.data else {})}


# ---- helpers shared by the checks ----------------------------------------------------------

def dir_exists(path: str | None) -> bool:
    return bool(path) and os.path.isabs(path) and os.path.isdir(path)


def dir_missing(path: str | None) -> bool:
    """An absolute folder that is gone (relative-looking cwds are opaque: never called missing)."""
    return bool(path) and os.path.isabs(path) and not os.path.isdir(path)


def same_path(a: str | None, b: str | None) -> bool:
    """Equal as paths: normalised, and resolved through symlinks when both exist."""
    if not a or not b:
        return a == b
    if os.path.normpath(a) == os.path.normpath(b):
        return True
    return os.path.exists(a) and os.path.exists(b) and os.path.realpath(a) == os.path.realpath(b)


def writable_dir(path: Path) -> bool:
    """Whether a client running as the folder's owner could create files in it: a read-only
    mount, or a folder without the owner's write bit, is not (root's access() would say yes)."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return False
        st = path.stat()
    except OSError:
        return False
    return bool(st.st_mode & 0o200) and (os.geteuid() == 0 or os.access(path, os.W_OK | os.X_OK))


def session_tag(tool: str, sid: str | None) -> dict[str, str] | None:
    return {"tool": tool, "id": sid} if sid else None
