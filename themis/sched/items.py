"""What flows through the scheduler: requests, their chunks, and per-job state."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from themis.sched.tags import JobTag

QUEUED, DISPATCHED, DONE, CANCELLED = 0, 1, 2, 3


class Chunk:
    """The unit the scheduler dispatches: ``nbytes`` at ``offset`` within its ``request``;
    ``job`` is the scheduler's record of the job (a :class:`JobState` in the reference model)."""

    __slots__ = ("request", "job", "index", "offset", "nbytes", "state")

    def __init__(self, request: Request, job: Any, index: int, offset: int, nbytes: int):
        self.request = request
        self.job = job
        self.index = index
        self.offset = offset
        self.nbytes = nbytes
        self.state = QUEUED

    @property
    def tag(self) -> JobTag:
        return self.request.tag

    @property
    def payload(self) -> Any:
        return self.request.payload

    def __repr__(self) -> str:
        return f"Chunk({self.request.tag.job_id}, #{self.index}, {self.nbytes}B)"


class Request(Chunk):
    """One submitted I/O request of ``nbytes``, split into ``chunks`` of at most chunk_bytes.

    A request that fits in one chunk is its own only chunk (``req.chunks == (req,)``), which
    keeps the common case free of reference cycles (cheap for the garbage collector)."""

    __slots__ = ("tag", "payload", "pending", "seq", "_chunks")

    def __init__(self, tag: JobTag, nbytes: int, payload: Any, seq: int, job: Any) -> None:
        # ``tag``/``payload`` are slots here and read-only properties on Chunk
        self.tag = tag  # type: ignore[misc]
        self.nbytes = nbytes
        self.payload = payload  # type: ignore[misc]
        self.seq = seq
        self.pending = 1  # chunks not yet done or cancelled
        self.job = job
        self.index = 0
        self.offset = 0
        self.state = QUEUED
        self._chunks: list[Chunk] | None = None

    @property  # type: ignore[override,misc]
    def request(self) -> Request:  # type: ignore[override]
        return self

    @property
    def chunks(self) -> Sequence[Chunk]:
        return (self,) if self._chunks is None else self._chunks

    def split(self, size: int) -> list[Chunk]:
        """Make this a request of several chunks of at most ``size`` bytes."""
        n = self.nbytes
        chunks = self._chunks = [
            Chunk(self, self.job, i, off, min(size, n - off))
            for i, off in enumerate(range(0, n, size))
        ]
        self.pending = len(chunks)
        return chunks

    @property
    def done(self) -> bool:
        """True once every chunk is done (or the request was cancelled)."""
        return self.pending == 0

    def __repr__(self) -> str:
        return f"Request({self.tag.job_id}, {self.nbytes}B, {len(self.chunks)} chunk(s))"


class JobState:
    """The scheduler's per-job state; ``d`` belongs to the dispatcher."""

    __slots__ = (
        "tag",
        "queue",
        "inflight",
        "bytes_served",
        "ops_served",
        "retired",
        "d",
    )

    def __init__(self, tag: JobTag) -> None:
        self.tag = tag
        self.queue: deque[Chunk] = deque()
        self.inflight = 0
        self.bytes_served = 0
        self.ops_served = 0
        self.retired = False
        self.d: Any = None

    @property
    def queued_bytes(self) -> int:
        """Bytes of the job's queued chunks."""
        return sum(c.nbytes for c in self.queue)
