"""The backfill walk on node pools in plain Python: the model that the compiled walk
(sim/_poolwalk.c, ``_backfill.walk_pools``) is checked against (tests/sim/test_pools_core.py).
It is the code the compiled walk replaced: Slurm's node-space map kept per segment, with the
same will-run groups, horizon and resolution as the compiled single-pool core."""

from __future__ import annotations

import math
import sys
from bisect import bisect_left
from typing import Any

from sim.backfill import WILL_RUN_WINDOW
from sim.pools import Alloc
from tests.sim.backfill_model import round_end


class SegmentMap:
    """Slurm's backfill map per segment: breakpoint times ``ts`` (ascending, ``ts[0]`` =
    now) and ``rows[i]``, the units free per segment on ``[ts[i], ts[i+1])``.

    ``ends``: running jobs' ``(expected end, seq, alloc)`` sorted; they free their units in
    Slurm's will-run groups (``window`` > 0; see sim/_backfill.c ``map_build``): a group frees
    at its last job's end, an end already due counts ``min_step`` from now."""

    __slots__ = ("ts", "rows", "horizon")

    def __init__(
        self,
        now: float,
        free: list[int],
        ends: list[tuple[float, int, Alloc]],
        horizon: float,
        min_step: float,
        window: float,
        linear: float,
        epoch: float,
    ) -> None:
        self.ts = [now]
        self.rows = [list(free)]
        self.horizon = horizon
        floor = now + min_step
        for t, allocs in _groups(ends, window, linear, epoch):
            if t >= horizon:
                break
            t = max(t, floor)
            row = list(self.rows[-1])
            for alloc in allocs:
                for s, u in alloc:
                    row[s] += u
            if t <= self.ts[-1]:
                self.rows[-1] = row
            else:
                self.ts.append(t)
                self.rows.append(row)

    def fit(self, segs: tuple[int, ...], units: int, dur: float) -> tuple[float, list[int]] | None:
        """Earliest start with ``units`` free over ``segs`` for ``dur`` (cut at the horizon)
        on the same segments all along, and the units free per segment of ``segs`` over it;
        None when no start exists before the horizon."""
        ts, rows = self.ts, self.rows
        n = len(ts)
        for i in range(n):
            caps = [rows[i][s] for s in segs]
            if sum(caps) < units:
                continue
            end = ts[i] + dur
            j = i + 1
            while j < n and ts[j] < end:
                row = rows[j]
                caps = [min(c, row[s]) for c, s in zip(caps, segs, strict=True)]
                if sum(caps) < units:
                    break
                j += 1
            else:
                return ts[i], caps
        return None

    def reserve(self, start: float, dur: float, alloc: Alloc) -> None:
        """Take ``alloc`` over ``[start, start + dur)`` (cut at the horizon)."""
        end = min(start + dur, self.horizon)
        if end <= start:
            return
        i = self._cut(start)
        k = self._cut(end)
        for m in range(i, k):
            row = self.rows[m]
            for s, u in alloc:
                row[s] -= u

    def _cut(self, t: float) -> int:
        ts = self.ts
        i = bisect_left(ts, t)
        if i == len(ts) or ts[i] != t:
            ts.insert(i, t)
            self.rows.insert(i, list(self.rows[i - 1]))
        return i


def spread(segs: tuple[int, ...], caps: list[int], units: int) -> Alloc:
    """``units`` over ``segs`` with at most ``caps`` each, lowest segment first; what the
    caps cannot hold (a reservation rounded up to whole nodes) goes on the first segment."""
    alloc: Alloc = []
    need = units
    for s, c in zip(segs, caps, strict=True):
        got = min(c, need)
        if got > 0:
            alloc.append((s, got))
            need -= got
    if need > 0:
        alloc.append((segs[0], need))
    return alloc


def _groups(
    ends: list[tuple[float, int, Alloc]], window: float, linear: float, epoch: float
) -> list[tuple[float, list[Alloc]]]:
    """Running jobs' ends in Slurm's will-run groups (time of the group's last end, the
    allocations it frees); ``window <= 0`` keeps every end apart."""
    if window <= 0 or not ends:
        return [(t, [a]) for t, _, a in ends]
    out: list[tuple[float, list[Alloc]]] = []
    first = ends[0][0]
    barrier = first + window - math.fmod(first + epoch, window) % window
    i, n = 0, len(ends)
    while i < n:
        allocs: list[Alloc] = []
        while True:
            allocs.append(ends[i][2])
            i += 1
            if i == n or ends[i][0] > barrier + window:
                break
        out.append((ends[i - 1][0], allocs))
        while i < n and ends[i][0] > barrier + window:
            window = window + linear if linear > 0 else window * 2
    return out


def segment_map(
    sim: Any, free: list[int], extra_ends: list[tuple[float, int, Alloc]]
) -> SegmentMap:
    """The backfill map per node-pool segment from ``free`` units now and the running
    jobs (and ``extra_ends``: the jobs this pass started)."""
    st, cfg = sim.state, sim.cfg
    res = cfg.bf_resolution
    ends = [(round_end(j.start + j.limit, res), j.seq, j.alloc or []) for j in st.running.values()]
    ends.extend(extra_ends)
    ends.sort(key=lambda e: (e[0], e[1]))
    return SegmentMap(
        st.now,
        free,
        ends,
        st.now + cfg.bf_window,
        max(cfg.bf_resolution, 1.0),
        WILL_RUN_WINDOW,
        float(cfg.bf_window_linear),
        sim.epoch,
    )


def _turn(sim: Any, job: Any, extra: dict[int, list[int]]) -> str:
    """What the limits do with ``job`` at its turn in a pass that started the jobs in
    ``extra``: "passed" (over, before the will-run test: it does not count towards the
    depth), "held" (it counts, but neither starts nor reserves) or "tested"."""
    if not sim._run_limits:
        return "tested"
    if sim._bf_passes_over(job, extra):
        return "passed"
    return "held" if sim._limit_reason(job, extra) is not None else "tested"


def walk_pools_model(
    sim: Any, stop: int, start_now: bool, n_test: int = sys.maxsize
) -> list[tuple[int, Alloc]] | float | None:
    """``Simulator._walk_pools`` in Python: the backfill walk on node pools over
    ``order[:stop]``; with ``start_now``, the jobs it starts now (index, allocation), each
    job's limits checked at its turn, up to its ``n_test``-th job that counts (one the
    limits pass over before the will-run test does not); else ``squeue --start`` of
    ``order[stop]``."""
    st = sim.state
    order = st.order
    now = st.now
    res = sim.cfg.bf_resolution
    per_node = sim._cpus_per_node
    pools = sim._pools
    assert pools is not None
    started: list[tuple[int, Alloc]] = []
    held: list[tuple[float, float, Alloc]] = []
    new_ends: list[tuple[float, int, Alloc]] = []
    free = list(st.seg_free)
    extra: dict[int, list[int]] = {}
    last = stop - 1
    if start_now:  # past the last job that fits now, nothing can start
        last = -1
        for i in range(stop):
            job = order[i]
            if sum(free[s] for s in job.pool) >= job.units:
                last = i
        if last < 0:
            return started
    smap = segment_map(sim, free, new_ends)
    tested = 0
    for i in range(last + 1 if start_now else stop + 1):
        if tested >= n_test:
            break
        job = order[i]
        turn = _turn(sim, job, extra) if start_now else "tested"
        if start_now and turn != "passed":
            tested += 1
        if turn != "tested":
            continue
        fit = smap.fit(job.pool, job.units, job.limit)
        if not start_now and i == stop:
            return None if fit is None else fit[0]
        if fit is None:
            continue
        t, caps = fit
        if t == now and start_now:
            alloc = spread(job.pool, caps, job.units)
            started.append((i, alloc))
            new_ends.append((round_end(now + job.limit, res), job.seq, alloc))
            if sim._run_limits:
                sim._count_start(job, extra)
            for s, u in alloc:
                free[s] -= u
            smap = segment_map(sim, free, new_ends)
            for r in held:
                smap.reserve(*r)
        else:
            # a reservation holds whole nodes on a CPU-counted cluster (as the compiled
            # core does, the rounding may take more than is free)
            want = min(-(-job.units // per_node) * per_node, pools.part_size[job.part])
            r = (t, job.limit, spread(job.pool, caps, want))
            held.append(r)
            smap.reserve(*r)
    return started
