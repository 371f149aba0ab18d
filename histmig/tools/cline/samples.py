"""After the bundled samples were copied into a Cline home (histmig/cli/samples.py): re-point each
manifest's ``messages_path`` (an absolute path) at the copied messages file; every other byte stays."""
from __future__ import annotations

import json
from typing import Any

from histmig.tools.cline.adapter import SID_RE, sessions_root


def installed(homes: Any) -> None:
    root = sessions_root(homes)
    if not root.is_dir():
        return
    for folder in root.iterdir():
        manifest = folder / f"{folder.name}.json"
        if not SID_RE.match(folder.name) or not manifest.is_file():
            continue
        data = manifest.read_bytes()
        old = json.loads(data).get("messages_path")
        new = str(folder / f"{folder.name}.messages.json")
        if isinstance(old, str) and old != new:
            key = b'"messages_path": '
            manifest.write_bytes(data.replace(key + json.dumps(old, ensure_ascii=False).encode(),
                                              key + json.dumps(new, ensure_ascii=False).encode()))
