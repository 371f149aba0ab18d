"""The one place where the client versions the e2e suite runs are pinned.

.ci/install-clients.sh reads these with ``python -m tests.e2e.versions``.
"""
CODEX = "0.171.0"
CLAUDE_CODE = "2.1.197"

PACKAGES = {
    "@openai/codex": CODEX,
    "@anthropic-ai/claude-code": CLAUDE_CODE,
}


def npm_specs() -> list[str]:
    return [f"{name}@{version}" for name, version in PACKAGES.items()]


if __name__ == "__main__":
    print(" ".join(npm_specs()))
