"""A hidden load (queues a log does not list, sharing its nodes), inferred by ``hpcsim fit``:
the stationary background itself, and a log the simulator recorded under a known one."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.availability import Availability, background, lowest
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.fidelity import fidelity
from sim.profile import SiteProfile, fit, loss, replay_waits, split, starting_profile
from tests.sim.simhelpers import make_trace

DAY = 86400.0
UNITS = 32
SHARE = 0.1


def held_on_average(av: Availability, total: int) -> float:
    t = np.asarray(av.times)
    u = np.asarray(av.units[:-1])
    return float(total - (u * np.diff(t)).sum() / (t[-1] - t[0]))


def test_the_background_holds_its_share_on_average_and_is_seeded():
    runtimes = np.random.default_rng(0).uniform(600, 8 * 3600, 500)
    for total, share in ((80, 0.05), (240, 0.1), (8192, 0.1)):
        av = background(runtimes, total, share, (0.0, 60 * DAY), seed=1)
        assert abs(held_on_average(av, total) / (share * total) - 1) < 0.1
        assert min(av.units) >= 0 and max(av.units) <= total
        assert av.units[-1] == total  # after the span: the whole cluster
    one = background(runtimes, 80, 0.05, (0.0, 30 * DAY), seed=3)
    assert one == background(runtimes, 80, 0.05, (0.0, 30 * DAY), seed=3)
    assert one != background(runtimes, 80, 0.05, (0.0, 30 * DAY), seed=4)
    # a large cluster: jobs of several units, so that the stream stays short
    assert len(background(runtimes, 8192, 0.1, (0.0, 60 * DAY)).times) < 6000
    with pytest.raises(ValueError, match="share"):
        background(runtimes, 80, 1.5, (0.0, DAY))


steps = st.lists(
    st.tuples(st.integers(0, 100), st.integers(0, 8)),
    min_size=0,
    max_size=8,
    unique_by=lambda x: x[0],
).map(
    lambda xs: Availability(tuple(float(t) for t, _ in sorted(xs)), tuple(u for _, u in sorted(xs)))
)


@given(steps, steps)
@settings(max_examples=200, deadline=None)
def test_lowest_is_the_pointwise_minimum(a, b):
    got = lowest(a, b, 8)
    for t in np.arange(-1, 102, 0.5):
        assert got.at(t, 8) == min(a.at(t, 8), b.at(t, 8))


def recorded(share: float | None, n: int = 700, seed: int = 4):
    """A loaded 10-day workload of 8 users on 32 nodes, its schedule recorded by the
    simulator while a hidden load (its own kind, ``share`` of the nodes) held some."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 10 * DAY, n))
    runtime = rng.uniform(600, 6 * 3600, n).round()
    units = rng.choice([1, 2, 4, 8], n, p=[0.4, 0.3, 0.2, 0.1])
    users = rng.integers(0, 8, n)
    rows = [
        (float(s), float(r), float(2 * r), int(u), int(us))
        for s, r, u, us in zip(submit, runtime, units, users, strict=True)
    ]
    trace = make_trace(rows, total=UNITS)
    hidden = None
    if share is not None:
        hidden = background(runtime, UNITS, share, (0.0, 12 * DAY), seed=99)
    sim = Simulator(trace, SlurmConfig(), total_units=UNITS, availability=hidden)
    sim.run()
    start = {r.trace_index: r.start for r in sim.records}
    trace.recorded_start = np.array([start[i] for i in range(n)])
    return trace


def test_the_fit_prefers_the_recorded_use_to_a_hidden_load_it_recorded():
    """Measured (session 11): the window clamped to the recorded use while jobs waited holds
    what the hidden queue held at each moment, so the fit never needs the stationary load."""
    trace = recorded(SHARE)
    prof = fit(trace)
    assert prof.hidden is None and prof.clamp == (0.0, 0.0)
    _, held, _ = split(trace)
    rec = (trace.recorded_start - trace.submit)[held]

    def held_out(p: SiteProfile) -> float:
        return float(
            np.mean([loss(fidelity(replay_waits(trace, p, seed=s)[held], rec)) for s in range(3)])
        )

    # without any timeline, the hidden load is what replays the last third best
    bare = replace(prof, window_s=None, clamp=None)
    assert held_out(replace(bare, hidden=SHARE)) < held_out(bare) / 2


def test_a_profile_with_a_bad_hidden_load_is_refused_by_name():
    d = json.loads(starting_profile(recorded(None, n=200)).to_json())
    assert d["hidden"] is None
    d.pop("hidden")  # older profiles load without one
    assert SiteProfile.from_json(json.dumps(d)).hidden is None
    for bad in (1.5, 0, "x"):
        d["hidden"] = bad
        with pytest.raises(ValueError, match="hidden"):
            SiteProfile.from_json(json.dumps(d))
