"""What the I/O simulator simulates: servers, job I/O profiles, and jobs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from themis.sched import JobTag

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
PROFILE_KINDS = ("checkpoint", "dataload", "metadata")


@dataclass(frozen=True)
class ServerSpec:
    """``count`` identical burst-buffer servers; each serves ``channels`` chunks at once, each
    channel at ``bandwidth / channels`` bytes/s plus a fixed ``overhead`` seconds per chunk."""

    count: int = 4
    bandwidth: float = 2.0 * GiB
    overhead: float = 20e-6
    channels: int = 4

    def __post_init__(self) -> None:
        for name in ("count", "channels"):
            if getattr(self, name) < 1:
                raise ValueError(f"servers.{name} must be >= 1, got {getattr(self, name)}")
        if not self.bandwidth > 0 or self.overhead < 0:
            raise ValueError("servers.bandwidth must be > 0 and servers.overhead >= 0")


@dataclass(frozen=True)
class IOProfile:
    """How each process of a job does I/O.

    * ``checkpoint``: bulk-synchronous: compute ``period`` s, then every process writes
      ``burst_bytes`` in ``req_bytes`` requests (``depth`` outstanding); the next compute phase
      starts when all processes are done (barrier).
    * ``dataload``: random reads of ``req_bytes`` with ``depth`` outstanding per process and
      ``think`` s between a completion and the next request; never ends.
    * ``metadata``: like checkpoint, but ``burst_ops`` zero-byte requests (stat/open/create).

    Requests go to the job's ``stripe_count`` servers (0 = all): striped round-robin by offset for
    checkpoints and metadata, uniformly at random for data loading.
    """

    kind: str = "dataload"
    req_bytes: int = 1 * MiB
    depth: int = 4
    procs_per_node: int = 4
    burst_bytes: int = 64 * MiB
    burst_ops: int = 256
    period: float = 0.2
    think: float = 0.0
    stripe_count: int = 0

    def __post_init__(self) -> None:
        if self.kind not in PROFILE_KINDS:
            raise ValueError(f"profile.kind: unknown {self.kind!r}; choose from {PROFILE_KINDS}")
        if self.depth < 1 or self.procs_per_node < 1:
            raise ValueError("profile.depth and profile.procs_per_node must be >= 1")
        if self.req_bytes < 0 or self.burst_bytes < 0 or self.period < 0 or self.think < 0:
            raise ValueError("profile sizes and times must be >= 0")

    @property
    def burst_requests(self) -> int:
        """Requests per process per burst (checkpoint, metadata); 0 for dataload (unbounded)."""
        if self.kind == "metadata":
            return self.burst_ops
        if self.kind == "checkpoint":
            return max(1, math.ceil(self.burst_bytes / max(self.req_bytes, 1)))
        return 0

    @property
    def request_bytes(self) -> int:
        return 0 if self.kind == "metadata" else self.req_bytes


@dataclass(frozen=True)
class IOJob:
    """A job of the simulated mix, doing I/O from ``start`` to ``end`` (simulated seconds)."""

    tag: JobTag
    profile: IOProfile = field(default_factory=IOProfile)
    start: float = 0.0
    end: float = math.inf
    servers: tuple[int, ...] | None = None  # explicit server indices (else stripe_count, hashed)

    @property
    def processes(self) -> int:
        return self.tag.nodes * self.profile.procs_per_node
