"""``mirage/Chain-v0``: when to submit the next job of a chain, as a Gymnasium env.

Observation: :class:`~mirage.observation.ObservationBuilder`'s ``(window + 1, features)``
matrix. Action: 0 = wait, 1 = submit now, every ``decision_interval`` simulated seconds
while the predecessor runs (a submit is forced at its end); with ``decide_within`` only in
the last ``decide_within`` seconds of its run. Reward: 0 until the successor
starts, then ``-(interruption_weight * interruption hours + overlap_weight * overlap
node-hours) * reward_scale``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np

from mirage.agents.common.policy import Decision
from mirage.envs.episode import ChainEpisode, EpisodeError, Outcome
from mirage.envs.world import ChainSpec, ChainWorld, get_world
from mirage.observation import DECISION_INTERVAL
from sim.traces.model import Trace


class RareSubmitDiscrete(gym.spaces.Discrete):
    """``Discrete(2)`` whose ``sample()`` submits with probability ``p_submit``.

    Uniform random exploration would submit within a couple of decisions and never see a
    late submit; off-policy agents (DQN) explore with ``sample()``, so this spreads their
    random submits over the predecessor's run.
    """

    def __init__(self, p_submit: float, seed: int | None = None) -> None:
        super().__init__(2, seed=seed)
        self.p_submit = float(p_submit)

    def sample(self, mask: Any = None, probability: Any = None) -> np.int64:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        return np.int64(self.np_random.random() < self.p_submit)


class ChainEnv(gym.Env):
    """One chain per episode, started at a random time of ``split``.

    ``trace`` may be several worlds (e.g. one trace simulated at several cluster sizes, a
    domain randomisation of the load level): each episode picks one at random.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        trace: str | Trace | ChainWorld | Sequence[ChainWorld],
        split: str = "train",
        chain: ChainSpec | None = None,
        decision_interval: float = DECISION_INTERVAL,
        interruption_weight: float = 1.0,
        overlap_weight: float = 1.0,
        reward_scale: float = 1.0,
        decide_within: float | None = None,
        world_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if isinstance(trace, ChainWorld):
            self.worlds = [trace]
        elif isinstance(trace, (list, tuple)):
            self.worlds = list(trace)
        else:
            self.worlds = [get_world(cast("str | Trace", trace), **(world_kwargs or {}))]
        shapes = {w.new_builder().shape for w in self.worlds}
        if len(shapes) != 1:
            raise ValueError(f"worlds differ in observation shape: {sorted(shapes)}")
        self.world = self.worlds[0]
        if split not in self.world.splits:
            raise ValueError(f"unknown split {split!r}; have {', '.join(self.world.splits)}")
        self.split = split
        self.chain_spec = chain or ChainSpec()
        self.chain = self.chain_spec.resolved(self.world.max_limit)
        self.decision_interval = float(decision_interval)
        self.wi = float(interruption_weight)
        self.wo = float(overlap_weight)
        self.reward_scale = float(reward_scale)
        self.decide_within = decide_within
        shape = self.world.new_builder().shape
        self.observation_space = gym.spaces.Box(0.0, np.inf, shape=shape, dtype=np.float32)
        span = min(self.chain.limit, decide_within or np.inf)
        steps = max(span / self.decision_interval, 1.0)
        self.action_space = RareSubmitDiscrete(min(2.0 / steps, 0.5))
        self.episode: ChainEpisode | None = None

    def _info(self, outcome: Outcome | None) -> dict[str, Any]:
        assert self.episode is not None
        info: dict[str, Any] = {"t0": self.episode.t0, "pred_start": self.episode.pred_start}
        if outcome is not None:
            info.update(
                gap=outcome.gap,
                interruption_hours=outcome.interruption_hours,
                overlap_node_hours=outcome.overlap_node_hours,
                forced=outcome.forced,
            )
        return info

    def start_episode(self, t0: float) -> ChainEpisode:
        """A new episode at ``t0`` in the current world."""
        chain = self.chain_spec.resolved(self.world.max_limit)
        self.episode = ChainEpisode(
            self.world, chain, t0, self.decision_interval, decide_within=self.decide_within
        )
        return self.episode

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        t0 = (options or {}).get("t0")
        if len(self.worlds) > 1:  # several cluster sizes: one at random per episode
            self.world = self.worlds[int(self.np_random.integers(len(self.worlds)))]
        for _ in range(100):
            start = (
                float(t0) if t0 is not None else self.world.sample_start(self.split, self.np_random)
            )
            try:
                ep = self.start_episode(start)
            except EpisodeError:
                if t0 is not None:
                    raise
                continue
            if not ep.done:
                return ep.observe(), self._info(None)
        raise EpisodeError(f"could not start an episode in split {self.split!r}")

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.episode is None:
            raise RuntimeError("call reset() first")
        decision = Decision.SUBMIT if int(action) == 1 else Decision.WAIT
        outcome = self.episode.step(decision)
        obs = self.episode.observe()
        if outcome is None:
            return obs, 0.0, False, False, self._info(None)
        reward = -outcome.cost(self.wi, self.wo) * self.reward_scale
        return obs, float(reward), True, False, self._info(outcome)
