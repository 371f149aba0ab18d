"""A JSON Schema (2020-12) validator for the subset histmig/schemas/*.json use (docs/json.md).

Our own rather than the ``jsonschema`` package: the subset is small, and the package would bring
four more distributions (one compiled) into the test extra for it. A keyword outside the subset is an
error, not ignored, so the shipped schemas stay inside what this checks (and so inside what any
validator reads the same way).
"""
from __future__ import annotations

import re
from typing import Any

KEYWORDS = {"$schema", "$defs", "$ref", "title", "description", "type", "properties", "required",
            "additionalProperties", "items", "enum", "const", "anyOf", "pattern"}
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def validate(doc: Any, schema: dict[str, Any]) -> list[str]:
    """Every place ``doc`` breaks ``schema``, as ``"$.path: what"`` strings (empty: valid)."""
    errors: list[str] = []
    _check(doc, schema, schema, "$", errors)
    return errors


def _is(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[name])


def _check(value: Any, schema: dict[str, Any], root: dict[str, Any], where: str, errors: list[str]) -> None:
    unknown = set(schema) - KEYWORDS
    if unknown:
        raise ValueError(f"schema keyword(s) outside the subset at {where}: {sorted(unknown)}")
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"only local #/$defs/ references are supported: {ref}")
        _check(value, root["$defs"][ref.removeprefix("#/$defs/")], root, where, errors)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(value, t) for t in types):
            errors.append(f"{where}: {type(value).__name__} is not {' or '.join(types)}")
            return
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if "anyOf" in schema:
        tries = []
        for sub in schema["anyOf"]:
            found: list[str] = []
            _check(value, sub, root, where, found)
            if not found:
                break
            tries.append(found)
        else:
            errors.append(f"{where}: matches none of anyOf: " + " | ".join("; ".join(t) for t in tries))
    if isinstance(value, dict):
        _check_object(value, schema, root, where, errors)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], root, f"{where}[{i}]", errors)


def _check_object(value: dict, schema: dict[str, Any], root: dict[str, Any], where: str, errors: list[str]) -> None:
    props = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            errors.append(f"{where}: missing {key!r}")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            _check(item, props[key], root, f"{where}.{key}", errors)
        elif extra is False:
            errors.append(f"{where}: unexpected {key!r}")
        elif isinstance(extra, dict):
            _check(item, extra, root, f"{where}.{key}", errors)
