"""Global allocation: weighted max-min (water-filling) down the policy's share tree.

One implementation for every place that turns measured usage into target rates: the usage
exchange of ``themis sim`` (:mod:`themis.iosim.sync`) and the cluster mode of the daemons
(:mod:`themis.cluster`).  Pure functions, no I/O.

* At every tree node the budget is water-filled among the children: each child gets
  ``min(demand, weight * level)``, with the level chosen so the budget is used up.  A child that
  wants less than its weighted share keeps only what it wants, and the rest flows to its busy
  siblings (work-conserving).  When every demand is met, the leftover is split by weight, so
  the allocations always add up to the capacity.
* A child's demand is the sum of its jobs' demands; a job's demand is ``inf`` while it is
  backlogged (it would take more if given more) and its measured rate otherwise.
* A job running on several nodes has its allocation split over its nodes by their measured
  demand: a node where the job is not backlogged gets the rate it used, the rest goes to the
  backlogged nodes in proportion to the bytes each served plus the bytes each had queued.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from themis.sched.policy import Policy
from themis.sched.tags import JobTag

INF = math.inf


def waterfill(budget: float, weights: Sequence[float], demands: Sequence[float]) -> list[float]:
    """Weighted max-min split of ``budget``: child i gets ``min(demands[i], weights[i] * L)``
    for the level L that uses the budget up; if every demand fits, each child gets its demand
    plus the leftover in proportion to its weight.  Weights must be > 0, demands >= 0."""
    n = len(weights)
    if n == 0:
        return []
    out = [0.0] * n
    finite = sum(d for d in demands if d != INF)
    if not any(d == INF for d in demands) and finite <= budget:
        spare = budget - finite
        total_w = sum(weights)
        return [d + spare * w / total_w for d, w in zip(demands, weights)]
    order = sorted(range(n), key=lambda i: demands[i] / weights[i])
    left, wleft = float(budget), float(sum(weights))
    for k, i in enumerate(order):
        fair = weights[i] * left / wleft
        if demands[i] <= fair:
            out[i] = demands[i]
            left -= demands[i]
            wleft -= weights[i]
        else:  # this child and every later one (higher demand per weight) are capped by L
            level = left / wleft
            for j in order[k:]:
                out[j] = weights[j] * level
            break
    return out


@dataclass(frozen=True)
class Allocation:
    """The outcome: rate per job, per tree node (keyed by :meth:`Policy.path` prefixes) and
    per (job, node) where node usage was given.  Rates are in the capacity's unit."""

    capacity: float
    jobs: dict[str, float]
    paths: dict[tuple[str, ...], float]
    nodes: dict[tuple[str, str], float]

    def shares(self) -> dict[str, float]:
        """Each job's fraction of the capacity."""
        c = self.capacity
        return {j: (r / c if c > 0 else 0.0) for j, r in self.jobs.items()}


def allocate(policy: Policy, demands: Mapping[JobTag, float], capacity: float) -> Allocation:
    """Water-fill ``capacity`` over the jobs of ``demands`` (tag -> demand, ``inf`` when
    backlogged) down ``policy``'s share tree.  ``fifo`` is treated as job-fair."""
    tags = list(demands)
    paths: dict[tuple[str, ...], float] = {}
    jobs: dict[str, float] = {}
    _fill(policy, tags, demands, (), 0, float(capacity), paths, jobs)
    return Allocation(float(capacity), jobs, paths, {})


def _fill(
    policy: Policy,
    tags: list[JobTag],
    demands: Mapping[JobTag, float],
    prefix: tuple[str, ...],
    depth: int,
    budget: float,
    paths: dict[tuple[str, ...], float],
    jobs: dict[str, float],
) -> None:
    if depth == len(policy.levels):
        rates = waterfill(budget, [policy.leaf_weight(t) for t in tags], [demands[t] for t in tags])
        for t, r in zip(tags, rates):
            paths[prefix + ("j:" + t.job_id,)] = r
            jobs[t.job_id] = r
        return
    level = policy.levels[depth]
    groups: dict[str, list[JobTag]] = {}
    for t in tags:
        key = ("g:" + t.group) if level == "group" else ("u:" + t.user)
        groups.setdefault(key, []).append(t)
    keys = list(groups)
    weights = [policy.node_weight(level, groups[k][0]) for k in keys]
    sub_demand = [math.fsum(demands[t] for t in groups[k]) for k in keys]
    for key, rate in zip(keys, waterfill(budget, weights, sub_demand)):
        paths[prefix + (key,)] = rate
        _fill(policy, groups[key], demands, prefix + (key,), depth + 1, rate, paths, jobs)


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """One job's measured I/O on one node over one window of ``seconds``."""

    tag: JobTag
    node: str
    bytes: int
    ops: int
    queued: int  # bytes waiting when the window closed
    seconds: float
    backlogged: bool  # had work waiting (it would have taken more)

    @property
    def rate(self) -> float:
        return self.bytes / self.seconds if self.seconds > 0 else 0.0

    @property
    def demand(self) -> float:
        return INF if self.backlogged else self.rate


def allocate_usage(policy: Policy, usage: Iterable[NodeUsage], capacity: float) -> Allocation:
    """The global allocation from every node's reports, with each multi-node job's rate split
    over its nodes (see the module docstring)."""
    by_job: dict[str, list[NodeUsage]] = {}
    tags: dict[str, JobTag] = {}
    for u in usage:
        by_job.setdefault(u.tag.job_id, []).append(u)
        old = tags.get(u.tag.job_id)
        if old is None or u.tag.nodes > old.nodes:  # nodes disagree mid-resize: the larger
            tags[u.tag.job_id] = u.tag
    demands = {tags[j]: math.fsum(u.demand for u in us) for j, us in by_job.items()}
    alloc = allocate(policy, demands, capacity)
    nodes: dict[tuple[str, str], float] = {}
    for job_id, us in by_job.items():
        for u, r in zip(us, split_nodes(alloc.jobs[job_id], us)):
            nodes[(job_id, u.node)] = r
    return Allocation(alloc.capacity, alloc.jobs, alloc.paths, nodes)


def split_nodes(rate: float, usage: Sequence[NodeUsage]) -> list[float]:
    """One job's ``rate`` over its nodes: nodes that are not backlogged first get the rate
    they used (scaled down together if it does not fit), backlogged nodes share the rest in
    proportion to bytes served plus bytes queued; with no backlogged node the rest is spread
    over all nodes the same way."""
    used = [0.0 if u.backlogged else u.rate for u in usage]
    need = math.fsum(used)
    if need >= rate:
        return [rate * x / need if need > 0 else rate / len(usage) for x in used]
    busy = [u.backlogged for u in usage]
    if not any(busy):
        busy = [True] * len(usage)
    weights = [max(float(u.bytes + u.queued), 1.0) if b else 0.0 for u, b in zip(usage, busy)]
    total_w = math.fsum(weights)
    spare = rate - need
    return [x + spare * w / total_w for x, w in zip(used, weights)]
