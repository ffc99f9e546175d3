"""The identity Themis attaches to every I/O request."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JobTag:
    """Who issued a request: the Slurm job, its user and group, and its size in nodes."""

    job_id: str
    user: str
    group: str
    nodes: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.nodes, int) or self.nodes < 1:
            raise ValueError(
                f"JobTag {self.job_id!r}: nodes must be an integer >= 1, got {self.nodes!r}"
            )
