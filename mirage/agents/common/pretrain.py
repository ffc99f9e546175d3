"""Learning from hindsight data, through the networks SB3 builds (no fork of SB3).

* :func:`fit_q`: fitted Q iteration (offline DQN) of an SB3 ``DQNPolicy``: ``Q(s, submit)``
  is regressed on the exact cost of submitting now; ``Q(s, wait)`` on the value of waiting
  under the current greedy policy, after a conservative start (the cost of submitting at
  the next decision). That value is either the policy's exact return in the data (``mc``,
  the default: approximate policy iteration, since the data hold the gap of every later
  submit) or the one-step TD target ``max_a Q_target(s', a)`` (``td``, double-DQN style).
  For a mixture of experts, each expert also fits its own slice of the training
  period and the gate learns to route (see :mod:`mirage.agents.moe_dqn`).
* :func:`fit_bc`: behaviour cloning of the hindsight oracle into an SB3
  ``ActorCriticPolicy`` (the PG agents), with its value head fitted on the hindsight value.
* :func:`fit_regression`: a network regressing the gap of submitting now (the paper's
  "DQN"; :mod:`mirage.agents.gap_regressor`).

All are reproducible from their seed (one thread, seeded shuffles and initialisation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch as th
from torch import nn
from torch.nn import functional as F

from mirage.agents.common.hindsight import best_later, cost_hours
from mirage.dataset import HindsightData

Q_SCALE = 0.1
"""Q-values and rewards are costs in hours times this (as the env's ``reward_scale``)."""


def seed_everything(seed: int) -> np.random.Generator:
    """One torch thread, seeded torch; returns a numpy generator for the shuffles."""
    th.set_num_threads(1)
    th.manual_seed(seed)
    return np.random.default_rng(seed)


def batches(n: int, size: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    order = rng.permutation(n)
    for i in range(0, n, size):
        yield order[i : i + size]


def obs_tensor(data: HindsightData, idx: np.ndarray) -> th.Tensor:
    return th.as_tensor(data.obs(idx))


def predict(
    fn: Callable[[th.Tensor], th.Tensor],
    data: HindsightData,
    idx: np.ndarray | None = None,
    size: int = 2048,
) -> np.ndarray:
    """``fn`` over the observations of ``idx`` (all decisions by default), batched."""
    idx = np.arange(len(data)) if idx is None else idx
    out = []
    with th.no_grad():
        for i in range(0, idx.shape[0], size):
            out.append(fn(obs_tensor(data, idx[i : i + size])).cpu().numpy())
    return np.concatenate(out) if out else np.empty((0,))


def _progress(total: int, desc: str, progress: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="epoch", disable=not progress, leave=False)


def fit_q(
    policy: Any,
    data: HindsightData,
    *,
    seed: int,
    interruption_weight: float = 1.0,
    overlap_weight: float = 1.0,
    iterations: int = 12,
    warm_epochs: int = 3,
    batch_size: int = 64,
    lr: float = 1e-3,
    q_target: str = "mc",
    aux_loss: Callable[[np.ndarray, th.Tensor], th.Tensor] | None = None,
    progress: bool = False,
) -> dict[str, float]:
    """Fitted Q iteration of an SB3 DQN policy (``q_net`` and ``q_net_target``) on
    ``data``; ``aux_loss(idx, obs)`` adds a term per minibatch (the MoE's gate). Returns
    the last epoch's mean loss."""
    if q_target not in ("mc", "td"):
        raise ValueError(f"unknown Q target {q_target!r} (mc or td)")
    rng = seed_everything(seed)
    qnet, target = policy.q_net, policy.q_net_target
    cost = cost_hours(data.gap, interruption_weight, overlap_weight)
    end_cost = cost_hours(data.ep_end_gap, interruption_weight, overlap_weight)
    y_submit = th.as_tensor(-cost * Q_SCALE, dtype=th.float32)
    last = data.is_last()
    end_value = -end_cost[data.episode] * Q_SCALE
    nxt = np.flatnonzero(~last) + 1
    # conservative start: waiting is worth submitting at the next decision
    y_wait_np = np.where(last, end_value, np.r_[-cost[1:], 0.0] * Q_SCALE)
    opt = th.optim.Adam(qnet.parameters(), lr=lr)
    n = len(data)
    loss_mean = 0.0
    bar = _progress(warm_epochs + iterations, "fitted Q", progress)
    for it in range(warm_epochs + iterations):
        if it >= warm_epochs and q_target == "mc":  # the greedy policy's exact return
            q = predict(qnet, data)
            later = next_fire(data, q[:, 1] >= q[:, 0])
            y_wait_np = np.where(later >= 0, -cost[np.maximum(later, 0)] * Q_SCALE, end_value)
        elif it >= warm_epochs:  # a new TD target from a frozen copy (double DQN)
            target.load_state_dict(qnet.state_dict())
            q_next_online = predict(qnet, data, nxt)
            q_next_target = predict(target, data, nxt)
            a = q_next_online.argmax(axis=1)
            y_wait_np = end_value.copy()
            y_wait_np[nxt - 1] = q_next_target[np.arange(nxt.shape[0]), a]
        y_wait = th.as_tensor(y_wait_np, dtype=th.float32)
        losses = []
        qnet.train()
        for idx in batches(n, batch_size, rng):
            obs = obs_tensor(data, idx)
            q = qnet(obs)
            loss = F.smooth_l1_loss(q[:, 1], y_submit[idx]) + F.smooth_l1_loss(q[:, 0], y_wait[idx])
            if aux_loss is not None:
                loss = loss + aux_loss(idx, obs)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(qnet.parameters(), 10.0)
            opt.step()
            losses.append(float(loss.detach()))
        loss_mean = float(np.mean(losses))
        bar.update()
        bar.set_postfix(loss=f"{loss_mean:.4f}")
    bar.close()
    qnet.eval()
    target.load_state_dict(qnet.state_dict())
    return {"loss": loss_mean}


def next_fire(data: HindsightData, fire: np.ndarray) -> np.ndarray:
    """For each decision, the first *later* decision of its episode where ``fire`` is true
    (-1 if none: the forced submit at the predecessor's end)."""
    out = np.full(len(data), -1, np.int64)
    for e in range(data.episodes):
        a, b = data.ep_first[e], data.ep_first[e + 1]
        nxt = -1
        for i in range(b - 1, a - 1, -1):
            out[i] = nxt
            if fire[i]:
                nxt = i
    return out


def q_score(policy: Any) -> Callable[[th.Tensor], th.Tensor]:
    """``Q(s, submit) - Q(s, wait)``: the DQN agents' preference for submitting now."""

    def fn(obs: th.Tensor) -> th.Tensor:
        q = policy.q_net(obs)
        return q[:, 1] - q[:, 0]

    return fn


def hindsight_value(
    data: HindsightData, interruption_weight: float = 1.0, overlap_weight: float = 1.0
) -> np.ndarray:
    """The best achievable value (scaled minus cost) from each decision, in hindsight."""
    c = cost_hours(data.gap, interruption_weight, overlap_weight)
    end = cost_hours(data.ep_end_gap, interruption_weight, overlap_weight)
    return -np.minimum(c, best_later(data, c, end)) * Q_SCALE


def fit_bc(
    policy: Any,
    data: HindsightData,
    labels: np.ndarray,
    values: np.ndarray,
    *,
    seed: int,
    epochs: int = 10,
    batch_size: int = 256,
    lr: float = 1e-3,
    vf_coef: float = 0.5,
    progress: bool = False,
) -> dict[str, float]:
    """Behaviour cloning of ``labels`` (0 wait, 1 submit) into an SB3 actor-critic policy,
    whose value head fits ``values``. Returns the last epoch's loss and accuracy."""
    rng = seed_everything(seed)
    y = th.as_tensor(labels, dtype=th.long)
    v = th.as_tensor(values, dtype=th.float32)
    opt = th.optim.Adam(policy.parameters(), lr=lr)
    stats = {"loss": 0.0, "accuracy": 0.0}
    bar = _progress(epochs, "behaviour cloning", progress)
    for _ in range(epochs):
        losses, hits = [], 0
        policy.train()
        for idx in batches(len(data), batch_size, rng):
            obs = obs_tensor(data, idx)
            value, log_prob, _ = policy.evaluate_actions(obs, y[idx])
            loss = -log_prob.mean() + vf_coef * F.mse_loss(value.flatten(), v[idx])
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            opt.step()
            losses.append(float(loss.detach()))
            with th.no_grad():
                hits += int((log_prob > np.log(0.5)).sum())
        stats = {"loss": float(np.mean(losses)), "accuracy": hits / len(data)}
        bar.update()
        bar.set_postfix(loss=f"{stats['loss']:.4f}", acc=f"{stats['accuracy']:.3f}")
    bar.close()
    policy.eval()
    return stats


def logit_score(policy: Any) -> Callable[[th.Tensor], th.Tensor]:
    """``logit(submit) - logit(wait)`` of an actor-critic policy."""

    def fn(obs: th.Tensor) -> th.Tensor:
        logits = policy.get_distribution(obs).distribution.logits
        return logits[:, 1] - logits[:, 0]

    return fn


def signed_log(hours: np.ndarray) -> np.ndarray:
    """``sign(h) * log1p(|h|)``: the regression target (gaps span minutes to days)."""
    return np.sign(hours) * np.log1p(np.abs(hours))


def fit_regression(
    net: nn.Module,
    data: HindsightData,
    *,
    seed: int,
    epochs: int = 15,
    batch_size: int = 256,
    lr: float = 1e-3,
    progress: bool = False,
) -> dict[str, float]:
    """Fit ``net(obs)`` to :func:`signed_log` of the gap (hours) of submitting now."""
    rng = seed_everything(seed)
    y = th.as_tensor(signed_log(data.gap / 3600.0), dtype=th.float32)
    opt = th.optim.Adam(net.parameters(), lr=lr)
    stats = {"loss": 0.0}
    bar = _progress(epochs, "gap regression", progress)
    for _ in range(epochs):
        losses = []
        net.train()
        for idx in batches(len(data), batch_size, rng):
            loss = F.smooth_l1_loss(net(obs_tensor(data, idx)).flatten(), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        stats = {"loss": float(np.mean(losses))}
        bar.update()
        bar.set_postfix(loss=f"{stats['loss']:.4f}")
    bar.close()
    net.eval()
    return stats
