"""The observation builder on hand-made queue snapshots."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hpcbase.snapshot import QueueSnapshot
from mirage.observation import (
    CONTEXT_COLUMNS,
    CONTEXT_FEATURES,
    FEATURE_VERSION,
    N_FEATURES,
    QUEUE_FEATURES,
    ChainState,
    ObservationBuilder,
    for_version,
)

H = 3600.0


def snap(time, total, pending=(), running=()):
    return QueueSnapshot.from_rows(time, total, pending, running)


def col(name: str) -> int:
    return QUEUE_FEATURES.index(name)


def test_shape_and_zero_padding():
    b = ObservationBuilder(total_units=10, max_limit=48 * H, window=4)
    b.push(snap(0, 10, running=[(1, 5, 10 * H, 0.0)]))
    chain = ChainState(600, 1, 48 * H, 0, 0, 1, 48 * H)
    obs = b.observe(chain)
    assert obs.shape == (5, N_FEATURES) == b.shape
    assert obs.dtype == np.float32
    assert not obs[:3].any()  # three empty history rows before the single sample
    assert obs[3, col("run_units")] == pytest.approx(0.5)
    assert obs[4, CONTEXT_FEATURES.index("pred_remaining")] == pytest.approx(
        (48 * H - 600) / (48 * H)
    )


def test_history_rolls_oldest_first():
    b = ObservationBuilder(total_units=10, max_limit=H, window=3)
    for i in range(5):
        b.push(snap(i * 600, 10, running=[(j, 1, H, 0.0) for j in range(i + 1)]))
    obs = b.observe(ChainState(3000, 1, H, 0, math.nan, 1, H))
    assert list(obs[:3, col("run_units")]) == pytest.approx([0.3, 0.4, 0.5])


def test_normalisation_is_cluster_size_and_limit_free():
    """The same queue on a cluster twice as big, with limits twice as long, gives the same
    fractions: what lets a model trained on one cluster run on another."""

    def queue(scale):
        pend = [(10 + i, 2 * scale, 4 * H * scale, -H * i, -H * i) for i in range(3)]
        run = [(i, 3 * scale, 8 * H * scale, -2 * H * scale) for i in range(4)]
        return snap(0.0, 20 * scale, pend, run)

    a = ObservationBuilder(20, 48 * H).queue_features(queue(1))
    b = ObservationBuilder(40, 96 * H).queue_features(queue(2))
    for name in (
        "pend_units",
        "run_units",
        "pend_limit_p50",
        "run_elapsed_p50",
        "run_remaining_p50",
        "pend_job_units_p90",
    ):
        assert a[col(name)] == pytest.approx(b[col(name)]), name
        assert a[col(name)] > 0


def test_free_unit_profile():
    run = [(1, 2, 10 * H, 0.0), (2, 3, 10 * H, -9.5 * H), (3, 5, 10 * H, -5 * H)]
    row = ObservationBuilder(10, 48 * H).queue_features(snap(0.0, 10, running=run))
    assert row[col("free_in_1h")] == pytest.approx(0.3)
    assert row[col("free_in_6h")] == pytest.approx(0.8)
    assert row[col("free_in_24h")] == pytest.approx(1.0)


def test_started_waits_from_consecutive_snapshots():
    b = ObservationBuilder(10, 48 * H, wait_horizon=2 * H)
    b.push(snap(0.0, 10, pending=[(7, 1, H, -3 * H, -3 * H), (8, 1, H, -H, -H)]))
    # job 7 started at 300 s after waiting 3 h + 300 s; job 9 arrived and started unseen
    b.push(
        snap(600.0, 10, pending=[(8, 1, H, -H, -H)], running=[(7, 1, H, 300.0), (9, 1, H, 500.0)])
    )
    assert sorted(b.recent_waits()) == pytest.approx([0.0, 3 * H + 300])
    b.push(snap(600.0 + 3 * H, 10))
    assert b.recent_waits().shape == (0,)  # both starts left the 2 h horizon


def test_state_roundtrip():
    b = ObservationBuilder(10, 48 * H, window=4)
    chain = ChainState(0, 1, H, 0, math.nan, 1, H)
    b.push(snap(0.0, 10, pending=[(1, 2, H, 0.0, 0.0)]))
    saved = b.state()
    before = b.observe(chain)
    b.push(snap(600.0, 10, running=[(1, 2, H, 300.0)]))
    assert not np.array_equal(before, b.observe(chain))
    b.set_state(saved)
    assert np.array_equal(before, b.observe(chain))


def test_rejects_bad_scales():
    with pytest.raises(ValueError, match="total_units"):
        ObservationBuilder(0, H)
    with pytest.raises(ValueError, match="max_limit"):
        ObservationBuilder(10, 0)


def test_work_features_measure_node_hours_ahead():
    b = ObservationBuilder(total_units=10, max_limit=10 * H, window=2)
    pending = [(1, 4, 5 * H, 0.0, 0.0), (2, 2, 20 * H, 0.0, math.nan)]  # 2nd: not eligible
    running = [(3, 5, 10 * H, -6 * H)]  # 4 h left
    row = b.push(snap(0, 10, pending, running))
    # 4 x 5 h + 2 x 10 h (limits capped at max_limit) over 10 units x 10 h
    assert row[col("pend_work")] == pytest.approx((20 + 20) / 100)
    assert row[col("pend_eligible_work")] == pytest.approx(20 / 100)
    assert row[col("run_work")] == pytest.approx(5 * 4 / 100)


def test_start_estimate_in_the_context_row():
    b = ObservationBuilder(total_units=10, max_limit=10 * H, window=2)
    b.push(snap(0, 10))
    ctx = CONTEXT_FEATURES.index
    unknown = b.observe(ChainState(0, 1, 10 * H, 0, 0, 1, 10 * H))[-1]
    assert unknown[ctx("est_known")] == 0 and unknown[ctx("est_late")] == 0
    # 2 h into a 10 h predecessor: 8 h left; the successor would start in 9 h -> 1 h late
    late = b.observe(ChainState(2 * H, 1, 10 * H, 0, 0, 1, 10 * H, est_start=11 * H))[-1]
    assert late[ctx("est_known")] == 1
    assert late[ctx("est_late")] == pytest.approx(0.1)
    assert late[ctx("est_early")] == 0
    early = b.observe(ChainState(2 * H, 1, 10 * H, 0, 0, 1, 10 * H, est_start=4 * H))[-1]
    assert early[ctx("est_early")] == pytest.approx(0.6) and early[ctx("est_late")] == 0


def test_ended_jobs_show_how_much_of_their_limits_they_used():
    """Running jobs that vanish between two samples ended: the share of their limits they
    used (to the middle of the interval) is what limit-based estimates miss."""
    b = ObservationBuilder(total_units=10, max_limit=10 * H, window=4, wait_horizon=4 * H)
    b.push(snap(0.0, 10, running=[(1, 2, 10 * H, -H), (2, 4, 4 * H, -1.5 * H), (3, 1, H, 0.0)]))
    row = b.push(snap(H, 10, running=[(3, 1, H, 0.0)]))
    # job 1 ran 1.5 h of 10 h, job 2 2 h of 4 h (ended at the interval's middle, 0.5 h)
    assert row[col("ended_used_mean")] == pytest.approx((0.15 + 0.5) / 2)
    assert row[col("ended_used_p50")] == pytest.approx(0.5)
    assert row[col("ended_work_ratio")] == pytest.approx((2 * 1.5 + 4 * 2) / (2 * 10 + 4 * 4))
    assert row[col("ended_count")] == pytest.approx(math.log1p(2) / math.log1p(10))
    state = b.state()
    row = b.push(snap(6 * H, 10))  # job 3 ends too; jobs 1 and 2 leave the 4-h horizon
    assert row[col("ended_used_mean")] == pytest.approx(1.0)
    b.set_state(state)  # a restored builder forgets job 3's end again
    assert b.queue_features(snap(H, 10, running=[(3, 1, H, 0.0)]))[
        col("ended_used_mean")
    ] == pytest.approx(0.325)


def test_scalar_wait_equals_the_numpy_call_it_replaces():
    b = ObservationBuilder(72, 172800.0)
    values = [0.0, -0.0, -5.0, 1e-300, 7.5, 3600.0, 1e9, math.nan, np.float64(-0.0), np.float64(4)]
    for s in values:
        want = np.log1p(np.maximum(s, 0.0) / 3600.0) * b._wait_norm
        got = b._wait(s)
        assert np.array_equal(np.float64(got), np.float64(want), equal_nan=True)
        assert np.signbit(got) == np.signbit(want)


def test_compiled_row_refuses_arrays_of_the_wrong_type():
    b = ObservationBuilder(8, 3600.0)
    bad = QueueSnapshot(
        time=10.0,
        total_units=8,
        pend_id=np.array([1], np.int64),
        pend_units=np.array([2], np.int32),  # not int64
        pend_limit=np.array([60.0]),
        pend_submit=np.array([0.0]),
        pend_eligible=np.array([0.0]),
    )
    with pytest.raises(TypeError, match="pend_units must be a contiguous 1-d int64"):
        b.queue_features(bad)


def test_fit_features_see_only_jobs_no_larger_than_the_successor():
    b = ObservationBuilder(10, 48 * H, wait_horizon=24 * H)
    ctx = CONTEXT_FEATURES.index
    wait = b._wait
    # pending at 0: a 1-unit job waiting 1 h, an 8-unit job waiting 10 h
    b.push(snap(0.0, 10, pending=[(1, 1, H, -H, -H), (2, 8, H, -10 * H, -10 * H)]))
    one = ChainState(600.0, 1, H, 0, 0, 1, H)
    assert b.observe(one)[-1][ctx("fit_count")] == 0  # nothing seen starting yet
    # both start at 300 s; a 2-unit job 3 appears and starts unseen (wait 0)
    running = [(1, 1, H, 300.0), (2, 8, H, 300.0), (3, 2, H, 500.0)]
    b.push(snap(600.0, 10, running=running))
    row = b.observe(one)[-1]
    assert row[ctx("fit_count")] == pytest.approx(math.log1p(1) / math.log1p(10))
    assert row[ctx("fit_wait_mean")] == pytest.approx(wait(H + 300.0))
    assert row[ctx("fit_recent_count")] == row[ctx("fit_count")]
    # a 2-unit successor also sees job 3 (wait 0); an 8-unit one sees all three
    two = b.observe(ChainState(600.0, 1, H, 0, 0, 2, H))[-1]
    assert two[ctx("fit_wait_mean")] == pytest.approx(wait((H + 300.0) / 2))
    eight = b.observe(ChainState(600.0, 1, H, 0, 0, 8, H))[-1]
    assert eight[ctx("fit_wait_p90")] == pytest.approx(wait(10 * H + 300.0))
    assert eight[ctx("fit_count")] == pytest.approx(math.log1p(3) / math.log1p(10))
    # 4 h later the starts are older than FIT_RECENT (3 h) but within the 24 h horizon
    b.push(snap(600.0 + 4 * H, 10, running=running))
    later = b.observe(ChainState(600.0 + 4 * H, 1, H, 0, 0, 8, H))[-1]
    assert later[ctx("fit_count")] == eight[ctx("fit_count")]
    assert later[ctx("fit_recent_count")] == 0 and later[ctx("fit_recent_wait_mean")] == 0


def test_an_older_feature_version_sees_its_own_columns():
    obs = np.ones((2, 3, N_FEATURES), np.float32)
    old = for_version(obs, 3)
    assert np.all(old[:, :-1] == 1) and np.all(old[:, -1, : CONTEXT_COLUMNS[3]] == 1)
    assert np.all(old[:, -1, CONTEXT_COLUMNS[3] :] == 0) and np.all(obs == 1)
    assert for_version(obs, FEATURE_VERSION) is obs
    with pytest.raises(ValueError, match="feature version 1"):
        for_version(obs, 1)
