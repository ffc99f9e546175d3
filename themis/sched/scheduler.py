"""The Themis fair-share scheduler: queue, chunk, and dispatch I/O requests by policy.

The queues, the share tree and the dispatchers run in the compiled core
(``themis/sched/_core.c``); this class keeps the Python objects (requests, chunks, tags) and
turns policies into tree weights.  :mod:`themis.sched.reference` is the same scheduler in pure
Python: the model the core is tested against.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from themis.sched._core import _C_API, Core, SimLoop
from themis.sched.dispatch import Dispatcher, FifoDispatcher, LotteryDispatcher, SfqDispatcher
from themis.sched.items import CANCELLED, DISPATCHED, DONE, QUEUED, Chunk, Request
from themis.sched.policy import Policy
from themis.sched.ratecap import RateCapDispatcher
from themis.sched.reference import ReferenceScheduler
from themis.sched.registry import make_dispatcher
from themis.sched.stats import JobStats, MiB, SchedStats
from themis.sched.tags import JobTag
from themis.sched.throttle import GiftDispatcher, TbfDispatcher

__all__ = ["JobStats", "MiB", "SchedStats", "Scheduler", "SimLoop", "core_api"]

_COMPILED = (
    FifoDispatcher,
    LotteryDispatcher,
    SfqDispatcher,
    TbfDispatcher,
    GiftDispatcher,
    RateCapDispatcher,  # around lottery or SFQ (its constructor checks)
)
_KIND = {"fifo": 0, "lottery": 1, "sfq": 2, "tbf": 3, "gift": 4}


def core_api() -> object:
    """The capsule (``themis.sched._core._C_API``, see ``themis/sched/core_api.h``) through which
    a C extension calls a compiled scheduler without the GIL."""
    return _C_API


class _Job:
    """A job known to the core: its tag, its handle there, and its tree path."""

    __slots__ = ("tag", "handle", "path")

    def __init__(self, tag: JobTag, handle: int, path: tuple[str, ...]) -> None:
        self.tag = tag
        self.handle = handle
        self.path = path


# per boosts mapping (callers pass a fresh one each time, e.g. the simulator to all its
# servers): each tree path's boosts from the root down, computed once for every scheduler
_boost_memo: tuple[Mapping[tuple[str, ...], float] | None, dict[tuple[str, ...], tuple[float, ...]]]
_boost_memo = (None, {})


def _boost_vectors(
    boosts: Mapping[tuple[str, ...], float],
) -> dict[tuple[str, ...], tuple[float, ...]]:
    """The memo of path -> boosts per level for this mapping."""
    global _boost_memo
    if _boost_memo[0] is not boosts:
        _boost_memo = (boosts, {})
    return _boost_memo[1]


def _boost_vector(
    boosts: Mapping[tuple[str, ...], float], path: tuple[str, ...]
) -> tuple[float, ...]:
    memo = _boost_vectors(boosts)
    vec = memo.get(path)
    if vec is None:
        vec = memo[path] = tuple(boosts.get(path[: i + 1], 1.0) for i in range(len(path)))
    return vec


def _config(disp: Dispatcher, nlev: int) -> tuple[Any, ...]:
    """The core's dispatcher configuration for a (reference) dispatcher object."""
    cap = disp if isinstance(disp, RateCapDispatcher) else None
    if cap is not None:
        disp = cap.inner
    tbf = disp if isinstance(disp, TbfDispatcher) else None
    gift = disp if isinstance(disp, GiftDispatcher) else None
    return (
        _KIND[disp.name],
        nlev,
        abs(disp.seed) if isinstance(disp, LotteryDispatcher) else 0,
        tbf.rate if tbf else 0.0,
        tbf.burst if tbf else 0.0,
        gift.capacity if gift else 0.0,
        gift.burst_s if gift else 0.0,
        gift.coupon_s if gift else 0.0,
        cap is not None,
        cap.burst_s if cap else 0.0,
    )


class Scheduler:
    """Fair-share dispatcher of I/O requests tagged with their job.

    Dispatchers charge each chunk ``max(nbytes, min_charge)`` so that zero-byte metadata
    operations are not free.  ``submit`` queues a request (split into chunks of at most
    ``chunk_bytes``), ``next`` returns the next chunk to run or None (nothing queued,
    ``max_inflight`` reached, or a throttling dispatcher holds back), ``done`` reports a finished
    chunk.  Work-conserving for the lottery, SFQ and FIFO dispatchers.  Drive it from one thread
    or event loop; C threads share it through :func:`core_api` (``acquire``/``release``).

    A :class:`RateCapDispatcher` (cluster mode) runs in the core around lottery or SFQ; a custom
    :class:`Dispatcher` the core does not implement gets a
    :class:`~themis.sched.reference.ReferenceScheduler` instead.
    """

    core: Core

    def __new__(cls, *args: Any, **kwargs: Any) -> Scheduler:
        disp = args[1] if len(args) > 1 else kwargs.get("dispatcher")
        if isinstance(disp, Dispatcher) and not isinstance(disp, _COMPILED):
            return ReferenceScheduler(*args, **kwargs)  # type: ignore[return-value]
        return super().__new__(cls)

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
        self.chunk_bytes = chunk_bytes
        self.clock = clock
        self.seed = seed
        self.min_charge = min_charge
        self._jobs: dict[str, _Job] = {}
        self._handles: dict[int, _Job] = {}
        self._keys: dict[str, int] = {}  # tree-node keys ("g:..", "u:..") -> ints for the core
        self._boosts: Mapping[tuple[str, ...], float] = {}
        self._seq = 0
        self._disp_request = dispatcher
        self._disp_options = dict(dispatcher_options)
        self._disp = self._make(dispatcher)
        self._timed = self._disp.timed
        self.core = Core(
            _config(self._disp, len(self.policy.levels)),
            max_inflight,
            min_charge,
            chunk_bytes,
            window,
            clock is time.monotonic,
        )

    def _make(self, dispatcher: str | Dispatcher) -> Dispatcher:
        if self.policy.fifo:
            return make_dispatcher("fifo")
        if isinstance(dispatcher, Dispatcher):
            if not isinstance(dispatcher, _COMPILED):
                raise ValueError(f"the compiled scheduler cannot run {type(dispatcher).__name__}")
            if isinstance(dispatcher, RateCapDispatcher):
                dispatcher.bind(self)
            return dispatcher
        return make_dispatcher(dispatcher, seed=self.seed, **self._disp_options)

    # -- properties -----------------------------------------------------------------------
    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher's description (name, ``timed``, options); the core runs it."""
        return self._disp

    @property
    def max_inflight(self) -> int:
        return int(self.core.max_inflight)

    @max_inflight.setter
    def max_inflight(self, value: int) -> None:
        self.core.max_inflight = value

    @property
    def queued(self) -> int:
        """Chunks waiting to be dispatched."""
        return int(self.core.queued)

    @property
    def shared(self) -> bool:
        """True once C threads have called ``acquire`` on this scheduler."""
        return bool(self.core.shared)

    @property
    def inflight(self) -> int:
        """Chunks dispatched and not yet done."""
        return int(self.core.inflight)

    # -- jobs -------------------------------------------------------------------------------
    def _desc(
        self, tag: JobTag
    ) -> tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...], float, tuple[str, ...]]:
        """The job's tree path (interned keys), base weights and boosts per level, TBF rate,
        and the path itself."""
        policy, keys = self.policy, self._keys
        path = policy.path(tag)
        ids = tuple(keys.setdefault(k, len(keys)) for k in path[:-1])
        bases = tuple(policy.node_weight(lv, tag) for lv in policy.levels) + (
            policy.leaf_weight(tag),
        )
        boosts = _boost_vector(self._boosts, path)
        disp = self._disp
        rate = 0.0
        if isinstance(disp, TbfDispatcher):
            rate = float(disp.rates.get(tag.job_id, disp.rate))
        elif isinstance(disp, RateCapDispatcher):
            rate = disp.rates.get(tag.job_id, 0.0)
        return ids, bases, boosts, rate, path

    def _job(self, tag: JobTag) -> _Job:
        """The job's record, registering it with the core (or updating its tag) if needed."""
        job = self._jobs.get(tag.job_id)
        if job is None:
            self._reap()
            desc = self._desc(tag)
            job = _Job(tag, self.core.add_job(*desc), desc[4])
            self._jobs[tag.job_id] = self._handles[job.handle] = job
        elif job.tag is not tag and job.tag != tag:
            job.tag = tag  # the job's description changed (e.g. resize): only new nodes
            job.path = self.policy.path(tag)
            self.core.set_job(job.handle, *self._desc(tag))
        return job

    def _reap(self) -> None:
        """Forget the records of jobs the core dropped."""
        for handle in self.core.reap():
            job = self._handles.pop(handle)
            if self._jobs.get(job.tag.job_id) is job:
                del self._jobs[job.tag.job_id]

    def job_handle(self, tag: JobTag) -> int:
        """The core's int handle of the job (C callers pass it to ``acquire``); valid until the
        job is forgotten and has no more queued or in-flight work."""
        self._reap()
        return self._job(tag).handle

    # -- the request path -------------------------------------------------------------------
    def submit(self, tag: JobTag, nbytes: int, payload: Any = None) -> Request:
        """Queue a request of ``nbytes`` (0 for metadata: one chunk of 0 bytes)."""
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        job = self._jobs.get(tag.job_id)
        if job is None or (job.tag is not tag and job.tag != tag):
            job = self._job(tag)
        seq = self._seq = self._seq + 1
        req = Request(tag, nbytes, payload, seq, job)
        now = self.clock() if self._timed else 0.0
        core = self.core
        if nbytes <= self.chunk_bytes:
            if not core.submit(job.handle, nbytes, req, now):  # the core dropped the job
                self._reap()
                req.job = job = self._job(tag)
                core.submit(job.handle, nbytes, req, now)
        else:
            chunks = req.split(self.chunk_bytes)
            if not core.submit(job.handle, chunks[0].nbytes, chunks[0], now):
                self._reap()
                req.job = job = self._job(tag)
                for c in chunks:
                    c.job = job
                core.submit(job.handle, chunks[0].nbytes, chunks[0], now)
            for c in chunks[1:]:
                core.submit(job.handle, c.nbytes, c, now)
        return req

    def next(self) -> Chunk | None:
        """The next chunk to run now, or None; the caller must call :meth:`done` on it."""
        got = self.core.take(1, self.clock() if self._timed else 0.0)
        return got[0] if got else None

    def take(self, limit: int = 0) -> list[Chunk]:
        """Every chunk that may run now, in dispatch order (at most ``limit`` if > 0): the
        batch form of :meth:`next`."""
        return self.core.take(limit, self.clock() if self._timed else 0.0)  # type: ignore[no-any-return]

    def done(self, chunk: Chunk) -> None:
        """Report a dispatched chunk finished (its bytes count as served)."""
        if chunk.state != DISPATCHED:
            raise ValueError(f"{chunk!r} was not dispatched (or is already done)")
        chunk.state = DONE
        self.core.done(chunk.job.handle, chunk.nbytes)
        # a one-chunk request is its own chunk: skip the ``request`` property then
        (chunk if chunk.__class__ is Request else chunk.request).pending -= 1

    def cancel(self, request: Request) -> int:
        """Withdraw a request's still-queued chunks (dispatched ones must still be done()).
        Returns the number withdrawn."""
        gone = [c for c in request.chunks if c.state == QUEUED]
        if not gone:
            return 0
        n = int(self.core.cancel(request.job.handle, gone, self.clock() if self._timed else 0.0))
        for c in gone:
            c.state = CANCELLED
        request.pending -= len(gone)
        return n

    def wakeup_time(self) -> float | None:
        """When a throttling dispatcher (TBF/GIFT) may release work that ``next`` held back,
        on this scheduler's clock; None when there is nothing to wait for."""
        if not self._timed or not self.core.queued:
            return None
        return self.core.wakeup(self.clock())  # type: ignore[no-any-return]

    # -- control ----------------------------------------------------------------------------
    def set_policy(self, policy: Policy | str, dispatcher: str | Dispatcher | None = None) -> None:
        """Switch policy (and optionally dispatcher) live; queued and in-flight work is kept."""
        policy = Policy.from_name(policy) if isinstance(policy, str) else policy
        request = self._disp_request if dispatcher is None else dispatcher
        old = self.policy
        self.policy = policy
        try:
            disp = self._make(request)
        except ValueError:
            self.policy = old
            raise
        fresh = disp is not self._disp
        self._disp_request, self._disp, self._timed = request, disp, disp.timed
        self._boosts = {}  # a new dispatcher starts without boosts
        self._reap()
        core = self.core
        core.configure(_config(disp, len(policy.levels)))
        if fresh:  # ...and without the jobs its predecessor held back (RateCapDispatcher)
            core.take_held()
        for job in self._jobs.values():
            job.path = policy.path(job.tag)
            core.set_job(job.handle, *self._desc(job.tag))
        core.reload(self.clock() if self._timed else 0.0)

    def set_boosts(self, boosts: Mapping[tuple[str, ...], float]) -> None:
        """Multiply share-tree node weights, keyed by :meth:`Policy.path` prefixes (global
        fairness feedback from other servers); nodes not named get 1."""
        if not isinstance(self._disp, LotteryDispatcher | SfqDispatcher | RateCapDispatcher):
            return
        self._boosts = boosts
        self._reap()
        vectors = _boost_vectors(boosts)
        while missing := self.core.set_boosts(vectors):  # once per path, for every scheduler
            for handle in missing:
                _boost_vector(boosts, self._handles[handle].path)

    def set_rates(self, rates: Mapping[str, float], now: float | None = None) -> None:
        """Rate caps (cluster mode, a :class:`RateCapDispatcher` given as dispatcher): cap
        these jobs at these bytes/s, every other job uncapped; ``now`` defaults to the clock."""
        self._reap()
        self.core.set_rates(
            [(j.handle, float(rates.get(jid, 0.0))) for jid, j in self._jobs.items()],
            self.clock() if now is None else now,
        )

    def take_held(self) -> set[str]:
        """Jobs held back by their rate cap since the last call."""
        return {self._handles[h].tag.job_id for h in self.core.take_held()}

    def forget(self, job_id: str) -> None:
        """Drop a finished job's state now, or once its queued/in-flight chunks are through."""
        job = self._jobs.get(job_id)
        if job is not None:
            self.core.forget(job.handle)
            self._reap()

    def stats(self) -> SchedStats:
        """Counters per job; target shares are the policy's over jobs with queued or in-flight
        work or bytes in the window, achieved shares are bytes over the sliding window."""
        self._reap()
        queued, inflight, nbytes, ops, wtotal, rows = self.core.stats()
        by_handle = {row[0]: row for row in rows}
        live = [(j, by_handle[j.handle]) for j in self._jobs.values()]
        competing = [j.tag for j, r in live if r[3] or r[5] or (wtotal and r[7])]
        target = self.policy.shares(competing)
        jobs = {}
        for j, (_, b, o, qc, qb, inf, wait, wb) in live:
            t = j.tag
            jid = t.job_id
            achieved = wb / wtotal if wtotal else 0.0
            jobs[jid] = JobStats(
                jid,
                t.user,
                t.group,
                t.nodes,
                b,
                o,
                qc,
                qb,
                inf,
                target.get(jid, 0.0),
                achieved,
                wait,
            )
        return SchedStats(
            self.policy.name,
            self._disp.name,
            queued,
            inflight,
            self.max_inflight,
            nbytes,
            ops,
            jobs,
        )
