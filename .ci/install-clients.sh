#!/usr/bin/env bash
# Install what the e2e suite (tests/e2e) needs: tmux, and both client sets of tests/e2e/versions.py
# (NEWEST and OLDEST Codex / Claude Code, and Gemini CLI) into the cache folder ${HISTMIG_E2E_CACHE:-/tmp/histmig-e2e-clients},
# one sub-folder per pair of versions; plus the versions HISTMIG_E2E_CODEX / HISTMIG_E2E_CLAUDE_CODE name, if set.
# Idempotent: a second run with the clients already there takes about a second.
# Exit non-zero on any failure: in CI a missing client is a failure, never a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v tmux >/dev/null 2>&1; then
  echo "install-clients: installing tmux" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq tmux >/dev/null
fi

command -v npm >/dev/null 2>&1 || { echo "install-clients: npm not found" >&2; exit 1; }
# the installer is stdlib-only: any python3 will do; prefer the project venv when .ci/run made one
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
install_set() {  # $1 = a set name of tests/e2e/versions.py; the per-client overrides do not apply
  local start=$(date +%s)
  env -u HISTMIG_E2E_CODEX -u HISTMIG_E2E_CLAUDE_CODE HISTMIG_E2E_CLIENTS="$1" "$PY" -m tests.e2e.clients install
  echo "install-clients: $1 done in $(( $(date +%s) - start ))s" \
       "($(env -u HISTMIG_E2E_CODEX -u HISTMIG_E2E_CLAUDE_CODE HISTMIG_E2E_CLIENTS="$1" "$PY" -m tests.e2e.versions))" >&2
}
install_set newest
install_set oldest
# Qwen Code (both sets pin the same version): its own sub-folder, tests/e2e/qwen_client.py
"$PY" -m tests.e2e.qwen_client install
# Pi (tests/e2e/pi_client.py): its own sub-folder; both sets name the same version
env -u HISTMIG_E2E_PI "$PY" -m tests.e2e.pi_client install >&2
"$PY" -m tests.e2e.gemini_client install     # Gemini CLI: one pin for both sets (tests/e2e/versions.py)
# OpenCode (tests/e2e/opencode_client.py): its own sub-folder; both sets name the same version
env -u HISTMIG_E2E_OPENCODE "$PY" -m tests.e2e.opencode_client install >&2
# Copilot CLI (tests/e2e/copilot_client.py): its own sub-folder; both sets name the same version
"$PY" -m tests.e2e.copilot_client install >&2
# Cline CLI (tests/e2e/cline_client.py): its own sub-folder; both sets name the same version
env -u HISTMIG_E2E_CLINE "$PY" -m tests.e2e.cline_client install >&2
if [ -n "${HISTMIG_E2E_CODEX:-}${HISTMIG_E2E_CLAUDE_CODE:-}" ]; then
  "$PY" -m tests.e2e.clients install
  echo "install-clients: overrides installed ($("$PY" -m tests.e2e.versions))" >&2
fi
# Chromium from Debian's packages: tests/test_export_browser.py loads `export --to html` pages in it, headless
if [ ! -x /usr/bin/chromium ]; then
  echo "install-clients: installing chromium" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
