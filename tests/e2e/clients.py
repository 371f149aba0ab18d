"""Install the real clients once (the versions tests/e2e/versions.py selects), and run them offline against the fake API.

Every run gets a scratch HOME / CODEX_HOME / CLAUDE_CONFIG_DIR, a clean environment (nothing inherited
from the caller but PATH and locale), a proxy that goes nowhere for anything that is not loopback, and
a timeout. Each helper returns a ``Run``: the process result plus the fake API requests made during it.

Command line: ``python -m tests.e2e.clients install`` installs into the cache folder and prints paths.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import versions
from .fake_api import Entry, FakeAPI

DEFAULT_CACHE = Path("/tmp/histmig-e2e-clients")  # never under the real home, locally or in CI
RUN_TIMEOUT = 120      # seconds for one client run
INSTALL_TIMEOUT = 600  # a cold npm install of ~300 MB
DEAD_PROXY = "http://127.0.0.1:9"  # discard port: any non-loopback request fails at once


class ClientsUnavailable(RuntimeError):
    """The selected clients could not be installed (no npm, npm failed, wrong version)."""


@dataclass(frozen=True)
class Clients:
    codex: Path
    claude: Path


def cache_root() -> Path:
    return Path(os.environ.get("HISTMIG_E2E_CACHE") or DEFAULT_CACHE)


def install_dir(root: Path | None = None) -> Path:
    return (root or cache_root()) / f"codex-{versions.CODEX}_claude-code-{versions.CLAUDE_CODE}"


def _bins(prefix: Path) -> Clients:
    return Clients(prefix / "node_modules/.bin/codex", prefix / "node_modules/.bin/claude")


def _version_ok(clients: Clients) -> bool:
    want = {clients.codex: versions.CODEX, clients.claude: versions.CLAUDE_CODE}
    # even --version writes under CODEX_HOME (tmp/arg0-linux): give both clients a home in the cache
    home = clients.codex.parents[2] / "version-home"
    env = _base_env(None) | {"HOME": str(home), "CODEX_HOME": str(home / ".codex"),
                             "CLAUDE_CONFIG_DIR": str(home / ".claude"), "DISABLE_AUTOUPDATER": "1"}
    for exe, version in want.items():
        try:
            (home / ".codex").mkdir(parents=True, exist_ok=True)
            out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                                 env=env).stdout
        except (OSError, subprocess.TimeoutExpired):
            return False
        if version not in out:
            return False
    return True


def install(root: Path | None = None) -> Clients:
    """Install the selected clients into their cache sub-folder once (file lock: parallel callers wait)."""
    prefix = install_dir(root)
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix.parent / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        clients = _bins(prefix)
        if (prefix / ".ok").exists() and _version_ok(clients):
            return clients
        _npm_install(prefix)
        if not _version_ok(clients):
            raise ClientsUnavailable(f"installed clients in {prefix} do not report the versions {versions.describe()}")
        (prefix / ".ok").write_text(" ".join(versions.npm_specs()) + "\n")
        return clients


def _npm_install(prefix: Path) -> None:
    _npm(prefix, versions.npm_specs())
    pkg = prefix / "node_modules/@anthropic-ai/claude-code"
    if (pkg / "install.cjs").exists():  # 2.1.100 and older ship a plain cli.js: nothing to fetch
        _checked([shutil.which("node") or "node", "install.cjs"], _npm_env(prefix), pkg, "claude-code install.cjs")


def _npm_env(prefix: Path) -> dict[str, str]:
    # npm keeps the machine's registry/CA settings (environment, user and global npmrc), but its
    # download cache lives in the cache folder, not under the real home.
    return dict(os.environ) | {"npm_config_cache": str(prefix.parent / "npm-cache"),
                               "npm_config_update_notifier": "false"}


def _npm(prefix: Path, specs: list[str], *, scripts: bool = False) -> None:
    """``npm install`` the pinned ``specs`` into ``prefix``. No --prefix: it would move npm's global config
    (and the CA file named there); a package.json in the folder roots it instead. ``scripts``: run the
    packages' install scripts (a package that fetches its platform binary there)."""
    npm = shutil.which("npm")
    if not npm:
        raise ClientsUnavailable("npm is not on PATH")
    (prefix / "package.json").write_text('{"name": "histmig-e2e-clients", "private": true}\n')
    # --ignore-scripts (Claude's postinstall is run by _npm_install): npm >= 11 may skip install scripts
    # not listed in allowScripts, which leaves a stub `claude` that only prints an error.
    cmd = [npm, "install", "--no-save", *([] if scripts else ["--ignore-scripts"]), "--no-audit", "--no-fund",
           "--loglevel=error", *specs]
    _checked(cmd, _npm_env(prefix), prefix, f"npm install {' '.join(specs)}")


def install_package(prefix: Path, spec: str, bin_name: str, version_ok: Callable[[Path], bool], *,
                    marker: bool = True, scripts: bool = False) -> Path:
    """One pinned npm package (``name@version``) installed into its own cache sub-folder ``prefix`` once
    (file lock: parallel callers wait); its ``node_modules/.bin/<bin_name>``. ``version_ok(exe)`` says an
    install is there and right; with ``marker`` a finished install also leaves ``.ok``; ``scripts``: the
    package's install scripts run (see :func:`_npm`)."""
    prefix.mkdir(parents=True, exist_ok=True)
    exe = prefix / "node_modules/.bin" / bin_name
    with open(prefix.parent / f".install-{prefix.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (not marker or (prefix / ".ok").exists()) and version_ok(exe):
            return exe
        _npm(prefix, [spec], scripts=scripts)
        if not version_ok(exe):
            raise ClientsUnavailable(f"{exe} does not report {spec}")
        if marker:
            (prefix / ".ok").write_text(spec + "\n")
        return exe


def reports_version(exe: Path, version: str, env: dict[str, str], *, timeout: float = 60) -> bool:
    """Does ``exe --version`` (run with ``env``) print ``version``?"""
    try:
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=timeout,
                             env=env).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return version in out


def package_says(exe: Path, package: str, version: str) -> bool:
    """Is ``exe`` there, and does its npm package's package.json name ``version``? (No run needed.)"""
    pkg = exe.parents[1] / package / "package.json"
    try:
        return exe.exists() and json.loads(pkg.read_text()).get("version") == version
    except (OSError, ValueError):
        return False


def install_main(module: str, label: str, install_one: Callable[[], Path]) -> None:
    """``python -m tests.e2e.<module> install`` (.ci/install-clients.sh): install, print the path."""
    if sys.argv[1:] != ["install"]:
        sys.exit(f"usage: python -m tests.e2e.{module} install")
    try:
        print(f"{label}: {install_one()}")
    except ClientsUnavailable as e:
        sys.exit(f"error: {e}")


def _checked(cmd: list[str], env: dict, cwd: Path, what: str) -> None:
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ClientsUnavailable(f"{what} failed: {e}") from e
    if p.returncode != 0:
        raise ClientsUnavailable(f"{what} exited {p.returncode}: {p.stderr[-2000:]}")


# -- scratch homes and environment ------------------------------------------------------------------

@dataclass
class Scratch:
    """One test's private world: a HOME with the clients' homes in it, and a work folder."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    @property
    def claude_dir(self) -> Path:
        return self.home / ".claude"

    def project(self, *parts: str) -> Path:
        """A project folder under the scratch root (created)."""
        p = self.root.joinpath("work", *parts)
        p.mkdir(parents=True, exist_ok=True)
        return p

    def create(self) -> "Scratch":
        for p in (self.home, self.codex_home, self.claude_dir, self.home / "tmp"):
            p.mkdir(parents=True, exist_ok=True)
        return self


def _base_env(bin_dir: Path | None) -> dict[str, str]:
    path = os.environ.get("PATH", "/usr/bin:/bin")
    if bin_dir:
        path = f"{bin_dir}:{path}"
    return {"PATH": path, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "xterm-256color"}


def client_env(scratch: Scratch, api: FakeAPI, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment both clients run with (specs: codex.md 0.1, claude-code.md 0.1)."""
    env = _base_env(None) | {
        "HOME": str(scratch.home),
        "TMPDIR": str(scratch.home / "tmp"),
        "XDG_CONFIG_HOME": str(scratch.home / ".config"),
        "XDG_CACHE_HOME": str(scratch.home / ".cache"),
        "XDG_STATE_HOME": str(scratch.home / ".local/state"),
        "XDG_DATA_HOME": str(scratch.home / ".local/share"),
        # no network beyond loopback
        "HTTP_PROXY": DEAD_PROXY, "HTTPS_PROXY": DEAD_PROXY, "ALL_PROXY": DEAD_PROXY,
        "http_proxy": DEAD_PROXY, "https_proxy": DEAD_PROXY, "all_proxy": DEAD_PROXY,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        # Codex
        "CODEX_HOME": str(scratch.codex_home),
        "MYKEY": "sk-fake-my-provider",
        # Claude Code
        "CLAUDE_CONFIG_DIR": str(scratch.claude_dir),
        "ANTHROPIC_BASE_URL": api.url,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    return env | (extra or {})


@dataclass
class Run:
    """A finished client run: its process result and the fake API requests it made."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    requests: list[Entry] = field(default_factory=list)

    def model_requests(self, api: str | None = None) -> list[Entry]:
        """Requests to /v1/messages or /v1/responses (POST), optionally of one API."""
        return [e for e in self.requests if e.method == "POST" and e.api != "other"
                and (api is None or e.api == api)]

    def check(self) -> "Run":
        assert self.returncode == 0, f"{self.args[:3]} exited {self.returncode}\n{self.stdout[-3000:]}\n{self.stderr[-3000:]}"
        return self


def run(cmd: list[str], *, cwd: Path, env: dict, api: FakeAPI, timeout: float = RUN_TIMEOUT,
        stdin: str | None = None) -> Run:
    mark = api.mark()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, input=stdin if stdin is not None else "",
                           capture_output=True, text=True, timeout=timeout)
        code, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        code, out, err = -9, _s(e.stdout), _s(e.stderr) + f"\n[timeout after {timeout}s]"
    return Run([str(c) for c in cmd], code, out, err, api.since(mark))


def _s(v) -> str:
    return v.decode(errors="replace") if isinstance(v, bytes) else (v or "")


# -- Codex ------------------------------------------------------------------------------------------

CUSTOM_PROVIDER = "my-provider"


def write_codex_config(scratch: Scratch, api: FakeAPI, provider: str = "openai", extra: str = "") -> Path:
    """Write $CODEX_HOME/config.toml selecting ``provider``.

    ``openai`` is a reserved built-in id: it is pointed at the fake API with ``openai_base_url``
    (prefix /openai). The custom provider ``my-provider`` always has its own table (prefix
    /my-provider), so switching a test from one to the other changes only ``model_provider``.
    """
    lines = []
    if provider != "openai":
        lines.append(f'model_provider = "{provider}"')
    lines += [
        f'openai_base_url = "{api.responses_base("openai")}"',
        extra.strip(),
        "",
        "[analytics]",
        "enabled = false",
        "",
        f"[model_providers.{CUSTOM_PROVIDER}]",
        'name = "My Provider"',
        f'base_url = "{api.responses_base(CUSTOM_PROVIDER)}"',
        'wire_api = "responses"',
        'env_key = "MYKEY"',
    ]
    path = scratch.codex_home / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(ln for ln in lines if ln is not None) + "\n")
    return path


def codex_setup(clients: Clients, scratch: Scratch, api: FakeAPI, provider: str = "openai") -> Run:
    """config.toml + ``codex login --with-api-key`` (the key is read from stdin)."""
    write_codex_config(scratch, api, provider)
    cmd = [str(clients.codex), "login", "--with-api-key"]
    return run(cmd, cwd=scratch.home, env=client_env(scratch, api), api=api, stdin="sk-fake-openai\n").check()


def run_codex(clients: Clients, scratch: Scratch, api: FakeAPI, prompt: str, cwd: Path, *,
              resume: str | None = None, args: tuple[str, ...] = (), timeout: float = RUN_TIMEOUT) -> Run:
    """``codex exec PROMPT``; ``resume="last"`` -> ``exec resume --last``; ``resume=<id>`` -> ``exec resume <id>``."""
    cmd = [str(clients.codex), "exec"]
    if resume == "last":
        cmd += ["resume", "--last"]
    elif resume:
        cmd += ["resume", resume]
    cmd += ["--skip-git-repo-check", *args, prompt]
    return run(cmd, cwd=cwd, env=client_env(scratch, api), api=api, timeout=timeout)


# -- Claude Code ----------------------------------------------------------------------------------

def claude_setup(scratch: Scratch) -> None:
    """Mark onboarding done: a first interactive start otherwise probes api.anthropic.com and exits.

    The trust and API-key dialogs are left alone (the tmux helpers answer them) so that
    ``.claude.json`` ends up as a real first run leaves it.
    """
    path = scratch.claude_dir / ".claude.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update(hasCompletedOnboarding=True, theme="dark")
    path.write_text(json.dumps(data, indent=2))


def run_claude(clients: Clients, scratch: Scratch, api: FakeAPI, prompt: str, cwd: Path, *,
               continue_: bool = False, resume: str | None = None,
               allowed_tools: tuple[str, ...] = ("Bash",), timeout: float = RUN_TIMEOUT) -> Run:
    """``claude -p PROMPT`` (entrypoint ``sdk-cli``); ``continue_`` adds ``-c``; ``resume`` adds ``--resume ID``."""
    cmd = [str(clients.claude)]
    if continue_:
        cmd.append("-c")
    if resume:
        cmd += ["--resume", resume]
    cmd += ["-p", prompt]
    if allowed_tools:  # variadic option: keep it last
        cmd += ["--allowedTools", *allowed_tools]
    return run(cmd, cwd=cwd, env=client_env(scratch, api), api=api, timeout=timeout)


# -- reading results -------------------------------------------------------------------------------

def codex_session_id(result: Run) -> str:
    """The thread id ``codex exec`` prints in its header (``session id: <uuid>``)."""
    for line in (result.stderr + result.stdout).splitlines():
        if line.startswith("session id:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no session id in codex output:\n{result.stderr[-2000:]}")


def claude_transcripts(scratch: Scratch) -> list[Path]:
    """Main transcripts (``projects/<slug>/<uuid>.jsonl``), oldest first."""
    files = (scratch.claude_dir / "projects").glob("*/*.jsonl")
    return sorted(files, key=lambda p: p.stat().st_mtime_ns)


def carried(entry: Entry, text: str) -> bool:
    """Did this request body carry ``text`` anywhere (a prompt, an answer, a call id, a signature)?"""
    return text in json.dumps(entry.body, ensure_ascii=False)


if __name__ == "__main__":  # python -m tests.e2e.clients install
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python -m tests.e2e.clients install")
    try:
        c = install()
    except ClientsUnavailable as e:
        sys.exit(f"error: {e}")
    print(f"codex  {versions.CODEX}: {c.codex}\nclaude {versions.CLAUDE_CODE}: {c.claude}")
