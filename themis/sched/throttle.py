"""Throttling baselines with the same dispatcher interface: TBF and a GIFT-like coupon scheme.

Both run on the scheduler's clock (``timed``) and may hold work back (``pick`` returns None while
chunks are queued); ``wakeup`` says when to try again.  Tokens count bytes.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping

from themis.sched.dispatch import Dispatcher
from themis.sched.items import JobState
from themis.sched.policy import Policy

EPS = 1e-6  # bytes: token arithmetic tolerance
SLACK = 1e-9  # seconds: work due this soon counts as due now, so rounding never stalls a wake-up


class _Bucket:
    __slots__ = ("tokens", "last", "rate", "gen", "coupons")

    def __init__(self, tokens: float, last: float, rate: float) -> None:
        self.tokens = tokens
        self.last = last
        self.rate = rate
        self.gen = 0
        self.coupons = 0.0


class TbfDispatcher(Dispatcher):
    """Static per-job token buckets, like Lustre's NRS TBF with one rule per job.

    Each job earns ``rate`` bytes/s (``rates[job_id]`` overrides) up to ``burst`` bytes (default:
    10 ms worth); a job is eligible when its tokens cover its next chunk (or the whole burst,
    for chunks larger than it); the job that became eligible first goes next.  Not work-conserving:
    bandwidth
    a job cannot use is lost.
    """

    name = "tbf"
    timed = True
    work_conserving = False

    def __init__(
        self, rate: float, burst: float | None = None, rates: Mapping[str, float] | None = None
    ) -> None:
        if not rate > 0:
            raise ValueError(f"tbf rate must be > 0 bytes/s, got {rate!r}")
        self.rate = float(rate)
        self.burst = float(burst) if burst is not None else self.rate * 0.01
        self.rates = dict(rates or {})
        self._seq = itertools.count()

    def attach(self, policy: Policy) -> None:
        self.policy = policy
        self._heap: list[tuple[float, int, int, JobState]] = []

    def _refill(self, b: _Bucket, now: float) -> None:
        if now > b.last:
            b.tokens = min(self.burst, b.tokens + b.rate * (now - b.last))
            b.last = now

    def _push(self, job: JobState, now: float) -> None:
        b = job.d
        need = min(job.queue[0].nbytes, self.burst)
        ready = now if b.tokens + EPS >= need else now + (need - b.tokens) / b.rate
        heapq.heappush(self._heap, (ready, next(self._seq), b.gen, job))

    def activate(self, job: JobState, now: float) -> None:
        if job.d is None:
            job.d = _Bucket(self.burst, now, float(self.rates.get(job.tag.job_id, self.rate)))
        self._refill(job.d, now)
        job.d.gen += 1
        self._push(job, now)

    def deactivate(self, job: JobState, now: float) -> None:
        job.d.gen += 1

    def _top(self) -> tuple[float, int, int, JobState] | None:
        heap = self._heap
        while heap and (heap[0][3].d is None or heap[0][2] != heap[0][3].d.gen):
            heapq.heappop(heap)  # a stale entry (the job moved on, or was forgotten)
        return heap[0] if heap else None

    def pick(self, now: float) -> JobState | None:
        top = self._top()
        if top is None or top[0] > now + SLACK:
            return None
        heapq.heappop(self._heap)
        return top[3]

    def served(self, job: JobState, nbytes: int, active: bool, now: float) -> None:
        b = job.d
        self._refill(b, now)
        b.tokens -= nbytes
        b.gen += 1
        if active:
            self._push(job, now)

    def wakeup(self, now: float) -> float | None:
        top = self._top()
        return None if top is None else max(top[0], now)

    def forget(self, job: JobState) -> None:
        job.d = None


class GiftDispatcher(Dispatcher):
    """GIFT-like throttle-and-reward (simplified from Patel et al., FAST'20).

    Each active job earns tokens at its fair rate ``share * capacity`` (shares from the policy
    over jobs with queued work), holding at most ``burst_s`` seconds' worth.  Jobs whose tokens
    cover their next chunk go first (longest surplus first).  A job held below its fair rate -
    its bucket is full while it still has queued work - is issued the overflow as coupons (up to
    ``coupon_s`` seconds' worth).  When no job has tokens, spare bandwidth rewards the job with
    most coupons, paid in coupons; with no coupons either, the device waits for the next token
    (throttle).  O(active jobs) per dispatch.
    """

    name = "gift"
    timed = True
    work_conserving = False

    def __init__(self, capacity: float, burst_s: float = 0.01, coupon_s: float = 0.5) -> None:
        if not capacity > 0:
            raise ValueError(f"gift capacity must be > 0 bytes/s, got {capacity!r}")
        if not burst_s > 0 or coupon_s < 0:
            raise ValueError("gift burst_s must be > 0 and coupon_s >= 0")
        self.capacity = float(capacity)
        self.burst_s = float(burst_s)
        self.coupon_s = float(coupon_s)

    def attach(self, policy: Policy) -> None:
        self.policy = policy
        self._active: dict[str, JobState] = {}
        self._dirty = False
        self._last: float | None = None
        self._pay_coupons = False

    def _advance(self, now: float) -> None:
        last = self._last if self._last is not None else now
        dt = max(0.0, now - last)
        self._last = max(now, last)
        if dt:
            burst_s, coupon_s = self.burst_s, self.coupon_s
            for job in self._active.values():
                b = job.d
                b.tokens += b.rate * dt
                cap = b.rate * burst_s
                if b.tokens > cap:
                    b.coupons = min(b.rate * coupon_s, b.coupons + b.tokens - cap)
                    b.tokens = cap
        if self._dirty:
            self._dirty = False
            shares = self.policy.shares(j.tag for j in self._active.values())
            for jid, job in self._active.items():
                b = job.d
                b.rate = shares[jid] * self.capacity
                cap = b.rate * self.burst_s  # the bucket follows the job's current share
                if b.gen == 0:  # a new job starts with a full bucket
                    b.gen = 1
                    b.tokens = cap
                elif b.tokens > cap:
                    b.tokens = cap

    def _need(self, job: JobState) -> float:
        return min(job.queue[0].nbytes, job.d.rate * self.burst_s)

    def activate(self, job: JobState, now: float) -> None:
        self._advance(now)
        if job.d is None:
            job.d = _Bucket(0.0, now, 0.0)  # filled to its cap once its rate is known
        self._active[job.tag.job_id] = job
        self._dirty = True

    def deactivate(self, job: JobState, now: float) -> None:
        self._advance(now)
        if self._active.pop(job.tag.job_id, None) is not None:
            self._dirty = True

    def pick(self, now: float) -> JobState | None:
        self._advance(now)
        best, best_v = None, -1.0
        for job in self._active.values():
            b = job.d
            if b.rate <= 0:
                continue
            need = self._need(job)
            if b.tokens + b.rate * SLACK + EPS >= need:
                v = (b.tokens - need) / b.rate
                if v > best_v:
                    best, best_v = job, v
        if best is not None:
            self._pay_coupons = False
            return best
        for job in self._active.values():
            b = job.d
            if b.coupons + EPS >= job.queue[0].nbytes and b.coupons > best_v:
                best, best_v = job, b.coupons
        self._pay_coupons = best is not None
        return best

    def served(self, job: JobState, nbytes: int, active: bool, now: float) -> None:
        b = job.d
        if self._pay_coupons:
            b.coupons -= nbytes
        else:
            b.tokens -= nbytes
        if not active:
            self.deactivate(job, now)

    def wakeup(self, now: float) -> float | None:
        self._advance(now)
        best = None
        for job in self._active.values():
            b = job.d
            if b.rate <= 0:
                continue
            t = now + max(0.0, self._need(job) - b.tokens) / b.rate
            if best is None or t < best:
                best = t
        return best

    def forget(self, job: JobState) -> None:
        self._active.pop(job.tag.job_id, None)
        job.d = None
