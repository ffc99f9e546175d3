"""``pg``: a policy-gradient agent; concretely SB3's PPO (clipped actor-critic policy
gradient) with a small MLP over :class:`SummaryExtractor` features.

Trained from hindsight data by behaviour cloning of the oracle's decisions (submit where
no later time is better), its value head fitted on the hindsight value; optionally
fine-tuned on-policy by SB3's PPO on ``mirage/Chain-v0``."""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
from stable_baselines3 import PPO

from mirage.agents.common import pretrain as pt
from mirage.agents.common.extractors import SummaryExtractor
from mirage.agents.common.hindsight import oracle_labels
from mirage.dataset import HindsightData

ALGO = PPO
DEFAULTS: dict[str, Any] = dict(
    learning_rate=3e-4,
    n_steps=1024,
    batch_size=128,
    n_epochs=5,
    gamma=1.0,
    gae_lambda=0.98,
    ent_coef=0.0,
    device="cpu",
)


def policy_kwargs() -> dict[str, Any]:
    return dict(features_extractor_class=SummaryExtractor, net_arch=[64, 64])


def favour_waiting(model: PPO, p_submit: float = 0.02) -> PPO:
    """Start from a policy that rarely submits (a 50/50 start ends episodes at once)."""
    import math

    import torch as th

    with th.no_grad():
        bias = cast(th.Tensor, model.policy.action_net.bias)
        bias.zero_()
        bias[1] = math.log(p_submit / (1 - p_submit))
    return model


def build(env: gym.Env, seed: int, **kwargs: Any) -> PPO:
    model = PPO(
        "MlpPolicy", env, seed=seed, policy_kwargs=policy_kwargs(), **{**DEFAULTS, **kwargs}
    )
    return favour_waiting(model)


def pretrain(
    model: PPO,
    data: HindsightData,
    seed: int,
    progress: bool = False,
    interruption_weight: float = 1.0,
    overlap_weight: float = 1.0,
    **kwargs: Any,
) -> dict[str, float]:
    """Behaviour cloning of the oracle under the given cost weights (a higher
    interruption weight makes an aggressive agent that submits earlier)."""
    labels = oracle_labels(data, interruption_weight, overlap_weight)
    values = pt.hindsight_value(data, interruption_weight, overlap_weight)
    return pt.fit_bc(model.policy, data, labels, values, seed=seed, progress=progress, **kwargs)


def score(model: PPO) -> Any:
    return pt.logit_score(model.policy)
