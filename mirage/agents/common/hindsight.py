"""What hindsight labels say about each decision: costs, the oracle's choice, and the exact
offline evaluation of any stopping rule.

Waiting never changes the world, so a :class:`~mirage.dataset.HindsightData` holds the gap
of every submit time of its chains. A policy that submits at the first decision where its
score reaches a threshold therefore has an exactly known outcome on that data: the gap at
that decision, or the chain's end gap if it never fires. Thresholds are tuned this way on
validation data.

The learned agents' rule (:func:`mirage.agents.common.rule.fires`) also has a start-estimate
guard; :func:`tune_rule` chooses its threshold and guard together on validation data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mirage.agents.common.rule import fires
from mirage.dataset import HindsightData

GUARD_HOURS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, np.inf)
"""Candidate guards (hours before the predecessor's end) tried by :func:`tune_rule`;
``inf`` is no guard."""

UNINTERRUPTED = 600.0
"""A chain is uninterrupted when its gap is at most 10 min (overlap allowed): the paper's
"zero interruption"."""
ON_TIME = 1800.0
"""A chain is on time when ``|gap|`` is at most 30 min."""


def cost_hours(
    gap: np.ndarray, interruption_weight: float = 1.0, overlap_weight: float = 1.0
) -> np.ndarray:
    """Weighted ``|gap|`` in hours: interruption (gap > 0) and overlap (gap < 0) apart."""
    h = np.asarray(gap, float) / 3600.0
    return interruption_weight * np.maximum(h, 0.0) + overlap_weight * np.maximum(-h, 0.0)


def best_later(data: HindsightData, cost: np.ndarray, end_cost: np.ndarray) -> np.ndarray:
    """For each decision, the least cost of submitting at any *later* decision or at the
    predecessor's end (what waiting can achieve in hindsight)."""
    out = np.empty(len(data))
    for e in range(data.episodes):
        a, b = data.ep_first[e], data.ep_first[e + 1]
        run = end_cost[e]
        for i in range(b - 1, a - 1, -1):
            out[i] = run
            run = min(run, cost[i])
    return out


def oracle_labels(
    data: HindsightData, interruption_weight: float = 1.0, overlap_weight: float = 1.0
) -> np.ndarray:
    """1 where submitting now is at least as good as any later time, in hindsight."""
    c = cost_hours(data.gap, interruption_weight, overlap_weight)
    end = cost_hours(data.ep_end_gap, interruption_weight, overlap_weight)
    return (c <= best_later(data, c, end)).astype(np.int64)


def first_fire_gaps(data: HindsightData, fire: np.ndarray) -> np.ndarray:
    """Each episode's gap when the successor is submitted at the first decision where
    ``fire`` is true (the end gap if none)."""
    gaps = data.ep_end_gap.copy()
    idx = np.flatnonzero(fire)
    if idx.shape[0]:
        eps, first = np.unique(data.episode[idx], return_index=True)
        gaps[eps] = data.gap[idx[first]]
    return gaps


@dataclass(frozen=True, slots=True)
class GapStats:
    """Chain outcomes in hours and shares."""

    chains: int
    abs_gap: float
    interruption: float
    overlap: float
    uninterrupted: float
    on_time: float

    @classmethod
    def of(cls, gaps: np.ndarray) -> GapStats:
        g = np.asarray(gaps, float)
        if not g.shape[0]:
            return cls(0, *(np.nan,) * 5)
        return cls(
            chains=int(g.shape[0]),
            abs_gap=float(np.abs(g).mean() / 3600),
            interruption=float(np.maximum(g, 0).mean() / 3600),
            overlap=float(np.maximum(-g, 0).mean() / 3600),
            uninterrupted=float((g <= UNINTERRUPTED).mean()),
            on_time=float((np.abs(g) <= ON_TIME).mean()),
        )


def tune_rule(
    data: HindsightData,
    score: np.ndarray,
    objective: str = "abs_gap",
    max_overlap: float | None = None,
    guard_hours: tuple[float, ...] = GUARD_HOURS,
) -> tuple[float, float | None, GapStats]:
    """The threshold and guard (:func:`fires`) best on ``data`` (see :func:`tune_threshold`
    for the objectives); the guard as a fraction of ``max_limit``, ``None`` for none."""
    hours = float(data.meta["max_limit"]) / 3600.0
    best: tuple[Any, float, float | None, GapStats] | None = None
    for g in guard_hours:
        guard = None if not np.isfinite(g) else g / hours
        allowed = fires(np.zeros(len(data)), data.ctx, 0.0, guard)
        t, st = tune_threshold(data, np.where(allowed, score, -np.inf), objective, max_overlap)
        key = _key(st, objective, max_overlap)
        if best is None or key < best[0]:
            best = (key, t, guard, st)
    assert best is not None
    return best[1], best[2], best[3]


def _key(st: GapStats, objective: str, max_overlap: float | None) -> tuple[Any, ...]:
    if objective == "abs_gap":
        return (st.abs_gap,)
    if objective == "uninterrupted":
        over = max_overlap is not None and st.overlap > max_overlap
        return (over, -st.uninterrupted, st.abs_gap)
    raise ValueError(f"unknown objective {objective!r}")


def tune_threshold(
    data: HindsightData,
    score: np.ndarray,
    objective: str = "abs_gap",
    max_overlap: float | None = None,
    candidates: int = 81,
) -> tuple[float, GapStats]:
    """The threshold on ``score`` (submit at the first decision with ``score >= t``) that
    is best on ``data``: least mean ``|gap|`` (``abs_gap``), or the highest uninterrupted
    share with mean overlap at most ``max_overlap`` hours (``uninterrupted``)."""
    finite = score[np.isfinite(score)]
    qs = np.quantile(finite, np.linspace(0.0, 1.0, candidates)) if finite.shape[0] else []
    grid = np.unique(np.concatenate([qs, [np.inf]]))
    best: tuple[Any, float, GapStats] | None = None
    for t in grid:
        st = GapStats.of(first_fire_gaps(data, score >= t))
        key = _key(st, objective, max_overlap)
        if best is None or key < best[0]:
            best = (key, float(t), st)
    assert best is not None
    return best[1], best[2]
