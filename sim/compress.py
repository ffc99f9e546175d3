"""A site's load, time-compressed for a small real cluster: a slice of a trace with every
duration divided by ``k`` and its units mapped onto the cluster's.

``compress(trace, t0, span, k, units)`` keeps the jobs the site had in its queue or running
at ``t0`` (they arrive at once, a running one with the run time it had left) and those
submitted in ``[t0, t0 + span)``; times are re-based to ``t0`` and divided by ``k``, and each
job's units are scaled by ``units / trace units`` (at least 1). The result is a
:class:`~sim.traces.model.Trace` on the compressed clock, so the simulator replays it as is
and :func:`sim.realslurm.workload_of` turns it into jobs for real Slurm.

What does not compress: Slurm keeps time limits in whole minutes (a limit below k minutes of
the site's becomes 1 minute), and its scheduler cannot run more often than once a second.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from sim.traces.model import Trace


def compress(
    trace: Trace,
    t0: float,
    span: float,
    k: float,
    units: int | None = None,
    trace_units: int | None = None,
) -> Trace:
    """The slice ``[t0, t0 + span)`` of ``trace`` (seconds on its clock) compressed by ``k``
    onto a cluster of ``units`` (default: the trace's own, ``trace_units`` or its largest
    recorded use)."""
    if k <= 0 or not math.isfinite(k):
        raise ValueError(f"the compression factor must be positive, got {k}")
    if span <= 0:
        raise ValueError(f"the slice must last a positive time, got {span}")
    start = trace.recorded_start
    end = start + trace.runtime
    known = ~np.isnan(start)
    before = trace.submit < t0
    # in the system at t0: submitted before, and not started or not yet ended by then
    present = before & (~known | (end > t0))
    inside = (trace.submit >= t0) & (trace.submit < t0 + span)
    part = trace.select(present | inside)
    p_start = part.recorded_start
    was_running = (part.submit < t0) & (p_start <= t0)
    runtime = np.where(was_running, part.runtime - (t0 - p_start), part.runtime)
    submit = np.maximum(part.submit - t0, 0.0)
    rec = np.where(was_running, 0.0, p_start - t0)
    total = trace_units or int(np.max(part.units)) or 1
    scale = (units or total) / total
    mapped = np.maximum(np.rint(part.units * scale), 1).astype(part.units.dtype)
    return replace(
        part,
        submit=submit / k,
        runtime=np.maximum(runtime, 0.0) / k,
        limit=part.limit / k,
        units=mapped,
        recorded_start=rec / k,
        total_units=units or total,
        start_epoch=part.start_epoch + t0,
        source=f"{part.source} [{t0:.0f}, {t0 + span:.0f}) s / {k:g}",
        digest="",
    )


def stretch(trace: Trace, k: float) -> Trace:
    """A trace recorded on a cluster that replays a site's load ``k`` times faster (a
    time-compressed replay such as ``mirage live-check``'s, or the local test cluster), on
    the site's clock: every time and duration multiplied by ``k``, the inverse of
    :func:`compress`'s division. The start epoch stays the recording's."""
    if k <= 0 or not math.isfinite(k):
        raise ValueError(f"the time scale must be positive, got {k}")
    if k == 1.0:
        return trace
    return replace(
        trace,
        submit=trace.submit * k,
        runtime=trace.runtime * k,
        limit=trace.limit * k,
        recorded_start=trace.recorded_start * k,
        source=f"{trace.source} x {k:g}",
        digest="",
    )
