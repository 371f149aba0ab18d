"""The model an Anthropic Messages record names. Read by the converters (every source goes through
histmig/toolkit/convert/flatten.py) and by the Claude family of tools, so it sits below both."""
from __future__ import annotations

from histmig.core.model import Record


def message_model(rec: Record) -> str | None:
    """The model named in a record's message, except Claude's ``<synthetic>`` (client-made turns)."""
    msg = rec.extra.get("message") if isinstance(rec.extra, dict) else None
    model = msg.get("model") if isinstance(msg, dict) else None
    return model if isinstance(model, str) and model != "<synthetic>" else None
