#!/usr/bin/env bash
# Install what the e2e suite (tests/e2e) needs: tmux, and the pinned Codex / Claude Code clients
# (versions: tests/e2e/versions.py) into the cache folder ${HISTMIG_E2E_CACHE:-/tmp/histmig-e2e-clients}.
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
start=$(date +%s)
"$PY" -m tests.e2e.clients install
echo "install-clients: done in $(( $(date +%s) - start ))s ($("$PY" -m tests.e2e.versions))" >&2
