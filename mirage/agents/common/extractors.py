"""Feature extractors (SB3 extension points) over the observation matrix.

``SummaryExtractor`` (the MLP agents): the context row, the newest sample and the means of
the last hour, six hours and the whole window -> ``5 * features`` inputs, which learns far
faster than flattening 145 rows. ``TransformerExtractor``: a transformer encoder over the
whole window, cut into patches of ``patch`` samples, with the context row as a leading token.

Both first clip their input to the range of each feature seen in the training data
(:func:`fit_input_range`; unbounded until it is called): a queue far heavier than any in
training reads as the heaviest one seen, instead of an extrapolation the network never
learned (the LS6 test month's longest pending waits exceed the training months').
A model can also be trained without some queue features: :func:`fit_input_range` pins their
columns to 0 (``drop``), so the network never sees them, in training or in use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

RANGE_BUFFERS = ("hist_lo", "hist_hi", "ctx_lo", "ctx_hi")


class InputRange(nn.Module):
    """Per-feature bounds of the history rows and of the context row; :meth:`clip` clamps
    an observation batch to them. The bounds are buffers (saved with the model); a model
    saved before they existed loads unbounded."""

    hist_lo: th.Tensor
    hist_hi: th.Tensor
    ctx_lo: th.Tensor
    ctx_hi: th.Tensor

    def __init__(self, n_features: int) -> None:
        super().__init__()
        inf = th.full((n_features,), float("inf"))
        for name in RANGE_BUFFERS:
            self.register_buffer(name, -inf.clone() if name.endswith("lo") else inf.clone())

    def set_range(self, hist: np.ndarray, ctx: np.ndarray, drop: Sequence[int] = ()) -> None:
        """Bounds from history rows ``hist`` and context rows ``ctx`` (each ``(n, F)``);
        the history columns ``drop`` are pinned to 0."""
        for name, rows in (("hist", hist), ("ctx", ctx)):
            for end, fn in (("lo", np.min), ("hi", np.max)):
                buf = getattr(self, f"{name}_{end}")
                bound = th.as_tensor(fn(rows, axis=0), dtype=buf.dtype)
                if name == "hist":
                    bound[list(drop)] = 0.0
                buf.copy_(bound)

    def clip(self, obs: th.Tensor) -> th.Tensor:
        hist = th.maximum(th.minimum(obs[:, :-1], self.hist_hi), self.hist_lo)
        ctx = th.maximum(th.minimum(obs[:, -1:], self.ctx_hi), self.ctx_lo)
        return th.cat([hist, ctx], dim=1)

    def _load_from_state_dict(self, state: dict[str, Any], prefix: str, *args: Any) -> None:
        for name in RANGE_BUFFERS:  # older models: unbounded
            state.setdefault(prefix + name, getattr(self, name).clone())
        super()._load_from_state_dict(state, prefix, *args)


def fit_input_range(
    module: nn.Module, hist: np.ndarray, ctx: np.ndarray, drop: Sequence[int] = ()
) -> int:
    """Set the bounds of every :class:`InputRange` inside ``module`` (an SB3 policy, a
    network) from training rows, the history columns ``drop`` pinned to 0; returns how
    many were set."""
    ranges = [m for m in module.modules() if isinstance(m, InputRange)]
    for m in ranges:
        m.set_range(hist, ctx, drop)
    return len(ranges)


class SummaryExtractor(BaseFeaturesExtractor):
    """Multi-scale summary of the history plus the chain context."""

    SCALES = (6, 36)

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        rows, feats = observation_space.shape
        super().__init__(observation_space, features_dim=5 * feats)
        self.window = rows - 1
        self.input_range = InputRange(feats)

    def forward(self, obs: th.Tensor) -> th.Tensor:
        obs = self.input_range.clip(obs)
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
        self.input_range = InputRange(feats)

    def forward(self, obs: th.Tensor) -> th.Tensor:
        obs = self.input_range.clip(obs)
        b = obs.shape[0]
        hist = obs[:, : self.window].reshape(b, self.window // self.patch, self.patch * self.feats)
        tokens = th.cat([self.embed_ctx(obs[:, self.window]).unsqueeze(1), self.embed(hist)], 1)
        out = self.encoder(tokens + self.pos)
        return th.cat([out[:, 0], out[:, 1:].mean(dim=1)], dim=1)
