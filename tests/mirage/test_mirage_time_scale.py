"""A time-compressed cluster seen at its site's scale: the observation builder fed snapshots
on a clock k times faster (``time_scale=k``) gives the observations, recent waits and
decision contexts of the same queue at the site's own scale."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcbase.snapshot import QueueSnapshot
from mirage.agents.common.policy import DecisionContext
from mirage.chain.watcher import settings_of
from mirage.observation import ChainState, ObservationBuilder


def site_snapshots(seed: int, n: int = 12, interval: float = 600.0) -> list[QueueSnapshot]:
    """A random queue evolving over ``n`` samples at the site's scale (seconds)."""
    rng = np.random.default_rng(seed)
    snaps = []
    jobs = []  # (id, units, limit, submit, start or nan)
    next_id = 1
    for i in range(n):
        t = 1.7e9 + i * interval
        for _ in range(rng.integers(0, 5)):
            jobs.append(
                [
                    next_id,
                    int(rng.integers(1, 8)),
                    float(rng.choice([3600, 86400])),
                    t - float(rng.uniform(0, interval)),
                    math.nan,
                ]
            )
            next_id += 1
        for j in jobs:
            if math.isnan(j[4]) and rng.random() < 0.4:
                j[4] = t - float(rng.uniform(0, interval / 2))
        jobs = [j for j in jobs if math.isnan(j[4]) or j[4] + j[2] * 0.3 > t]
        pend = [(j[0], j[1], j[2], j[3], j[3]) for j in jobs if math.isnan(j[4])]
        run = [(j[0], j[1], j[2], j[4]) for j in jobs if not math.isnan(j[4])]
        snaps.append(QueueSnapshot.from_rows(t, 32, pend, run))
    return snaps


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.sampled_from([2.0, 60.0, 240.0, 1000.0]))
def test_a_compressed_queue_is_seen_at_the_site_scale(seed: int, k: float) -> None:
    snaps = site_snapshots(seed)
    site = ObservationBuilder(32, 48 * 3600.0, window=6, sample_interval=600.0)
    fast = ObservationBuilder(32, 48 * 3600.0, window=6, sample_interval=600.0, time_scale=k)
    for s in snaps:
        site.push(s)
        fast.push(s.scaled(1.0 / k))
    t = snaps[-1].time
    chain = ChainState(t, 2, 86400.0, t - 7200.0, t - 3600.0, 2, 86400.0, t + 1800.0)
    fast_chain = chain.scaled(1.0 / k)
    np.testing.assert_allclose(fast.observe(fast_chain), site.observe(chain), atol=2e-5)
    np.testing.assert_allclose(fast.recent_waits(), site.recent_waits(), rtol=1e-9)
    a = DecisionContext.from_builder(site, chain, 600.0)
    b = DecisionContext.from_builder(fast, fast_chain, 600.0 / k)
    assert math.isclose(a.decision_interval, b.decision_interval)
    assert math.isclose(a.chain.pred_remaining, b.chain.pred_remaining, rel_tol=1e-9)
    assert a.n_left == b.n_left


def test_a_scale_of_one_changes_nothing() -> None:
    snap = site_snapshots(1)[-1]
    assert snap.scaled(1.0) is snap


def test_watcher_intervals_follow_the_time_scale() -> None:
    s = settings_of({"time_scale": 240.0})
    assert s["sample_interval"] == 2.5 and s["decision_interval"] == 2.5
    given_ = settings_of({"time_scale": 240.0, "sample_interval": 5.0})
    assert given_["sample_interval"] == 5.0 and given_["decision_interval"] == 2.5
    assert settings_of({})["sample_interval"] == 600.0


def test_stretch_puts_a_compressed_log_back_on_the_site_clock() -> None:
    """``mirage retrain --time-scale k`` reads a compressed cluster's log k times slower:
    :func:`sim.compress.stretch` undoes :func:`sim.compress.compress`'s division."""
    import pytest

    from sim.compress import compress, stretch
    from sim.generate import generate

    site = generate(300, 32, seed=3, load=0.6)
    site.recorded_start[:] = site.submit + 60.0
    t0, span = float(site.submit[50]), 2 * 86400.0
    fast = compress(site, t0, span, 240.0)
    back = stretch(fast, 240.0)
    inside = (site.submit >= t0) & (site.submit < t0 + span)
    np.testing.assert_allclose(back.submit[-int(inside.sum()) :], site.submit[inside] - t0)
    np.testing.assert_allclose(back.limit, fast.limit * 240.0)
    np.testing.assert_allclose(back.runtime, fast.runtime * 240.0)
    assert back.start_epoch == fast.start_epoch and back.digest == ""
    assert stretch(fast, 1.0) is fast
    with pytest.raises(ValueError, match="time scale"):
        stretch(fast, 0.0)
