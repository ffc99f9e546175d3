"""Where a log's recorded schedule breaks the per-user limits fitted to its past.

A site changes its QOS: LS6's record keeps every user within 16 nodes for four months, then
six users run 19-32 nodes at once with jobs of 16 nodes or fewer. A replay must not hold a
limit that its own record breaks (as its availability is never below the recorded use), so
:func:`limit_steps` finds, for each limit on running jobs, the moment its record stops
obeying it and the tightest limit the record obeys from then on.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sim.limits import QosLimits
from sim.traces.model import Trace

#: users that must reach a value for it to be a limit (a wall), or pass it for it to be broken
WALL_USERS = 3


def limit_steps(
    trace: Trace, limits: QosLimits | None, users: int = WALL_USERS
) -> list[tuple[float, QosLimits]]:
    """(time, limits from then on) where ``trace``'s recorded schedule breaks ``limits``.

    A limit (running jobs per user; units per user, over the jobs it does not exempt) is
    broken at the first moment ``users`` distinct users have run above it; from then on it
    is the largest per-user use the record shows (with a raised unit cap, the jobs it
    exempts are those above the new cap). Empty where the record obeys the limits, or has
    no recorded starts."""
    if limits is None or not limits.run_limited:
        return []
    known = np.isfinite(trace.recorded_start)
    if limits.exempt_users:  # their jobs neither count nor break the limits
        known &= ~np.isin(trace.user, list(limits.exempt_users))
    if not known.any():
        return []
    start = trace.recorded_start[known]
    end = start + np.maximum(trace.runtime[known], 0)
    units = trace.units[known].astype(np.int64)
    who = trace.user[known]
    changes: dict[float, dict[str, int]] = {}
    jobs_cap = limits.max_jobs_per_user
    if jobs_cap is not None:
        ones = np.ones(units.size, np.int64)
        found = _break(running_totals(start, end, ones, who), jobs_cap, users)
        if found is not None:
            changes.setdefault(found[0], {})["max_jobs_per_user"] = found[1]
    cap = limits.max_nodes_per_user
    if cap is not None:
        counted = units <= cap if limits.larger_jobs_exempt else np.ones(units.size, bool)
        sweep = running_totals(start[counted], end[counted], units[counted], who[counted])
        found = _break(sweep, cap, users)
        if found is not None:
            t, new = found
            while limits.larger_jobs_exempt:  # raise the cap until it holds its own jobs
                wider = units <= new
                sweep = running_totals(start[wider], end[wider], units[wider], who[wider])
                after = _max_use_from(sweep, t)
                if after <= new:
                    break
                new = after
            changes.setdefault(t, {})["max_nodes_per_user"] = new
    out: list[tuple[float, QosLimits]] = []
    now = limits
    for t in sorted(changes):
        now = _with(now, changes[t])
        out.append((t, now))
    return out


def _with(limits: QosLimits, values: dict[str, int]) -> QosLimits:
    return replace(limits, **values)  # type: ignore[arg-type]  # the int fields only


def running_totals(
    start: np.ndarray, end: np.ndarray, amount: np.ndarray, who: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each user's running total of ``amount`` (jobs, units) after each of their jobs'
    starts and ends: (user, time, total), sorted by user then time (ends before starts at
    one moment)."""
    n = start.size
    t = np.r_[start, end]
    d = np.r_[amount, -amount]
    u = np.r_[who, who]
    o = np.lexsort((np.sign(d), t, u))
    t, d, u = t[o], d[o], u[o]
    total = np.cumsum(d)
    first = np.flatnonzero(np.r_[True, u[1:] != u[:-1]]) if 2 * n else np.zeros(0, np.int64)
    offset = np.zeros(2 * n, np.int64)
    if first.size:
        before = np.r_[0, total[first[1:] - 1]]
        offset = np.repeat(before, np.diff(np.r_[first, 2 * n]))
    return u, t, total - offset


Sweep = tuple[np.ndarray, np.ndarray, np.ndarray]  # running_totals' (user, time, total)


def _break(sweep: Sweep, cap: int, users: int) -> tuple[float, int] | None:
    """(when ``users`` distinct users have run above ``cap``, the most any user runs from
    then on), or None when fewer ever do."""
    u, t, total = sweep
    over = total > cap
    _, first = np.unique(u[over], return_index=True)  # each user's first time over
    firsts = np.sort(t[over][first])
    if firsts.size < users:
        return None
    at = float(firsts[users - 1])
    return at, _max_use_from(sweep, at)


def _max_use_from(sweep: Sweep, at: float) -> int:
    """The most any user runs at once at or after ``at``: each user's total after their
    events from then on, and the one in force at ``at`` (after their last event before)."""
    u, t, total = sweep
    if not u.size:
        return 0
    late = t >= at
    best = int(total[late].max()) if late.any() else 0
    first = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    before = np.add.reduceat((~late).astype(np.int64), first)  # a prefix of each user's
    last = (first + before - 1)[before > 0]
    return max(best, int(total[last].max())) if last.size else best


def per_user_max(
    start: np.ndarray, end: np.ndarray, amount: np.ndarray, who: np.ndarray
) -> dict[int, int]:
    """Per user, the most of ``amount`` their jobs held at once."""
    u, _, total = running_totals(start, end, amount, who)
    if not u.size:
        return {}
    first = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    peaks = np.maximum.reduceat(total, first)
    return {int(k): int(v) for k, v in zip(u[first], peaks, strict=True)}
