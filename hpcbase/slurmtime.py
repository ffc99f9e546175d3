"""Slurm's time formats, in one place: durations (``2-00:00:00``, ``UNLIMITED``) and timestamps.

One grammar serves slurm.conf, ``sacct``/``squeue``/``scontrol`` output, trace files and the
command line. "No limit" is explicit: :data:`UNLIMITED` (``math.inf``, so that it compares
and adds like a limit), tested with :func:`is_unlimited`.
"""

from __future__ import annotations

import contextlib
import math
import re
from datetime import datetime
from typing import Final

#: A duration with no limit (``UNLIMITED``, ``INFINITE``, ``Partition_Limit``).
UNLIMITED: Final = math.inf

#: Words Slurm prints for "no limit".
UNLIMITED_WORDS: Final = frozenset({"UNLIMITED", "INFINITE", "PARTITION_LIMIT", "NONE"})
#: Words Slurm prints where a limit is not set (squeue, scontrol); no limit applies.
UNSET_WORDS: Final = frozenset({"", "NOT_SET", "N/A", "(NULL)"})
_NO_TIME = {"", "N/A", "UNKNOWN", "NONE", "(NULL)", "0"}
_DURATION = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def is_unlimited(seconds: float | None) -> bool:
    """Whether a duration means "no limit" (:data:`UNLIMITED`; None counts too)."""
    return seconds is None or math.isinf(seconds)


def parse_duration(
    text: str, *, bare_unit: float = 60.0, fractions: bool = True, unset_ok: bool = False
) -> float:
    """Seconds in a Slurm duration; :data:`UNLIMITED` for no limit.

    Slurm's grammar: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``, and
    ``UNLIMITED``/``INFINITE``/``Partition_Limit``/``NONE``. A bare number counts in
    ``bare_unit`` seconds (minutes, as ``--time`` and ``TimelimitRaw`` do); with ``fractions``
    it may be a decimal (trace files), otherwise only whole numbers pass (Slurm's own output).
    With ``unset_ok``, an unset value (``N/A``, ``NOT_SET``, empty) means no limit too.
    Raises ``ValueError`` naming the text otherwise.
    """
    s = text.strip()
    word = s.upper()
    if word in UNLIMITED_WORDS or (unset_ok and word in UNSET_WORDS):
        return UNLIMITED
    m = _DURATION.match(s)
    if m:
        days, a, b, c = m.groups()
        if days is not None:  # D-H, D-H:M, D-H:M:S
            return float(int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0))
        if c is not None:  # H:M:S
            return float(int(a) * 3600 + int(b) * 60 + int(c))
        if b is not None:  # M:S
            return float(int(a) * 60 + int(b))
        return float(a) * bare_unit  # a bare number
    value = math.nan
    if fractions:
        with contextlib.suppress(ValueError):
            value = float(s)
    if not value >= 0:  # NaN, negative, or not a number
        raise ValueError(f"not a Slurm duration: {text!r}")
    return value * bare_unit


def format_duration(seconds: float | None) -> str:
    """The ``D-HH:MM:SS`` form sbatch accepts and Slurm prints; ``UNLIMITED`` for no limit
    (:data:`UNLIMITED` or None). Negative durations print as zero."""
    if is_unlimited(seconds):
        return "UNLIMITED"
    assert seconds is not None
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
