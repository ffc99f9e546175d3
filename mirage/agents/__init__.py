"""Mirage's policies: baselines and trained agents behind one interface.

``load_policy("average")`` gives a baseline; ``load_policy("model.zip")`` a trained model;
``load_policy("default")`` the shipped LS6 model (:func:`default_model_path`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mirage.agents.common.policy import Decision, DecisionContext, Policy

LEARNED = ("dqn", "moe-dqn", "pg", "transformer-pg", "gap-regressor")
DEFAULT_MODEL = "ls6-default.zip"


def baseline_names() -> list[str]:
    from mirage.agents.baselines import BASELINES

    return list(BASELINES)


def default_model_path() -> Path:
    """The shipped model trained on the LS6 trace."""
    return Path(__file__).resolve().parent.parent / "models" / DEFAULT_MODEL


def load_policy(spec: str, **kwargs: Any) -> Policy:
    """A policy by baseline name, ``default``, or path to a trained ``.zip``."""
    from mirage.agents.baselines import BASELINES
    from mirage.agents.common.model_io import load_model

    if spec in BASELINES:
        return BASELINES[spec](**kwargs)
    if spec == "default":
        return load_model(default_model_path())
    if spec.endswith(".zip") or Path(spec).exists():
        return load_model(spec)
    raise ValueError(
        f"unknown policy {spec!r}: give a baseline ({', '.join(BASELINES)}), 'default', "
        "or a trained MODEL.zip"
    )


def observation_builder_for(policy: Policy, total_units: int, max_limit: float) -> Any:
    """An :class:`~mirage.observation.ObservationBuilder` for this cluster with the window
    and sample interval the policy was trained with (defaults for baselines)."""
    from mirage.observation import SAMPLE_INTERVAL, WINDOW, ObservationBuilder

    meta = getattr(policy, "meta", {})
    return ObservationBuilder(
        total_units,
        max_limit,
        window=int(meta.get("window", WINDOW)),
        sample_interval=float(meta.get("sample_interval", SAMPLE_INTERVAL)),
    )


__all__ = [
    "DEFAULT_MODEL",
    "LEARNED",
    "Decision",
    "DecisionContext",
    "Policy",
    "baseline_names",
    "default_model_path",
    "load_policy",
    "observation_builder_for",
]
