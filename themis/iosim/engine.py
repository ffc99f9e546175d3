"""The discrete-event I/O simulator: jobs' processes issue requests to servers, each server
runs a :class:`themis.sched.Scheduler`, and servers exchange per-job usage every ``delta``."""

from __future__ import annotations

import gc
import heapq
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from themis.iosim.model import IOJob, MiB, ServerSpec
from themis.iosim.sync import GlobalFairness
from themis.sched import Policy, ReferenceScheduler, Request, Scheduler, SimLoop

DONE, WAKE, PHASE, START, END, SYNC, SRVWAKE, STOP = range(8)
_LAST = 1 << 62  # the STOP sentinel's seq: after every real event at the same time


class _Server:
    __slots__ = ("idx", "sched", "wake_at", "busy", "channels")

    def __init__(self, idx: int, sched: Scheduler) -> None:
        self.idx = idx
        self.sched = sched
        self.wake_at = math.inf
        self.busy = 0  # chunks in service (mirrors sched.inflight)
        self.channels = sched.max_inflight


class _Proc:
    __slots__ = ("job", "idx", "remaining", "outstanding", "pos")

    def __init__(self, job: _Job, idx: int) -> None:
        self.job = job
        self.idx = idx
        self.remaining = 0
        self.outstanding = 0
        self.pos = idx


class _Job:
    __slots__ = (
        "spec",
        "tag",
        "idx",
        "procs",
        "servers",
        "nsrv",
        "nreq",
        "nbytes",
        "cost",
        "depth",
        "think",
        "random",
        "rand",
        "rng",
        "running",
        "outstanding",
        "busy_start",
        "busy",
        "ops",
        "win",
        "procs_done",
        "burst_start",
        "bursts",
        "work_at_sync",
        "finished",
    )

    def __init__(
        self, spec: IOJob, idx: int, servers: list[_Server], seed: int, nwin: int, min_charge: int
    ) -> None:
        p = spec.profile
        self.spec, self.tag, self.idx = spec, spec.tag, idx
        self.rng = random.Random(seed * 1_000_003 + idx)
        n = len(servers)
        if spec.servers:
            self.servers = [servers[i % n] for i in spec.servers]
        else:
            count = n if p.stripe_count <= 0 else min(p.stripe_count, n)
            base = self.rng.randrange(n)
            self.servers = [servers[(base + k) % n] for k in range(count)]
        self.nsrv = len(self.servers)
        self.nreq = p.burst_requests  # 0: unbounded (dataload)
        self.nbytes = p.request_bytes
        self.cost = max(self.nbytes, min_charge)
        self.depth, self.think = p.depth, p.think
        self.random = p.kind == "dataload"
        self.rand = self.rng.random if self.random else None  # None: stripe round-robin
        self.procs = [_Proc(self, i) for i in range(spec.processes)]
        self.running = False
        self.finished = False
        self.outstanding = 0
        self.busy_start = 0.0
        self.busy: list[tuple[float, float]] = []
        self.ops = 0  # completed requests; every request of a job has the same size and cost
        self.work_at_sync = 0
        self.win = [0] * nwin  # completed requests per sampling window
        self.procs_done = 0
        self.burst_start = 0.0
        self.bursts: list[tuple[float, float]] = []

    @property
    def bytes(self) -> int:
        return self.ops * self.nbytes

    @property
    def work(self) -> int:
        """Completed requests, each counted max(bytes, min_charge)."""
        return self.ops * self.cost


@dataclass
class JobResult:
    """What one job got: totals (``work`` counts each request as max(bytes, min_charge)),
    work per sampling window, busy intervals (requests outstanding) and bursts (start, end)."""

    job: IOJob
    bytes: int
    ops: int
    work: int
    window_work: list[int]
    busy: list[tuple[float, float]]
    bursts: list[tuple[float, float]]


@dataclass
class SimResult:
    """The outcome of one run."""

    policy: str
    dispatcher: str
    duration: float
    window: float
    servers: ServerSpec
    jobs: list[JobResult]
    chunks: int
    events: int
    wall_s: float  # the event loop's wall-clock seconds (set-up excluded)
    cpu_s: float = 0.0  # the event loop's CPU seconds
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def chunks_per_s(self) -> float:
        """Simulated chunks (dispatched requests) per wall-clock second."""
        return self.chunks / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def chunks_per_cpu_s(self) -> float:
        """Simulated chunks per CPU second of the event loop (one core)."""
        return self.chunks / self.cpu_s if self.cpu_s > 0 else 0.0


class IOSim:
    """One simulation run: ``IOSim(jobs, servers, policy, dispatcher).run(duration)``.

    ``delta`` is the interval (simulated s) at which servers exchange per-job usage and adjust
    their lottery/SFQ weights toward global fairness (None: never).  ``window`` is the width of
    the throughput-sampling windows.  Other dispatcher options (TBF ``rate``, GIFT
    ``capacity``...) go in ``dispatcher_options``.  ``reference`` runs every server on the
    pure-Python reference scheduler instead of the compiled core (for comparisons).
    """

    def __init__(
        self,
        jobs: Sequence[IOJob],
        servers: ServerSpec,
        policy: Policy | str,
        dispatcher: str = "lottery",
        *,
        seed: int = 0,
        delta: float | None = 0.01,
        window: float = 0.05,
        chunk_bytes: int = MiB,
        min_charge: int = 4096,
        dispatcher_options: Mapping[str, Any] | None = None,
        reference: bool = False,
    ) -> None:
        self.spec = servers
        self.policy = Policy.from_name(policy) if isinstance(policy, str) else policy
        self.dispatcher = "fifo" if self.policy.fifo else dispatcher
        self.seed = seed
        self.delta = delta
        self.window = window
        self.now = 0.0
        opts = dict(dispatcher_options or {})
        self.reference = reference
        make: Callable[..., Any] = ReferenceScheduler if reference else Scheduler
        self.servers = [
            _Server(
                i,
                make(
                    self.policy,
                    dispatcher,
                    seed=seed * 7919 + i,
                    max_inflight=servers.channels,
                    chunk_bytes=chunk_bytes,
                    window=0,
                    min_charge=min_charge,
                    clock=self._clock,
                    **opts,
                ),
            )
            for i in range(servers.count)
        ]
        self.timed = self.servers[0].sched.dispatcher.timed
        self.jobs_in = list(jobs)
        self.min_charge = min_charge
        self._heap: list[tuple[float, int, int, Any, Any]] = []
        self._seq = 0
        self.chunks = 0
        self.events = 0

    def _clock(self) -> float:
        return self.now

    def _push(self, t: float, kind: int, a: Any = None, b: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, a, b))

    # -- servers ------------------------------------------------------------------------------
    def _kick(self, srv: _Server) -> None:
        """Dispatch whatever the server's scheduler releases now."""
        sched = srv.sched
        chunks = sched.take()
        if chunks:
            now, inv = self.now + self._overhead, self._inv_bw
            heap, push = self._heap, heapq.heappush
            seq = self._seq
            for chunk in chunks:
                seq += 1
                push(heap, (now + chunk.nbytes * inv, seq, DONE, srv, chunk))
            self._seq = seq
            n = len(chunks)
            self.chunks += n
            srv.busy += n
        if self.timed:
            self._wake(srv)

    def _wake(self, srv: _Server) -> None:
        """Schedule a wake-up for when a throttling dispatcher releases held-back work."""
        sched = srv.sched
        if sched.queued and sched.inflight < sched.max_inflight:
            w = sched.wakeup_time()
            if w is not None and w < srv.wake_at:
                srv.wake_at = w
                self._push(w, SRVWAKE, srv)

    # -- clients ------------------------------------------------------------------------------
    def _issue(self, proc: _Proc) -> None:
        """Issue the process's requests up to its depth."""
        job = proc.job
        if not job.running:
            return
        servers, rand = job.servers, job.rand
        while proc.outstanding < job.depth and proc.remaining:  # remaining < 0: unbounded
            proc.remaining -= 1
            if rand is None:
                pos = proc.pos = proc.pos + 1
                srv = servers[pos % job.nsrv]
            else:
                srv = servers[int(rand() * job.nsrv)]
            if not job.outstanding:
                job.busy_start = self.now
            proc.outstanding += 1
            job.outstanding += 1
            srv.sched.submit(job.tag, job.nbytes, proc)
            if srv.busy < srv.channels:
                self._kick(srv)

    def _start_burst(self, job: _Job) -> None:
        job.procs_done = 0
        job.burst_start = self.now
        for proc in job.procs:
            proc.remaining = job.nreq if job.nreq else -1
        for proc in job.procs:
            self._issue(proc)

    def _retire(self, job: _Job) -> None:
        if not job.finished:
            job.finished = True
            for srv in job.servers:
                srv.sched.forget(job.tag.job_id)

    # -- the loop -----------------------------------------------------------------------------
    def run(self, duration: float, progress: Callable[[float], None] | None = None) -> SimResult:
        """Simulate ``duration`` seconds; ``progress(now)`` is called now and then."""
        self._inv_bw = self.spec.channels / self.spec.bandwidth
        self._overhead = self.spec.overhead
        self._nwin = max(1, math.ceil(duration / self.window))
        self._inv_win = 1.0 / self.window
        jobs = [
            _Job(s, i, self.servers, self.seed, self._nwin, self.min_charge)
            for i, s in enumerate(self.jobs_in)
        ]
        for job in jobs:
            if job.spec.start < duration:
                self._push(max(0.0, job.spec.start), START, job)
            if job.spec.end < duration:
                self._push(job.spec.end, END, job)
        sync = None
        if self.delta and self.dispatcher in ("lottery", "sfq") and len(self.servers) > 1:
            sync = GlobalFairness(self.policy, jobs)
            self._push(self.delta, SYNC)
        gc_was_on = gc.isenabled()
        gc.disable()  # the loop allocates much and frees by refcount; cycles wait for the end
        try:
            if self.reference:
                wall, cpu = self._loop(duration, sync, progress)
            else:
                wall, cpu = self._loop_c(duration, jobs, sync, progress)
        finally:
            if gc_was_on:
                gc.enable()
        self.now = duration
        for job in jobs:  # close open busy intervals at the horizon
            if job.outstanding:
                job.busy.append((job.busy_start, duration))
        if progress is not None:
            progress(duration)
        results = [
            JobResult(j.spec, j.bytes, j.ops, j.work, [n * j.cost for n in j.win], j.busy, j.bursts)
            for j in jobs
        ]
        return SimResult(
            self.policy.name,
            self.dispatcher,
            duration,
            self.window,
            self.spec,
            results,
            self.chunks,
            self.events,
            wall,
            cpu,
        )

    def _loop_c(
        self,
        duration: float,
        jobs: list[_Job],
        sync: GlobalFairness | None,
        progress: Callable[[float], None] | None,
    ) -> tuple[float, float]:
        """The event loop in C (``themis/sched/_simloop.c``), over the servers' compiled
        schedulers; it returns here for the usage exchange and progress reports.  Same events
        and results as :meth:`_loop`, the reference."""
        loop = SimLoop(
            [srv.sched for srv in self.servers],
            self.spec.channels,
            self._overhead,
            self._inv_bw,
            self._inv_win,
            self._nwin,
            self.timed,
            [
                (
                    [srv.idx for srv in j.servers],
                    [srv.sched.job_handle(j.tag) for srv in j.servers],
                    j.nreq,
                    j.nbytes,
                    j.depth,
                    float(j.think),
                    float(j.spec.profile.period),
                    len(j.procs),
                    j.rng.getstate()[1] if j.random else None,
                )
                for j in jobs
            ],
        )
        for t, seq, kind, a, _ in self._heap:  # START, END and the first SYNC
            loop.push(t, kind, a.idx if isinstance(a, _Job) else 0, seq)
        loop.seq = self._seq
        self._heap.clear()
        wall0, cpu0 = time.perf_counter(), time.process_time()
        seq0, queued0 = loop.seq, loop.pending
        loop.push(duration, STOP, 0, _LAST)
        report_every = duration / 50
        next_report = report_every if progress is not None else math.inf
        while True:
            what, t = loop.run(next_report)
            self.now = t
            if what == 1 and sync is not None and self.delta:  # SYNC
                for job, (ops, outstanding) in zip(jobs, loop.usage(), strict=True):
                    job.ops, job.outstanding = ops, outstanding
                boosts = sync.update(t)
                if boosts is not None:
                    for srv in self.servers:
                        srv.sched.set_boosts(boosts)
                loop.push(t + self.delta, SYNC)
            elif what == 0:
                break
            if t >= next_report:
                progress(t)  # type: ignore[misc]
                next_report = t + report_every
        self.events = loop.seq - seq0 + queued0 - loop.pending
        self.chunks = loop.chunks
        for job, row in zip(jobs, loop.results(), strict=True):
            job.ops, job.outstanding, job.busy_start, job.win, job.busy, job.bursts = row
        return time.perf_counter() - wall0, time.process_time() - cpu0

    def _loop(  # noqa: C901 (the simulator's hot event loop: one function, no call overhead)
        self, duration: float, sync: GlobalFairness | None, progress: Callable[[float], None] | None
    ) -> tuple[float, float]:
        """The event loop in Python, with the reference schedulers (the model of
        :meth:`_loop_c`); returns its wall-clock and CPU seconds."""
        heap, pop, hpush = self._heap, heapq.heappop, heapq.heappush
        issue, kick, push = self._issue, self._kick, self._push
        inv_win, nwin = self._inv_win, self._nwin
        overhead, inv_bw, timed = self._overhead, self._inv_bw, self.timed
        wall0, cpu0 = time.perf_counter(), time.process_time()
        # every push takes a seq number, so the events popped are counted at the end; a STOP
        # sentinel after every event due at ``duration`` ends the loop (no per-event test)
        seq0, queued0 = self._seq, len(heap)
        heapq.heappush(heap, (duration, _LAST, STOP, None, None))
        report_every = duration / 50
        next_report = report_every if progress is not None else math.inf
        while True:
            t, _, kind, a, b = pop(heap)
            self.now = t
            if kind == DONE:
                a.sched.done(b)
                a.busy -= 1
                req = b if b.__class__ is Request else b.request
                if not req.pending:  # the request is complete: its process goes on
                    proc = req.payload
                    job = proc.job
                    proc.outstanding -= 1
                    job.outstanding -= 1
                    if not job.outstanding:
                        job.busy.append((job.busy_start, t))
                    job.ops += 1
                    i = int(t * inv_win)
                    if i < nwin:
                        job.win[i] += 1
                    if proc.remaining:
                        if job.think:
                            push(t + job.think, WAKE, proc)
                        else:
                            issue(proc)
                    elif not proc.outstanding:
                        job.procs_done += 1
                        if job.procs_done == len(job.procs):
                            job.bursts.append((job.burst_start, t))
                            if job.running:
                                push(t + job.spec.profile.period, PHASE, job)
                    if not job.running and not job.outstanding:
                        self._retire(job)
                if a.busy < a.channels:  # unless the process just filled it again
                    chunks = a.sched.take()  # _kick(a), inlined on this hottest path
                    if chunks:
                        seq = self._seq
                        for chunk in chunks:
                            seq += 1
                            hpush(heap, (t + overhead + chunk.nbytes * inv_bw, seq, DONE, a, chunk))
                        self._seq = seq
                        n = len(chunks)
                        self.chunks += n
                        a.busy += n
                    if timed:
                        self._wake(a)
            elif kind == WAKE:
                issue(a)
            elif kind == PHASE:
                if a.running:
                    self._start_burst(a)
            elif kind == SRVWAKE:
                if t >= a.wake_at:
                    a.wake_at = math.inf
                kick(a)
            elif kind == START:
                a.running = True
                if a.nreq:
                    self._push(t + a.spec.profile.period, PHASE, a)
                else:
                    self._start_burst(a)
            elif kind == END:
                a.running = False
                if a.outstanding == 0:
                    self._retire(a)
            elif kind == SYNC and sync is not None and self.delta:
                boosts = sync.update(t)
                if boosts is not None:
                    for srv in self.servers:
                        srv.sched.set_boosts(boosts)
                self._push(t + self.delta, SYNC)
            elif kind == STOP:
                break
            if t >= next_report:
                progress(t)  # type: ignore[misc]
                next_report = t + report_every
        self.events = self._seq - seq0 + queued0 - len(heap)
        return time.perf_counter() - wall0, time.process_time() - cpu0
