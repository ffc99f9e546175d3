"""What a scheduler reports: per-job and total counters."""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20


@dataclass(frozen=True)
class JobStats:
    """One job's counters in :meth:`Scheduler.stats` (``queue_wait_s``: total seconds its
    chunks waited for their turn, counted by the compiled core on the real clock)."""

    job_id: str
    user: str
    group: str
    nodes: int
    bytes_served: int
    ops_served: int
    queued_chunks: int
    queued_bytes: int
    inflight: int
    target_share: float
    achieved_share: float
    queue_wait_s: float = 0.0


@dataclass(frozen=True)
class SchedStats:
    """A snapshot of the scheduler: totals and per-job counters."""

    policy: str
    dispatcher: str
    queued_chunks: int
    inflight: int
    max_inflight: int
    bytes_served: int
    ops_served: int
    jobs: dict[str, JobStats]
