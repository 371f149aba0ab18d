"""Regenerate docs/demo.md from a real ``histmig demo`` run (then run docs/assemble_readme.py)."""
import subprocess
import sys
from pathlib import Path

out = subprocess.run([sys.executable, "-m", "histmig", "demo"], capture_output=True, text=True,
                     env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "HOME": "/nonexistent"}).stdout
page = f"""# Demo

`histmig demo` installs `histmig/samples/` (recordings of the real Codex 0.171.0, Claude Code 2.1.197,
Qwen Code, Gemini CLI, Pi, Copilot CLI, Cline and OpenCode clients, plus hand-written mini-cc and manifest
trees; histmig/samples/README.md says how each was made) into a temporary home and runs the read-only commands and
every dry run against it. Real output:

```
$ histmig demo
{out.rstrip()}
```
"""
(Path(__file__).resolve().parent / "demo.md").write_text(page)
print("wrote docs/demo.md")
