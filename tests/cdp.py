"""A tiny Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (no websocket, no dependency):
Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4.

Used by tests/test_export_html.py to load exported pages in headless Chromium from Debian's packages
(.ci/install-clients.sh installs it) and see every network request and console error."""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
# the flags that work on this machine: no sandbox as root, no GPU, nothing reaching for the network
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio", "--remote-debugging-pipe"]


class Browser:
    def __init__(self) -> None:
        self.profile = tempfile.mkdtemp(prefix="histmig-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        os.set_inheritable(to_child_r, True)
        os.set_inheritable(from_child_w, True)

        def fds() -> None:      # the child's fd 3 reads commands, fd 4 writes replies (moved high first:
            import fcntl        # either pipe end may itself be 3 or 4)
            r, w = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 100), fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 100)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=fds, pass_fds=(3, 4))
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf, self._id, self.events = b"", 0, []

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline: float) -> dict | None:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, *, session: str | None = None,
             timeout: float = 30) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply is None:
                raise TimeoutError(method)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        for ev in self.events:
            if ev.get("method") == method and ev.get("sessionId") == session:
                return ev
        while True:
            ev = self._read(deadline)
            if ev is None:
                raise TimeoutError(method)
            self.events.append(ev)
            if ev.get("method") == method and ev.get("sessionId") == session:
                return ev

    def load(self, url: str, *, settle: float = 0.3) -> dict[str, Any]:
        """Open ``url`` in a new tab; return its requests, console errors, exceptions and body text."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.events.clear()
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired", session)
        deadline = time.monotonic() + settle       # late requests or errors after load
        while (ev := self._read(deadline)) is not None:
            self.events.append(ev)
        text = self.send("Runtime.evaluate", {"expression": "document.body.innerText", "returnByValue": True},
                         session=session)["result"].get("value", "")
        mine = [e for e in self.events if e.get("sessionId") == session]
        out = {
            "requests": [e["params"]["request"]["url"] for e in mine if e.get("method") == "Network.requestWillBeSent"],
            "console_errors": [e["params"] for e in mine if e.get("method") == "Runtime.consoleAPICalled"
                               and e["params"].get("type") in ("error", "assert")],
            "exceptions": [e["params"] for e in mine if e.get("method") == "Runtime.exceptionThrown"],
            "log_errors": [e["params"]["entry"] for e in mine if e.get("method") == "Log.entryAdded"
                           and e["params"]["entry"].get("level") == "error"],
            "text": text,
        }
        self.send("Target.closeTarget", {"targetId": target})
        return out
