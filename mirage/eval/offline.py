"""Exact offline evaluation of learned stopping rules from hindsight labels.

A learned agent submits at the first decision where its rule fires (its score reaches its
threshold and its start-estimate guard allows it, :mod:`mirage.agents.common.rule`), and
waiting does not change the world, so one labelled replay of a chain (the gap of submitting
at *every* decision, :mod:`mirage.dataset`) gives every such agent's outcome on that chain:
the same gap :func:`mirage.envs.play` would measure, at the cost of one replay instead of
one per agent. ``tests/mirage/test_mirage_offline_eval.py`` checks the equality.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mirage.agents.common.hindsight import first_fire_gaps
from mirage.dataset import HindsightData


def rule_gaps(data: HindsightData, spec: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Each episode's gap under the saved model ``spec`` and the index of the decision
    where it fired (-1 if it never did: the forced submit at the predecessor's end)."""
    from mirage.agents.common.model_io import load_model

    policy = load_model(spec)
    if policy.threshold is None or policy.meta.get("decide_within") is not None:
        raise ValueError(f"{spec}: offline evaluation needs a tuned threshold, no horizon")

    fire = np.zeros(len(data), bool)
    for i in range(0, len(data), 2048):
        idx = np.arange(i, min(i + 2048, len(data)))
        fire[idx] = policy.fires(data.obs(idx))
    gaps = first_fire_gaps(data, fire)
    fired_at = np.full(data.episodes, -1, np.int64)
    idx = np.flatnonzero(fire)
    if idx.shape[0]:
        eps, first = np.unique(data.episode[idx], return_index=True)
        fired_at[eps] = data.step[idx[first]]
    return gaps, fired_at


def rows(
    data: HindsightData,
    gaps: Mapping[str, np.ndarray],
    fired_at: Mapping[str, np.ndarray] | None = None,
    t0: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """Episode rows in :func:`mirage.eval.runner.evaluate`'s form (``t0`` defaults to the
    episodes' start times) for the given per-episode gaps of each agent and, where known,
    the decision each fired at (-1: forced at the predecessor's end)."""
    t0 = data.ep_t0 if t0 is None else t0
    n = np.diff(data.ep_first)
    out = []
    for label, g in gaps.items():
        at = fired_at[label] if fired_at and label in fired_at else np.full(len(n), -1)
        for e in range(data.episodes):
            units = int(data.ep_units[e])
            out.append(
                {
                    "agent": label,
                    "t0": float(t0[e]),
                    "gap": float(g[e]),
                    "decisions": int(at[e] + 1 if at[e] >= 0 else n[e]),
                    "forced": bool(at[e] < 0),
                    "succ_units": units,
                    "interruption_hours": max(float(g[e]), 0.0) / 3600.0,
                    "overlap_node_hours": max(-float(g[e]), 0.0) / 3600.0 * units,
                    "error": "",
                }
            )
    return out


def oracle_gaps(data: HindsightData) -> np.ndarray:
    """The best gap (least ``|gap|``) of any decision or the forced submit, per episode."""
    best = data.ep_end_gap.copy()
    for e in range(data.episodes):
        g = data.gap[data.ep_first[e] : data.ep_first[e + 1]]
        if g.shape[0]:
            k = int(np.argmin(np.abs(g)))
            if abs(g[k]) < abs(best[e]):
                best[e] = g[k]
    return best


def evaluate_models(
    data: HindsightData, specs: Sequence[str], labels: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Rows of every saved model in ``specs`` on the labelled episodes of ``data``."""
    labels = list(labels) if labels is not None else [Path(s).stem for s in specs]
    gaps, fired_at = {}, {}
    for label, spec in zip(labels, specs, strict=True):
        gaps[label], fired_at[label] = rule_gaps(data, spec)
    return rows(data, gaps, fired_at)
