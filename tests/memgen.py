"""Big but valid sessions for the memory tests (issue 12 case 9), streamed to disk.

``zst_rollout``: a Codex rollout of millions of tiny lines, zstd-compressed to a few KB (it stays
under the 256 MiB decompression cap). ``big_transcript``: a Claude Code transcript of large lines
(a ~1 MB prompt or answer each). ``peak_rss``: one histmig command in a child, measured by a wrapper
process that reports only that child's peak RSS.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import zstandard

THREAD = "019e9625-802f-7e91-840a-00000000beef"
CLAUDE_ID = "5f1c0a62-7c43-4a51-9a7e-00000000beef"
TS = "2026-11-29T10:00:00.000Z"


def _codex_block() -> bytes:
    """Three tiny lines (~80 bytes each): a prompt, an answer, an event."""
    return (b'{"type":"response_item","payload":{"type":"message","role":"user","content":"hi"}}\n'
            b'{"type":"response_item","payload":{"type":"message","role":"assistant","content":"ok"}}\n'
            b'{"type":"event_msg","payload":{"type":"agent_reasoning","text":"k"}}\n')


def zst_rollout(codex_home: Path, cwd: str, lines: int = 3_000_000) -> Path:
    folder = codex_home / "sessions" / "2026" / "11" / "29"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2026-11-29T10-00-00-{THREAD}.jsonl.zst"
    meta = {"timestamp": TS, "type": "session_meta", "payload": {
        "id": THREAD, "timestamp": TS, "cwd": cwd, "originator": "codex_exec", "cli_version": "0.171.0",
        "source": "exec", "model_provider": "openai"}}
    turn = {"timestamp": TS, "type": "turn_context", "payload": {"cwd": cwd, "model": "gpt-5.5"}}
    block = _codex_block() * 1000                      # 3000 lines per write
    with open(path, "wb") as fh:
        with zstandard.ZstdCompressor(level=19).stream_writer(fh, closefd=False) as w:
            w.write(orjson.dumps(meta) + b"\n" + orjson.dumps(turn) + b"\n")
            for _ in range((lines - 2) // 3000):
                w.write(block)
    return path


def big_transcript(claude_home: Path, cwd: str, size: int = 1 << 30, line_bytes: int = 1 << 20) -> Path:
    """A Claude Code transcript of ``size`` bytes: alternating prompts and answers of ``line_bytes``."""
    from histmig.core.paths import claude_slug
    folder = claude_home / "projects" / claude_slug(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{CLAUDE_ID}.jsonl"
    text = ("lorem ipsum dolor sit amet " * (line_bytes // 27 + 1))[:line_bytes]
    common = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": CLAUDE_ID,
              "version": "2.1.197", "gitBranch": "", "entrypoint": "cli"}
    parent, written, n = None, 0, 0
    with open(path, "wb") as fh:
        while written < size:
            uid = f"00000000-0000-4000-8000-{n:012d}"
            if n % 2 == 0:
                msg = {"role": "user", "content": text}
                rec = {"parentUuid": parent, "type": "user", "message": msg}
            else:
                msg = {"model": "claude-x", "id": f"msg_{n}", "type": "message", "role": "assistant",
                       "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                       "usage": {"input_tokens": 1, "output_tokens": 1}}
                rec = {"parentUuid": parent, "type": "assistant", "message": msg}
            rec.update(uuid=uid, timestamp=TS, **common)
            line = orjson.dumps(rec) + b"\n"
            fh.write(line)
            written += len(line)
            parent, n = uid, n + 1
    return path


WRAPPER = r"""
import json, resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "maxrss_kb": ru.ru_maxrss, "stderr": p.stderr.decode(errors="replace")[-2000:]}))
"""


def peak_rss(args: list[str], env: dict[str, str]) -> dict:
    """Run ``histmig ARGS`` in a grandchild; the wrapper reports the grandchild's peak RSS (KiB on
    Linux), so neither pytest nor the wrapper itself is counted."""
    out = subprocess.run([sys.executable, "-c", WRAPPER, sys.executable, "-m", "histmig", *args],
                         env=env, capture_output=True, check=True)
    return json.loads(out.stdout)


LIMIT_MB = 200      # the memory tests' bound on a command's peak RSS


def under_limit(args: list, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> int:
    """Run ``histmig ARGS`` (:func:`peak_rss`), assert its exit code is one of ``ok`` and its peak RSS
    under :data:`LIMIT_MB`; the MB it peaked at."""
    res = peak_rss([str(a) for a in args], env)
    assert res["rc"] in ok, (args, res["stderr"])
    mb = res["maxrss_kb"] // 1024
    assert mb < LIMIT_MB, f"histmig {' '.join(map(str, args))}: peak RSS {mb} MB"
    return mb


def scratch_env(isolated_homes: dict, tmp_path: Path, free_gb: int, what: str) -> dict[str, str]:
    """The environment of the isolated homes for a memory test's commands; the test is skipped when
    the temporary folder has less than ``free_gb`` GB free (``what`` says what needs them)."""
    import pytest
    if shutil.disk_usage(tmp_path).free < free_gb * 1024**3:
        pytest.skip(f"needs {free_gb} GB free {what}")
    return {**os.environ, **{k: str(v) for k, v in isolated_homes.items()}}
