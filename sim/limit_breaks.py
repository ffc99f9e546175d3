"""Where a log's recorded schedule breaks the per-user limits fitted to its past.

A site changes its QOS: LS6's record keeps every user within 16 nodes for four months, then
six users run 19-32 nodes at once with jobs of 16 nodes or fewer. A replay must not hold a
limit that its own record breaks (as its availability is never below the recorded use), so
:func:`limit_steps` finds, for each limit on running jobs, the moment its record stops
obeying it and the tightest limit the record obeys from then on.
"""

from __future__ import annotations

import math
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
    broken at the first moment ``users`` distinct users held to it have run above it; from
    then on it is the largest use any of them shows (with a raised unit cap, the jobs it
    exempts are those above the new cap). Any other user who runs above the limit they are
    held to (the QOS's, or their own) gets a limit of their own from that moment: the most
    they run from then on (another QOS: no user's own record is held to a limit it breaks).
    Empty where the record obeys the limits, or has no recorded starts."""
    if limits is None or not limits.run_limited:
        return []
    known = np.isfinite(trace.recorded_start)
    if not known.any():
        return []
    start = trace.recorded_start[known]
    end = start + np.maximum(trace.runtime[known], 0)
    units = trace.units[known].astype(np.int64)
    who = trace.user[known]
    changes: dict[float, dict[str, int]] = {}
    raises: dict[float, dict[int, dict[int, int]]] = {}  # time -> user -> limit k -> cap
    jobs_cap = limits.max_jobs_per_user
    if jobs_cap is not None:
        sweep = running_totals(start, end, np.ones(units.size, np.int64), who)
        own = _own(limits, 0)
        found = _break(sweep, jobs_cap, users, own)
        if found is not None:
            changes.setdefault(found[0], {})["max_jobs_per_user"] = found[1]
        _raise_users(sweep, jobs_cap, own, found, 0, raises)
    cap = limits.max_nodes_per_user
    if cap is not None:
        own = _own(limits, 1)
        counted = units <= cap if limits.larger_jobs_exempt else np.ones(units.size, bool)
        sweep = running_totals(start[counted], end[counted], units[counted], who[counted])
        found = _break(sweep, cap, users, own)
        if found is None:
            _raise_users(sweep, cap, own, None, 1, raises)
        else:
            t, new = found
            while limits.larger_jobs_exempt:  # raise the cap until it holds its own jobs
                wider = units <= new
                later = running_totals(start[wider], end[wider], units[wider], who[wider])
                after = _max_use_from(_without(later, own), t)
                if after <= new:
                    break
                new = after
            changes.setdefault(t, {})["max_nodes_per_user"] = new
            _raise_users(sweep, cap, own, (t, math.inf), 1, raises)  # before the step
            if limits.larger_jobs_exempt and new != cap:
                wider = units <= new
                sweep = running_totals(start[wider], end[wider], units[wider], who[wider])
            raised = {u: c[1] for at in raises.values() for u, c in at.items() if 1 in c}
            _raise_users(sweep, new, {**own, **raised}, (t, new), 1, raises, since=t)
    out: list[tuple[float, QosLimits]] = []
    now = limits
    for t in sorted(changes.keys() | raises.keys()):
        now = _with(now, changes.get(t, {}))
        if t in raises:
            q = (now.max_jobs_per_user, now.max_nodes_per_user, now.max_cpus_per_user)
            now = now.with_user_limits(
                {u: (c.get(0, q[0]), c.get(1, q[1]), c.get(2, q[2])) for u, c in raises[t].items()}
            )
        out.append((t, now))
    return out


def _with(limits: QosLimits, values: dict[str, int]) -> QosLimits:
    return replace(limits, **values)  # type: ignore[arg-type]  # the int fields only


def _own(limits: QosLimits, k: int) -> dict[int, float]:
    """The users with a limit ``k`` (jobs, nodes) of their own above the QOS's, and that
    limit (no limit: infinite)."""
    qos = (limits.max_jobs_per_user, limits.max_nodes_per_user)[k]
    out = {}
    for entry in limits.user_limits:
        c = limits.caps(entry[0])[k]
        if c != qos:
            out[entry[0]] = math.inf if c is None else float(c)
    return out


def _without(sweep: Sweep, own: dict[int, float]) -> Sweep:
    """``sweep`` without the users in ``own``."""
    if not own:
        return sweep
    keep = ~np.isin(sweep[0], list(own))
    return sweep[0][keep], sweep[1][keep], sweep[2][keep]


def _raise_users(
    sweep: Sweep,
    cap: int,
    own: dict[int, float],
    step: tuple[float, float] | None,
    k: int,
    out: dict[float, dict[int, dict[int, int]]],
    since: float = -math.inf,
) -> None:
    """Add to ``out`` (time -> user -> limit ``k`` -> cap) each user's first moment at or
    after ``since`` above the limit they are held to (``cap``, their ``own``, the higher of
    their own and ``step``'s (time, cap) from its time on), with the most they run from
    then on."""
    u, t, total = sweep
    mine = np.full(u.size, cap, float)
    for user, c in own.items():  # a few users
        mine[u == user] = c
    if step is not None:
        later = t >= step[0]
        mine[later] = np.maximum(mine[later], step[1])
    over = (total > mine) & (t >= since)
    users, first = np.unique(u[over], return_index=True)
    for user, i in zip(users, np.flatnonzero(over)[first], strict=True):
        last = int(np.searchsorted(u, user, side="right"))
        out.setdefault(float(t[i]), {}).setdefault(int(user), {})[k] = int(total[i:last].max())


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


def _break(sweep: Sweep, cap: int, users: int, own: dict[int, float]) -> tuple[float, int] | None:
    """(when ``users`` distinct users held to ``cap`` (not in ``own``) have run above it, the
    most any of them runs from then on), or None when fewer ever do."""
    sweep = _without(sweep, own)
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
