"""The compiled runs of quiet priority ticks (Simulator._quiet_ticks, _backfill.advance_ticks)
give the same schedule as one event-loop turn per tick."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim import _backfill
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.generate import generate
from sim.limits import QosLimits
from sim.priority import FairShare
from tests.sim.simhelpers import make_trace
from tests.sim.test_backfill_core import NOW, make_job

FAIRSHARE = SlurmConfig(
    priority_type="priority/multifactor",
    weight_age=1000,
    weight_fairshare=100000,
    weight_job_size=1000,
    decay_half_life=3600.0,
    calc_period=60.0,
    bf_interval=30.0,
    bf_resolution=1.0,
)

job = st.tuples(
    st.integers(0, 20000),  # submit
    st.integers(0, 4000),  # runtime
    st.integers(1, 4000),  # limit
    st.integers(1, 16),  # units
    st.integers(0, 5),  # user
)


def schedule(sim: Simulator) -> list[tuple[int, float, float, bool]]:
    sim.run()
    return sorted((r.job_id, r.start, r.end, r.backfill) for r in sim.records)


def both(make) -> tuple[list, list, Simulator]:  # type: ignore[no-untyped-def]
    fast = make()
    slow = make()
    slow.compiled_quiet_ticks = False
    return schedule(fast), schedule(slow), fast


@settings(max_examples=80, deadline=None)
@given(
    st.lists(job, min_size=1, max_size=50),
    st.sampled_from([0.0, 3.0]),  # batch_sched_delay
    st.sampled_from([0.0, 60.0]),  # sched_interval
    st.sampled_from([60.0, 300.0]),  # calc_period
    st.booleans(),  # a per-user limit
)
def test_quiet_ticks_give_the_same_schedule(rows, delay, sched, period, limited):
    rows.sort(key=lambda r: r[0])
    cfg = replace(FAIRSHARE, batch_sched_delay=delay, sched_interval=sched, calc_period=period)
    limits = QosLimits(max_nodes_per_user=12) if limited else None
    fast, slow, sim = both(lambda: Simulator(make_trace(rows, total=16), cfg, limits=limits))
    assert fast == slow
    assert sim.state.prio_tick > -np.inf or not rows


def test_quiet_ticks_on_a_generated_workload():
    """Thousands of jobs under fair share with ages, a per-user limit, run to the end and
    stopped half-way: the same schedule and the same state."""
    trace = generate(3000, 256, seed=7, load=0.9)
    cfg = replace(FAIRSHARE, calc_period=300.0, decay_half_life=86400.0)
    limits = QosLimits(max_nodes_per_user=200)
    fast, slow, _ = both(lambda: Simulator(trace, cfg, limits=limits))
    assert fast == slow
    half = float(trace.submit[1500])
    a, b = Simulator(trace, cfg), Simulator(trace, cfg)
    b.compiled_quiet_ticks = False
    a.run(until=half)
    b.run(until=half)
    assert a.snapshot() == b.snapshot()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 5000), st.integers(0, 4), st.floats(0, 3000)), max_size=25),
    st.integers(1, 6),  # ticks
    st.sampled_from([0.0, 1000.0]),
)
def test_advance_ticks_is_fold_and_refresh_tick_by_tick(rows, n_ticks, w_age):
    """advance_ticks over n ticks with no change in order equals FairShare.tick and refresh
    one tick at a time, stopping at the first tick that changes the order."""

    def world():  # type: ignore[no-untyped-def]
        share = FairShare(half_life=1800.0, n_users=5)
        for u in range(5):
            share.change(u, u + 1, NOW - 100.0 * u)
        jobs = [
            make_job(1, 60.0, seq=i, static=s, accrue=NOW - a, user=u)
            for i, (s, u, a) in enumerate(rows)
        ]
        return share, jobs

    period = 60.0
    share, jobs = world()
    last_tick, last_changed = NOW, False
    for k in range(n_ticks):
        tick = NOW + k * period
        share.tick(tick, 5)
        last_tick = tick
        last_changed = _backfill.refresh(jobs, tick, w_age, 86400.0, 1e5, share.lazy_factors())
        if last_changed:
            break
    share2, jobs2 = world()
    got = _backfill.advance_ticks(
        jobs2,
        NOW,
        period,
        NOW + (n_ticks - 0.5) * period,
        w_age,
        86400.0,
        1e5,
        (share2.usage, share2.run_units, share2.accrued, share2.stamp, 1800.0, 5, 0.0, 0.0),
    )
    assert got[:2] == (last_tick, last_changed)
    assert got[2] == share.total and got[3] == share.last
    assert [(j.seq, j.prio) for j in jobs2] == [(j.seq, j.prio) for j in jobs]
    np.testing.assert_array_equal(share2.usage, share.usage)
