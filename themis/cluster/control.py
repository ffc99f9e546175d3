"""From every node's report to this node's rate caps (pure; the same on every node).

Each window every daemon runs :meth:`Controller.update` over the same reports:

1. the aggregate rate R of the last window (every job on every node);
2. the capacity to share: ``capacity`` when configured, else measured: R x ``headroom``, or
   R x ``probe`` when every capped, backlogged job reached its cap (nothing says the store is
   saturated: find out whether it can do more), and never less than the recent peak of R
   (which decays with a half-life of ``peak_half_life`` seconds): caps set from one slow
   window would make the next one slow too, and the aggregate would spiral down while the
   store could do more;
3. the global allocation of that capacity (:func:`themis.sched.allocation.allocate_usage`:
   weighted max-min down the policy tree, multi-node jobs split by measured demand);
4. a per-job integral correction ``k`` (the product of ``(target / achieved) ** gain`` over
   the windows, clamped, normalised to a share-weighted mean of 1 over the backlogged jobs),
   which undoes what a shared store's own queueing does to capped rates;
5. caps for this node's jobs: their per-node allocation times ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from themis.cluster.records import Report
from themis.sched.allocation import allocate_usage
from themis.sched.policy import Policy


@dataclass
class Decision:
    """What one update decided (also for metrics and logs)."""

    caps: dict[str, float] = field(default_factory=dict)  # this node's jobs, bytes/s
    capacity: float = 0.0  # bytes/s shared out
    measured: float = 0.0  # aggregate bytes/s of the last window
    target: dict[str, float] = field(default_factory=dict)  # job -> global share
    achieved: dict[str, float] = field(default_factory=dict)  # job -> global share
    nodes: int = 0
    probing: bool = False


class Controller:
    """See the module docstring; one per daemon, kept across windows."""

    def __init__(
        self,
        node: str,
        *,
        capacity: float = 0.0,
        headroom: float = 1.1,
        probe: float = 1.5,
        gain: float = 0.5,
        limit: float = 4.0,
        binding: float = 0.95,
        peak_half_life: float = 5.0,
    ) -> None:
        self.node = node
        self.capacity = capacity
        self.headroom = headroom
        self.probe = probe
        self.gain = gain
        self.limit = limit
        self.binding = binding
        self.peak_half_life = peak_half_life
        self.peak = 0.0  # the recent peak of the measured aggregate, decaying
        self.k: dict[str, float] = {}

    def update(self, policy: Policy, reports: Sequence[Report], learn: bool = True) -> Decision:
        """The decision for this window; ``learn=False`` keeps the corrections as they are
        (windows measured while the caps were not in force, e.g. right after a Redis outage)."""
        usage = [u for r in reports for u in r.usage]
        rate: dict[str, float] = {}
        backlogged: set[str] = set()
        capped_busy = binding = 0
        for r in reports:
            for u in r.usage:
                rate[u.tag.job_id] = rate.get(u.tag.job_id, 0.0) + u.rate
                if u.backlogged:
                    backlogged.add(u.tag.job_id)
                    cap = r.caps.get(u.tag.job_id)
                    if cap:
                        capped_busy += 1
                        binding += u.rate >= self.binding * cap
        measured = math.fsum(rate.values())
        self._remember_peak(measured, max((r.seconds for r in reports), default=0.0))
        out = Decision(measured=measured, nodes=len(reports))
        wanting = backlogged | {job for job, r in rate.items() if r > 0}
        if measured <= 0 or not usage or (len(wanting) < 2 and not self.capacity):
            # nothing to share out (one job moving data or waiting: no one to protect, so no
            # cap: the measured capacity would only hold it back while it ramps up)
            self.k.clear()
            return out
        probing = bool(capped_busy) and binding == capped_busy
        if self.capacity > 0:
            capacity = self.capacity
        else:
            capacity = max(measured * (self.probe if probing else self.headroom), self.peak)
        alloc = allocate_usage(policy, usage, capacity)
        out.capacity, out.probing = capacity, probing and self.capacity <= 0
        out.target = {j: a / capacity for j, a in alloc.jobs.items()}
        out.achieved = {j: x / measured for j, x in rate.items()}
        k = self._correct(out.target, out.achieved, backlogged) if learn else self.k
        out.caps = {
            job: a * k.get(job, 1.0) for (job, node), a in alloc.nodes.items() if node == self.node
        }
        return out

    def _remember_peak(self, measured: float, seconds: float) -> None:
        """Decay the peak by the window's length, then raise it to ``measured``."""
        decay = 0.5 ** (seconds / self.peak_half_life) if self.peak_half_life > 0 else 0.0
        self.peak = max(measured, self.peak * decay)

    def _correct(
        self, target: dict[str, float], achieved: dict[str, float], backlogged: set[str]
    ) -> dict[str, float]:
        lo, hi = 1.0 / self.limit, self.limit
        k: dict[str, float] = {}
        for job in backlogged:
            t, a = target.get(job, 0.0), achieved.get(job, 0.0)
            if t <= 0:
                continue
            x = self.k.get(job, 1.0) * (t / max(a, 0.05 * t)) ** self.gain
            k[job] = min(hi, max(lo, x))
        weight = math.fsum(target[j] for j in k)
        if weight > 0:
            mean = math.fsum(target[j] * x for j, x in k.items()) / weight
            k = {j: min(hi, max(lo, x / mean)) for j, x in k.items()}
        self.k = k
        return k
