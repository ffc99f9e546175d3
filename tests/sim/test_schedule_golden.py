"""The simulator's schedules do not drift: per-job starts, ends, states and backfill flags of
small reference workloads, hashed, against the digests of commit d816f97 (before the
architecture step of issue 12). A digest may change only with a deliberate change of the
scheduling rules; then say so in the commit and update it here."""

from __future__ import annotations

import hashlib

import pytest

from sim.config import SlurmConfig
from sim.data import default_total_units, default_trace_path
from sim.engine import Simulator
from sim.generate import generate
from sim.traces.read import read_trace

MULTIFACTOR = SlurmConfig(
    priority_type="priority/multifactor",
    weight_age=1000,
    weight_fairshare=10000,
    weight_job_size=1000,
)


def digest(sim: Simulator) -> str:
    h = hashlib.sha256()
    for r in sorted(sim.records, key=lambda r: r.job_id):
        h.update(f"{r.job_id} {r.start!r} {r.end!r} {int(r.state)} {int(r.backfill)}\n".encode())
    return h.hexdigest()[:16]


@pytest.mark.parametrize(
    ("workload", "multifactor", "want"),
    [
        ("ls6-slice", False, "1eb781c634330b19"),
        ("ls6-slice", True, "6c485f5024483e40"),
        ("generated", False, "03acec68115bfbf0"),
        ("generated", True, "35ce9ec7cf2ccb79"),
    ],
)
def test_schedule_is_unchanged(workload: str, multifactor: bool, want: str) -> None:
    if workload == "ls6-slice":
        trace, units = read_trace(default_trace_path()), default_total_units()
    else:
        trace, units = generate(4000, 256, seed=3, load=0.95), 256
    sim = Simulator(trace, MULTIFACTOR if multifactor else SlurmConfig(), total_units=units)
    sim.run()
    assert len(sim.records) == len(trace)
    assert digest(sim) == want
