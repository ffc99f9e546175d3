"""What the clients return: jobs and partitions, times as Unix seconds."""

from __future__ import annotations

from dataclasses import dataclass

#: States in which a job holds its allocation (snapshot "running").
RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"})
#: States of a job that is still waiting to start.
PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
#: Reasons that mean a pending job is not yet eligible to start.
INELIGIBLE_REASONS = frozenset(
    {
        "Dependency",
        "DependencyNeverSatisfied",
        "BeginTime",
        "JobHeldUser",
        "JobHeldAdmin",
        "JobArrayTaskLimit",
    }
)


@dataclass(frozen=True, slots=True)
class JobInfo:
    """One job as Slurm reports it.

    Times are Unix seconds, None when unknown. ``start`` and ``end`` are the actual times
    (None while pending, ``end`` None while running); Slurm's expected start of a pending job
    is in :meth:`SlurmClient.start_estimates`. ``time_limit`` is in seconds, None when the job
    has no limit of its own (``UNLIMITED`` / ``Partition_Limit``). ``exit_code`` is the
    shell-style status: the exit status, or 128 + signal when a signal ended the job.
    """

    id: int
    name: str
    user: str
    state: str
    nodes: int
    cpus: int
    time_limit: int | None
    submit: float | None
    eligible: float | None
    start: float | None
    end: float | None
    reason: str | None = None
    dependency: str | None = None
    exit_code: int | None = None
    comment: str | None = None
    partition: str | None = None
    uid: int | None = None  # the owner's uid, where the source gives it (scontrol, pyslurm)
    node_list: str | None = None  # allocated nodes as a Slurm hostlist, e.g. "n[01-04]"

    @property
    def pending(self) -> bool:
        return self.state in PENDING_STATES

    @property
    def running(self) -> bool:
        return self.state in RUNNING_STATES

    @property
    def finished(self) -> bool:
        return not (self.pending or self.running)

    def is_eligible(self, now: float) -> bool:
        """Whether a pending job may start now (no dependency, begin time or hold)."""
        if self.reason in INELIGIBLE_REASONS:
            return False
        return self.eligible is not None and self.eligible <= now


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition's size and limits; ``max_time`` in seconds, None for ``UNLIMITED``."""

    name: str
    total_nodes: int
    total_cpus: int
    max_time: int | None
    default: bool = False
    state: str = "UP"

    @property
    def units(self) -> str:
        """What a snapshot of this partition counts: ``cpus`` on a one-node partition, else
        ``nodes``."""
        return "cpus" if self.total_nodes == 1 else "nodes"

    @property
    def total_units(self) -> int:
        return self.total_cpus if self.units == "cpus" else self.total_nodes
