"""Bounded memory for the Pi reader (the rule of tests/test_memory.py). A *branched* Pi session (entries whose
``parentId`` is not the entry before them, as after ``/tree``) needs every entry's parent to find the branch
Pi continues from (adapter.active_path): a million entries are shown in a child process whose peak RSS
stays under 200 MB, the id pairs going to disk past a bound (histmig/core/treepath.py). Held in a dict
they took ~250 MB."""
from __future__ import annotations

from pathlib import Path

import pytest

from memgen import scratch_env, under_limit

SID = "01a231e8-e673-716f-8eaf-0ba49c4e0001"


def branched_pi_session(agent_dir: Path, cwd: str, entries: int = 1_000_000) -> Path:
    """Short messages; every third entry's parent is the one two before it, so the entry between is an
    abandoned branch of one."""
    folder = agent_dir / "sessions" / ("--" + cwd.strip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True)
    path = folder / f"2026-12-01T14-01-16-660Z_{SID}.jsonl"
    head = ('{"type":"session","version":3,"id":"%s","timestamp":"2026-12-01T14:01:16.660Z","cwd":"%s"}\n'
            % (SID, cwd)).encode()
    line = ('{"type":"message","id":"%08x","parentId":%s,"timestamp":"2026-12-01T14:01:16.763Z",'
            '"message":{"role":"%s","content":[{"type":"text","text":"m %d"}],"timestamp":1796133676753}}\n')
    with open(path, "wb") as fh:
        fh.write(head)
        chunk = []
        for n in range(entries):
            parent = "null" if n == 0 else '"%08x"' % (n - 2 if n % 3 == 2 else n - 1)
            chunk.append(line % (n, parent, "user" if n % 2 == 0 else "assistant", n))
            if len(chunk) == 10_000:
                fh.write("".join(chunk).encode())
                chunk = []
        fh.write("".join(chunk).encode())
    return path


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_branched_pi_session_of_a_million_entries_stays_under_200mb(isolated_homes, tmp_path):
    env = scratch_env(isolated_homes, tmp_path, 1, "for the session")
    app = Path(isolated_homes["HOME"]) / "w" / "app"
    app.mkdir(parents=True)
    branched_pi_session(Path(isolated_homes["PI_CODING_AGENT_DIR"]), str(app))
    under_limit(["show", SID[:8]], env)          # a branched session: its walk spills past 100,000 entries
