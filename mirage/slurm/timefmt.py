"""Slurm's time formats: durations (``2-00:00:00``, ``UNLIMITED``) and timestamps."""

from __future__ import annotations

import re
from datetime import datetime

# Values Slurm prints where a duration or a time is not set or has no limit.
_NO_DURATION = {"", "UNLIMITED", "INFINITE", "PARTITION_LIMIT", "NOT_SET", "N/A", "NONE", "(NULL)"}
_NO_TIME = {"", "N/A", "UNKNOWN", "NONE", "(NULL)", "0"}
_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def parse_duration(text: str) -> int | None:
    """Seconds in a Slurm duration, or None for no limit (``UNLIMITED``, ``Partition_Limit``).

    Follows Slurm's grammar: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``.
    Raises ValueError naming the text when it is none of these.
    """
    s = text.strip()
    if s.upper() in _NO_DURATION:
        return None
    m = _DURATION.match(s)
    if not m:
        raise ValueError(f"not a Slurm duration: {text!r}")
    days, a, b, c = m.groups()
    if days is None:
        if c is not None:  # H:M:S
            return int(a) * 3600 + int(b) * 60 + int(c)
        if b is not None:  # M:S
            return int(a) * 60 + int(b)
        return int(a) * 60  # M
    # D-H, D-H:M, D-H:M:S
    return int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)


def format_duration(seconds: int | float | None) -> str:
    """The ``D-HH:MM:SS`` form sbatch accepts; None gives ``UNLIMITED``."""
    if seconds is None:
        return "UNLIMITED"
    s = max(0, int(round(seconds)))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}"


def parse_timestamp(text: str) -> float | None:
    """Unix seconds from a Slurm time: epoch digits (``SLURM_TIME_FORMAT=%s``) or ISO local
    time (``2026-11-22T05:45:00``); None for ``N/A``, ``Unknown``, ``None``.

    Raises ValueError naming the text when it is neither.
    """
    s = text.strip()
    if s.upper() in _NO_TIME:
        return None
    if s.isdigit():
        return float(s)
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return datetime.strptime(s, fmt).timestamp()
        except ValueError:
            continue
    raise ValueError(f"not a Slurm time: {text!r}")
