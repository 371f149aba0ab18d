"""`histmig doctor`: why history is missing, per tool, and a plan for what is safe to repair.

``diagnose(homes)`` runs every check (pure reads) and returns a Report of Findings; ``plan_repair``
turns the findings that carry safe operations into one Plan, applied and undone like any other.
Check codes, explanations and fixes: ``histmig.toolkit.doctor.base.CHECKS`` and docs/doctor.md.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import field
from datetime import datetime, timezone
from typing import Any, Iterable

from histmig import tools as registry
from histmig.core.homes import Homes
from histmig.toolkit.doctor.base import CHECKS, Finding
from histmig.toolkit.doctor.locate import HomeIndex
from histmig.core.plan import Plan
from histmig.tools import canonical
from histmig.core.valueclass import FACTORY, value

TOOLS = registry.FORMATS     # every tool in the table (a live view: a registered tool is in it)


@value
class Report:
    findings: list[Finding] = field(default_factory=list)
    tools: tuple[str, ...] = field(default_factory=registry.names)

    def __init__(self, findings: list[Finding] = FACTORY, tools: tuple[str, ...] = FACTORY) -> None:
        self.findings = [] if findings is FACTORY else findings
        self.tools = registry.names() if tools is FACTORY else tools

    @property
    def healthy(self) -> bool:
        return not self.findings

    def by_tool(self) -> dict[str, list[Finding]]:
        return {t: [f for f in self.findings if f.tool == t] for t in self.tools}

    def counts(self) -> dict[str, int]:
        return dict(Counter(f.code for f in self.findings))

    def repairable(self) -> list[Finding]:
        return [f for f in self.findings if f.repair]

    def to_dict(self) -> dict[str, Any]:
        return {"healthy": self.healthy, "counts": self.counts(),
                "tools": {t: [f.to_dict() for f in fs] for t, fs in self.by_tool().items()}}


def diagnose(homes: Homes, *, now: datetime | None = None, tools: Iterable[str] = TOOLS,
             ignore: Iterable[str] = ()) -> Report:
    """Every finding for the chosen tools, minus the ignored codes (a code or a ``tool.`` prefix)."""
    now = now or datetime.now(timezone.utc)
    tools, ignore = tuple(canonical(t) for t in tools), tuple(ignore)
    index = HomeIndex(homes.home, exclude=[*registry.homes_of(homes), homes.state])
    found: list[Finding] = []
    for name in registry.names():          # table order, whatever order the tools were asked in
        check = registry.hook(name, "doctor") if name in tools else None
        if check is not None:
            for finding in check(homes, index, now, lambda code: _ignored(code, ignore)):
                finding.tool = name
                found.append(finding)
    kept = [f for f in found if not _ignored(f.code, ignore)]
    if not _ignored("archive.unarchived", ignore):
        from histmig.verbs.doctor.archived import unarchived     # the archive is read only when a client is about to delete
        kept += unarchived(homes, kept)
    return Report(kept, tools)


def _ignored(code: str, ignore: Iterable[str]) -> bool:
    return any(code == i or (i.endswith(".") and code.startswith(i)) or code.startswith(i + ".") for i in ignore)


def plan_repair(homes: Homes, report: Report) -> Plan:
    """One plan with the safe operations of every repairable finding, and what is left to the user."""
    ops = [op for f in report.repairable() for op in f.repair]
    left = [f.to_warning() for f in report.findings if not f.repair]
    summary = {"repairs": dict(Counter(f.code for f in report.repairable())), "operations": len(ops),
               "left_to_user": len(left)}
    return Plan(op="doctor-repair", args={"tools": list(report.tools)}, roots=[str(r) for r in homes.roots()],
                operations=ops, warnings=left, summary=summary)


def environment_codes() -> list[str]:
    """Codes that depend on the machine or the clock (cwd existence, cleanup age), not on the tree."""
    return [c.code for c in CHECKS.values() if c.environment]
