"""The backfill scheduler's map of free units over time (Slurm's ``node_space``).

A profile is two parallel lists: breakpoint times ``ts`` (ascending, ``ts[0]`` = now) and
``free[i]``, the units free on ``[ts[i], ts[i+1])``; the last entry extends to the horizon.
"""

from __future__ import annotations

import math
from bisect import bisect_left


class Profile:
    __slots__ = ("ts", "free", "horizon", "_first")

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
        # units -> earliest time with that many units free, and (units, duration) -> the
        # last earliest start found; reservations only lower the free counts, so both stay
        # lower bounds for the profile's lifetime.
        self._first: dict[object, float] = {}

    def earliest(self, units: int, duration: float) -> float | None:
        """Earliest start with ``units`` free for ``duration`` (cut at the horizon), or None
        when no start before the horizon exists."""
        ts, free = self.ts, self.free
        n = len(ts)
        first = self._first
        key = (units, duration)
        lb = first.get(key)
        if lb == math.inf:
            return None
        if lb is None:
            lb = first.get(units)
            i = 0 if lb is None else bisect_left(ts, lb)
            while i < n and free[i] < units:
                i += 1
            if i < n:
                first[units] = ts[i]
        else:
            i = bisect_left(ts, lb)
        while i < n:
            if free[i] < units:
                i += 1
                continue
            start = ts[i]
            end = start + duration
            j = i + 1
            while j < n and ts[j] < end:
                if free[j] < units:
                    break
                j += 1
            else:
                first[key] = start
                return start
            i = j + 1
        first[key] = math.inf
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
