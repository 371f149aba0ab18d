"""Times as the tools write them: ISO 8601 text to an aware datetime, and back in the ``...123Z`` form."""
from __future__ import annotations

from datetime import datetime, timezone


def parse_ts(value: str | None) -> datetime | None:
    """An ISO-8601 timestamp (``Z`` or an offset) as an aware datetime, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def iso_z(dt: datetime) -> str:
    """``2026-11-29T10:00:00.123Z`` (JavaScript ``toISOString`` / Codex form)."""
    utc = dt.astimezone(timezone.utc)
    if utc.year >= 1000 and utc.microsecond == dt.microsecond:    # isoformat's text in a third of strftime's
        # time (scan --json: two per row); glibc's %Y pads no year below 1000, and the digits are dt's
        return utc.isoformat(timespec="milliseconds")[:-6] + "Z"
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"   # glibc: no padding below 1000
