"""The configuration machinery every package shares: one error type, file reading, TOML
sections into frozen dataclasses with typed values and an unknown-key check.

Each package keeps its own schema (the dataclasses and the range checks) next to its code;
this module only turns a file into those dataclasses, with errors that name the file and the
field (``/etc/x.toml: section.key: expected an integer, got 'x'``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A configuration the suite cannot use; the message names the file (and line) and the
    field."""


def read_config(path: str | Path, what: str = "configuration file") -> str:
    """The text of a configuration file; a ConfigError names the file when it is unreadable."""
    try:
        return Path(path).read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read {what}: {e.strerror}") from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """A TOML document; a ConfigError names ``source`` when it is not TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: invalid TOML: {e}") from None


def check_value(where: str, value: Any, default: Any) -> Any:
    """``value`` checked against the type of ``default`` (ints pass as floats, a table is
    ``name = weight > 0``); raises a ConfigError naming ``where``."""
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
    elif isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
    elif isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    elif isinstance(default, str):
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
    elif isinstance(default, list):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    elif isinstance(default, dict):
        return _weights(where, value)
    return value


def _weights(where: str, value: Any) -> dict[str, float]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table of name = weight, got {value!r}")
    for key, weight in value.items():
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
            raise ConfigError(f"{where}.{key}: expected a number > 0, got {weight!r}")
    return {str(k): float(w) for k, w in value.items()}


def build_section(cls: type, raw: Any, source: str, name: str) -> Any:
    """An instance of the dataclass ``cls`` from the TOML table ``[name]``; unknown keys and
    values of the wrong type are ConfigErrors naming ``source`` and ``name.key``."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: [{name}] must be a table")
    defaults = cls()
    known = {f.name for f in fields(cls)}
    values = {}
    for key, value in raw.items():
        where = f"{source}: {name}.{key}"
        if key not in known:
            raise ConfigError(f"{where}: unknown key; known: {', '.join(sorted(known))}")
        values[key] = check_value(where, value, getattr(defaults, key))
    return cls(**values)


def build_sections(
    data: Mapping[str, Any],
    source: str,
    sections: Mapping[str, type],
    top_level: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for a package's config dataclass: each ``[name]`` table of ``data``
    built by :func:`build_section` from ``sections[name]``; ``top_level`` maps the keys
    allowed outside any table to a default that gives their type."""
    top = top_level or {}
    out: dict[str, Any] = {}
    for name, value in data.items():
        if name in top:
            out[name] = check_value(f"{source}: {name}", value, top[name])
        elif name in sections:
            out[name] = build_section(sections[name], value, source, name)
        else:
            known = ", ".join([*sections, *top])
            raise ConfigError(f"{source}: [{name}]: unknown section; known: {known}")
    return out


def load_toml(path: str | Path) -> tuple[dict[str, Any], str]:
    """Read and parse a TOML configuration file: (document, source name for messages)."""
    source = str(path)
    return parse_toml(read_config(path), source), source
