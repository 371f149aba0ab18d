"""What Claude Code, mini-cc and the manifest layout share."""

# formats whose history is Anthropic Messages (signed thinking blocks carry over between them)
ANTHROPIC = ("claude-code", "mini-cc", "manifest")
