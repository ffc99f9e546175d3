"""A trace whose recorded starts are a known simulated schedule (for comparison tests)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.generate import generate
from sim.traces import Trace, write_swf
from tests.sim.simhelpers import make_trace


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


def write_sacct_with_priority(
    path: Path, cfg: SlurmConfig, *, total: int = 32, n: int = 1500, seed: int = 7
) -> Path:
    """A sacct log (``--parsable2``) of a loaded workload of 12 users replayed under ``cfg``:
    each job's recorded start, and its priority as it was submitted as the ``Priority``
    column (what slurmdbd records)."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 12 * 86400, n)).round()
    runtime = rng.uniform(600, 4 * 3600, n).round()
    units = rng.choice([1, 2, 4, 8], n, p=[0.4, 0.3, 0.2, 0.1])
    users = rng.choice(12, n, p=np.r_[[0.25, 0.2, 0.15], np.full(9, 0.4 / 9)])
    rows = [(s, r, 2 * r, u, us) for s, r, u, us in zip(submit, runtime, units, users, strict=True)]
    trace = make_trace(rows, total=total)
    sim = Simulator(trace, cfg)
    priority: dict[int, int] = {}
    for t in np.unique(trace.submit).tolist():
        sim.advance(t)
        for jid in trace.job_id[trace.submit == t].tolist():
            priority[jid] = sim.job(jid).priority
    sim.run()
    start = {r.job_id: r.start for r in sim.records}

    def stamp(t: float) -> str:
        return datetime.fromtimestamp(1.7e9 + t, UTC).strftime("%Y-%m-%dT%H:%M:%S")

    lines = ["JobID|User|Submit|Start|End|Timelimit|NNodes|Priority"]
    for jid, s, r, u, us in zip(trace.job_id.tolist(), submit, runtime, units, users, strict=True):
        b = start[jid]
        times = f"{stamp(s)}|{stamp(b)}|{stamp(b + r)}"
        lines.append(f"{jid}|u{us}|{times}|{int(2 * r) // 60}|{u}|{priority[jid]}")
    path.write_text("\n".join(lines) + "\n")
    return path
