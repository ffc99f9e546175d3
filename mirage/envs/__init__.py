"""Mirage's simulated environments; importing this registers ``mirage/Chain-v0``."""

from __future__ import annotations

import gymnasium as gym

from mirage.envs.chain_env import ChainEnv
from mirage.envs.episode import ChainEpisode, EpisodeError, Outcome, play
from mirage.envs.world import ChainSpec, ChainWorld, get_world

ENV_ID = "mirage/Chain-v0"

if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="mirage.envs.chain_env:ChainEnv")

__all__ = [
    "ENV_ID",
    "ChainEnv",
    "ChainEpisode",
    "ChainSpec",
    "ChainWorld",
    "EpisodeError",
    "Outcome",
    "get_world",
    "play",
]
