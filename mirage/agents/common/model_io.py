"""Saving and loading trained agents: SB3's zip plus ``mirage.json`` (feature version,
observation shape, training metadata), and the policy wrapper used to run them."""

from __future__ import annotations

import importlib
import json
import os
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from mirage.agents.common.policy import Decision, DecisionContext
from mirage.observation import FEATURE_VERSION

META_NAME = "mirage.json"

ALGO_MODULES = {
    "dqn": "mirage.agents.dqn",
    "moe-dqn": "mirage.agents.moe_dqn",
    "pg": "mirage.agents.pg",
    "transformer-pg": "mirage.agents.transformer_pg",
}
"""Learned agents: name -> module with ``ALGO`` (SB3 class), ``build(env, seed, **kw)``."""


class ModelError(ValueError):
    """A model file that cannot be used; the message names the file and the reason."""


def algo_module(name: str) -> Any:
    if name not in ALGO_MODULES:
        raise ValueError(f"unknown agent {name!r}; learned agents: {', '.join(ALGO_MODULES)}")
    return importlib.import_module(ALGO_MODULES[name])


def save_model(model: Any, path: str | Path, agent: str, meta: dict[str, Any]) -> Path:
    """Save ``model`` to ``path`` (a .zip) atomically, with Mirage's metadata inside."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    full = {
        "agent": agent,
        "feature_version": FEATURE_VERSION,
        "obs_shape": list(model.observation_space.shape),
        **meta,
    }
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".zip", dir=path.parent)
    os.close(fd)
    try:
        model.save(tmp)
        with zipfile.ZipFile(tmp, "a") as zf:
            zf.writestr(META_NAME, json.dumps(full, indent=1, sort_keys=True))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_meta(path: str | Path) -> dict[str, Any]:
    """The metadata of a saved model."""
    try:
        with zipfile.ZipFile(path) as zf:
            return json.loads(zf.read(META_NAME))
    except FileNotFoundError as exc:
        raise ModelError(f"{path}: no such model file") from exc
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as exc:
        raise ModelError(f"{path}: not a Mirage model ({exc})") from exc


class LearnedPolicy:
    """A trained SB3 model behind the :class:`Policy` interface."""

    def __init__(self, model: Any, meta: dict[str, Any], name: str) -> None:
        self.model = model
        self.meta = meta
        self.name = name
        self.obs_shape = tuple(meta["obs_shape"])

    def reset(self) -> None:
        pass

    def q_or_probs(self, obs: np.ndarray) -> np.ndarray:
        """The model's action preferences for one observation (for inspection)."""
        import torch as th

        t = th.as_tensor(obs[None], dtype=th.float32)
        with th.no_grad():
            policy = self.model.policy
            if hasattr(policy, "q_net"):
                return policy.q_net(t)[0].numpy()
            return policy.get_distribution(t).distribution.probs[0].numpy()

    def decide(self, ctx: DecisionContext) -> Decision:
        if ctx.obs.shape != self.obs_shape:
            raise ModelError(
                f"{self.name}: observation shape {ctx.obs.shape} != model's {self.obs_shape}"
            )
        within = self.meta.get("decide_within")
        if within is not None and ctx.chain.pred_remaining > within:
            return Decision.WAIT  # trained to decide only in the last `within` seconds
        action, _ = self.model.predict(ctx.obs, deterministic=True)
        return Decision.SUBMIT if int(action) == 1 else Decision.WAIT


def load_model(path: str | Path) -> LearnedPolicy:
    """Load a saved model; checks that its feature version matches this code's."""
    meta = read_meta(path)
    if meta.get("feature_version") != FEATURE_VERSION:
        raise ModelError(
            f"{path}: feature version {meta.get('feature_version')} != this code's "
            f"{FEATURE_VERSION}; retrain the model"
        )
    module = algo_module(meta["agent"])
    custom = {"learning_rate": 0.0, "lr_schedule": lambda _: 0.0, "exploration_schedule": None}
    with warnings.catch_warnings():  # e.g. n-step replay settings, irrelevant to acting
        warnings.simplefilter("ignore", UserWarning)
        model = module.ALGO.load(str(path), device="cpu", custom_objects=custom)
    return LearnedPolicy(model, meta, name=Path(path).name)
