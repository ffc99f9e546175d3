"""Recorded waits no capacity explains: jobs that could have run beside the recorded schedule.

A job that, at some moment of its recorded wait, would have fit for its whole time limit in
the units the recorded schedule left idle (within what was available) was not waiting for
nodes: it was held, waited on a dependency or a begin time, or on a limit or node feature
the log does not show. No replay of the site's capacity reproduces such a wait, so the
replay report names its share. :func:`waited_beside_idle` finds them from the record alone.
"""

from __future__ import annotations

import math

import numpy as np

from sim.availability import Availability, Usage, fitted, recorded_usage
from sim.traces.model import Trace

#: the time step (seconds) of the idle timeline: a bin's idle units are the fewest in it
BIN_S = 900.0
#: a job's time limit in bins is rounded up to the next of these steps (x1.25 apart), so
#: that one pass serves many limits; rounding up only ever finds fewer jobs
_GROWTH = 1.25


def _sparse(a: np.ndarray, op: np.ufunc) -> list[np.ndarray]:
    """Level ``k`` holds ``op`` over each window of ``2**k`` entries from each index."""
    levels = [a]
    k = 1
    while (1 << k) <= len(a):
        prev, half = levels[-1], 1 << (k - 1)
        levels.append(op(prev[:-half], prev[half:]))
        k += 1
    return levels


def _query(levels: list[np.ndarray], op: np.ufunc, lo: np.ndarray, size: np.ndarray) -> np.ndarray:
    """``op`` over ``[lo, lo + size)`` for each pair (every ``size`` >= 1, in range)."""
    k = np.floor(np.log2(size)).astype(np.int64)
    out = np.empty(len(lo), dtype=levels[0].dtype)
    for level in np.unique(k).tolist():
        m = k == level
        x = levels[level]
        out[m] = op(x[lo[m]], x[lo[m] + size[m] - (1 << level)])
    return out


def waited_beside_idle(
    trace: Trace,
    total: int,
    availability: Availability | None = None,
    use: Usage | None = None,
) -> np.ndarray:
    """Per trace job, whether at some moment of its recorded wait it would have fit, for
    its whole time limit, in the units the recorded schedule left idle: ``total`` (or
    ``availability``'s units at each moment) less the most used in each ``BIN_S`` bin,
    from the recorded schedule's first start on (``use``: the trace's
    :func:`~sim.availability.recorded_usage`, where the caller has it). Jobs without a
    recorded start, or that waited under two bins, are never flagged."""
    out = np.zeros(len(trace), dtype=bool)
    use = recorded_usage(trace) if use is None else use
    if len(use.times) < 2:
        return out
    t0 = math.floor(use.times[0] / BIN_S) * BIN_S
    n = int(math.ceil((use.times[-1] - t0) / BIN_S)) + 1
    cap = np.full(n, total, dtype=np.int64)
    if availability is not None and availability.times:
        edges = t0 + BIN_S * np.arange(n + 1)
        at = np.searchsorted(np.asarray(availability.times), edges, side="right") - 1
        units = np.where(at >= 0, np.asarray(availability.units)[np.maximum(at, 0)], total)
        cap = np.minimum(units[:-1], units[1:])  # a step inside a bin: its lower side
    idle = _sparse(cap - use.binned_max(t0, BIN_S, n), np.minimum)
    wait = trace.recorded_start - trace.submit
    cand = np.flatnonzero(np.isfinite(wait) & (wait >= 2 * BIN_S))
    first = np.maximum(np.ceil((trace.submit[cand] - t0) / BIN_S).astype(np.int64), 0)
    last = np.floor((trace.recorded_start[cand] - t0) / BIN_S).astype(np.int64)  # excluded
    need = np.ceil(trace.limit[cand] / BIN_S).astype(np.int64) + 1
    steps = np.unique(np.ceil(_GROWTH ** np.arange(64)).astype(np.int64))
    at = np.searchsorted(steps, need)
    need = np.where(at < len(steps), steps[np.minimum(at, len(steps) - 1)], n + 1)
    for length in np.unique(need).tolist():
        if length > n:
            continue
        jobs = np.flatnonzero(need == length)
        starts = n - length + 1  # windows [b, b + length) inside the timeline
        lo, hi = first[jobs], np.minimum(last[jobs], starts)
        ok = hi > lo
        if not ok.any():
            continue
        b = np.arange(starts)
        fewest = _query(idle, np.minimum, b, np.full(starts, length))
        best = _query(_sparse(fewest, np.maximum), np.maximum, lo[ok], hi[ok] - lo[ok])
        out[cand[jobs[ok]]] = best >= trace.units[cand[jobs[ok]]]
    return out


def narrowed_beside_idle(
    trace: Trace, units: int, *, window: float, narrow: float | None, use: Usage | None = None
) -> Availability:
    """The most ``units`` the recorded schedule used within ``window`` seconds around each
    moment (:func:`sim.availability.fitted`), narrowed to ``narrow`` seconds during the
    recorded waits of the jobs that, at some moment of their wait, would have fit for their
    whole time limit in the units that timeline left idle (:func:`waited_beside_idle`): the
    record shows that the scheduler did not have those units then. A schedule recorded on a
    machine whose nodes were all up leaves few such jobs, and keeps the window. ``narrow``
    None: the window alone."""
    use = recorded_usage(trace) if use is None else use
    wide = fitted(use, units, window=window)
    if narrow is None:
        return wide
    beside = waited_beside_idle(trace, units, wide, use)
    if not beside.any():
        return wide
    return fitted(
        use, units, window=window, waiting_trace=trace.select(beside), waiting_window=narrow
    )
