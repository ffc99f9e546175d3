"""The inputs of the backfill map (sim/_backfill.c), as one named record."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class MapParams:
    """What ``_backfill.plan`` and ``_backfill.estimate`` build Slurm's node-space map from.

    ``now``: the time of the pass; ``free``: units free now; ``ends``: running jobs'
    ``(expected end, tie, units)``, sorted (ends rounded up to ``bf_resolution``);
    ``horizon``: the end of the map (now + ``bf_window``); ``min_step``: the map's finest
    step (``bf_resolution``, at least 1 s); ``per_node``: units per node (a future reservation
    holds whole nodes; 1 on a node-counted cluster); ``total``: the cluster's units;
    ``window``: Slurm's first will-run window (30 s; 0 for a plain earliest fit);
    ``linear``: ``bf_window_linear``; ``epoch``: the Unix time of t = 0 (Slurm aligns the
    will-run groups to Unix time); ``resolution``: ``bf_resolution``, for the ends of the
    jobs a pass starts; ``end_shift``: how far the map's ends lie from Slurm's own (-0.5 in
    Slurm's whole seconds, as ``sim.backfill.Backfill._map_end`` puts a running job's end),
    added to the end of a job the pass starts and taken off the first end before the
    will-run barrier is cut from it.
    """

    now: float
    free: int
    ends: list[tuple[float, int, int]]
    horizon: float
    min_step: float
    per_node: int
    total: int
    window: float
    linear: float
    epoch: float
    resolution: float
    end_shift: float = 0.0
