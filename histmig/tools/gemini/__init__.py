"""Gemini CLI (``@google/gemini-cli``): ``$GEMINI_CLI_HOME/.gemini`` (default ``~/.gemini``), docs/specs/gemini.md."""
