"""Property tests: no over-allocation, every job ends, determinism."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.config import SlurmConfig
from sim.engine import Simulator
from tests.sim.simhelpers import make_trace

job = st.tuples(
    st.integers(0, 5000),  # submit
    st.integers(0, 3000),  # runtime
    st.integers(1, 3000),  # limit
    st.integers(1, 16),  # units
    st.integers(0, 4),  # user
)
configs = st.sampled_from(
    [
        SlurmConfig(),
        SlurmConfig(scheduler_type="sched/builtin"),
        SlurmConfig(
            priority_type="priority/multifactor",
            weight_age=1000,
            weight_fairshare=5000,
            weight_job_size=500,
            calc_period=60.0,
            bf_resolution=1.0,
            bf_interval=5.0,
        ),
        SlurmConfig(
            priority_type="priority/multifactor",
            favor_small=True,
            weight_job_size=1000,
            bf_max_job_test=3,
            bf_window=600.0,
        ),
    ]
)


def peak_usage(records) -> int:
    t = np.array([r.start for r in records] + [r.end for r in records])
    d = np.array([r.units for r in records] + [-r.units for r in records])
    o = np.lexsort((d, t))  # ends before starts at equal times
    return int(np.cumsum(d[o]).max()) if len(t) else 0


@settings(max_examples=60, deadline=None)
@given(st.lists(job, min_size=1, max_size=60), configs)
def test_no_overallocation_and_every_job_ends(rows, cfg):
    rows.sort(key=lambda r: r[0])
    sim = Simulator(make_trace(rows, total=16), cfg)
    sim.run()
    assert len(sim.records) == len(rows)
    assert sim.pending_count == 0 and sim.running_count == 0
    assert peak_usage(sim.records) <= 16
    for r in sim.records:
        assert r.start >= r.submit and r.end - r.start <= r.limit


@settings(max_examples=20, deadline=None)
@given(st.lists(job, min_size=1, max_size=40), configs)
def test_deterministic(rows, cfg):
    rows.sort(key=lambda r: r[0])
    a = Simulator(make_trace(rows, total=16), cfg)
    a.run()
    b = Simulator(make_trace(rows, total=16), cfg)
    b.run()
    assert [(r.job_id, r.start) for r in a.records] == [(r.job_id, r.start) for r in b.records]
