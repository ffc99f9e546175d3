"""``transformer-pg``: PPO whose features extractor is a transformer encoder over the whole
history window (:class:`TransformerExtractor`): the paper's aggressive option.

Trained like ``pg`` (behaviour cloning of the hindsight oracle, then optional PPO), but on
an oracle that weighs an interruption hour :data:`AGGRESSIVE_WEIGHT` times an overlap
hour, and with its threshold chosen for the highest uninterrupted share within an overlap
budget."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from stable_baselines3 import PPO

from mirage.agents.common.extractors import TransformerExtractor
from mirage.agents.pg import DEFAULTS, favour_waiting, score
from mirage.agents.pg import pretrain as pg_pretrain
from mirage.dataset import HindsightData

ALGO = PPO
AGGRESSIVE_WEIGHT = 3.0
"""Interruption hours weigh this many overlap hours in the oracle it clones."""
OBJECTIVE = "uninterrupted"
"""Threshold objective: most uninterrupted chains within an overlap budget."""


def policy_kwargs() -> dict[str, Any]:
    return dict(
        features_extractor_class=TransformerExtractor,
        features_extractor_kwargs=dict(d_model=32, n_heads=4, n_layers=1, patch=6),
        net_arch=[64],
    )


def build(env: gym.Env, seed: int, **kwargs: Any) -> PPO:
    model = PPO(
        "MlpPolicy", env, seed=seed, policy_kwargs=policy_kwargs(), **{**DEFAULTS, **kwargs}
    )
    return favour_waiting(model)


def pretrain(
    model: PPO, data: HindsightData, seed: int, progress: bool = False, **kwargs: Any
) -> dict[str, float]:
    kwargs.setdefault("interruption_weight", AGGRESSIVE_WEIGHT)
    return pg_pretrain(model, data, seed, progress, **kwargs)


__all__ = ["ALGO", "build", "policy_kwargs", "pretrain", "score"]
