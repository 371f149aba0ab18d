"""Codex ``config.toml``: the configured provider, the defined providers, ``sqlite_home``, and a
comment-preserving edit of ``model_provider`` (tomlkit), verified with tomllib.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any


from histmig.core.diagnostics import HistmigInputError
from histmig.core.plan import CreateFile, Fingerprint, WriteFile

DEFAULT_PROVIDER = "openai"
# reserved ids Codex defines itself; a [model_providers.<id>] table for them is rejected (docs/specs/codex.md §16)
BUILTIN_PROVIDERS = ("openai", "ollama", "lmstudio", "amazon-bedrock", "amazon-bedrock-runtime")
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


def config_path(homes) -> Path:
    return Path(homes.codex) / "config.toml"


def load_config(homes) -> dict[str, Any]:
    """The parsed config, ``{}`` when there is none; an invalid file is refused (named)."""
    path = config_path(homes)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise HistmigInputError(f"cannot read config ({e.strerror})", path=path) from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise HistmigInputError(f"config.toml is not valid TOML ({e})", path=path) from None


def model_provider(cfg: dict) -> str:
    """The provider Codex uses now: ``model_provider``, else the active profile's, else openai."""
    profile = active_profile(cfg)
    if isinstance(profile.get("model_provider"), str):
        return profile["model_provider"]
    value = cfg.get("model_provider")
    return value if isinstance(value, str) and value else DEFAULT_PROVIDER


def active_profile(cfg: dict) -> dict:
    name = cfg.get("profile")
    profiles = cfg.get("profiles")
    if isinstance(name, str) and isinstance(profiles, dict) and isinstance(profiles.get(name), dict):
        return profiles[name]
    return {}


def defined_providers(cfg: dict) -> dict[str, dict]:
    table = cfg.get("model_providers")
    return {k: v for k, v in table.items() if isinstance(v, dict)} if isinstance(table, dict) else {}


def is_known_provider(cfg: dict, provider: str) -> bool:
    """A built-in id or one defined under ``[model_providers]`` (else resume fails, docs/specs/pitfalls.md #14)."""
    return provider in BUILTIN_PROVIDERS or provider in defined_providers(cfg)


def base_url(cfg: dict, provider: str) -> str | None:
    """Where requests for ``provider`` go; None when unknown (built-ins other than openai)."""
    if provider == "openai":
        value = cfg.get("openai_base_url")
        return value if isinstance(value, str) else OPENAI_DEFAULT_BASE_URL
    entry = defined_providers(cfg).get(provider, {})
    return entry.get("base_url") if isinstance(entry.get("base_url"), str) else None


def sqlite_home(homes, cfg: dict | None = None) -> Path | None:
    """The ``sqlite_home`` config key (relative paths are taken from CODEX_HOME)."""
    cfg = load_config(homes) if cfg is None else cfg
    value = cfg.get("sqlite_home")
    if not isinstance(value, str) or not value:
        return None
    p = Path(value).expanduser()
    return p if p.is_absolute() else Path(homes.codex) / p


def set_model_provider_text(text: str, new: str) -> str:
    """``text`` with the top-level ``model_provider`` set to ``new``; comments and layout kept.
    (tomlkit places a new top-level key before the first table, where TOML needs it.)"""
    import tomlkit  # only when editing: it costs start-up time on every dry run

    doc = tomlkit.parse(text)
    doc["model_provider"] = new
    out = tomlkit.dumps(doc)
    if tomllib.loads(out) != dict(tomllib.loads(text), model_provider=new):
        raise HistmigInputError("editing model_provider in config.toml did not verify")
    return out


def set_model_provider_op(homes, new: str) -> WriteFile | CreateFile | None:
    """The plan operation that sets ``model_provider = "new"``; None when it is already set."""
    path = config_path(homes)
    cfg = load_config(homes)
    if cfg.get("model_provider") == new:
        return None
    reason = f"set model_provider = {new!r}"
    if not path.exists():
        return CreateFile(path=str(path), data=set_model_provider_text("", new).encode(), mode=0o600, reason=reason)
    text = path.read_bytes().decode("utf-8")
    return WriteFile(path=str(path), expect=Fingerprint.of(path), new_bytes=set_model_provider_text(text, new).encode(),
                     reason=reason)
