"""Typed errors and warnings.

Library code raises these and returns warnings as data; only ``histmig.cli`` prints or exits.
Exit codes (README "Exit codes"): 0 done, 1 refused / problems found with nothing changed,
2 usage error, 3 done but something was skipped.
"""
from __future__ import annotations

from dataclasses import asdict, field
from pathlib import Path
from typing import Any

from histmig.core.valueclass import FACTORY, value

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_SKIPPED = 3


class HistmigError(Exception):
    """Base class: something histmig refuses to do. ``exit_code`` is what the CLI returns."""

    exit_code = EXIT_REFUSED

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        self.path = str(path) if path is not None else None
        self.line = line
        super().__init__(message)

    def describe(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}"
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        return where + str(self)


class UsageError(HistmigError):
    """The user asked for something that does not make sense (bad id, bad option combination)."""

    exit_code = EXIT_USAGE


class HistmigInputError(HistmigError):
    """Input data that cannot be read safely (bomb, truncated frame, not a regular file, ...)."""


class NotFoundError(HistmigError):
    """A session, file or transaction named by the user does not exist."""


class AmbiguousError(HistmigError):
    """An id prefix matches several sessions; ``candidates`` lists them."""

    def __init__(self, message: str, candidates: list[Any]):
        super().__init__(message)
        self.candidates = candidates


class RefusedError(HistmigError):
    """A safety rule refused the operation; nothing was changed."""


class StalePlanError(RefusedError):
    """The world changed since the plan was made (fingerprint mismatch)."""


class LockedError(RefusedError):
    """Another histmig run (or a tool's lock) holds what we need."""


class UnfinishedTransactionError(RefusedError):
    """A previous apply did not finish; ``histmig recover`` must run first."""


@value(frozen=True)
class Warning:
    """A warning as data. ``code`` is stable and documented in the README (Warning codes)."""

    code: str
    detail: str
    path: str | None = None
    line: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __init__(self, code: str, detail: str, path: str | None = None, line: int | None = None,
                 extra: dict[str, Any] = FACTORY) -> None:
        self.__dict__.update(code=code, detail=detail, path=path, line=line, extra={} if extra is FACTORY else extra)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not d["extra"]:
            d.pop("extra")
        return d

    def describe(self) -> str:
        where = ""
        if self.path:
            where = self.path + (f":{self.line}" if self.line is not None else "") + ": "
        return f"{self.code}: {where}{self.detail}"


@value(frozen=True)
class Skip:
    """A file or session left alone on purpose; printed as ``skip: <path>: <reason>``."""

    path: str
    reason: str
    code: str = "skipped"

    def __init__(self, path: str, reason: str, code: str = "skipped") -> None:
        self.__dict__.update(path=path, reason=reason, code=code)

    def describe(self) -> str:
        return f"skip: {self.path}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
