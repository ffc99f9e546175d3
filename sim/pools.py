"""Partitions as node pools: which units a job may use, and the backfill map over them.

A ``slurm.conf`` whose partitions list their ``Nodes=`` splits the cluster into *segments*:
the nodes that belong to exactly the same partitions. Nodes within a segment are
interchangeable for every job, so a segment is counted in units (nodes, or CPUs on a
CPU-counted cluster), and a partition is the list of its segments in node order. A job takes
units from its partition's segments, lowest node first (Slurm's select plugin, nodes of
equal weight). Overlapping partitions share segments; disjoint ones are separate clusters.

The backfill map here is Slurm's node-space map kept per segment (:class:`SegmentMap`): the
same will-run groups, horizon and resolution as the compiled single-pool core
(sim/_backfill.c), in Python; it runs only on a cluster with node pools.
"""

from __future__ import annotations

import math
from bisect import bisect_left

from sim.config import SlurmConfig

Alloc = list[tuple[int, int]]  # (segment, units) a job holds or reserves


class Pools:
    """The segments of a partitioned cluster and each partition's segments.

    ``seg_size[s]``: units of segment ``s``; ``part_segs[name]``: the segments of partition
    ``name`` in node order (the default partition under ``""`` too)."""

    def __init__(self, cfg: SlurmConfig, unit: str, total_units: int) -> None:
        names = cfg.node_names
        cpus = unit in ("cpus", "procs")
        sizes = cfg.node_cpus if cpus else [1] * len(names)
        size = sum(sizes)
        if size != total_units:
            raise ValueError(
                f"{cfg.source or 'slurm.conf'}: its partitions' Nodes= make a cluster of "
                f"{size} {'CPUs' if cpus else 'nodes'}; the simulator was given {total_units} "
                "(pass total_units / --nodes to match, or drop Nodes= from the partitions)"
            )
        # sets: a CPU-counted cluster has a node per CPU (90,000 took a minute with lists)
        listed = [(p.name, set(p.nodes)) for p in cfg.partitions.values()]
        members = [
            tuple(name for name, nodes in listed if not nodes or node in nodes) for node in names
        ]
        seg_of: dict[tuple[str, ...], int] = {}
        self.seg_size: list[int] = []
        for sig, units in zip(members, sizes, strict=True):
            s = seg_of.setdefault(sig, len(seg_of))
            if s == len(self.seg_size):
                self.seg_size.append(0)
            self.seg_size[s] += units
        self.part_segs: dict[str, tuple[int, ...]] = {}
        for p in cfg.partitions.values():
            self.part_segs[p.name] = tuple(s for sig, s in seg_of.items() if p.name in sig)
        self.part_size = {
            name: sum(self.seg_size[s] for s in segs) for name, segs in self.part_segs.items()
        }

    @staticmethod
    def active(cfg: SlurmConfig) -> bool:
        """Whether ``cfg``'s partitions split the cluster (some partition lacks a node)."""
        all_nodes = set(cfg.node_names)
        return any(p.nodes and set(p.nodes) != all_nodes for p in cfg.partitions.values())


def take(free: list[int], segs: tuple[int, ...], units: int) -> Alloc | None:
    """Take ``units`` from ``free`` over ``segs``, lowest segment first (in place); None,
    with ``free`` untouched, when they do not hold that many."""
    if sum(free[s] for s in segs) < units:
        return None
    alloc: Alloc = []
    need = units
    for s in segs:
        if need == 0:
            break
        got = min(free[s], need)
        if got:
            free[s] -= got
            alloc.append((s, got))
            need -= got
    return alloc


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
