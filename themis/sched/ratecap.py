"""Per-job rate caps around a share-tree dispatcher (how cluster mode enforces global shares).

:class:`RateCapDispatcher` wraps a lottery or SFQ dispatcher.  Jobs without a cap are
dispatched exactly as by the inner dispatcher.  A capped job has a token bucket (bytes, at its
cap in bytes/s, holding at most ``burst_s`` seconds' worth); each dispatched chunk is paid for,
and a job whose tokens go below zero is taken out of the inner dispatcher until they are back
to ``RELEASE_AT`` of a full bucket (``wakeup`` says when; releasing at zero would wake the
job's waiting threads once per chunk), so among the jobs that may run the inner policy still
decides.  Caps change at any time with :meth:`set_rates`; :meth:`take_held` tells which jobs
were held back since the last call (they would have taken more: backlogged).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping
from typing import Any

from themis.sched.dispatch import Dispatcher
from themis.sched.items import JobState
from themis.sched.policy import Policy

RELEASE_AT = 0.25  # a held job's tokens come back to this much of its bucket (_core_dispatch.c)


class _Cap:
    __slots__ = ("rate", "tokens", "last", "held", "gen", "job")

    def __init__(self, job: JobState, rate: float, now: float, burst: float) -> None:
        self.job = job
        self.rate = rate
        self.tokens = burst
        self.last = now
        self.held = False
        self.gen = 0


class RateCapDispatcher(Dispatcher):
    """See the module docstring.  ``inner`` must be a tree dispatcher (lottery, sfq)."""

    timed = True

    def __init__(self, inner: Dispatcher, burst_s: float = 0.05) -> None:
        if inner.ordered or inner.timed:
            raise ValueError(f"rate caps need a lottery or sfq dispatcher, not {inner.name}")
        if not burst_s > 0:
            raise ValueError(f"burst_s must be > 0, got {burst_s!r}")
        self.inner = inner
        self.name = inner.name
        self.burst_s = burst_s
        self.rates: dict[str, float] = {}
        self._caps: dict[str, _Cap] = {}
        self._heap: list[tuple[float, int, int, _Cap]] = []
        self._seq = itertools.count()
        self._held_ids: set[str] = set()
        self._bound: Any = None

    def bind(self, scheduler: Any) -> None:
        """Hand this dispatcher to a compiled :class:`~themis.sched.Scheduler`, which runs the
        caps in its core: :meth:`set_rates` and :meth:`take_held` then act there."""
        self._bound = scheduler

    # -- caps ---------------------------------------------------------------------------
    def set_rates(self, rates: Mapping[str, float], now: float) -> None:
        """Cap these jobs at these bytes/s; every other job is uncapped from now on."""
        self.rates = {j: float(r) for j, r in rates.items() if r > 0}
        if self._bound is not None:
            self._bound.set_rates(self.rates, now)
            return
        for job_id, cap in list(self._caps.items()):
            rate = self.rates.get(job_id)
            if rate is None:
                del self._caps[job_id]
                if cap.held:
                    self._release(cap, now)
            else:
                self._refill(cap, now)
                cap.rate = rate
                cap.tokens = min(cap.tokens, rate * self.burst_s)

    def take_held(self) -> set[str]:
        """Jobs held back by their cap since the last call."""
        if self._bound is not None:
            return self._bound.take_held()  # type: ignore[no-any-return]
        held, self._held_ids = (
            self._held_ids,
            {c.job.tag.job_id for c in self._caps.values() if c.held},
        )
        return held | self._held_ids

    def _cap(self, job: JobState, now: float) -> _Cap | None:
        job_id = job.tag.job_id
        cap = self._caps.get(job_id)
        rate = self.rates.get(job_id)
        if rate is None:
            return None
        if cap is None or cap.job is not job:
            cap = self._caps[job_id] = _Cap(job, rate, now, rate * self.burst_s)
        return cap

    def _refill(self, cap: _Cap, now: float) -> None:
        if now > cap.last:
            cap.tokens = min(cap.rate * self.burst_s, cap.tokens + cap.rate * (now - cap.last))
            cap.last = now

    def _hold(self, cap: _Cap) -> None:
        cap.held = True
        cap.gen += 1
        self._held_ids.add(cap.job.tag.job_id)
        ready = cap.last + (self.burst_s * RELEASE_AT * cap.rate - cap.tokens) / cap.rate
        heapq.heappush(self._heap, (ready, next(self._seq), cap.gen, cap))

    def _release(self, cap: _Cap, now: float) -> None:
        cap.held = False
        cap.gen += 1
        if cap.job.queue:
            self.inner.activate(cap.job, now)

    def _release_due(self, now: float) -> None:
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, _, gen, cap = heapq.heappop(heap)
            if gen == cap.gen and cap.held:
                self._refill(cap, now)
                self._release(cap, now)

    # -- the dispatcher interface ---------------------------------------------------------
    def attach(self, policy: Policy) -> None:
        self.policy = policy
        self.inner.attach(policy)
        for cap in self._caps.values():
            cap.held = False
            cap.gen += 1
        self._heap.clear()

    def activate(self, job: JobState, now: float) -> None:
        cap = self._cap(job, now)
        if cap is not None:
            self._refill(cap, now)
            if cap.tokens < 0:
                self._hold(cap)
                return
        self.inner.activate(job, now)

    def deactivate(self, job: JobState, now: float) -> None:
        cap = self._caps.get(job.tag.job_id)
        if cap is not None and cap.held:
            cap.held = False
            cap.gen += 1
            return
        self.inner.deactivate(job, now)

    def pick(self, now: float) -> JobState | None:
        if self._heap:
            self._release_due(now)
        return self.inner.pick(now)

    def served(self, job: JobState, nbytes: int, active: bool, now: float) -> None:
        self.inner.served(job, nbytes, active, now)
        cap = self._cap(job, now)
        if cap is None:
            return
        self._refill(cap, now)
        cap.tokens -= nbytes
        if active and cap.tokens < 0:
            self.inner.deactivate(job, now)
            self._hold(cap)

    def wakeup(self, now: float) -> float | None:
        heap = self._heap
        while heap and (heap[0][2] != heap[0][3].gen or not heap[0][3].held):
            heapq.heappop(heap)
        return max(heap[0][0], now) if heap else self.inner.wakeup(now)

    def set_boosts(self, boosts: Mapping[tuple[str, ...], float]) -> None:
        self.inner.set_boosts(boosts)

    def forget(self, job: JobState) -> None:
        cap = self._caps.pop(job.tag.job_id, None)
        if cap is not None:
            cap.gen += 1
        self.inner.forget(job)
