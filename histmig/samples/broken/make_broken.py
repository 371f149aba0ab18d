"""Regenerate the damaged-line samples: ``python histmig/samples/broken/make_broken.py``.

One session file per damage kind, for Claude Code and for mini-cc; ``kinds.json`` in each tree
maps a session id to its kind. Every file is a short, valid conversation with exactly one kind of
damage, so a reader can be checked line by line. The bytes are written exactly (no text mode).
"""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CWD = "/home/user/work/app"
SLUG = "-home-user-work-app"
KINDS = ["truncated-tail", "spliced-records", "nul-run", "invalid-utf8", "deep-nesting",
         "duplicate-keys", "crlf-lines", "leading-bom", "huge-number"]
IDS = {k: f"{i + 1:08x}-0b0c-4d0e-8f10-{i + 1:012x}" for i, k in enumerate(KINDS)}


def compact(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def spaced(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode()


def claude_lines(sid: str) -> list[bytes]:
    env = {"userType": "external", "entrypoint": "cli", "cwd": CWD, "sessionId": sid,
           "version": "2.1.197", "gitBranch": "main"}
    u1, a1, u2 = (sid[:-4] + s for s in ("a001", "a002", "a003"))
    return [compact({"type": "queue-operation", "operation": "dequeue",
                     "timestamp": "2026-11-30T10:00:00.000Z", "sessionId": sid}),
            compact({"parentUuid": None, "isSidechain": False, "type": "user",
                     "message": {"role": "user", "content": "fix the failing test in parser.py"},
                     "uuid": u1, "timestamp": "2026-11-30T10:00:00.100Z", **env}),
            compact({"parentUuid": u1, "isSidechain": False, "type": "assistant",
                     "message": {"model": "claude-sonnet-4-5", "id": "msg_01Broken" + sid[:8],
                                 "type": "message", "role": "assistant",
                                 "content": [{"type": "text", "text": "Looking at parser.py now."}],
                                 "stop_reason": "end_turn", "stop_sequence": None,
                                 "usage": {"input_tokens": 10, "output_tokens": 8}},
                     "requestId": "req_01Broken" + sid[:8], "uuid": a1,
                     "timestamp": "2026-11-30T10:00:02.000Z", **env}),
            compact({"parentUuid": a1, "isSidechain": False, "type": "user",
                     "message": {"role": "user", "content": "thanks"},
                     "uuid": u2, "timestamp": "2026-11-30T10:00:09.000Z", **env}),
            compact({"type": "last-prompt", "lastPrompt": "thanks", "leafUuid": u2, "sessionId": sid})]


def mini_lines(sid: str) -> list[bytes]:
    u = [sid[:-4] + f"a{n:03d}" for n in range(1, 5)]
    msgs = [("user", "fix the failing test in parser.py", None),
            ("assistant", [{"type": "text", "text": "Looking at parser.py now."}], {"input_tokens": 10, "output_tokens": 8}),
            ("user", "thanks", None),
            ("assistant", [{"type": "text", "text": "You're welcome."}], {"input_tokens": 20, "output_tokens": 4})]
    out, parent = [], None
    for uid, (role, content, usage) in zip(u, msgs):
        rec = {"type": role, "uuid": uid, "parentUuid": parent, "sessionId": sid,
               "timestamp": "2026-11-30T10:00:00.000+00:00", "cwd": CWD,
               "message": {"role": role, "content": content}}
        if usage:
            rec["usage"] = usage
        out.append(compact(rec))
        parent = uid
    return out


def damage(kind: str, lines: list[bytes]) -> bytes:
    """The file's bytes with one kind of damage applied; valid lines around it."""
    nl = [ln + b"\n" for ln in lines]
    middle = {
        "nul-run": b"\x00" * 512 + b"\n",                                     # a 512-byte NUL run (preallocated, never written)
        "invalid-utf8": lines[2].replace(b'"role":"', b'"role":"\xff\xfe', 1) + b"\n",
        "deep-nesting": b"[" * 100000 + b"]" * 100000 + b"\n",
        "duplicate-keys": lines[2][:-1] + b',"cwd":"/elsewhere"}\n',          # second "cwd": which one wins?
        "huge-number": lines[2][:-1] + b',"n":' + b"9" * 5000 + b"}\n",       # a 5000-digit number
    }
    if kind in middle:
        return b"".join(nl[:2] + [middle[kind]] + nl[2:])
    if kind == "spliced-records":                                             # "}{": two writers, one line
        return b"".join(nl[:2] + [lines[2] + lines[3] + b"\n"] + nl[4:])
    if kind == "truncated-tail":
        return b"".join(nl) + lines[2][: len(lines[2]) // 2]                  # half a record, no newline
    if kind == "crlf-lines":
        return b"".join(ln + b"\r\n" for ln in lines)
    if kind == "leading-bom":
        return b"\xef\xbb\xbf" + b"".join(nl)
    raise ValueError(kind)


def build(tool: str, make_lines) -> None:
    folder = HERE / tool / "projects" / SLUG
    folder.mkdir(parents=True, exist_ok=True)
    for kind, sid in IDS.items():
        (folder / f"{sid}.jsonl").write_bytes(damage(kind, make_lines(sid)))
    (HERE / tool / "kinds.json").write_text(json.dumps({sid: k for k, sid in IDS.items()}, indent=2) + "\n")


if __name__ == "__main__":
    build("claude-code", claude_lines)
    build("mini-cc", mini_lines)
