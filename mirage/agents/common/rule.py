"""The stopping rule of every learned agent: submit at the first decision whose score
reaches the tuned threshold, unless the *start-estimate guard* holds it back.

The guard does not fire while the scheduler's own estimate says a successor submitted now
would start more than ``guard`` (a fraction of ``max_limit``) before the predecessor ends.
That estimate assumes every running job uses its whole limit, so real starts come no later
than it (unless higher-priority work arrives): a successor it places well before the
predecessor's end would overlap, whatever the queue statistics say. But an early estimate
(a free node now) need not last: holding back until the estimate nears the end can find the
hole taken. So the guard is a tuned choice, ``None`` among the candidates: both parts are
chosen on validation data (:func:`mirage.agents.common.hindsight.tune_rule`). Every HPC2N
model chose a guard (it lets them pre-submit on a light queue); on LS6 most did not.
"""

from __future__ import annotations

import numpy as np

from mirage.observation import C


def est_early(ctx: np.ndarray) -> np.ndarray:
    """How long before the predecessor's end the scheduler expects a successor submitted now
    to start, as a fraction of ``max_limit`` (0 where no estimate is known), from context
    rows ``(n, F)``."""
    ctx = np.asarray(ctx)
    return np.where(ctx[:, C["est_known"]] > 0, ctx[:, C["est_early"]], 0.0)


def fires(score: np.ndarray, ctx: np.ndarray, threshold: float, guard: float | None) -> np.ndarray:
    """The learned agents' rule: submit where ``score >= threshold``, unless the start
    estimate puts the successor more than ``guard`` before the predecessor's end (``None``:
    no guard)."""
    fire = np.asarray(score) >= threshold
    if guard is not None and np.isfinite(guard):
        fire &= est_early(ctx) <= guard
    return fire
