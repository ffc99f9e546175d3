"""Write a site's log with several partitions, recorded by the simulator under known settings,
for ``bench/sim_twin.py`` (issue 23: pools inferred from a log's partitions).

    .venv/bin/python bench/partitioned_log.py OUT.swf [--jobs 6000] [--seed 0] [--flat]

The site: 64 CPU nodes (``normal``), 16 GPU nodes (``gpu``), and a ``development``
partition on 8 of the CPU nodes (it overlaps ``normal``, which a log cannot show); fair share
with a 1-day half-life, at most 6 running jobs per user; 40 users over 60 days. ``--flat``
writes the same log without its queue numbers (the fit then sees one pool). Queue numbers in
the SWF: 1 development, 2 gpu, 3 normal (the names' ranks).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sim.config import SlurmConfig  # noqa: E402
from sim.engine import Simulator  # noqa: E402
from sim.limits import QosLimits  # noqa: E402
from sim.phases import gc_paused  # noqa: E402
from sim.traces import write_swf  # noqa: E402
from sim.traces.model import Trace  # noqa: E402

SITE = """NodeName=n[1-64]
NodeName=g[1-16]
PartitionName=normal Nodes=n[1-64] Default=YES
PartitionName=gpu Nodes=g[1-16]
PartitionName=development Nodes=n[1-8] MaxTime=2:00:00
AccountingStorageType=accounting_storage/slurmdbd
PriorityType=priority/multifactor
PriorityFlags=NO_FAIR_TREE
PriorityWeightFairshare=100000
PriorityWeightAge=1000
PriorityDecayHalfLife=1-0
"""
LIMITS = QosLimits(max_jobs_per_user=6)
DAY = 86400.0


def workload(jobs: int, seed: int) -> Trace:
    """``jobs`` jobs of 40 users over 60 days (about 85 % of the nodes asked for)."""
    rng = np.random.default_rng(seed)
    part = rng.choice(["normal", "gpu", "development"], jobs, p=[0.6, 0.25, 0.15])
    units = np.where(
        part == "normal",
        rng.choice([1, 2, 4, 8, 16], jobs, p=[0.35, 0.25, 0.2, 0.15, 0.05]),
        np.where(part == "gpu", rng.choice([1, 2, 4], jobs, p=[0.6, 0.3, 0.1]), 1),
    )
    hours = np.where(part == "development", rng.uniform(0.1, 2, jobs), rng.uniform(0.5, 12, jobs))
    runtime = (hours * 3600).round()
    limit = np.minimum(np.ceil(runtime * rng.uniform(1.1, 3, jobs) / 60) * 60, 48 * 3600)
    limit = np.where(part == "development", np.minimum(limit, 7200), limit)
    runtime = np.minimum(runtime, limit)
    users = rng.choice(40, jobs, p=np.r_[np.full(8, 0.06), np.full(32, 0.52 / 32)])
    submit = np.sort(rng.uniform(0, 60 * DAY, jobs)).round()
    n = jobs
    return Trace(
        job_id=np.arange(1, n + 1),
        submit=submit,
        runtime=runtime,
        limit=limit,
        units=units.astype(np.int64),
        user=users.astype(np.int64),
        group=np.zeros(n, np.int64),
        exit_code=np.zeros(n, np.int64),
        recorded_start=np.full(n, np.nan),
        names=[""] * n,
        unit="nodes",
        total_units=80,
        partitions=[str(p) for p in part],
        source="partitioned site",
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--jobs", type=int, default=6000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--flat", action="store_true", help="leave the queue numbers out")
    args = p.parse_args(argv)
    trace = workload(args.jobs, args.seed)
    sim = Simulator(trace, SlurmConfig.from_text(SITE, "site"), total_units=80, limits=LIMITS)
    with gc_paused():
        sim.run()
    start = np.full(len(trace), np.nan)
    for r in sim.records:
        start[r.trace_index] = r.start
    wait = (start - trace.submit) / 3600
    out = replace(trace, recorded_start=start, total_units=None)
    if args.flat:
        out = replace(out, partitions=[])
    write_swf(out, args.out)
    print(
        f"{args.out}: {len(trace)} jobs, recorded mean wait {np.nanmean(wait):.2f} h, "
        f"median {np.nanmedian(wait):.2f} h, {np.isnan(start).sum()} never started"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
