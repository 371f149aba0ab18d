"""Typos refused before anything is written (issue 12, case 7): the names the CLI and the library use.

The checks are each tool's (``check_new`` / ``check_old`` of its flip hook: what a tool can load and
what its sessions record); the verb runs them for every tool with a flip hook (histmig/verbs/flip).
"""
from __future__ import annotations

from histmig.toolkit.flip import ProviderTypoError, did_you_mean
from histmig.verbs.flip import check_new, check_old

__all__ = ["ProviderTypoError", "check_new", "check_old", "did_you_mean"]
