"""Global fairness: servers exchange per-job usage every delta and boost lagging tree nodes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from themis.sched import JobTag, Policy
from themis.sched.allocation import allocate


class GlobalFairness:
    """Integral controller over share-tree nodes.

    Every update, each node's global achieved share (work served under it since the last update,
    over all servers) is compared with its target share: the global allocation of
    :func:`themis.sched.allocation.allocate` (weighted max-min down the policy's tree; a job
    with requests outstanding is backlogged, one without demands only what it used); its boost is
    multiplied by ``(ratio / parent_ratio) ** gain`` where ratio =
    target / achieved, clamped to ``[1/limit, limit]``.  Boosts multiply the node's lottery
    weight on every server, so a job starved on some servers wins more often on the others.
    """

    def __init__(
        self, policy: Policy, jobs: Sequence[Any], gain: float = 0.5, limit: float = 20.0
    ) -> None:
        self.policy = policy
        self.jobs = jobs
        self.gain = gain
        self.limit = limit
        self.boosts: dict[tuple[str, ...], float] = {}
        self.paths = {j.tag.job_id: policy.path(j.tag) for j in jobs}

    def update(self, now: float) -> dict[tuple[str, ...], float] | None:
        """New boosts from the usage since the last call (None when nothing happened)."""
        demands: dict[JobTag, float] = {}
        used: dict[tuple[str, ...], int] = {}
        total = 0
        for job in self.jobs:
            d = job.work - job.work_at_sync
            if d or job.outstanding:
                job.work_at_sync = job.work
                demands[job.tag] = math.inf if job.outstanding else float(d)
                path = self.paths[job.tag.job_id]
                for k in range(1, len(path) + 1):
                    used[path[:k]] = used.get(path[:k], 0) + d
                total += d
        if not total or len(demands) < 2:
            return None
        target = allocate(self.policy, demands, float(total)).paths
        ratio = {p: t / max(used.get(p, 0), t * 0.05) for p, t in target.items() if t > 0}
        lo, hi, gain, old = 1.0 / self.limit, self.limit, self.gain, self.boosts
        boosts = {}
        for path, r in ratio.items():
            rel = r / ratio[path[:-1]] if len(path) > 1 else r
            b = old.get(path, 1.0) * rel**gain
            boosts[path] = lo if b < lo else hi if b > hi else b
        self.boosts = boosts
        return boosts
