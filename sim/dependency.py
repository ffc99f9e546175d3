"""sbatch ``--dependency`` expressions, and the simulator's tracking of who waits on whom.

Supported: ``after:ID[+MIN][:ID[+MIN]...]``, ``afterany:ID[:ID...]``, ``afterok:...``,
``afternotok:...`` and ``singleton``, joined by ``,`` (all must hold). ``?`` (any of) is
not modelled and is rejected with a clear error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any

from hpcbase.jobs import JobState

KINDS = ("after", "afterany", "afterok", "afternotok", "singleton")


@dataclass(frozen=True, slots=True)
class Dependency:
    kind: str
    target: int | None = None
    minutes: float = 0.0


def parse_dependency(text: str) -> list[Dependency]:
    """Parse a dependency expression; raises ``ValueError`` naming the bad part."""
    text = (text or "").strip()
    if not text:
        return []
    if "?" in text:
        raise ValueError(f"dependency {text!r}: '?' (any of) is not supported")
    deps: list[Dependency] = []
    for clause in text.split(","):
        clause = clause.strip()
        if clause == "singleton":
            deps.append(Dependency("singleton"))
            continue
        kind, sep, rest = clause.partition(":")
        if kind not in KINDS or not sep or not rest:
            raise ValueError(
                f"dependency clause {clause!r}: expected one of {', '.join(KINDS)} with job ids"
            )
        for item in rest.split(":"):
            jid, plus, minutes = item.partition("+")
            try:
                target = int(jid)
                mins = float(minutes) if plus else 0.0
            except ValueError:
                raise ValueError(
                    f"dependency clause {clause!r}: bad job id or minutes {item!r}"
                ) from None
            if plus and kind != "after":
                raise ValueError(f"dependency clause {clause!r}: '+minutes' only goes with 'after'")
            deps.append(Dependency(kind, target, mins))
    return deps


class DependencyTracker:
    """Which pending jobs wait on which: ``--dependency`` targets and ``singleton`` groups.

    Jobs are the simulator's job objects (``id``, ``user``, ``name``, ``deps``, ``state``,
    ``start``, ``eligible``, ``has_singleton``). The tracker only keeps the bookkeeping;
    the simulator asks it which jobs to re-check when a job starts or finishes, and whether a
    job's dependencies hold (:meth:`satisfied`). Part of the simulator's state: a snapshot
    copies it whole.
    """

    __slots__ = ("singleton", "waiters")

    def __init__(self) -> None:
        self.waiters: dict[int, list[Any]] = {}  # target id -> jobs whose deps name it
        self.singleton: dict[tuple[int, str], list[Any]] = {}  # (user, name) -> jobs

    def __getstate__(self) -> tuple[dict[int, list[Any]], dict[tuple[int, str], list[Any]]]:
        return self.waiters, self.singleton

    def __setstate__(self, state: tuple[dict[int, list[Any]], dict[Any, list[Any]]]) -> None:
        self.waiters, self.singleton = state

    def add(self, job: Any, finished: Container[int]) -> None:
        """A job arrived: file it under its name and under each target not yet finished."""
        if job.name:
            self.singleton.setdefault((job.user, job.name), []).append(job)
        for d in job.deps:
            if d.kind == "singleton":
                continue
            if d.target is not None and d.target not in finished:
                self.waiters.setdefault(d.target, []).append(job)

    def started(self, job_id: int) -> list[Any]:
        """Jobs with an ``after`` dependency that may now hold (``job_id`` started)."""
        return [w for w in self.waiters.get(job_id, ()) if any(d.kind == "after" for d in w.deps)]

    def finished_waiters(self, job_id: int) -> list[Any]:
        """Jobs that waited on ``job_id``, which has finished (forgotten here)."""
        return self.waiters.pop(job_id, [])

    def leave_group(self, job: Any) -> list[Any]:
        """Take a finished job out of its singleton group: the jobs that may now run."""
        if not job.name:
            return []
        key = (job.user, job.name)
        peers = self.singleton[key]
        peers.remove(job)
        if not peers:
            del self.singleton[key]
        return peers

    def satisfied(
        self,
        job: Any,
        d: Dependency,
        now: float,
        running: Mapping[int, Any],
        finished: Callable[[int], Any],
    ) -> tuple[bool, float | None]:
        """(holds now, the time it will hold if known). ``finished(id)`` is the record of a
        finished job (``start``, ``state``), else None."""
        if d.kind == "singleton":
            for other in self.singleton.get((job.user, job.name), ()):
                if other is job:
                    return True, None
                if other.state in _LIVE:
                    return False, None
            return True, None
        target = d.target
        assert target is not None  # every kind but singleton names a job
        fin = finished(target)
        if d.kind == "after":
            run = running.get(target)
            start = run.start if run is not None else (fin.start if fin else math.nan)
            if fin is not None and math.isnan(start):
                return True, None  # cancelled before it started
            if math.isnan(start):
                return False, None
            at = start + d.minutes * 60.0
            return (at <= now), at
        if fin is None:
            return False, None
        if d.kind == "afterany":
            return True, None
        if d.kind == "afterok":
            return fin.state == JobState.COMPLETED, None
        if d.kind == "afternotok":
            return fin.state != JobState.COMPLETED, None
        return False, None


_LIVE = (JobState.PENDING, JobState.RUNNING)
