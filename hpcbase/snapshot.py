"""A queue snapshot: what a live ``squeue`` shows, as arrays.

The simulator and the live Slurm client both produce this type, and Mirage's observation
builder consumes it, so features are computed by one piece of code in both places.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

_F = np.float64
_I = np.int64


def _arr(values: Iterable[float], dtype: type) -> np.ndarray:
    return np.fromiter(values, dtype=dtype)


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    """Pending and running jobs of one partition at ``time``.

    Times are seconds on one clock (simulated seconds, or Unix time on a live cluster);
    ``*_limit`` are wall-clock limits in seconds; ``*_units`` are nodes (GPU partitions)
    or processors (SWF logs), as ``total_units`` counts them. Pending jobs that are not yet
    eligible (dependency, ``--begin``, held) have ``pend_eligible`` = NaN.
    """

    time: float
    total_units: int
    pend_id: np.ndarray = field(default_factory=lambda: np.empty(0, _I))
    pend_units: np.ndarray = field(default_factory=lambda: np.empty(0, _I))
    pend_limit: np.ndarray = field(default_factory=lambda: np.empty(0, _F))
    pend_submit: np.ndarray = field(default_factory=lambda: np.empty(0, _F))
    pend_eligible: np.ndarray = field(default_factory=lambda: np.empty(0, _F))
    run_id: np.ndarray = field(default_factory=lambda: np.empty(0, _I))
    run_units: np.ndarray = field(default_factory=lambda: np.empty(0, _I))
    run_limit: np.ndarray = field(default_factory=lambda: np.empty(0, _F))
    run_start: np.ndarray = field(default_factory=lambda: np.empty(0, _F))

    @classmethod
    def from_rows(
        cls,
        time: float,
        total_units: int,
        pending: Iterable[tuple[int, int, float, float, float]],
        running: Iterable[tuple[int, int, float, float]],
    ) -> QueueSnapshot:
        """Build from rows: pending ``(id, units, limit, submit, eligible)``, running
        ``(id, units, limit, start)``."""
        p = list(pending)
        r = list(running)
        return cls(
            time=float(time),
            total_units=int(total_units),
            pend_id=_arr((x[0] for x in p), _I),
            pend_units=_arr((x[1] for x in p), _I),
            pend_limit=_arr((x[2] for x in p), _F),
            pend_submit=_arr((x[3] for x in p), _F),
            pend_eligible=_arr((x[4] for x in p), _F),
            run_id=_arr((x[0] for x in r), _I),
            run_units=_arr((x[1] for x in r), _I),
            run_limit=_arr((x[2] for x in r), _F),
            run_start=_arr((x[3] for x in r), _F),
        )

    @property
    def pend_wait(self) -> np.ndarray:
        """Seconds each pending job has waited since submission."""
        return self.time - self.pend_submit

    def scaled(self, factor: float) -> QueueSnapshot:
        """The same queue on a clock ``factor`` times slower: every time and duration times
        ``factor``. A cluster that replays a site's load ``factor`` times faster is seen at
        the site's own time scale this way (times stay on one clock: only differences and
        durations mean anything)."""
        if factor == 1.0:
            return self
        k = float(factor)
        return replace(
            self,
            time=self.time * k,
            pend_limit=self.pend_limit * k,
            pend_submit=self.pend_submit * k,
            pend_eligible=self.pend_eligible * k,
            run_limit=self.run_limit * k,
            run_start=self.run_start * k,
        )

    @property
    def run_elapsed(self) -> np.ndarray:
        """Seconds each running job has run."""
        return self.time - self.run_start

    @property
    def run_remaining(self) -> np.ndarray:
        """Seconds until each running job reaches its limit (never negative)."""
        return np.maximum(self.run_start + self.run_limit - self.time, 0.0)
