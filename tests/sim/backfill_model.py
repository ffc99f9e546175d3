"""A plain Python model of the backfill map (Slurm's ``node_space``): the oracle that
tests/sim/test_backfill_core.py checks the compiled core (sim/_backfill.c) against.

A profile is two parallel lists: breakpoint times ``ts`` (ascending, ``ts[0]`` = now) and
``free[i]``, the units free on ``[ts[i], ts[i+1])``; the last entry extends to the horizon.
"""

from __future__ import annotations

from bisect import bisect_left


class Profile:
    __slots__ = ("ts", "free", "horizon")

    def __init__(
        self, now: float, free_now: int, ends: list[tuple[float, int, int]], horizon: float,
        min_step: float = 1.0,
    ) -> None:
        """``ends``: (expected end, tie, units) of running jobs, sorted by end. An end that is
        already due counts as ``min_step`` from now (the job is still being cleaned up)."""
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

    def fits_now(self, units: int, duration: float) -> bool:
        """Whether ``units`` are free from now for ``duration``."""
        ts, free = self.ts, self.free
        if free[0] < units:
            return False
        end = ts[0] + duration
        j = 1
        n = len(ts)
        while j < n and ts[j] < end:
            if free[j] < units:
                return False
            j += 1
        return True

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


def plan_model(jobs: list[tuple[int, float]], n_test: int, now: float, free: int, ends: list,
               horizon: float, min_step: float, per_node: int, total: int) -> list[int]:
    """The backfill pass over (units, limit) jobs in priority order: indices started now.
    Walks every tested job (no early stop), as Slurm does."""
    prof = Profile(now, free, ends, horizon, min_step)
    started = []
    for i, (units, limit) in enumerate(jobs[:n_test]):
        t = prof.earliest(units, limit)
        if t is None:
            continue
        if t == now:
            started.append(i)
            prof.reserve(t, limit, units)
        else:
            prof.reserve(t, limit, whole_nodes(units, per_node, total))
    return started


def estimate_model(jobs: list[tuple[int, float]], target: int, now: float, free: int, ends: list,
                   horizon: float, min_step: float, per_node: int, total: int) -> float | None:
    """squeue --start for jobs[target]: every job before it reserves (whole nodes) first."""
    prof = Profile(now, free, ends, horizon, min_step)
    for i, (units, limit) in enumerate(jobs[: target + 1]):
        t = prof.earliest(units, limit)
        if i == target:
            return t
        if t is not None:
            prof.reserve(t, limit, whole_nodes(units, per_node, total))
    return None
