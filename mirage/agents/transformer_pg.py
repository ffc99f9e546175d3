"""``transformer-pg``: PPO whose features extractor is a transformer encoder over the whole
history window (:class:`TransformerExtractor`)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from stable_baselines3 import PPO

from mirage.agents.common.extractors import TransformerExtractor
from mirage.agents.pg import DEFAULTS, favour_waiting

ALGO = PPO


def policy_kwargs() -> dict[str, Any]:
    return dict(
        features_extractor_class=TransformerExtractor,
        features_extractor_kwargs=dict(d_model=32, n_heads=4, n_layers=1, patch=6),
        net_arch=[64],
    )


def build(env: gym.Env, seed: int, **kwargs: Any) -> PPO:
    model = PPO("MlpPolicy", env, seed=seed, policy_kwargs=policy_kwargs(), **{**DEFAULTS, **kwargs})
    return favour_waiting(model)
