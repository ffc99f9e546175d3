"""Adaptation between retrains: each day, the rolling model's threshold and guard are tuned
again on the chains that have become known in the last ``recent_days`` (the model itself is
not retrained). Live, ``mirage retrain --adapt-days N`` does the same to the deployed model
(:func:`retune`) from the chains it labelled from the recent accounting, on a daily timer.

The window (or none) is chosen on the development weeks only (:data:`WINDOWS`); the test
weeks are then reported once with that choice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mirage.backtest import labels as lb
from mirage.backtest.plan import DAY, Plan, Week
from mirage.dataset import HindsightData

WINDOWS = (3.0, 7.0, 14.0)
"""Candidate windows (days) of recently known chains to tune the threshold on."""
MIN_CHAINS = 8
"""Fewer recent chains than this: the model's own threshold and guard are kept."""


def adapted_gaps(
    out: Path, plan: Plan, week: Week, model: Path, windows: tuple[float, ...] = WINDOWS
) -> dict[float, np.ndarray]:
    """For each window: the week's chains' gaps under ``model`` whose threshold and guard
    are tuned again at the start of each day on the chains known by then that started in
    the last ``window`` days (in the week's order of chains)."""
    from mirage.agents.common.hindsight import first_fire_gaps
    from mirage.agents.common.model_io import load_model
    from mirage.agents.common.rule import fires

    parts = [d for w in plan.weeks if w.start <= week.start if (d := lb.load_week(out, w))]
    pool = lb.join(parts)
    policy = load_model(model)
    score = pool_scores(policy, pool)
    known = lb.per_chain(pool, "known")
    mine = np.flatnonzero((pool.ep_t0 >= week.start) & (pool.ep_t0 < week.end))
    assert policy.threshold is not None
    day_of = np.floor(pool.ep_t0[mine] / DAY) * DAY
    out_gaps: dict[float, np.ndarray] = {}
    for window in windows:
        gaps = pool.ep_end_gap[mine].copy()
        for day in np.unique(day_of):
            recent = np.flatnonzero((known <= day) & (pool.ep_t0 >= day - window * DAY))
            threshold, guard = float(policy.threshold), policy.guard
            tuned = retune(policy, pool, score, recent)
            if tuned is not None:
                threshold, guard = tuned
            today = mine[day_of == day]
            keep = np.isin(pool.episode, today)
            fire = fires(score[keep], pool.ctx[keep], threshold, guard)
            gaps[day_of == day] = first_fire_gaps(lb.select(pool, today), fire)
        out_gaps[window] = gaps
    return out_gaps


def pool_scores(policy: Any, pool: HindsightData) -> np.ndarray:
    """``policy``'s score at every labelled decision of ``pool`` (outside its support: never
    fires)."""
    from mirage.agents.common.support import masked

    idx = np.arange(len(pool))
    score = np.concatenate(
        [policy.score(pool.obs(idx[i : i + 4096])) for i in range(0, len(pool), 4096)]
    )
    return masked(policy.support, pool, score)


def retune(
    policy: Any, pool: HindsightData, score: np.ndarray, recent: np.ndarray
) -> tuple[float, float | None] | None:
    """The threshold and guard best on the chains ``recent`` of ``pool`` (``score``: from
    :func:`pool_scores`), for the model's own objective; None with fewer than
    ``MIN_CHAINS`` of them (the model's own rule stands)."""
    from mirage.agents.common.hindsight import tune_rule

    if recent.shape[0] < MIN_CHAINS:
        return None
    objective = str(policy.meta.get("objective") or "abs_gap")
    keep = np.isin(pool.episode, recent)
    threshold, guard, _ = tune_rule(lb.select(pool, recent), score[keep], objective)
    return float(threshold), guard
