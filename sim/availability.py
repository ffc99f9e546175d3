"""Units available over time: the recorded schedule's use and a timeline fitted to it.

A site's nodes are not all schedulable all the time (drains, maintenance, nodes lent to
queues the log does not list). :class:`Availability` is a step function the engine applies
natively (``Simulator(availability=...)``): from ``times[i]`` on, ``units[i]`` units may be
allocated; before the first step the whole cluster. When it drops below what is running, no
job starts until enough have ended (Slurm's drain). :func:`recorded_usage` is what a log's
recorded schedule held at each moment; :func:`fitted` is a timeline never below it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from sim.pools import Pools
from sim.traces.model import Trace


@dataclass(frozen=True, slots=True)
class Availability:
    """Units available from ``times[i]`` (seconds from t = 0, ascending) on."""

    times: tuple[float, ...]
    units: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.times) != len(self.units):
            raise ValueError("availability: times and units differ in length")
        if any(b <= a for a, b in zip(self.times, self.times[1:], strict=False)):
            raise ValueError("availability: times must be strictly ascending")
        if any(u < 0 for u in self.units):
            raise ValueError("availability: units must be >= 0")

    def at(self, t: float, total: int) -> int:
        """Units available at ``t`` (``total`` before the first step)."""
        i = int(np.searchsorted(np.asarray(self.times), t, side="right")) - 1
        return total if i < 0 else self.units[i]

    def scaled(self, factor: float, total: int) -> Availability:
        """The same timeline on a cluster ``factor`` times as large: every step's units
        times ``factor``, rounded, at most ``total`` (the same share of the cluster
        drained at the same moments)."""
        return Availability(self.times, tuple(min(total, round(u * factor)) for u in self.units))


def availability_steps(
    availability: Availability | Mapping[str, Availability] | None,
    pools: Pools | None,
    total_units: int,
) -> tuple[list[float], list[int], list[int]]:
    """A simulator's availability steps in time order: (times, units, segment; -1 for the
    whole cluster). With node pools, ``availability`` is per partition, each one pool that
    no other partition shares."""
    if availability is None:
        return [], [], []
    if isinstance(availability, Availability):
        if not availability.times:
            return [], [], []
        if pools is not None:
            raise ValueError("with node pools (a Nodes= split) availability is given per partition")
        if max(availability.units) > total_units:
            raise ValueError(
                f"availability of {max(availability.units)} units exceeds the cluster's "
                f"{total_units}"
            )
        n = len(availability.times)
        return list(availability.times), list(availability.units), [-1] * n
    if pools is None:
        raise ValueError("availability per partition needs node pools (a Nodes= split)")
    steps: list[tuple[float, int, int]] = []
    for name, av in availability.items():
        segs = pools.part_segs.get(name)
        if segs is None:
            raise ValueError(f"availability for an unknown partition {name!r}")
        shared = any(  # by another partition, not of the same nodes (an alias)
            segs[0] in other and other != segs for p, other in pools.part_segs.items() if p != name
        )
        if len(segs) != 1 or shared:
            raise ValueError(f"availability per partition: {name!r} shares its nodes")
        size = pools.seg_size[segs[0]]
        if av.units and max(av.units) > size:
            raise ValueError(
                f"availability of {max(av.units)} units exceeds partition {name!r}'s {size}"
            )
        steps += [(t, segs[0], u) for t, u in zip(av.times, av.units, strict=True)]
    steps.sort()
    return [t for t, _, _ in steps], [u for _, _, u in steps], [g for _, g, _ in steps]


@dataclass(frozen=True, slots=True)
class Usage:
    """The recorded schedule's units in use: ``units[i]`` from ``times[i]`` on."""

    times: np.ndarray
    units: np.ndarray

    @property
    def peak(self) -> int:
        return int(self.units.max()) if len(self.units) else 0

    @property
    def peak_time(self) -> float:
        return float(self.times[int(np.argmax(self.units))]) if len(self.units) else math.nan

    def share_above(self, level: int) -> float:
        """The share of the recorded span (first to last change) during which more than
        ``level`` units were in use."""
        if len(self.times) < 2:
            return 0.0
        dt = np.diff(self.times)
        return float(dt[self.units[:-1] > level].sum() / dt.sum())

    def binned_max(self, t0: float, step: float, n: int) -> np.ndarray:
        """The largest use in each of ``n`` bins ``[t0 + k step, t0 + (k+1) step)``."""
        edges = t0 + step * np.arange(n)
        at = np.searchsorted(self.times, edges, side="right") - 1
        out = np.where(at >= 0, self.units[np.maximum(at, 0)], 0).astype(np.int64)
        k = ((self.times - t0) // step).astype(np.int64)
        ok = (k >= 0) & (k < n)
        np.maximum.at(out, k[ok], self.units[ok])
        return out


def recorded_usage(trace: Trace) -> Usage:
    """Units the recorded schedule held at each moment (jobs with a recorded start)."""
    ok = np.isfinite(trace.recorded_start)
    start = trace.recorded_start[ok]
    end = start + np.maximum(trace.runtime[ok], 0)
    units = trace.units[ok].astype(np.int64)
    t = np.concatenate([start, end])
    d = np.concatenate([units, -units])
    order = np.lexsort((d, t))  # at equal times ends (negative) first
    t, d = t[order], d[order]
    level = np.cumsum(d)
    # keep the level after the last change at each time
    last = np.r_[t[1:] != t[:-1], True] if len(t) else np.zeros(0, bool)
    return Usage(times=t[last], units=level[last])


def waiting_bins(trace: Trace, t0: float, step: float, n: int, after: float = 600.0) -> np.ndarray:
    """Per bin of ``step`` from ``t0``, whether some job of the recorded schedule had been
    waiting ``after`` seconds or more (submitted, not yet started) during it."""
    rec = trace.recorded_start
    ok = np.isfinite(rec) & (rec - trace.submit > after)
    a = np.clip(((trace.submit[ok] + after - t0) // step).astype(np.int64), 0, n)
    b = np.clip(((rec[ok] - t0) // step).astype(np.int64) + 1, 0, n)
    d = np.zeros(n + 1, np.int64)
    np.add.at(d, a, 1)
    np.add.at(d, b, -1)
    return np.cumsum(d)[:n] > 0


def _sliding_max(a: np.ndarray, half: int) -> np.ndarray:
    if half <= 0:
        return a
    padded = np.pad(a, half, constant_values=0)
    return np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1).max(axis=1)


def fitted(
    usage: Usage,
    total: int,
    *,
    window: float,
    headroom: int = 0,
    step: float = 900.0,
    waiting_trace: Trace | None = None,
    waiting_window: float = 0.0,
) -> Availability:
    """The largest recorded use within ``window`` seconds around each moment (bins of
    ``step``) plus ``headroom``, at most ``total``: never below what the recorded schedule
    used. With ``waiting_trace`` (the log itself), while one of its jobs had been waiting
    10 minutes or more, the nodes the schedule left idle were not available to it: there the
    largest use within ``waiting_window`` (plus ``headroom``) only. After the recorded
    schedule the whole cluster is available."""
    if not len(usage.times):
        return Availability((), ())
    t0 = math.floor(usage.times[0] / step) * step
    n = int(math.ceil((usage.times[-1] - t0) / step)) + 1
    peak = usage.binned_max(t0, step, n)
    avail = _sliding_max(peak, int(round(window / step / 2))) + headroom
    if waiting_trace is not None:
        short = _sliding_max(peak, int(round(waiting_window / step / 2))) + headroom
        avail = np.where(waiting_bins(waiting_trace, t0, step, n), np.minimum(short, avail), avail)
    avail = np.minimum(avail, total)
    change = np.r_[True, avail[1:] != avail[:-1]]
    times = (t0 + step * np.flatnonzero(change)).tolist()
    units = avail[change].tolist()
    times.append(t0 + step * n)
    units.append(total)
    return Availability(tuple(float(x) for x in times), tuple(int(u) for u in units))


def outage_windows(
    trace: Trace, units: int, min_gap: float, available: Availability | None = None
) -> list[tuple[float, float]]:
    """Outages and reservations in a recorded schedule: the stretches between consecutive
    recorded starts at least ``min_gap`` seconds apart at whose end some recorded job had
    waited ``min_gap`` seconds (submitted by then, started at the stretch's end or later)
    while it would have fit in the units the schedule left idle (``available`` units, or
    ``units`` throughout, less those in use). Each is ``(t, end)``, from just after the
    last start before it (that start stands) to the next one."""
    rec = trace.recorded_start
    known = np.isfinite(rec)
    starts = np.unique(rec[known])
    gaps = np.flatnonzero(np.diff(starts) >= min_gap)
    if not len(gaps):
        return []
    long = known & (rec - trace.submit >= min_gap)  # only these can have waited so long
    submit, start, size = trace.submit[long], rec[long], trace.units[long]
    use = recorded_usage(trace)
    out: list[tuple[float, float]] = []
    for g in gaps:
        before, end = float(starts[g]), float(starts[g + 1])
        at = end - min_gap
        cap = units if available is None else available.at(at, units)
        i = int(np.searchsorted(use.times, at, side="right")) - 1
        idle = cap - (int(use.units[i]) if i >= 0 else 0)
        if np.any((submit <= at) & (start >= end) & (size <= idle)):
            out.append((before + 1.0, end))
    return out


def with_outages(
    available: Availability | None, windows: list[tuple[float, float]], total: int
) -> Availability:
    """``available`` (None: all ``total`` units all the time) with nothing available within
    each of ``windows``: what runs keeps running, no job starts, and what ends is not
    given back until the window closes (a maintenance reservation)."""
    times = list(available.times) if available is not None else []
    units = list(available.units) if available is not None else []
    if not windows:
        return Availability(tuple(times), tuple(units))
    marks = np.array(times, float)
    opens = np.array([a for a, _ in windows])
    closes = np.array([b for _, b in windows])
    points = np.unique(np.concatenate([marks, opens, closes]))
    at = np.searchsorted(marks, points, side="right") - 1
    base = np.where(at >= 0, np.asarray(units + [total], np.int64)[np.maximum(at, 0)], total)
    inside = np.searchsorted(opens, points, side="right") - 1
    shut = (inside >= 0) & (points < closes[np.maximum(inside, 0)])
    level = np.where(shut, 0, base)
    keep = np.r_[True, level[1:] != level[:-1]]
    return Availability(tuple(float(t) for t in points[keep]), tuple(int(u) for u in level[keep]))
