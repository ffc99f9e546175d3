"""Collects a reader's complaints about rows: per-row warnings and counted skips."""

from __future__ import annotations

from sim.traces.model import TraceError, TraceWarning


class Diagnostics:
    """Warnings for one file.

    ``bad`` is for malformed rows (wrong field count, unparsable values, negative sizes,
    duplicate ids): one warning each. When ``strict``, :meth:`raise_if_strict` (called once
    all rows are checked) raises a :class:`TraceError` for the first of them in line order.
    ``skip`` is for well-formed jobs a replay cannot use (never started, unknown run time):
    counted per reason and reported as one warning each, never an error.
    """

    def __init__(self, path: str, strict: bool = False) -> None:
        self.path = path
        self.strict = strict
        self._rows: list[TraceWarning] = []
        self._skips: dict[str, list[int]] = {}
        self._notes: list[str] = []

    def bad(self, line: int, reason: str) -> None:
        """A malformed row at ``line`` (1-based) was skipped or repaired."""
        self._rows.append(TraceWarning(self.path, line, reason))

    def raise_if_strict(self) -> None:
        """In strict mode, a :class:`TraceError` for the earliest malformed row, if any."""
        if self.strict and self._rows:
            raise TraceError(str(min(self._rows, key=lambda w: w.line)))

    def skip(self, reason: str, line: int, count: int = 1) -> None:
        """``count`` jobs, the first at ``line``, were left out for ``reason``."""
        entry = self._skips.setdefault(reason, [line, 0])
        entry[0] = min(entry[0], line)
        entry[1] += count

    def note(self, text: str) -> None:
        """Something the reader inferred about the whole file (no job is lost)."""
        if text not in self._notes:
            self._notes.append(text)

    def notes(self) -> list[str]:
        return list(self._notes)

    @property
    def skipped(self) -> int:
        return sum(n for _, n in self._skips.values())

    def warnings(self) -> list[TraceWarning]:
        """Row warnings in line order, then one summary warning per skip reason."""
        out = sorted(self._rows, key=lambda w: w.line)
        for reason, (line, n) in self._skips.items():
            jobs = "job" if n == 1 else "jobs"
            text = f"skipped {n} {jobs}: {reason} (first at line {line})"
            out.append(TraceWarning(self.path, line, text, kind="skipped", count=n))
        return out
