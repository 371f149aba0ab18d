"""Qwen Code for the e2e suite: install the pinned version once, run it offline against the fake API.

Its own cache sub-folder (``qwen-code-<version>`` beside the Codex/Claude pairs of tests/e2e/clients.py),
so adding it does not re-install the other clients. The offline recipe (docs/qwen.md): ``--auth-type
openai`` with ``OPENAI_BASE_URL`` pointing at the fake API's Chat Completions route, ``-y`` (no approval
prompts), the prompt as the positional argument; ``-c`` / ``-r <id>`` continue a session.

``python -m tests.e2e.qwen_client install`` installs it and prints the path.
"""
from __future__ import annotations

from pathlib import Path

from . import versions
from .clients import Run, Scratch, cache_root, client_env, install_main, install_package, reports_version, run
from .fake_api import FakeAPI

MODEL = "fake-model"


def install_dir(root: Path | None = None) -> Path:
    return (root or cache_root()) / f"qwen-code-{versions.QWEN_CODE}"


def _version_ok(exe: Path) -> bool:
    return reports_version(exe, versions.QWEN_CODE,
                           {"PATH": "/usr/bin:/bin", "HOME": str(exe.parents[2] / "version-home")})


def install(root: Path | None = None) -> Path:
    """The ``qwen`` executable of the pinned version (installed once; parallel callers wait)."""
    return install_package(install_dir(root), f"@qwen-code/qwen-code@{versions.QWEN_CODE}", "qwen", _version_ok)


def qwen_home(scratch: Scratch) -> Path:
    return scratch.home / ".qwen"


def qwen_env(scratch: Scratch, api: FakeAPI) -> dict[str, str]:
    return client_env(scratch, api, {"QWEN_HOME": str(qwen_home(scratch)), "OPENAI_API_KEY": "sk-fake",
                                     "OPENAI_BASE_URL": f"{api.url}/v1", "OPENAI_MODEL": MODEL,
                                     "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"})


def run_qwen(exe: Path, scratch: Scratch, api: FakeAPI, prompt: str, cwd: Path, *, continue_: bool = False,
             resume: str | None = None, args: tuple[str, ...] = ()) -> Run:
    """``qwen --auth-type openai -y [-c | -r ID] PROMPT`` in ``cwd``."""
    cmd = [str(exe), "--auth-type", "openai", "-y", *(["-c"] if continue_ else []),
           *(["-r", resume] if resume else []), *args, prompt]
    return run(cmd, cwd=cwd, env=qwen_env(scratch, api), api=api)


def list_sessions(exe: Path, scratch: Scratch, api: FakeAPI, cwd: Path) -> Run:
    return run([str(exe), "sessions", "list"], cwd=cwd, env=qwen_env(scratch, api), api=api)


def sessions(scratch: Scratch) -> list[Path]:
    """Every ``projects/<slug>/chats/<uuid>.jsonl``, oldest first."""
    files = (qwen_home(scratch) / "projects").glob("*/chats/*.jsonl")
    return sorted(files, key=lambda p: p.stat().st_mtime_ns)


def conversation_requests(result: Run) -> list:
    """The main conversation's Chat Completions requests (not the memory-extraction side requests)."""
    return [e for e in result.model_requests("chat")
            if "managed memory extraction" not in str((e.body or {}).get("messages", [{}])[0].get("content"))]


if __name__ == "__main__":  # python -m tests.e2e.qwen_client install (.ci/install-clients.sh)
    install_main("qwen_client", f"qwen {versions.QWEN_CODE}", install)
