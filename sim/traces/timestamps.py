"""Points in time as trace files write them: ISO 8601 (sacct, CSV) or Unix seconds."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

#: Values sacct prints for a time that never happened.
MISSING = frozenset({"", "unknown", "none", "n/a", "na", "nan", "null", "-"})


def zone(name: str | None) -> tzinfo:
    """The time zone for naive timestamps: an IANA name, or UTC when ``name`` is None."""
    if name is None or name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


class TimeParser:
    """Parses timestamps to Unix seconds, caching repeats (sacct rows share many)."""

    def __init__(self, tz: tzinfo, *, allow_unix: bool = False) -> None:
        self.tz = tz
        self.allow_unix = allow_unix
        self._cache: dict[str, float] = {}

    def __call__(self, text: str) -> float | None:
        """Unix seconds, None for a missing time; raises ``ValueError`` naming bad text."""
        value = self._cache.get(text)
        if value is not None:
            return value
        s = text.strip()
        if s.lower() in MISSING:
            return None
        if self.allow_unix and _looks_numeric(s):
            value = float(s)
            if not -1e11 < value < 1e11:
                raise ValueError(f"Unix time out of range: {text!r}")
        else:
            try:
                dt = datetime.fromisoformat(s)
            except ValueError:
                raise ValueError(f"not an ISO 8601 time: {text[:40]!r}") from None
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=self.tz)
            value = dt.timestamp()
        if len(self._cache) < 1_000_000:
            self._cache[text] = value
        return value


def _looks_numeric(s: str) -> bool:
    body = s[1:] if s[:1] in "+-" else s
    return body.replace(".", "", 1).isdigit()
