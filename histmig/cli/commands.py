"""The one table of histmig's commands (its own module: the group and the follow-up hints both read it)."""
from __future__ import annotations

# command name -> the module that defines it (``histmig/cli/<module>.py``), in --help order.
# Only the module of the command being run is imported, so a dry run does not pay for the others.
COMMANDS = {
    "scan": "scan",
    "show": "show",
    "flip": "flip",
    "move": "move",
    "convert": "convert",
    "doctor": "doctor",
    "apply": "tx",
    "undo": "tx",
    "log": "tx",
    "recover": "tx",
    "gc": "tx",
    "demo": "demo",
    "archive": "archive",
    "restore": "restore",
    "search": "search",
    "export": "export",
}

# the commands that read the homes: a follow-up command printed for them gets this run's home flags
# (cli/common.py ``complete``); ``demo`` makes its own temporary home
HOME_COMMANDS = tuple(name for name in COMMANDS if name != "demo")
