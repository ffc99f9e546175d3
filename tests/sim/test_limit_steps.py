"""Limits that change over time: the simulator's limit steps, and where a recorded schedule
breaks the limits fitted to its past (sim/limit_breaks.py)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.limit_breaks import limit_steps
from sim.limits import QosLimits
from tests.sim.simhelpers import make_trace, starts
from tests.sim.test_profile import recorded_log

ONE_JOB = QosLimits(max_jobs_per_user=1)


def three_jobs_of_one_user():
    return make_trace([(0.0, 1000.0, 2000.0, 1, 0)] * 3, total=10)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_limit_step_lets_held_jobs_start_at_the_next_full_main_pass(compiled):
    # As in Slurm, a QOS change wakes no scheduler (tests/slurm/test_sim_vs_real_slurm.py):
    # with nothing else happening, the held jobs start at the periodic full main pass after
    # it (sched_interval=60: t=120).
    plain = Simulator(three_jobs_of_one_user(), SlurmConfig(), limits=ONE_JOB)
    plain.compiled_life_cycle = compiled
    plain.run()
    assert sorted(starts(plain).values()) == [0.0, 1000.0, 2000.0]
    step = (100.0, QosLimits(max_jobs_per_user=3))
    sim = Simulator(three_jobs_of_one_user(), SlurmConfig(), limits=ONE_JOB, limit_steps=[step])
    sim.compiled_life_cycle = compiled
    sim.run()
    assert sorted(starts(sim).values()) == [0.0, 120.0, 120.0]
    assert sim.limits == step[1]
    cfg = SlurmConfig(sched_interval=0)  # no periodic pass: the next event (the first end)
    sim = Simulator(three_jobs_of_one_user(), cfg, limits=ONE_JOB, limit_steps=[step])
    sim.compiled_life_cycle = compiled
    sim.run()
    assert sorted(starts(sim).values()) == [0.0, 1000.0, 1000.0]


def test_a_restore_from_before_a_limit_step_holds_the_first_limits_again():
    step = (100.0, QosLimits(max_jobs_per_user=3))
    sim = Simulator(three_jobs_of_one_user(), SlurmConfig(), limits=ONE_JOB, limit_steps=[step])
    sim.advance(50.0)
    early = sim.snapshot()
    sim.run()
    done = starts(sim)
    sim.restore(early)
    assert sim.limits == ONE_JOB
    sim.run()
    assert starts(sim) == done


def test_a_step_may_not_drop_every_limit_on_running_jobs():
    with pytest.raises(ValueError, match="limit step at t=5"):
        Simulator(
            three_jobs_of_one_user(),
            limits=ONE_JOB,
            limit_steps=[(5.0, QosLimits(max_submit_jobs_per_user=4))],
        )


def test_a_log_that_obeys_its_limits_shows_no_step():
    limits = QosLimits(max_jobs_per_user=3, max_nodes_per_user=8, larger_jobs_exempt=True)
    assert limit_steps(recorded_log(limits), limits) == []
    assert limit_steps(make_trace([(0.0, 10.0, 20.0, 1, 0)]), limits) == []  # no record


def test_a_raised_cap_is_recovered_from_a_log_recorded_across_it():
    first = QosLimits(max_jobs_per_user=3, max_nodes_per_user=8, larger_jobs_exempt=True)
    raised = QosLimits(max_jobs_per_user=3, max_nodes_per_user=16, larger_jobs_exempt=True)
    at = 2.5 * 86400
    trace = recorded_log(first, total=48, limit_steps=((at, raised),))
    steps = limit_steps(trace, first)
    assert len(steps) == 1
    t, lim = steps[0]
    assert at <= t < at + 86400
    assert lim == raised


jobs = st.lists(
    st.tuples(
        st.integers(0, 50), st.integers(0, 30), st.integers(1, 6), st.integers(0, 4)
    ),  # start, run time, units, user
    min_size=1,
    max_size=40,
)


def brute(rows, cap, users):
    """The first moment ``users`` users ran above ``cap`` units, and the most any user ran
    at or after it: every moment checked (ends before starts at one moment)."""
    moments = sorted({s for s, _, _, _ in rows} | {s + r for s, r, _, _ in rows})

    def use(user, t):  # after the events at t
        return sum(u for s, r, u, w in rows if w == user and s <= t < s + r)

    firsts = {}
    for t in moments:
        for user in {w for *_, w in rows}:
            if use(user, t) > cap and user not in firsts:
                firsts[user] = t
    if len(firsts) < users:
        return None
    at = sorted(firsts.values())[users - 1]
    later = [t for t in moments if t >= at]
    before = [t for t in moments if t < at]
    looked = later + before[-1:]
    return at, max(use(w, t) for t in looked for w in {w for *_, w in rows})


@settings(max_examples=200, deadline=None)
@given(jobs, st.integers(1, 8), st.integers(1, 3))
def test_the_break_matches_a_moment_by_moment_count(rows, cap, users):
    rows = [(s, r, u, w) for s, r, u, w in rows]
    trace = make_trace([(float(s), float(r), float(r), u, w) for s, r, u, w in rows], total=100)
    trace.recorded_start = np.array([float(s) for s, _, _, _ in rows])
    steps = limit_steps(trace, QosLimits(max_nodes_per_user=cap), users)
    want = brute(rows, cap, users)
    if want is None:
        assert steps == []
    else:
        assert [(t, lim.max_nodes_per_user) for t, lim in steps] == [want]


LS6 = Path(__file__).resolve().parents[3] / "shared" / "traces" / "ls6-a100.log"


@pytest.mark.skipif(not LS6.exists(), reason="the shared LS6 log is not here")
def test_the_ls6_replay_notes_where_its_record_breaks_the_fitted_node_cap():
    from sim.replay_cli import main

    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        assert main([str(LS6), "--no-progress"]) == 0
    text = " ".join(err.getvalue().split())
    assert "site profile" in text
    assert "breaks the limits (MaxJobsPerUser=8 MaxTRESPerUser=node=16)" in text
    assert "MaxJobsPerUser=8 MaxTRESPerUser=node=32 from then on" in text
