"""``gap-regressor``: what the Mirage paper's reference code calls "DQN": a network that
predicts the gap if the successor were submitted now, and a rule that submits once the
prediction reaches a threshold (chosen on validation data). A learned baseline.

Plain torch (no RL), saved in the same zip-with-``mirage.json`` format as the SB3 agents.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.torch_layers import create_mlp
from torch import nn

from mirage.agents.common import pretrain as pt
from mirage.agents.common.extractors import SummaryExtractor
from mirage.dataset import HindsightData

HIDDEN = [64, 64]


class GapNet(nn.Module):
    """Summary features -> MLP -> signed-log gap (hours) of submitting now."""

    def __init__(self, observation_space: gym.spaces.Box, hidden: list[int]) -> None:
        super().__init__()
        self.extractor = SummaryExtractor(observation_space)
        self.mlp = nn.Sequential(*create_mlp(self.extractor.features_dim, 1, hidden))

    def forward(self, obs: th.Tensor) -> th.Tensor:
        return self.mlp(self.extractor(obs)).flatten()


class GapRegressor:
    """The model object: ``net``, ``observation_space``, ``save`` and ``load``."""

    WEIGHTS = "gap_regressor.pt"
    CONFIG = "gap_regressor.json"

    def __init__(
        self, observation_space: gym.spaces.Box, seed: int = 0, hidden: list[int] | None = None
    ) -> None:
        th.manual_seed(seed)
        self.observation_space = observation_space
        self.hidden = list(hidden or HIDDEN)
        self.net = GapNet(observation_space, self.hidden)
        self.net.eval()

    def save(self, path: str | Path) -> None:
        buf = io.BytesIO()
        th.save(self.net.state_dict(), buf)
        config = {"obs_shape": list(self.observation_space.shape), "hidden": self.hidden}
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr(self.WEIGHTS, buf.getvalue())
            zf.writestr(self.CONFIG, json.dumps(config))

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu", **_: Any) -> GapRegressor:
        with zipfile.ZipFile(path) as zf:
            config = json.loads(zf.read(cls.CONFIG))
            state = th.load(io.BytesIO(zf.read(cls.WEIGHTS)), map_location=device)
        space = gym.spaces.Box(-np.inf, np.inf, shape=tuple(config["obs_shape"]), dtype=np.float32)
        model = cls(space, hidden=config["hidden"])
        model.net.load_state_dict(state)
        return model

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> tuple[int, None]:
        """Submit once the predicted gap is >= 0 (a model without a tuned threshold)."""
        return int(float(score(self)(th.as_tensor(obs[None]))[0]) >= 0.0), None


ALGO = GapRegressor


def build(env: gym.Env, seed: int, **kwargs: Any) -> GapRegressor:
    space = env.observation_space
    if not isinstance(space, gym.spaces.Box):
        raise TypeError(f"gap-regressor needs a Box observation space, got {space}")
    return GapRegressor(space, seed, **kwargs)


def pretrain(
    model: GapRegressor, data: HindsightData, seed: int, progress: bool = False, **kwargs: Any
) -> dict[str, float]:
    return pt.fit_regression(model.net, data, seed=seed, progress=progress, **kwargs)


def score(model: GapRegressor) -> Any:
    """The predicted gap of submitting now, in hours."""

    def fn(obs: th.Tensor) -> th.Tensor:
        y = model.net(obs)
        return th.sign(y) * th.expm1(th.abs(y))

    return fn
