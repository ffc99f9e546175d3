"""Job-mix rows from a ``sim`` replay result: ``hpcsim replay --out schedule.csv``.

The CSV needs the columns job_id, user, units, start, end (submit and others are ignored;
an optional ``group`` column is used, otherwise each user is their own group).  Jobs that
never started (empty or NaN start) are skipped.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from themis.iosim.workload import MixRow

REQUIRED = ("job_id", "user", "units", "start", "end")


class ReplayError(ValueError):
    """The replay file is unusable; the message names the file, line and column."""


def _num(text: str, where: str) -> float:
    text = text.strip()
    if text == "" or text.lower() == "nan":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise ReplayError(f"{where}: not a number: {text!r}") from None


def rows_from_replay_csv(path: str | Path, *, units_per_node: int = 1) -> list[MixRow]:
    """Rows of the replay's started jobs; ``units_per_node`` converts processor counts."""
    path = Path(path)
    try:
        f = path.open(newline="")
    except OSError as e:
        raise ReplayError(f"{path}: cannot read replay result: {e.strerror or e}") from None
    with f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise ReplayError(
                f"{path}: line 1: missing column(s) {', '.join(missing)} "
                f"(need {', '.join(REQUIRED)})"
            )
        rows = []
        for rec in reader:
            line = reader.line_num
            where = f"{path}: line {line}"
            start = _num(rec["start"], f"{where}: column 'start'")
            if math.isnan(start):
                continue
            end = _num(rec["end"], f"{where}: column 'end'")
            units = _num(rec["units"], f"{where}: column 'units'")
            if math.isnan(units) or units < 1:
                raise ReplayError(f"{where}: column 'units' must be >= 1, got {rec['units']!r}")
            if not math.isnan(end) and end < start:
                raise ReplayError(f"{where}: column 'end' ({end}) is before 'start' ({start})")
            user = (rec["user"] or "").strip() or "unknown"
            group = (rec.get("group") or "").strip() or user
            nodes = max(1, math.ceil(units / units_per_node))
            rows.append(
                MixRow(
                    str(rec["job_id"]).strip(),
                    user,
                    group,
                    nodes,
                    start,
                    math.inf if math.isnan(end) else end,
                )
            )
    return rows


def concurrent_slice(rows: list[MixRow], at: float | None = None) -> tuple[float, list[MixRow]]:
    """The jobs running at time ``at`` (default: the moment the most jobs run at once)."""
    if not rows:
        return 0.0, []
    if at is None:
        points = sorted(
            [(r.start, 1) for r in rows] + [(r.end, -1) for r in rows], key=lambda p: (p[0], p[1])
        )
        best, cur, at = -1, 0, rows[0].start
        for t, d in points:
            cur += d
            if cur > best:
                best, at = cur, t
    return at, [r for r in rows if r.start <= at < r.end]
