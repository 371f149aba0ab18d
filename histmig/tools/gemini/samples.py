"""After the bundled Gemini cases were merged into one home (histmig/cli/samples.py): ``projects.json`` is
rebuilt from the ``.project_root`` markers, as each case brought its own registry (docs/specs/gemini.md §1)."""
from __future__ import annotations

import json
from typing import Any

from histmig.tools.gemini import files


def installed(homes: Any) -> None:
    gdir = files.gemini_dir(homes)
    projects = {}
    for slug_dir in files.slug_dirs(gdir):
        root = files.read_marker(slug_dir / files.MARKER)
        if root:
            projects[root] = slug_dir.name
    if projects:
        files.registry_path(gdir).write_text(json.dumps({"projects": projects}, indent=2, ensure_ascii=False))
