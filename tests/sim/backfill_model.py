"""A plain Python model of the backfill map (Slurm's ``node_space``): the oracle that
tests/sim/test_backfill_core.py checks the compiled core (sim/_backfill.c) against.

A profile is two parallel lists: breakpoint times ``ts`` (ascending, ``ts[0]`` = now) and
``free[i]``, the units free on ``[ts[i], ts[i+1])``; the last entry extends to the horizon.

Running jobs free their units in groups, as Slurm's select plugin sees them when it answers
the backfill scheduler's "when can this job start" (``_will_run_test`` in cons_common's
job_test.c, 22.05): it takes the running jobs in order of expected end and removes a group
at a time, and a job that fits after a group starts when the group's *last* job ends. The
groups are cut at a barrier: the first job's end rounded up to the next multiple of 30 s of
Unix time (a whole multiple moves on by 30 s). The first group holds the jobs ending by the
barrier + 30 s, and each further group's limit is the barrier + a window that doubles
(grows by ``bf_window_linear`` seconds instead, when set) until it takes in the next job.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Callable

from sim.mapparams import MapParams


def group_ends(
    ends: list[tuple[float, int, int]],
    window: float = 30.0,
    linear: float = 0.0,
    epoch: float = 0.0,
    end_shift: float = 0.0,
) -> list[tuple[float, int, int]]:
    """(time, tie, units) at which running jobs free their units in Slurm's groups;
    ``window <= 0`` keeps every end as it is. ``end_shift``: the map's ends less Slurm's
    own (the barrier is cut from Slurm's)."""
    if window <= 0 or not ends:
        return list(ends)
    out = []
    first = ends[0][0] - end_shift
    barrier = first + window - (first + epoch) % window + end_shift
    i, n = 0, len(ends)
    while i < n:
        units = 0
        while True:
            units += ends[i][2]
            i += 1
            if i == n or ends[i][0] > barrier + window:
                break
        out.append((ends[i - 1][0], 0, units))
        while i < n and ends[i][0] > barrier + window:
            window = window + linear if linear > 0 else window * 2
    return out


class Profile:
    __slots__ = ("ts", "free", "horizon")

    def __init__(
        self,
        now: float,
        free_now: int,
        ends: list[tuple[float, int, int]],
        horizon: float,
        min_step: float = 1.0,
        window: float = 0.0,
        linear: float = 0.0,
        epoch: float = 0.0,
        end_shift: float = 0.0,
    ) -> None:
        """``ends``: (expected end, tie, units) of running jobs, sorted by end. An end that is
        already due counts as ``min_step`` from now (the job is still being cleaned up);
        ``window`` > 0 frees them in Slurm's groups (:func:`group_ends`)."""
        ends = group_ends(ends, window, linear, epoch, end_shift)
        ts = [now]
        free = [free_now]
        cur = free_now
        floor = now + min_step
        for t, _, units in ends:
            if t >= horizon:
                break
            if t < floor:
                t = floor
            cur += units
            if t <= ts[-1]:
                free[-1] = cur
            else:
                ts.append(t)
                free.append(cur)
        self.ts = ts
        self.free = free
        self.horizon = horizon

    def earliest(self, units: int, duration: float) -> float | None:
        """Earliest start with ``units`` free for ``duration`` (cut at the horizon), or None
        when no start before the horizon exists. A plain scan: no caches."""
        ts, free = self.ts, self.free
        n = len(ts)
        for i in range(n):
            if free[i] < units:
                continue
            end = ts[i] + duration
            j = i + 1
            while j < n and ts[j] < end and free[j] >= units:
                j += 1
            if j == n or ts[j] >= end:
                return ts[i]
        return None

    def reserve(self, start: float, duration: float, units: int) -> None:
        """Take ``units`` over ``[start, start + duration)`` (cut at the horizon)."""
        end = min(start + duration, self.horizon)
        if end <= start:
            return
        ts, free = self.ts, self.free
        i = bisect_left(ts, start)
        if i == len(ts) or ts[i] != start:
            ts.insert(i, start)
            free.insert(i, free[i - 1])
        k = bisect_left(ts, end, i)
        if k == len(ts) or ts[k] != end:
            ts.insert(k, end)
            free.insert(k, free[k - 1])
        for m in range(i, k):
            free[m] -= units


def whole_nodes(units: int, per_node: int, total: int) -> int:
    if per_node <= 1:
        return units
    return min(-(-units // per_node) * per_node, total)


def round_end(t: float, res: float) -> float:
    return t if math.isinf(t) or res <= 1 else math.ceil(t / res) * res


#: at a job's turn (:func:`plan_model`): None (tested), PASSED (passed over before the test,
#: uncounted) or HELD (counted, but it neither starts nor reserves)
PASSED, HELD = "passed", "held"


def plan_model(
    jobs: list[tuple[int, float]],
    n_test: int,
    p: MapParams,
    turn: Callable[[int], str | None] | None = None,
    started: Callable[[int], None] | None = None,
) -> list[int]:
    """The backfill pass over (units, limit) jobs in priority order: indices started now.
    Walks every tested job (no early stop) and builds a fresh map for every job. ``turn(i)``
    says what a limit does to job ``i`` at its turn (PASSED, HELD or None), after
    ``started(j)`` has been called for each job ``j`` before it that started."""
    now, free, ends, horizon, min_step = p.now, p.free, list(p.ends), p.horizon, p.min_step
    per_node, total, window, linear, epoch, res = (
        p.per_node,
        p.total,
        p.window,
        p.linear,
        p.epoch,
        p.resolution,
    )
    held: list[tuple[float, float, int]] = []
    out = []
    tested = 0
    for i, (units, limit) in enumerate(jobs):
        if tested >= n_test:
            break
        gate = turn(i) if turn is not None else None
        if gate == PASSED:
            continue
        tested += 1
        if gate == HELD:
            continue
        prof = Profile(now, free, ends, horizon, min_step, window, linear, epoch, p.end_shift)
        for r in held:
            prof.reserve(*r)
        t = prof.earliest(units, limit)
        if t is None:
            continue
        if t == now:
            out.append(i)
            free -= units
            insort(ends, (round_end(now + limit, res) + p.end_shift, -1, units))
            if started is not None:
                started(i)
        else:
            held.append((t, limit, whole_nodes(units, per_node, total)))
    return out


def estimate_model(jobs: list[tuple[int, float]], target: int, p: MapParams) -> float | None:
    """squeue --start for jobs[target]: every job before it reserves (whole nodes) first."""
    prof = Profile(
        p.now, p.free, p.ends, p.horizon, p.min_step, p.window, p.linear, p.epoch, p.end_shift
    )
    per_node, total = p.per_node, p.total
    for i, (units, limit) in enumerate(jobs[: target + 1]):
        t = prof.earliest(units, limit)
        if i == target:
            return t
        if t is not None:
            prof.reserve(t, limit, whole_nodes(units, per_node, total))
    return None
