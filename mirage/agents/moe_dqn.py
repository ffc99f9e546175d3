"""``moe-dqn``: DQN whose Q-network is a gated mixture of experts.

Built through SB3's extension points: :class:`MoEDQNPolicy` overrides ``make_q_net`` to
return a :class:`MoEQNetwork`, a ``QNetwork`` whose ``q_net`` is :class:`GatedMoE` (a
softmax gate over ``n_experts`` MLP experts, each giving Q-values).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.torch_layers import create_mlp
from stable_baselines3.dqn.policies import DQNPolicy, QNetwork
from torch import nn

from mirage.agents.common.extractors import SummaryExtractor
from mirage.agents.dqn import DEFAULTS


class GatedMoE(nn.Module):
    """``sum_k softmax(gate(x))_k * expert_k(x)``."""

    def __init__(self, in_dim: int, out_dim: int, n_experts: int, hidden: list[int]) -> None:
        super().__init__()
        self.experts = nn.ModuleList(
            nn.Sequential(*create_mlp(in_dim, out_dim, hidden)) for _ in range(n_experts)
        )
        self.gate = nn.Linear(in_dim, n_experts)

    def forward(self, x: th.Tensor) -> th.Tensor:
        weights = th.softmax(self.gate(x), dim=-1)  # (batch, experts)
        outs = th.stack([e(x) for e in self.experts], dim=1)  # (batch, experts, actions)
        return (weights.unsqueeze(-1) * outs).sum(dim=1)


class MoEQNetwork(QNetwork):
    """A QNetwork with a gated mixture of experts as its head."""

    def __init__(self, *args: Any, n_experts: int = 4, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.q_net = GatedMoE(  # type: ignore[assignment]  # SB3 annotates q_net as Sequential
            self.features_dim, int(self.action_space.n), n_experts, list(self.net_arch)
        )


class MoEDQNPolicy(DQNPolicy):
    """DQN policy whose online and target networks are :class:`MoEQNetwork`."""

    def __init__(self, *args: Any, n_experts: int = 4, **kwargs: Any) -> None:
        self.n_experts = n_experts
        super().__init__(*args, **kwargs)

    def make_q_net(self) -> QNetwork:
        net_args = self._update_features_extractor(self.net_args, features_extractor=None)
        return MoEQNetwork(**net_args, n_experts=self.n_experts).to(self.device)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["n_experts"] = self.n_experts
        return data


ALGO = DQN


def policy_kwargs() -> dict[str, Any]:
    return dict(features_extractor_class=SummaryExtractor, net_arch=[32], n_experts=4)


def build(env: gym.Env, seed: int, **kwargs: Any) -> DQN:
    return DQN(
        MoEDQNPolicy, env, seed=seed, policy_kwargs=policy_kwargs(), **{**DEFAULTS, **kwargs}
    )
