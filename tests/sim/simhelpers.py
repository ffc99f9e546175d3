"""Small builders for simulator tests."""

from __future__ import annotations

import numpy as np

from sim.traces.model import Trace


def make_trace(
    rows: list[tuple], total: int = 10, unit: str = "nodes", names: list[str] | None = None
) -> Trace:
    """rows: (submit, runtime, limit, units[, user[, exit_code]]); job ids 1..n."""
    n = len(rows)
    col = lambda k, default: np.array([r[k] if len(r) > k else default for r in rows])  # noqa: E731
    return Trace(
        job_id=np.arange(1, n + 1),
        submit=col(0, 0).astype(float),
        runtime=col(1, 0).astype(float),
        limit=col(2, 0).astype(float),
        units=col(3, 1).astype(np.int64),
        user=col(4, 0).astype(np.int64),
        group=np.zeros(n, np.int64),
        exit_code=col(5, 0).astype(np.int64),
        recorded_start=np.full(n, np.nan),
        names=names or [""] * n,
        unit=unit,
        total_units=total,
    )


def starts(sim) -> dict[int, float]:
    return {r.job_id: r.start for r in sim.records}
