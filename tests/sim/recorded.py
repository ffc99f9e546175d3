"""A trace whose recorded starts are a known simulated schedule (for comparison tests)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.generate import generate
from sim.traces import Trace, write_swf


def recorded_on(
    units: int,
    *,
    jobs: int = 1500,
    seed: int = 5,
    load: float = 0.9,
    cfg: SlurmConfig | None = None,
) -> Trace:
    """A generated workload whose recorded starts are its replay on ``units`` processors
    (generated for a machine of 16): what a site running exactly the simulator would log."""
    trace = generate(jobs, 16, seed=seed, load=load)
    sim = Simulator(trace, cfg or SlurmConfig(), total_units=units)
    sim.run()
    start = np.full(len(trace), np.nan)
    for r in sim.records:
        start[r.trace_index] = r.start
    return replace(trace, recorded_start=start, total_units=None)


def write_recorded(path: Path, units: int, **kw) -> Path:
    write_swf(recorded_on(units, **kw), path)
    return path
