"""The reference model of the scheduler core, in pure Python.

:class:`themis.sched.Scheduler` runs the compiled core (``themis/sched/_core.c``); this module is
the model its decisions are checked against by hypothesis (tests/themis/test_sched_core.py), and
what runs a custom Python :class:`Dispatcher` (cluster mode's rate caps)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from themis.sched.dispatch import Dispatcher
from themis.sched.items import CANCELLED, DISPATCHED, DONE, QUEUED, Chunk, JobState, Request
from themis.sched.policy import Policy
from themis.sched.registry import make_dispatcher
from themis.sched.stats import JobStats, MiB, SchedStats
from themis.sched.tags import JobTag
from themis.sched.window import ShareWindow


class ReferenceScheduler:
    """Fair-share dispatcher of I/O requests tagged with their job.

    Dispatchers charge each chunk ``max(nbytes, min_charge)`` so that zero-byte metadata
    operations are not free.  ``submit`` queues a request (split into chunks of at most
    ``chunk_bytes``), ``next`` returns
    the next chunk to run or None (nothing queued, ``max_inflight`` reached, or a throttling
    dispatcher holds back), ``done`` reports a finished chunk.  Work-conserving for the lottery,
    SFQ and FIFO dispatchers.  Not thread-safe: drive it from one thread or event loop.
    """

    def __init__(
        self,
        policy: Policy | str = "size-fair",
        dispatcher: str | Dispatcher = "lottery",
        *,
        seed: int = 0,
        max_inflight: int = 1,
        chunk_bytes: int = MiB,
        window: int = 1024,
        min_charge: int = 4096,
        clock: Callable[[], float] = time.monotonic,
        **dispatcher_options: Any,
    ) -> None:
        if max_inflight < 1:
            raise ValueError(f"max_inflight must be >= 1, got {max_inflight}")
        if chunk_bytes < 1:
            raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
        self.policy = Policy.from_name(policy) if isinstance(policy, str) else policy
        self.max_inflight = max_inflight
        self.chunk_bytes = chunk_bytes
        self.clock = clock
        self.seed = seed
        self.min_charge = min_charge
        self._jobs: dict[str, JobState] = {}
        self._queued = 0
        self._inflight = 0
        self._seq = 0
        self._bytes = 0  # served by jobs since dropped (live jobs count their own)
        self._ops = 0
        self._window = ShareWindow(window)
        self._disp_request = dispatcher
        self._disp_options = dict(dispatcher_options)
        self._use(self._make(dispatcher, dispatcher_options))

    def _use(self, disp: Dispatcher) -> None:
        """Attach ``disp`` to the policy and cache its hot-path hooks."""
        disp.attach(self.policy)
        self._disp = disp
        self._pick, self._served = disp.pick, disp.served
        self._ordered, self._timed = disp.ordered, disp.timed

    def _make(self, dispatcher: str | Dispatcher, options: Mapping[str, Any]) -> Dispatcher:
        if self.policy.fifo:
            return make_dispatcher("fifo")
        if isinstance(dispatcher, Dispatcher):
            return dispatcher
        return make_dispatcher(dispatcher, seed=self.seed, **options)

    # -- properties -----------------------------------------------------------------------
    @property
    def dispatcher(self) -> Dispatcher:
        return self._disp

    @property
    def queued(self) -> int:
        """Chunks waiting to be dispatched."""
        return self._queued

    @property
    def inflight(self) -> int:
        """Chunks dispatched and not yet done."""
        return self._inflight

    shared = False  # no C threads here

    def job_state(self, job_id: str) -> JobState | None:
        return self._jobs.get(job_id)

    # -- the request path -------------------------------------------------------------------
    def submit(self, tag: JobTag, nbytes: int, payload: Any = None) -> Request:
        """Queue a request of ``nbytes`` (0 for metadata: one chunk of 0 bytes)."""
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        job = self._jobs.get(tag.job_id)
        if job is None:
            job = self._jobs[tag.job_id] = JobState(tag)
        else:
            if job.tag is not tag and job.tag != tag:
                job.tag = tag  # the job's description changed (e.g. resize): only new nodes
            if job.retired:
                job.retired = False
        seq = self._seq = self._seq + 1
        req = Request(tag, nbytes, payload, seq, job)
        queue = job.queue
        was_idle = not queue
        if nbytes <= self.chunk_bytes:
            queue.append(req)
            self._queued += 1
            if self._ordered:
                self._disp.enqueue(req)
        else:
            chunks = req.split(self.chunk_bytes)
            queue.extend(chunks)
            self._queued += len(chunks)
            if self._ordered:
                for chunk in chunks:
                    self._disp.enqueue(chunk)
        if was_idle:
            self._disp.activate(job, self.clock() if self._timed else 0.0)
        return req

    def next(self) -> Chunk | None:
        """The next chunk to run now, or None; the caller must call :meth:`done` on it."""
        got = self.take(1)
        return got[0] if got else None

    def take(self, limit: int = 0) -> list[Chunk]:
        """Every chunk that may run now, in dispatch order (at most ``limit`` if > 0): the
        batch form of :meth:`next`."""
        inflight, queued = self._inflight, self._queued
        room = self.max_inflight - inflight
        if room <= 0 or not queued:
            return []
        if 0 < limit < room:
            room = limit
        now = self.clock() if self._timed else 0.0
        pick, served, mc = self._pick, self._served, self.min_charge
        out: list[Chunk] = []
        # the counters live in locals here: dispatchers never read the scheduler
        while room and queued:
            job = pick(now)
            if job is None:
                break
            queue = job.queue
            chunk = queue.popleft()
            nbytes = chunk.nbytes
            chunk.state = DISPATCHED
            job.inflight += 1
            queued -= 1
            inflight += 1
            room -= 1
            active = True if queue else False  # noqa: SIM210 - no bool() call per chunk
            served(job, nbytes if nbytes > mc else mc, active, now)
            out.append(chunk)
        self._inflight, self._queued = inflight, queued
        return out

    def done(self, chunk: Chunk) -> None:
        """Report a dispatched chunk finished (its bytes count as served)."""
        if chunk.state != DISPATCHED:
            raise ValueError(f"{chunk!r} was not dispatched (or is already done)")
        chunk.state = DONE
        job = chunk.job
        nbytes = chunk.nbytes
        job.inflight -= 1
        job.bytes_served += nbytes
        job.ops_served += 1
        self._inflight -= 1
        # a one-chunk request is its own chunk: skip the ``request`` property then
        (chunk if chunk.__class__ is Request else chunk.request).pending -= 1
        if self._window.size:
            self._window.add(job.tag.job_id, nbytes)
        if job.retired and not job.queue and not job.inflight:
            self._drop(job)

    def cancel(self, request: Request) -> int:
        """Withdraw a request's still-queued chunks (dispatched ones must still be done()).
        Returns the number withdrawn."""
        job = self._jobs.get(request.tag.job_id)
        if job is None:
            return 0
        gone = [c for c in request.chunks if c.state == QUEUED]
        if not gone:
            return 0
        for c in gone:
            c.state = CANCELLED
        ids = {id(c) for c in gone}
        remaining = [c for c in job.queue if id(c) not in ids]
        job.queue.clear()
        job.queue.extend(remaining)
        self._queued -= len(gone)
        request.pending -= len(gone)
        if not job.queue and job.d is not None:
            self._disp.deactivate(job, self.clock() if self._disp.timed else 0.0)
        if job.retired and not job.queue and not job.inflight:
            self._drop(job)
        return len(gone)

    def wakeup_time(self) -> float | None:
        """When a throttling dispatcher (TBF/GIFT) may release work that ``next`` held back,
        on this scheduler's clock; None when there is nothing to wait for."""
        if not self._queued or self._inflight >= self.max_inflight:
            return None
        return self._disp.wakeup(self.clock())

    # -- control ----------------------------------------------------------------------------
    def set_policy(self, policy: Policy | str, dispatcher: str | Dispatcher | None = None) -> None:
        """Switch policy (and optionally dispatcher) live; queued and in-flight work is kept."""
        self.policy = Policy.from_name(policy) if isinstance(policy, str) else policy
        if dispatcher is not None:
            self._disp_request = dispatcher
        self._use(self._make(self._disp_request, self._disp_options))
        self._reload()

    def _reload(self) -> None:
        now = self.clock() if self._disp.timed else 0.0
        queued = sorted(
            (c for j in self._jobs.values() for c in j.queue),
            key=lambda c: (c.request.seq, c.index),
        )
        for job in self._jobs.values():
            job.d = None
        for c in queued:
            self._disp.enqueue(c)
        for job in self._jobs.values():
            if job.queue:
                self._disp.activate(job, now)

    def set_boosts(self, boosts: Mapping[tuple[str, ...], float]) -> None:
        """Multiply share-tree node weights, keyed by :meth:`Policy.path` prefixes (global
        fairness feedback from other servers); nodes not named get 1."""
        self._disp.set_boosts(boosts)

    def forget(self, job_id: str) -> None:
        """Drop a finished job's state now, or once its queued/in-flight chunks are through."""
        job = self._jobs.get(job_id)
        if job is None:
            return
        if job.queue or job.inflight:
            job.retired = True
        else:
            self._drop(job)

    def _drop(self, job: JobState) -> None:
        self._disp.forget(job)
        self._bytes += job.bytes_served
        self._ops += job.ops_served
        del self._jobs[job.tag.job_id]

    def stats(self) -> SchedStats:
        """Counters per job; target shares are the policy's over jobs with queued or in-flight
        work or bytes in the window, achieved shares are bytes over the sliding window."""
        achieved = self._window.shares()
        competing = [
            j.tag for j in self._jobs.values() if j.queue or j.inflight or j.tag.job_id in achieved
        ]
        target = self.policy.shares(competing)
        jobs = {
            jid: JobStats(
                jid,
                j.tag.user,
                j.tag.group,
                j.tag.nodes,
                j.bytes_served,
                j.ops_served,
                len(j.queue),
                j.queued_bytes,
                j.inflight,
                target.get(jid, 0.0),
                achieved.get(jid, 0.0),
            )
            for jid, j in self._jobs.items()
        }
        return SchedStats(
            self.policy.name,
            self._disp.name,
            self._queued,
            self._inflight,
            self.max_inflight,
            self._bytes + sum(j.bytes_served for j in self._jobs.values()),
            self._ops + sum(j.ops_served for j in self._jobs.values()),
            jobs,
        )
