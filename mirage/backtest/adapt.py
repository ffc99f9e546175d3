"""Adaptation between retrains: each day, the rolling model's threshold and guard are tuned
again on the chains that have become known in the last ``recent_days`` (the model itself is
not retrained). Live, this needs those chains labelled from the recent accounting, what
``mirage retrain`` does, on a daily timer instead of a weekly one.

The window (or none) is chosen on the development weeks only (:data:`WINDOWS`); the test
weeks are then reported once with that choice.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mirage.backtest import labels as lb
from mirage.backtest.plan import DAY, Plan, Week

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
    from mirage.agents.common.hindsight import first_fire_gaps, tune_rule
    from mirage.agents.common.model_io import load_model
    from mirage.agents.common.rule import fires
    from mirage.agents.common.support import masked

    parts = [d for w in plan.weeks if w.start <= week.start if (d := lb.load_week(out, w))]
    pool = lb.join(parts)
    policy = load_model(model)
    idx = np.arange(len(pool))
    score = np.concatenate(
        [policy.score(pool.obs(idx[i : i + 4096])) for i in range(0, len(pool), 4096)]
    )
    score = masked(policy.support, pool, score)
    known = lb.per_chain(pool, "known")
    mine = np.flatnonzero((pool.ep_t0 >= week.start) & (pool.ep_t0 < week.end))
    objective = str(policy.meta.get("objective") or "abs_gap")
    assert policy.threshold is not None
    day_of = np.floor(pool.ep_t0[mine] / DAY) * DAY
    out_gaps: dict[float, np.ndarray] = {}
    for window in windows:
        gaps = pool.ep_end_gap[mine].copy()
        for day in np.unique(day_of):
            recent = np.flatnonzero((known <= day) & (pool.ep_t0 >= day - window * DAY))
            threshold, guard = float(policy.threshold), policy.guard
            if recent.shape[0] >= MIN_CHAINS:
                keep = np.isin(pool.episode, recent)
                threshold, guard, _ = tune_rule(lb.select(pool, recent), score[keep], objective)
            today = mine[day_of == day]
            keep = np.isin(pool.episode, today)
            fire = fires(score[keep], pool.ctx[keep], threshold, guard)
            gaps[day_of == day] = first_fire_gaps(lb.select(pool, today), fire)
        out_gaps[window] = gaps
    return out_gaps
