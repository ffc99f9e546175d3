"""``moe-dqn``: DQN whose Q-network is a gated mixture of experts (the Mirage paper's
default agent).

Built through SB3's extension points: :class:`MoEDQNPolicy` overrides ``make_q_net`` to
return a :class:`MoEQNetwork`, a ``QNetwork`` whose ``q_net`` is :class:`GatedMoE` (a
softmax gate over ``n_experts`` MLP experts, each giving Q-values).

Hindsight training (:func:`pretrain`) is the DQN's fitted Q iteration plus a group of
decisions per expert, a load level by default (:data:`ROUTING`; the paper's time slices of
the training period are the other choice): the gate is taught to route each group to its
expert (cross-entropy, so that experts specialise) and a load-balancing term keeps it from
collapsing onto one expert (:func:`gate_usage` measures that).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.torch_layers import create_mlp
from stable_baselines3.dqn.policies import DQNPolicy, QNetwork
from torch import nn

from mirage.agents.common import pretrain as pt
from mirage.agents.common.extractors import SummaryExtractor
from mirage.agents.dqn import DEFAULTS, NET_ARCH
from mirage.dataset import HindsightData

GATE_WEIGHT = 0.1
"""Weight of the routing (cross-entropy to the expert's time slice) and balance terms."""


class GatedMoE(nn.Module):
    """``sum_k softmax(gate(x))_k * expert_k(x)``."""

    def __init__(self, in_dim: int, out_dim: int, n_experts: int, hidden: list[int]) -> None:
        super().__init__()
        self.experts = nn.ModuleList(
            nn.Sequential(*create_mlp(in_dim, out_dim, hidden)) for _ in range(n_experts)
        )
        self.gate = nn.Linear(in_dim, n_experts)

        self.last_logits: th.Tensor | None = None

    def forward(self, x: th.Tensor) -> th.Tensor:
        logits = self.gate(x)
        self.last_logits = logits  # for the routing loss and gate_usage()
        weights = th.softmax(logits, dim=-1)  # (batch, experts)
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
    return dict(features_extractor_class=SummaryExtractor, net_arch=list(NET_ARCH), n_experts=4)


def gate_of(policy: Any) -> GatedMoE:
    return policy.q_net.q_net


def time_slices(data: HindsightData, n: int) -> np.ndarray:
    """Each decision's slice of the training period: ``n`` contiguous slices with equal
    numbers of chains."""
    t0 = data.ep_t0[data.episode]
    edges = np.quantile(data.ep_t0, np.linspace(0, 1, n + 1)[1:-1])
    return np.searchsorted(edges, t0, side="right")


ROUTING = "load"
"""What each expert is taught to own: ``load`` (a load level: how long the chain's successor
would wait if submitted at the predecessor's end, :func:`load_levels`) or ``time`` (a
contiguous slice of the training period, as in the paper). Chosen on validation (seed 0,
LS6 study data): ``load`` 1.24 h mean |gap| against ``time`` 1.34 h; a gate that must
recognise a load level from the queue it sees also serves a month outside the training
period, where no time slice applies."""


def load_levels(data: HindsightData, n: int) -> np.ndarray:
    """Each decision's load level, 0 (light) .. ``n - 1`` (heavy), from its chain's
    reactive gap cut at ``n - 1`` geometric steps from 30 min to 12 h."""
    edges = np.geomspace(0.5, 12.0, n - 1) * 3600.0 if n > 1 else np.empty(0)
    return np.searchsorted(edges, data.ep_end_gap[data.episode], side="right")


def expert_groups(data: HindsightData, n: int, routing: str) -> np.ndarray:
    """The expert each decision is routed to in training (see :data:`ROUTING`)."""
    if routing == "time":
        return time_slices(data, n)
    if routing == "load":
        return load_levels(data, n)
    raise ValueError(f"unknown routing {routing!r} (time or load)")


def routing_loss(policy: Any, slices: np.ndarray) -> Any:
    """The gate's auxiliary loss for a minibatch: cross-entropy to the expert of the
    decision's time slice, plus a load-balancing term (``n * sum(mean weight^2)``, 1 when
    usage is even)."""
    gate = gate_of(policy)
    target = th.as_tensor(slices, dtype=th.long)

    def loss(idx: np.ndarray, _obs: th.Tensor) -> th.Tensor:
        logits = gate.last_logits
        assert logits is not None
        usage = th.softmax(logits, dim=-1).mean(dim=0)
        balance = logits.shape[1] * (usage**2).sum()
        return GATE_WEIGHT * (th.nn.functional.cross_entropy(logits, target[idx]) + balance)

    return loss


def pretrain(
    model: DQN,
    data: HindsightData,
    seed: int,
    progress: bool = False,
    routing: str = ROUTING,
    **kwargs: Any,
) -> dict[str, float]:
    """Fitted Q iteration with the routing loss."""
    groups = expert_groups(data, gate_of(model.policy).gate.out_features, routing)
    return pt.fit_q(
        model.policy,
        data,
        seed=seed,
        aux_loss=routing_loss(model.policy, groups),
        progress=progress,
        **kwargs,
    )


def score(model: DQN) -> Any:
    return pt.q_score(model.policy)


def gate_usage(model: DQN, data: HindsightData, groups: np.ndarray | None = None) -> dict[str, Any]:
    """How the gate routes ``data``: mean weight per expert, the share of decisions each
    expert dominates, and (with ``groups``, e.g. load levels) the mean weights per group."""
    gate = gate_of(model.policy)

    def weights(obs: th.Tensor) -> th.Tensor:
        model.policy.q_net(obs)
        assert gate.last_logits is not None
        return th.softmax(gate.last_logits, dim=-1)

    w = pt.predict(weights, data)
    out: dict[str, Any] = {
        "mean_weight": w.mean(axis=0).round(4).tolist(),
        "dominant_share": (np.bincount(w.argmax(1), minlength=w.shape[1]) / len(w))
        .round(4)
        .tolist(),
    }
    if groups is not None:
        out["by_group"] = {
            str(g): w[groups == g].mean(axis=0).round(4).tolist() for g in np.unique(groups)
        }
    return out


def collapsed(usage: dict[str, Any], limit: float = 0.9) -> bool:
    """True when one expert carries more than ``limit`` of the gate's weight or dominates
    more than ``limit`` of the decisions."""
    return max(usage["mean_weight"]) > limit or max(usage["dominant_share"]) > limit


def build(env: gym.Env, seed: int, **kwargs: Any) -> DQN:
    return DQN(
        MoEDQNPolicy, env, seed=seed, policy_kwargs=policy_kwargs(), **{**DEFAULTS, **kwargs}
    )
