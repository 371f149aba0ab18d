"""Cline CLI for the e2e suite: install the pinned version once, run it offline against the fake API.

Its own cache sub-folder (``cline-<version>``). Offline recipe (docs/cline.md): ``cline auth -p openai -k K
-m M -b <fake>/v1`` stores an OpenAI-compatible provider; ``cline "prompt"`` runs one turn. Resuming
(``--id <sid>``) is interactive only, so :func:`resume` types the prompt into the terminal UI through a
pseudo-terminal (:mod:`pty`). Every run leaves a detached ``--cline-hub-daemon`` (parent pid 1, outside
the run's process group): :func:`stop_daemons` stops the ones whose HOME is the scratch home, by pid.

``python -m tests.e2e.cline_client install`` installs it and prints the path.
"""
from __future__ import annotations

import os
import pty
import re
import select
import signal
import time
from pathlib import Path

from . import versions
from .clients import Run, Scratch, cache_root, client_env, install_main, install_package, reports_version, run
from .fake_api import FakeAPI

MODEL = "fake-model"


def install_dir(root: Path | None = None) -> Path:
    return (root or cache_root()) / f"cline-{versions.CLINE}"


def _version_ok(exe: Path) -> bool:
    return reports_version(exe, versions.CLINE, {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                                 "HOME": str(exe.parents[2] / "version-home")})


def install(root: Path | None = None) -> Path:
    """The ``cline`` executable of the pinned version (installed once; parallel callers wait)."""
    return install_package(install_dir(root), f"cline@{versions.CLINE}", "cline", _version_ok)


def cline_home(scratch: Scratch) -> Path:
    return scratch.home / ".cline"


def cline_env(scratch: Scratch, api: FakeAPI) -> dict[str, str]:
    return client_env(scratch, api, {"CLINE_DIR": str(cline_home(scratch))})


def auth(exe: Path, scratch: Scratch, api: FakeAPI) -> Run:
    return run([str(exe), "auth", "-p", "openai", "-k", "sk-fake", "-m", MODEL, "-b", f"{api.url}/v1"],
               cwd=scratch.home, env=cline_env(scratch, api), api=api).check()


def run_cline(exe: Path, scratch: Scratch, api: FakeAPI, prompt: str, cwd: Path) -> Run:
    """``cline PROMPT`` in ``cwd`` (one turn, tools auto-approved)."""
    try:
        return run([str(exe), prompt], cwd=cwd, env=cline_env(scratch, api), api=api)
    finally:
        stop_daemons(scratch)


def history(exe: Path, scratch: Scratch, api: FakeAPI) -> Run:
    try:
        return run([str(exe), "history", "--json"], cwd=scratch.home, env=cline_env(scratch, api), api=api)
    finally:
        stop_daemons(scratch)


def resume(exe: Path, scratch: Scratch, api: FakeAPI, sid: str, prompt: str, cwd: Path, *,
           wait: float = 40.0) -> Run:
    """``cline --id SID`` in a pseudo-terminal: type ``prompt`` + Enter once the UI drew its prompt box, stop the client
    once the fake API answered a request after the prompt (or ``wait`` seconds passed)."""
    mark = api.mark()
    env = cline_env(scratch, api)
    pid, fd = pty.fork()
    if pid == 0:   # the child: become the client
        os.chdir(cwd)
        os.execve(str(exe), [str(exe), "--id", sid], env)
    out, t0, sent, done_at, ready_at = b"", time.time(), None, None, None
    try:
        while time.time() - t0 < wait:
            more = _read_screen(fd)
            if more is None:
                break
            out += more
            if ready_at is None and b"Ask anything" in out:   # the prompt box is drawn
                ready_at = time.time()
            if sent is None and ((ready_at and time.time() - ready_at > 2) or time.time() - t0 > 20):
                for ch in prompt:
                    os.write(fd, ch.encode())
                    time.sleep(0.01)
                out = _until_echoed(fd, out, prompt)
                os.write(fd, b"\r")
                sent = time.time()
            if sent and done_at is None and _answered(api, mark):
                done_at = time.time()
            if done_at and time.time() - done_at > 3:   # let it store the turn
                break
    finally:
        _stop(pid)
        os.close(fd)
        stop_daemons(scratch)
    return Run([str(exe), "--id", sid], 0, _screen_text(out), "", api.since(mark))


def _until_echoed(fd: int, out: bytes, prompt: str, wait: float = 15.0) -> bytes:
    """Read the client's screen until the typed ``prompt`` shows in its input box (or ``wait`` seconds):
    on a loaded machine the UI can lag behind the keys, and an Enter sent before it caught up submitted
    only the first letters ("cont" of "continue CL-PACK-B", a CI run at load 10)."""
    tail, t0 = prompt[-8:], time.time()
    time.sleep(0.3)
    while time.time() - t0 < wait and tail not in _screen_text(out):
        more = _read_screen(fd)
        if more is None:
            break
        out += more
    return out


def _read_screen(fd: int) -> bytes | None:
    """What the client drew in the next 0.2 s (b"" if nothing), None once its terminal is closed."""
    ready, _, _ = select.select([fd], [], [], 0.2)
    if not ready:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:
        return None


def _screen_text(out: bytes) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", out.decode("utf-8", "replace"))


def _answered(api: FakeAPI, mark: int) -> bool:
    """A Chat Completions request since ``mark`` got a text answer from the fake API's script (its last
    message is a tool result, or a user message that asks for no tool run)."""
    for e in api.since(mark):
        msgs = (e.body or {}).get("messages") if e.method == "POST" and e.api == "chat" else None
        if msgs and (msgs[-1].get("role") == "tool" or "RUN:" not in str(msgs[-1].get("content"))):
            return True
    return False


def _stop(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            break
        for _ in range(20):
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
            time.sleep(0.1)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def daemons(scratch: Scratch) -> list[int]:
    """Pids of the hub daemons started with this scratch HOME (read from /proc)."""
    home = f"HOME={scratch.home}".encode()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if b"--cline-hub-daemon" in (d / "cmdline").read_bytes() and home in (d / "environ").read_bytes().split(b"\0"):
                out.append(int(d.name))
        except OSError:
            continue
    return out


def stop_daemons(scratch: Scratch) -> None:
    for _ in range(3):   # a daemon may still be starting when the client exits
        time.sleep(0.5)
        for pid in daemons(scratch):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    time.sleep(0.5)
    for pid in daemons(scratch):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def sessions(scratch: Scratch) -> list[Path]:
    """Every ``data/sessions/<sid>/<sid>.messages.json``, oldest first."""
    return sorted((cline_home(scratch) / "data" / "sessions").glob("*/*.messages.json"))


if __name__ == "__main__":  # python -m tests.e2e.cline_client install (.ci/install-clients.sh)
    install_main("cline_client", f"cline {versions.CLINE}", install)
