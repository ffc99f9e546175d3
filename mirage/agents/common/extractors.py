"""Feature extractors (SB3 extension points) over the observation matrix.

``SummaryExtractor`` (the MLP agents): the context row, the newest sample and the means of
the last hour, six hours and the whole window -> ``5 * features`` inputs, which learns far
faster than flattening 145 rows. ``TransformerExtractor``: a transformer encoder over the
whole window, cut into patches of ``patch`` samples, with the context row as a leading token.
"""

from __future__ import annotations

import gymnasium as gym
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn


class SummaryExtractor(BaseFeaturesExtractor):
    """Multi-scale summary of the history plus the chain context."""

    SCALES = (6, 36)

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        rows, feats = observation_space.shape
        super().__init__(observation_space, features_dim=5 * feats)
        self.window = rows - 1

    def forward(self, obs: th.Tensor) -> th.Tensor:
        hist = obs[:, : self.window]
        parts = [obs[:, self.window], hist[:, -1]]
        parts += [hist[:, -k:].mean(dim=1) for k in self.SCALES]
        parts.append(hist.mean(dim=1))
        return th.cat(parts, dim=1)


class TransformerExtractor(BaseFeaturesExtractor):
    """Transformer encoder over patches of the history window plus a context token."""

    def __init__(
        self,
        observation_space: gym.spaces.Box,
        d_model: int = 32,
        n_heads: int = 4,
        n_layers: int = 1,
        patch: int = 6,
    ) -> None:
        rows, feats = observation_space.shape
        window = rows - 1
        if window % patch:
            raise ValueError(f"window {window} is not a multiple of patch {patch}")
        super().__init__(observation_space, features_dim=2 * d_model)
        self.window, self.patch, self.feats = window, patch, feats
        n_tokens = window // patch
        self.embed = nn.Linear(patch * feats, d_model)
        self.embed_ctx = nn.Linear(feats, d_model)
        self.pos = nn.Parameter(th.zeros(1, n_tokens + 1, d_model))
        layer = nn.TransformerEncoderLayer(
            d_model, n_heads, dim_feedforward=2 * d_model, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)

    def forward(self, obs: th.Tensor) -> th.Tensor:
        b = obs.shape[0]
        hist = obs[:, : self.window].reshape(b, self.window // self.patch, self.patch * self.feats)
        tokens = th.cat([self.embed_ctx(obs[:, self.window]).unsqueeze(1), self.embed(hist)], 1)
        out = self.encoder(tokens + self.pos)
        return th.cat([out[:, 0], out[:, 1:].mean(dim=1)], dim=1)
