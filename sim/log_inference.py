"""What a log shows of its site's scheduling world: its size, its partitions as node pools,
per-user limits in the recorded concurrency, and how each priority setting ranks the
recorded ``Priority`` column. The candidates :func:`sim.fit.fit` chooses among.

- the cluster's size: at least the recorded schedule's peak use (a headerless log starts
  from it, never from its largest job);
- node pools, where the log names partitions (queues): the partitions sharing every node,
  each a pool of its recorded peak use, or some nested in others, tried against one pool
  and no partitions (:func:`pool_candidates`);
- per-user limits on running jobs and nodes where the recorded concurrency shows a wall (at
  least ``WALL_USERS`` users reach the same maximum and almost none pass it; those who do
  keep limits of their own at their recorded maxima), or a node cap at one of the largest
  per-user maxima (a soft limit a few users passed);
- where the log records each job's priority (a sacct ``Priority`` column), how each of
  ``PRIORITY_SETTINGS`` ranks it at submission (:func:`priority_fit`).
"""

from __future__ import annotations

import math

import numpy as np

from sim.availability import recorded_usage
from sim.config import SlurmConfig
from sim.fidelity import spearman
from sim.limit_breaks import WALL_USERS, per_user_max
from sim.limits import QosLimits, UserLimit
from sim.priority import submit_priorities
from sim.profile import (
    PART_NAME,
    PRIORITY_SETTINGS,
    UNNAMED,
    aliases_of,
    partition_names,
    priority_lines,
)
from sim.traces.model import Trace

#: fewer fit-part jobs with a recorded priority: the priority is chosen by the replays' loss
MIN_RECORDED_PRIORITIES = 20
MAX_CAPS = 6
#: more partitions than this are tried on shared nodes only (a pool each would make the
#: scheduler passes slow and the nesting search quadratic)
MAX_POOLS = 16
#: a partition holding fewer of the log's jobs than this share keeps the lowest tier, and
#: pools are tried only where two partitions hold at least this share each (a pool for a
#: handful of jobs moves the loss by less than their share, and pools replay many times
#: slower: 25x on RICC's 448k jobs)
MIN_PARTITION_SHARE = 0.01


def cluster_size(trace: Trace) -> tuple[int, int]:
    """(size to simulate, recorded peak): the trace's own size, raised to the recorded
    schedule's peak use (a headerless log: the peak, never its largest job)."""
    peak = recorded_usage(trace).peak
    own = trace.total_units or 0
    return max(own, peak, int(trace.units.max()) if len(trace) else 1), peak


def log_partitions(trace: Trace) -> list[str]:
    """The partitions the log names (UNNAMED for its jobs that name none), sorted; empty
    when it names fewer than two, or a name a ``slurm.conf`` could not hold."""
    parts = set(trace.partitions)
    if UNNAMED in parts and "" in parts:  # a partition of that name, and jobs naming none
        return []
    uniq = sorted(p or UNNAMED for p in parts)
    if len(uniq) < 2 or not all(PART_NAME.fullmatch(u) for u in uniq):
        return []
    return uniq


def tier_candidates(trace: Trace, mask: np.ndarray) -> list[dict[str, int]]:
    """The partition priority tiers the fit tries (Slurm's ``PriorityTier``: a higher
    tier's jobs are scheduled first, as an express queue's): one tier; the partition whose
    jobs in ``mask`` (the fit part) waited least for their size above all others; and each
    partition a tier of its own, the less its jobs waited for their size the higher. A
    partition's wait for its size is its jobs' total wait over what the other partitions'
    jobs of the same size (a power of two) waited on average: larger jobs wait longer
    under any order. Partitions with under ``MIN_PARTITION_SHARE`` of those jobs stay in the
    lowest tier. Only ``[{}]`` where the log names fewer than two partitions."""
    parts = log_partitions(trace)
    if not parts:
        return [{}]
    names = partition_names(trace)
    wait = trace.recorded_start - trace.submit
    known = mask & np.isfinite(wait)
    size = np.floor(np.log2(np.maximum(trace.units, 1))).astype(np.int64)
    score: dict[str, float] = {}
    for p in parts:
        own = known & (names == p)
        if own.sum() < max(1, MIN_PARTITION_SHARE * known.sum()):
            continue
        other = known & (names != p)
        total = np.bincount(size[other], weights=wait[other], minlength=size.max() + 1)
        count = np.bincount(size[other], minlength=size.max() + 1)
        seen = own & (count[size] > 0)
        expected = float((total[size[seen]] / count[size[seen]]).sum())
        if seen.any() and expected > 0:
            score[p] = float(wait[seen].sum()) / expected
    if len(score) < 2:
        return [{}]
    ranked = sorted(score, key=lambda p: (score[p], p), reverse=True)  # most waiting first
    express = {p: 2 if p == ranked[-1] else 1 for p in parts}
    each = {p: 1 for p in parts} | {p: i + 2 for i, p in enumerate(ranked)}
    out = [{}, express]
    return out + ([each] if len(ranked) > 2 else [])


def nested_pools(trace: Trace, pools: dict[str, int]) -> dict[str, str]:
    """Partitions whose nodes may be some of a larger partition's: together the two never
    used more than the larger one's peak (a debug partition on some batch nodes). Each maps
    to the largest such partition, itself not nested; smallest first."""
    names = partition_names(trace)
    out: dict[str, str] = {}
    for small in sorted(pools, key=pools.__getitem__):
        for big in sorted(pools, key=pools.__getitem__, reverse=True):
            if big == small or big in out or pools[big] < pools[small]:
                continue
            both = recorded_usage(trace.select((names == small) | (names == big))).peak
            if both <= pools[big]:
                out[small] = big
                break
    parents = set(out.values())
    return {k: v for k, v in out.items() if k not in parents}


def pool_candidates(trace: Trace) -> list[object]:
    """The partition worlds the fit tries, as (pools, nested, shared partitions): one pool
    without partitions; where the log names several, also the partitions sharing every
    node, each a pool of its own, and (where the recorded use allows) some nested in
    others (:func:`nested_pools`); pools only up to ``MAX_POOLS`` partitions, and only
    where two of them hold ``MIN_PARTITION_SHARE`` of the jobs or more. Where others hold
    less, also pools of those two or more alone (:func:`major_pools`), at any number of
    partitions."""
    out: list[object] = [({}, {}, [])]
    parts = log_partitions(trace)
    if parts:
        out.append(({}, {}, parts))
    names = partition_names(trace)
    large = sum(int((names == p).sum()) >= MIN_PARTITION_SHARE * len(trace) for p in parts)
    if parts and len(parts) <= MAX_POOLS and large >= 2:
        own = partition_pools(trace)
        out.append((own, {}, []))
        inside = nested_pools(trace, own)
        if inside:
            out.append((own, inside, []))
    split = major_pools(trace) if large < len(parts) else None
    if (
        split is not None and len(split[0]) - len(split[1]) <= MAX_POOLS
    ):  # the smaller partitions' jobs on the larger ones' nodes
        out.append((*split, []))
    return out


def major_pools(
    trace: Trace, within: int | None = None
) -> tuple[dict[str, int], dict[str, str]] | None:
    """Pools of the partitions that hold ``MIN_PARTITION_SHARE`` of the log's jobs or more,
    the others' jobs run on one of them: (pools, aliases). A smaller partition is an alias
    of (has the same nodes as) the largest pool whose recorded peak holds the two together,
    else of the largest pool; each pool is the recorded peak of its jobs and its aliases'.
    ``pools`` names every partition (an alias with its pool's units), as a profile's pools
    and ``nested`` do. None where fewer than two partitions hold that share, or where their
    own peaks pass ``within`` units together (before the others are placed)."""
    parts = log_partitions(trace)
    names = partition_names(trace)
    major = [p for p in parts if (names == p).sum() >= MIN_PARTITION_SHARE * len(trace)]
    if len(major) < 2:
        return None
    own = {p: recorded_usage(trace.select(names == p)).peak for p in major}
    if within is not None and sum(own.values()) > within:
        return None
    by_size = sorted(major, key=lambda p: (-own[p], p))
    home: dict[str, str] = {}
    for p in parts:
        if p not in own:
            home[p] = next(
                (
                    b
                    for b in by_size
                    if recorded_usage(trace.select((names == p) | (names == b))).peak <= own[b]
                ),
                by_size[0],
            )
    sizes = {
        b: max(1, recorded_usage(trace.select(np.isin(names, [b, *aliases_of(home, b)]))).peak)
        for b in major
    }
    return {p: sizes[home.get(p, p)] for p in parts}, home


def stated_pools(trace: Trace) -> tuple[dict[str, int], dict[str, str]] | None:
    """:func:`major_pools` where they fit the size the log states: the flag-free world's
    pools (disjoint machines under one header, such as a cluster's thin and fat nodes).
    None without a stated size, or where the pools' peaks sum to more than it (the
    partitions share nodes)."""
    if not trace.total_units or not trace.size_stated:
        return None
    split = major_pools(trace, within=trace.total_units)
    if split is None:
        return None
    pools, aliases = split
    if sum(v for k, v in pools.items() if k not in aliases) > trace.total_units:
        return None
    return split


def partition_pools(trace: Trace) -> dict[str, int]:
    """Each of the log's partitions (:func:`log_partitions`) and its recorded peak use: the
    pools of a cluster whose partitions share no node; empty when there are none."""
    names = partition_names(trace)
    return {p: max(1, recorded_usage(trace.select(names == p)).peak) for p in log_partitions(trace)}


def user_maxima(trace: Trace, mask: np.ndarray) -> tuple[dict[int, int], dict[int, int]]:
    """Per user, the most jobs and the most units the recorded schedule ran at once."""
    start, end, units, users = _recorded(trace, mask)
    jobs = per_user_max(start, end, np.ones(units.size, np.int64), users)
    return jobs, per_user_max(start, end, units, users)


def _recorded(trace: Trace, mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """The recorded start, end, units and user of the jobs in ``mask`` that started."""
    m = mask & np.isfinite(trace.recorded_start)
    start = trace.recorded_start[m]
    return (
        start,
        start + np.maximum(trace.runtime[m], 0),
        trace.units[m].astype(np.int64),
        trace.user[m],
    )


def wall(maxima: dict[int, int]) -> int | None:
    """A limit the maxima show: the largest value at least ``WALL_USERS`` users reach,
    passed by at most 1 % of the users (at least one); None when there is none."""
    values = np.array(sorted(maxima.values()))
    if not values.size:
        return None
    uniq, counts = np.unique(values, return_counts=True)
    for v, c in zip(uniq[::-1], counts[::-1], strict=True):
        if c >= WALL_USERS and v > 1:
            above = int((values > v).sum())
            return int(v) if above <= max(1, 0.01 * values.size) else None
    return None


def infer_limits(trace: Trace, mask: np.ndarray) -> QosLimits | None:
    """Per-user limits on running jobs and nodes shown by the recorded concurrency of the
    jobs in ``mask`` (larger jobs are exempt from the node cap: they ran; so are the few
    users who ran past a wall: :func:`past_walls`)."""
    jobs, nodes = user_maxima(trace, mask)
    lj, ln = wall(jobs), wall(nodes)
    if lj is None and ln is None:
        return None
    return QosLimits(
        max_jobs_per_user=lj,
        max_nodes_per_user=ln,
        larger_jobs_exempt=True,
        user_limits=past_walls(trace, mask, lj, ln, jobs),
    )


def past_walls(
    trace: Trace,
    mask: np.ndarray,
    jobs: int | None,
    units: int | None,
    job_maxima: dict[int, int] | None = None,
) -> tuple[UserLimit, ...]:
    """The users whose recorded schedule (the jobs in ``mask``) ran more than ``jobs`` jobs,
    or more than ``units`` units in jobs of at most ``units`` each, at once, with limits of
    their own at their recorded maxima (``QosLimits.user_limits``; ``job_maxima``:
    :func:`user_maxima`'s jobs over ``mask``, where the caller has them). A wall lets a few
    users pass it (:func:`wall`); the site ran them under another QOS, so a replay that
    held them to it would hold them to a limit their own record breaks."""
    most_jobs: dict[int, int] = {}
    most_units: dict[int, int] = {}
    if jobs is not None:
        most_jobs = job_maxima if job_maxima is not None else user_maxima(trace, mask)[0]
    if units is not None:
        start, end, size, users = _recorded(trace, mask & (trace.units <= units))
        most_units = per_user_max(start, end, size, users)
    past = sorted(
        {u for u, v in most_jobs.items() if jobs is not None and v > jobs}
        | {u for u, v in most_units.items() if units is not None and v > units}
    )
    return tuple(
        (
            u,
            None if jobs is None else max(jobs, most_jobs.get(u, 0)),
            None if units is None else max(units, most_units.get(u, 0)),
            None,
        )
        for u in past
    )


def limit_candidates(trace: Trace, mask: np.ndarray, size: int) -> list[QosLimits]:
    """The per-user limits the fit tries: the walls (:func:`infer_limits`), and node caps at
    the largest per-user maxima of at least a quarter of the cluster (a soft limit, passed
    by a few users, shows no wall; at most ``MAX_CAPS``), with the jobs wall if any. The
    users past the jobs wall keep their own limits, so their maxima are no cap."""
    walls = infer_limits(trace, mask)
    most, nodes = user_maxima(trace, mask)
    lj = walls.max_jobs_per_user if walls is not None else None
    out = [walls] if walls is not None else []
    past = past_walls(trace, mask, lj, None, most)
    own = {u[0] for u in past}
    caps = sorted(
        {v for u, v in nodes.items() if u not in own and 4 * v >= size and v < size},
        reverse=True,
    )
    for cap in caps[:MAX_CAPS]:
        lim = QosLimits(
            max_jobs_per_user=lj, max_nodes_per_user=cap, larger_jobs_exempt=True, user_limits=past
        )
        if lim not in out:
            out.append(lim)
    return out


def priority_fit(trace: Trace, mask: np.ndarray, units: int) -> dict[str, float]:
    """Spearman's rank correlation, over the jobs in ``mask`` that carry a recorded priority,
    of that priority with the one each ``PRIORITY_SETTINGS`` entry gives them as they are
    submitted (sim/priority.py's :func:`~sim.priority.submit_priorities`, fair-share usage
    from the recorded schedule) on a cluster of ``units``. Empty when fewer than
    ``MIN_RECORDED_PRIORITIES`` jobs carry one or the ranking is undefined (a constant
    column); settings with an undefined ranking are left out."""
    m = mask & np.isfinite(trace.recorded_priority)
    if m.sum() < MIN_RECORDED_PRIORITIES:
        return {}
    rec = trace.recorded_priority[m]
    out: dict[str, float] = {}
    for key in PRIORITY_SETTINGS:
        cfg = SlurmConfig.from_text("\n".join(priority_lines(key)) + "\n", f"priority {key}")
        rho = spearman(submit_priorities(trace, cfg, units)[m], rec)
        if math.isfinite(rho):
            out[key] = rho
    return out
