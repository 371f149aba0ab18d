"""Drive the interactive Claude Code UI in tmux: record a ``cli``-entrypoint session, open the picker.

Sessions made with ``claude -p`` carry ``"entrypoint":"sdk-cli"`` and the interactive ``--resume``
picker hides them (claude-code.md section 0.2); only a session typed into the real terminal UI is
listed. tmux gives the client a real pseudo-terminal and lets us read the screen.

Each helper uses its own tmux server (a private socket) and kills only that server.
"""
from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .clients import Clients, Run, Scratch, claude_setup, client_env
from .fake_api import FakeAPI

TRUST = "Yes, I trust this folder"
API_KEY = "Detected a custom API key"
API_KEY_YES = "Yes"
CURSOR = "\u276f"  # ❯, the selected menu option
# the idle prompt's footer: 2.1.197 "? for shortcuts"; 2.1.332 starts in auto mode and shows
# "⏵⏵ auto mode on (shift+tab to cycle)" there instead (both hide it while a turn runs)
READY = ("? for shortcuts", "auto mode on (shift+tab to cycle)")
PICKER = ("Resume session", "No conversations found")
EXIT_MARK = "__CLAUDE_EXIT="


class TmuxUnavailable(RuntimeError):
    pass


class Tmux:
    """One tmux server with one window running ``command`` in ``cwd``."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str], width: int = 140, height: int = 45):
        exe = shutil.which("tmux")
        if not exe:
            raise TmuxUnavailable("tmux is not installed (apt-get install -y tmux)")
        # socket paths are limited to ~100 bytes: keep it short, outside the (long) pytest tmp path
        self._dir = tempfile.mkdtemp(prefix="hm-tmux-")
        self.base = [exe, "-S", f"{self._dir}/s", "-f", "/dev/null"]
        assigns = [f"{k}={v}" for k, v in env.items()]
        # the pane outlives the client so its last screen and exit code can be read
        shell = (f"env -i {shlex.join(assigns)} {shlex.join(command)}; "
                 f"echo {EXIT_MARK}$?__; sleep 600")
        subprocess.run([*self.base, "new-session", "-d", "-x", str(width), "-y", str(height),
                        "-c", str(cwd), "bash", "-c", shell], check=True, timeout=20)

    def screen(self) -> str:
        p = subprocess.run([*self.base, "capture-pane", "-p"], capture_output=True, text=True, timeout=20)
        return p.stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        flag = ["-l"] if literal else []
        subprocess.run([*self.base, "send-keys", *flag, *keys], check=True, timeout=20)

    def wait_for(self, *needles: str, timeout: float = 30.0) -> str:
        """Poll the screen until one of ``needles`` shows (answering first-run dialogs on the way)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if any(n in text for n in needles):
                return text
            if not answer_dialogs(self, text) and time.monotonic() > deadline:
                raise TimeoutError(f"none of {needles} on screen after {timeout}s:\n{text}")
            time.sleep(0.3)

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=20)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def answer_dialogs(tmux: Tmux, text: str) -> bool:
    """Accept the folder-trust dialog and the custom-API-key dialog (its default is "No").

    The options are picked by their label, not by position: 2.1.197 lists "1. Yes, I trust this
    folder" first and selected, 2.1.332 lists "No, exit" first and selected.
    """
    if TRUST in text:
        choose(tmux, text, TRUST)
    elif API_KEY in text:
        choose(tmux, text, API_KEY_YES)
    else:
        return False
    time.sleep(0.8)
    return True


def choose(tmux: Tmux, text: str, label: str, timeout: float = 10.0) -> None:
    """Move the menu cursor (``❯``) to the option line containing ``label``, then press Enter.

    One arrow key at a time, re-reading the screen in between: a menu that is drawn before it reads
    keys drops the first ones. Enter is pressed only with ``label`` selected (never on "No, exit").
    """
    deadline = time.monotonic() + timeout
    while True:
        lines = text.splitlines()
        cursor = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith(CURSOR)), None)
        target = next((i for i, ln in enumerate(lines) if _option(ln) == label), None)
        if cursor is None or target is None:
            raise AssertionError(f"no menu with the option {label!r} on screen:\n{text}")
        if cursor == target:
            tmux.keys("Enter")
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"could not select {label!r} within {timeout}s:\n{text}")
        tmux.keys("Down" if target > cursor else "Up")
        time.sleep(0.3)
        text = tmux.screen()


def _option(line: str) -> str:
    """The label of a menu line: without the cursor and the "1." numbering (2.1.197 numbers them)."""
    return re.sub(r"^\s*(?:" + CURSOR + r")?\s*(?:\d+\.\s+)?", "", line).rstrip()


def ready(screen: str) -> bool:
    """Is the client idle at its prompt?"""
    return any(r in screen for r in READY)


def _env(scratch: Scratch, api: FakeAPI) -> dict[str, str]:
    return client_env(scratch, api) | {"TERM": "xterm-256color", "COLORTERM": "truecolor"}


def record_interactive(clients: Clients, scratch: Scratch, api: FakeAPI, cwd: Path, prompts: list[str],
                       args: tuple[str, ...] = (), timeout: float = 60.0) -> Run:
    """Type ``prompts`` one by one into interactive ``claude`` (entrypoint ``cli``), then ``/exit``.

    Each prompt waits until the fake API has sent a final (tool-free) answer.
    """
    claude_setup(scratch)
    mark = api.mark()
    cmd = [str(clients.claude), *args]
    with Tmux(cmd, cwd, _env(scratch, api)) as tmux:
        tmux.wait_for(*READY, timeout=timeout)
        for prompt in prompts:
            _send_prompt(tmux, api, prompt, timeout)
        tmux.keys("/exit", literal=True)
        time.sleep(0.3)
        tmux.keys("Enter")
        screen = tmux.wait_for(EXIT_MARK, timeout=timeout)
    code = int(screen.split(EXIT_MARK, 1)[1].split("__", 1)[0])
    return Run(cmd, code, screen, "", api.since(mark))


def _send_prompt(tmux: Tmux, api: FakeAPI, prompt: str, timeout: float) -> None:
    mark = api.mark()
    tmux.keys(prompt, literal=True)
    time.sleep(0.3)
    tmux.keys("Enter")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [e for e in api.since(mark) if e.api == "anthropic" and e.status == 200
                and e.reply and not any(b["type"] == "tool_use" for b in e.reply)]
        if done and ready(tmux.screen()):
            time.sleep(0.5)  # let the transcript write land
            return
        answer_dialogs(tmux, tmux.screen())
        time.sleep(0.3)
    raise TimeoutError(f"no final answer to {prompt!r} within {timeout}s:\n{tmux.screen()}")


def resume_picker(clients: Clients, scratch: Scratch, api: FakeAPI, cwd: Path,
                  args: tuple[str, ...] = ("--resume",), timeout: float = 30.0) -> str:
    """Open ``claude --resume`` in ``cwd`` and return the picker's screen text."""
    claude_setup(scratch)
    with Tmux([str(clients.claude), *args], cwd, _env(scratch, api)) as tmux:
        tmux.wait_for(*PICKER, timeout=timeout)
        time.sleep(1.0)  # the list fills in after the frame appears
        return tmux.screen()
