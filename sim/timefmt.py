"""Slurm's duration formats, parsed in one place for slurm.conf, sacct and squeue."""

from __future__ import annotations

import math
import re

_DAYS = re.compile(r"^(\d+)-(\d+)(?::(\d+))?(?::(\d+))?$")
_CLOCK = re.compile(r"^(\d+)(?::(\d+))?(?::(\d+))?$")

UNLIMITED = math.inf


def parse_duration(text: str, *, bare_unit: float = 60.0) -> float:
    """Seconds in a Slurm duration.

    Accepts ``minutes``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS`` and
    ``UNLIMITED``/``INFINITE``/``Partition_Limit`` (returned as ``math.inf``). A bare number
    is in ``bare_unit`` seconds (minutes, as Slurm's ``--time`` and ``TimelimitRaw`` count).
    Raises ``ValueError`` naming the text otherwise.
    """
    s = text.strip()
    if s.upper() in ("UNLIMITED", "INFINITE", "PARTITION_LIMIT", "NONE"):
        return UNLIMITED
    m = _DAYS.match(s)
    if m:
        d, h, mi, se = (int(g) if g else 0 for g in m.groups())
        return float(((d * 24 + h) * 60 + mi) * 60 + se)
    m = _CLOCK.match(s)
    if m:
        a, b, c = m.groups()
        if b is None:
            return float(a) * bare_unit
        if c is None:
            return float(int(a) * 60 + int(b))
        return float((int(a) * 60 + int(b)) * 60 + int(c))
    try:
        value = float(s)
    except ValueError:
        raise ValueError(f"not a Slurm duration: {text!r}") from None
    if value < 0 or math.isnan(value):
        raise ValueError(f"negative or NaN duration: {text!r}")
    return value * bare_unit


def format_duration(seconds: float) -> str:
    """``D-HH:MM:SS`` (or ``HH:MM:SS``), as Slurm prints limits."""
    if math.isinf(seconds):
        return "UNLIMITED"
    s = int(round(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"
