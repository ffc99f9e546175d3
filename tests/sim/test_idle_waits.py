"""Recorded waits beside idle units (``sim.idle_waits``): against a brute-force reference,
on a log the simulator recorded itself, and in the replay's report."""

from __future__ import annotations

import io
import math
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.availability import Availability, fitted, recorded_usage
from sim.idle_waits import _GROWTH, BIN_S, narrowed_beside_idle, waited_beside_idle
from sim.replay_cli import main as replay
from sim.traces import read_trace, write_swf
from tests.sim.recorded import recorded_on
from tests.sim.simhelpers import make_trace


def reference(trace, total, availability=None) -> np.ndarray:
    """Bin by bin, job by job, as the docstring says."""
    use = recorded_usage(trace)
    t0 = math.floor(use.times[0] / BIN_S) * BIN_S
    n = int(math.ceil((use.times[-1] - t0) / BIN_S)) + 1
    idle = []
    for b in range(n):
        lo, hi = t0 + b * BIN_S, t0 + (b + 1) * BIN_S
        cap = total
        if availability is not None:
            cap = min(availability.at(lo, total), availability.at(hi, total))
        level = (
            use.units[np.searchsorted(use.times, lo, side="right") - 1] if use.times[0] <= lo else 0
        )
        inside = use.units[(use.times >= lo) & (use.times < hi)]
        idle.append(cap - max([int(level), *inside.tolist()]))
    steps = sorted({math.ceil(_GROWTH**k) for k in range(64)})
    out = np.zeros(len(trace), bool)
    for i in range(len(trace)):
        wait = trace.recorded_start[i] - trace.submit[i]
        if not wait >= 2 * BIN_S:
            continue
        need = math.ceil(trace.limit[i] / BIN_S) + 1
        need = next((s for s in steps if s >= need), n + 1)
        first = max(0, math.ceil((trace.submit[i] - t0) / BIN_S))
        last = math.floor((trace.recorded_start[i] - t0) / BIN_S)
        out[i] = any(
            min(idle[b : b + need]) >= trace.units[i] for b in range(first, min(last, n - need + 1))
        )
    return out


jobs = st.lists(
    st.tuples(
        st.integers(0, 40),  # submit, in quarter hours
        st.integers(0, 30),  # recorded wait, in quarter hours
        st.integers(1, 16),  # run time, in quarter hours
        st.integers(0, 8),  # limit over the run time, in quarter hours
        st.integers(1, 6),  # units
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(jobs, st.integers(0, 6), st.booleans())
def test_the_jobs_found_are_the_reference_models(rows, slack, timeline):
    q = BIN_S / 4 * 3  # not aligned with the bins
    trace = make_trace([(s * q, r * q, (r + extra) * q, u) for s, _, r, extra, u in rows], total=64)
    trace = replace(trace, recorded_start=trace.submit + np.array([w * q for _, w, *_ in rows]))
    total = recorded_usage(trace).peak + slack
    avail = None
    if timeline:
        avail = Availability((BIN_S * 5.5, BIN_S * 20), (max(0, total - 3), total))
    got = waited_beside_idle(trace, total, avail)
    assert got.tolist() == reference(trace, total, avail).tolist()


def test_a_log_the_simulator_recorded_has_none():
    trace = recorded_on(24)
    assert not waited_beside_idle(trace, 24).any()
    wide = fitted(recorded_usage(trace), 24, window=6 * 3600.0)
    assert narrowed_beside_idle(trace, 24, window=6 * 3600.0, narrow=3600.0) == wide


def test_the_window_narrows_while_a_job_waits_beside_idle_units():
    """Two of ten nodes drained at 2 h, unlogged: a 2-node job submitted at 2.5 h waits
    until 6 h beside the two the 6-h window still counts; there the window narrows to 1 h
    (8 nodes), and outside that wait it stays 6 h."""
    h = 3600.0
    trace = make_trace([(0, 12 * h, 12 * h, 8), (0, 2 * h, 2 * h, 2), (2.5 * h, h, h, 2)])
    trace = replace(trace, recorded_start=np.array([0, 0, 6 * h]))
    assert waited_beside_idle(
        trace, 10, fitted(recorded_usage(trace), 10, window=6 * h)
    ).tolist() == [
        False,
        False,
        True,
    ]
    wide = fitted(recorded_usage(trace), 10, window=6 * h)
    narrow = narrowed_beside_idle(trace, 10, window=6 * h, narrow=h)
    assert wide.at(4 * h, 10) == 10 and narrow.at(4 * h, 10) == 8
    assert narrow.at(h, 10) == wide.at(h, 10) == 10  # before the wait
    assert narrow.at(11 * h, 10) == wide.at(11 * h, 10)  # after it


def held_log(tmp_path):
    """A log the simulator recorded on 24 procs, one small job's start then moved 90 days on,
    after the last recorded end: a hold the log does not show."""
    trace = recorded_on(24)
    end = float(np.nanmax(trace.recorded_start + trace.runtime))
    small = int(np.flatnonzero(trace.units == trace.units.min())[0])
    start = trace.recorded_start.copy()
    start[small] = end + 90 * 86400
    path = tmp_path / "held.swf"
    write_swf(replace(trace, recorded_start=start, total_units=24), path)
    return path, trace.job_id[small]


def test_a_held_job_is_found_and_the_replay_names_its_share(tmp_path):
    path, held = held_log(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = replay([str(path), "--no-progress"])
    assert rc == 0, err.getvalue()
    text = err.getvalue()
    assert "warning: simulated mean wait" in text
    assert "of the recorded wait is in 1 jobs that" in text and "left idle" in text
    trace = read_trace(str(path))
    beside = waited_beside_idle(trace, 24, None)
    assert beside.sum() == 1 and trace.job_id[beside][0] == held
