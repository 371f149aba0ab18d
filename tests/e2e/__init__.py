"""End-to-end tests: the real Codex and Claude Code clients against a loopback fake API."""
