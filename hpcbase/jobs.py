"""Job specifications and job states."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class JobState(IntEnum):
    """Slurm's base job states, as far as the simulator models them."""

    PENDING = 0
    RUNNING = 1
    COMPLETED = 2
    FAILED = 3
    TIMEOUT = 4
    CANCELLED = 5

    @property
    def finished(self) -> bool:
        return self >= JobState.COMPLETED


@dataclass(slots=True)
class JobSpec:
    """What a user hands ``sbatch``, plus the run time the job will really take.

    ``units``: nodes or processors, as the simulated cluster counts them. ``limit`` and
    ``runtime`` in seconds; a job whose ``runtime`` exceeds ``limit`` is killed at the limit
    (TIMEOUT). ``submit`` defaults to the simulator's current time. ``dependency`` uses
    sbatch's syntax (``afterok:12:13``, ``afterany:7``, ``afternotok:7``, ``singleton``,
    ``after:7+10``). ``exit_code`` != 0 makes the job end FAILED (for ``afternotok``).
    """

    units: int
    limit: float
    runtime: float
    user: int = 0
    name: str = ""
    submit: float | None = None
    begin: float | None = None
    dependency: str = ""
    partition: str = ""
    qos_factor: float = 0.0
    exit_code: int = 0
    group: int = 0
    job_id: int | None = None
