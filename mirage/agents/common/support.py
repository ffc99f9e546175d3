"""A model's training support: the chain shapes it was trained on.

The learned models clip every input to the range it took in training, so a queue busier
than any in training reads as the busiest one seen (at 40 % of the simulated LS6 test
month's decision points a job has been pending longer than any at a training decision
point). A chain of another
shape is a different task: a one-node chain on a 256-node cluster (1/256 of it) would be
clipped to the narrowest chain seen, 1/84, and the model would answer for a cluster that is
not there. So a learned agent checks, at every decision, the chain's shape (:data:`CHECKED`:
predecessor's and successor's size as a share of the cluster and limit as a share of the
longest) against the range each took in training, widened by :data:`WIDEN` of that range on
each side. Outside it, the rule does not fire: the agent waits, and submits at the
predecessor's end as ``reactive`` does. The LS6 default was trained on 1- and 8-node chains
of 72-84-unit clusters with full 48-h limits: on HPC2N (240 processors) and Lublin (256
nodes) a one-node chain is outside, as are 16-node chains or 24-h segments on LS6; every
decision of its validation and test chains is inside.

The support (the range of every feature, for diagnostics; only :data:`CHECKED` gates) is
stored in the model's metadata (``support``) by ``mirage train`` and ``mirage ensemble``;
``mirage support`` (:mod:`mirage.support`) adds it to an older model from its training
data::

    mirage support models/moe-dqn-ens.zip --data data/train.parquet
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mirage.observation import (
    CONTEXT_COLUMNS,
    CONTEXT_FEATURES,
    QUEUE_COLUMNS,
    QUEUE_FEATURES,
)

WIDEN = 0.05
"""Each feature's training range is widened by this share of its width on each side."""
_EPS = 1e-6  # float32 noise on a feature that was constant in training
CHECKED = ("context:pred_units", "context:pred_limit", "context:succ_units", "context:succ_limit")
"""The features that gate a decision: the chain's shape."""


def feature_names(version: int) -> tuple[str, ...]:
    """The features a support covers, of feature ``version``: newest queue row, then
    context."""
    return tuple(f"queue:{n}" for n in QUEUE_FEATURES[: QUEUE_COLUMNS[version]]) + tuple(
        f"context:{n}" for n in CONTEXT_FEATURES[: CONTEXT_COLUMNS[version]]
    )


def covered_rows(obs: np.ndarray, version: int) -> np.ndarray:
    """The covered features ``(n, F)`` of observations ``(n, window + 1, N_FEATURES)``, as
    a model of feature ``version`` sees them (only the two rows, no copy of the rest)."""
    obs = np.asarray(obs)
    queue = obs[:, -2, : QUEUE_COLUMNS[version]]
    return np.concatenate([queue, obs[:, -1, : CONTEXT_COLUMNS[version]]], axis=1)


def data_rows(data: Any, version: int) -> np.ndarray:
    """:func:`covered_rows` of every decision of a :class:`~mirage.dataset.HindsightData`
    (without building its observations)."""
    ctx = np.asarray(data.ctx)[:, : CONTEXT_COLUMNS[version]]
    queue = np.asarray(data.hist)[np.asarray(data.hist_end) - 1, : QUEUE_COLUMNS[version]]
    return np.concatenate([queue, ctx], axis=1)


@dataclass(frozen=True, slots=True)
class Support:
    """Per-feature bounds (already widened) of one feature version."""

    version: int
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def fit(cls, rows: np.ndarray, version: int, widen: float = WIDEN) -> Support:
        """The support of training rows ``(n, F)`` (:func:`covered_rows`' columns)."""
        rows = np.asarray(rows, np.float64)
        if rows.ndim != 2 or rows.shape[1] != len(feature_names(version)) or not len(rows):
            raise ValueError(f"support rows of shape {rows.shape} do not fit version {version}")
        lo, hi = rows.min(axis=0), rows.max(axis=0)
        pad = widen * (hi - lo) + _EPS
        return cls(version, lo - pad, hi + pad)

    @classmethod
    def of_data(cls, data: Any, version: int, widen: float = WIDEN) -> Support:
        """The support of a :class:`~mirage.dataset.HindsightData`, as a model of feature
        ``version`` sees it (no older than the data's own version)."""
        return cls.fit(data_rows(data, version), version, widen)

    @property
    def gates(self) -> np.ndarray:
        """``(F,)``: which features gate a decision (:data:`CHECKED`)."""
        return np.isin(feature_names(self.version), CHECKED)

    def inside_data(self, data: Any) -> np.ndarray:
        """``(n,)``: :meth:`inside` for every decision of a hindsight dataset."""
        return np.asarray(~(self._beyond(data_rows(data, self.version)) & self.gates).any(axis=1))

    def outside(self, obs: np.ndarray) -> np.ndarray:
        """``(n, F)``: which features of each observation lie outside their training range
        (every feature, not only those that gate)."""
        return self._beyond(covered_rows(obs, self.version))

    def _beyond(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray((rows < self.lo) | (rows > self.hi))

    def inside(self, obs: np.ndarray) -> np.ndarray:
        """``(n,)``: whether each observation's chain shape lies inside (the rule may fire)."""
        return np.asarray(~(self.outside(obs) & self.gates).any(axis=1))

    def explain(self, obs: np.ndarray, every: bool = False) -> list[str]:
        """The names of the features of one observation ``(window + 1, N_FEATURES)`` that
        lie outside: those that gate (empty when :meth:`inside`), or with ``every`` all."""
        out = self.outside(np.asarray(obs)[None])[0]
        if not every:
            out &= self.gates
        return [n for n, o in zip(feature_names(self.version), out, strict=True) if o]

    def to_meta(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "widen": WIDEN,
            "features": list(feature_names(self.version)),
            "lo": [float(x) for x in self.lo],
            "hi": [float(x) for x in self.hi],
        }

    @classmethod
    def from_meta(cls, meta: dict[str, Any] | None) -> Support | None:
        """The support stored in a model's metadata (None if it has none)."""
        if not meta:
            return None
        version = int(meta["version"])
        if list(meta.get("features", [])) != list(feature_names(version)):
            raise ValueError(f"support features do not match feature version {version}")
        lo, hi = np.asarray(meta["lo"], np.float64), np.asarray(meta["hi"], np.float64)
        if lo.shape != (len(meta["features"]),) or hi.shape != lo.shape:
            raise ValueError("support bounds do not match its features")
        return cls(version, lo, hi)

    def union(self, other: Support) -> Support:
        """The support covering both (models trained on different data)."""
        if other.version != self.version:
            raise ValueError("supports of different feature versions")
        return Support(self.version, np.minimum(self.lo, other.lo), np.maximum(self.hi, other.hi))


def masked(support: Support | None, data: Any, scores: np.ndarray) -> np.ndarray:
    """Scores of ``data``'s decisions as the stopping rule sees them: ``-inf`` (never fires)
    outside ``support``, for tuning a threshold on what the agent will really do."""
    if support is None:
        return scores
    return np.where(support.inside_data(data), scores, -np.inf)
