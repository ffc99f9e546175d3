"""The learned agents' stopping rule: the start-estimate guard, its joint tuning with the
threshold, and the inputs clipped to the training range."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th

from mirage import dataset as ds
from mirage.agents.common.extractors import (
    SummaryExtractor,
    TransformerExtractor,
    fit_input_range,
)
from mirage.agents.common.hindsight import tune_rule
from mirage.agents.common.rule import est_early, fires
from mirage.observation import N_FEATURES, C

H = 3600.0
MAX_LIMIT = 48 * H


def ctx_rows(early_hours: list[float | None]) -> np.ndarray:
    """Context rows whose start estimate is ``h`` hours before the predecessor's end
    (``None``: no estimate known)."""
    rows = np.zeros((len(early_hours), N_FEATURES), np.float32)
    for i, h in enumerate(early_hours):
        if h is not None:
            rows[i, C["est_known"]] = 1.0
            rows[i, C["est_early"]] = h * H / MAX_LIMIT
    return rows


def test_the_guard_holds_back_only_where_the_estimate_is_early():
    ctx = ctx_rows([5.0, 0.5, 0.0, None])
    score = np.array([1.0, 1.0, 1.0, 1.0])
    assert list(est_early(ctx) * MAX_LIMIT / H) == pytest.approx([5.0, 0.5, 0.0, 0.0])
    assert list(fires(score, ctx, 0.5, None)) == [True] * 4
    guard = 1.0 * H / MAX_LIMIT
    assert list(fires(score, ctx, 0.5, guard)) == [False, True, True, True]
    assert list(fires(score - 1.0, ctx, 0.5, guard)) == [False] * 4  # below the threshold


def guard_data() -> ds.HindsightData:
    """Two chains on a light queue (the successor starts at once: submitting h hours early
    overlaps h hours, and the estimate says so) and one on a heavy queue (a 6-h wait the
    estimate cannot see). The score is the same everywhere: a rule without a guard must
    choose between overlap on the light chains and interruption on the heavy one."""
    recs = []
    for kind in ("light", "light", "heavy"):
        remaining = np.array([8.0, 6.0, 4.0, 2.0, 0.5])  # hours left at each decision
        gap = -remaining if kind == "light" else 6.0 - remaining
        early = list(remaining) if kind == "light" else [None] * 5
        n = len(remaining)
        recs.append(
            {
                "t0": 0.0,
                "units": 1,
                "pred_end": 0.0,
                "end_gap": 0.0 if kind == "light" else 6 * H,
                "now": list(range(n)),
                "gap": list(gap * H),
                "hist_end": list(range(1, n + 1)),
                "hist": np.zeros((n, N_FEATURES)).tolist(),
                "ctx": ctx_rows(early).tolist(),
            }
        )
    return ds.from_records(recs, {"window": 1, "feature_version": 0, "max_limit": MAX_LIMIT})


def test_tuning_finds_the_guard_that_separates_light_from_heavy_queues():
    d = guard_data()
    score = np.tile([0.0, 1.0, 2.0, 3.0, 4.0], 3)  # rises as the end nears
    _, none_guard, plain = tune_rule(d, score, guard_hours=(np.inf,))
    assert none_guard is None
    t, guard, st = tune_rule(d, score)
    assert guard is not None and guard * MAX_LIMIT / H < 2.0  # holds the light chains back
    assert t <= 1.0  # the heavy chain submits 6 h ahead
    assert st.abs_gap < plain.abs_gap
    assert st.abs_gap == pytest.approx(0.0)  # light: at the end; heavy: 6 h ahead


def test_input_range_clips_to_the_training_rows_and_survives_a_save():
    space = gym.spaces.Box(0.0, np.inf, shape=(13, N_FEATURES), dtype=np.float32)
    for ext in (SummaryExtractor(space), TransformerExtractor(space, patch=6)):
        hist = np.random.default_rng(0).uniform(0, 1, (50, N_FEATURES)).astype(np.float32)
        ctx = np.random.default_rng(1).uniform(0, 1, (20, N_FEATURES)).astype(np.float32)
        assert fit_input_range(ext, hist, ctx) == 1
        obs = th.full((1, 13, N_FEATURES), 100.0)
        clipped = ext.input_range.clip(obs)
        assert th.allclose(clipped[0, :-1], th.as_tensor(hist.max(axis=0)).expand(12, -1))
        assert th.allclose(clipped[0, -1], th.as_tensor(ctx.max(axis=0)))
        assert th.equal(ext(obs), ext(obs * 2))
        fresh = type(ext)(space)
        fresh.load_state_dict(ext.state_dict())
        assert th.equal(fresh(obs), ext(obs))
        # a model saved before the bounds existed loads unbounded
        old = {k: v for k, v in ext.state_dict().items() if "input_range" not in k}
        legacy = type(ext)(space)
        legacy.load_state_dict(old)
        assert th.isinf(legacy.input_range.hist_hi).all()
