"""The in-memory form of a workload trace, shared by every reader and by the simulator."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np


class TraceError(ValueError):
    """A trace that cannot be read; the message names the file and, where known, the line."""


ARRAY_FIELDS = (
    "job_id",
    "submit",
    "runtime",
    "limit",
    "units",
    "user",
    "group",
    "exit_code",
    "recorded_start",
    "recorded_priority",
)
"""The per-job arrays of a :class:`Trace`, in order."""


@dataclass(frozen=True, slots=True)
class TraceWarning:
    """A row that was skipped or repaired, with where and why.

    ``kind`` is ``"malformed"`` for one bad row, or ``"skipped"`` for a summary of ``count``
    well-formed jobs left out for one reason (never started, unknown run time...), ``line``
    being the first of them.
    """

    path: str
    line: int
    reason: str
    kind: str = "malformed"
    count: int = 1

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass(slots=True)
class Trace:
    """Jobs of one trace as parallel arrays, sorted by (submit, job_id).

    Times are seconds relative to ``start_epoch`` (the Unix time of t = 0). ``units`` counts
    what the cluster is counted in (``unit`` is ``"nodes"`` or ``"procs"``); ``limit`` is the
    requested wall-clock limit in seconds and ``runtime`` what the job really ran.
    ``recorded_start`` is the start the site's scheduler gave the job (NaN if unknown);
    ``recorded_priority`` the priority it recorded (a sacct log's ``Priority`` column; NaN
    where the log has none: built without it, the array is NaN throughout).
    ``user``/``group`` are integer codes; ``user_names``/``group_names`` map codes back to names.
    ``exit_code`` is 0 for success. ``names`` holds job names ("" when the format has none),
    ``partitions`` each job's partition (SWF queue number, sacct ``Partition``, CSV
    ``partition``; "" for the default one), or is empty when the trace names none.
    ``notes`` says what the reader inferred about the whole file (absolute SWF times, a
    machine size taken from the largest job); ``digest`` is the SHA-256 of the file's bytes
    (set by :func:`~sim.traces.read.read_trace`, "" for traces built in memory).
    """

    job_id: np.ndarray
    submit: np.ndarray
    runtime: np.ndarray
    limit: np.ndarray
    units: np.ndarray
    user: np.ndarray
    group: np.ndarray
    exit_code: np.ndarray
    recorded_start: np.ndarray
    names: list[str]
    unit: str = "nodes"
    total_units: int | None = None
    start_epoch: float = 0.0
    source: str = ""
    fmt: str = ""
    user_names: list[str] = field(default_factory=list)
    warnings: list[TraceWarning] = field(default_factory=list)
    group_names: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    digest: str = ""
    partitions: list[str] = field(default_factory=list)
    recorded_priority: np.ndarray = field(default_factory=lambda: np.empty(0))
    #: whether ``total_units`` is the size the log (or its reader's caller) states; False
    #: where the reader fell back on the largest job
    size_stated: bool = True

    def __post_init__(self) -> None:
        n = len(self)
        if self.recorded_priority.shape[0] != n:
            if self.recorded_priority.size:
                raise ValueError(
                    f"recorded_priority holds {self.recorded_priority.size} values for {n} jobs"
                )
            self.recorded_priority = np.full(n, np.nan)

    def __len__(self) -> int:
        return int(self.job_id.shape[0])

    @property
    def has_recorded_priority(self) -> bool:
        """Whether any job carries a recorded priority."""
        return bool(np.isfinite(self.recorded_priority).any())

    def select(self, mask: np.ndarray) -> Trace:
        """A trace of the jobs where ``mask`` is true (keeps metadata and warnings)."""
        idx = np.flatnonzero(mask)
        arrays = {name: getattr(self, name)[idx] for name in ARRAY_FIELDS}
        parts = [self.partitions[i] for i in idx] if self.partitions else []
        return replace(self, names=[self.names[i] for i in idx], partitions=parts, **arrays)

    def window(self, t0: float, t1: float) -> Trace:
        """Jobs submitted in ``[t0, t1)`` seconds (relative times, not re-based)."""
        return self.select((self.submit >= t0) & (self.submit < t1))
