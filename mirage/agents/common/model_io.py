"""Saving and loading trained agents: SB3's zip plus ``mirage.json`` (feature version,
observation shape, training metadata), and the policy wrapper used to run them."""

from __future__ import annotations

import importlib
import io
import json
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from hpcbase.atomic import atomic_path
from mirage.agents.common.policy import Decision, DecisionContext
from mirage.agents.common.rule import fires
from mirage.agents.common.support import Support
from mirage.observation import CONTEXT_COLUMNS, FEATURE_VERSION, for_version

META_NAME = "mirage.json"
MEMBERS_DIR = "members/"
"""Where a seed ensemble (:mod:`mirage.ensemble`) keeps its members' own zips."""

ALGO_MODULES = {
    "dqn": "mirage.agents.dqn",
    "moe-dqn": "mirage.agents.moe_dqn",
    "pg": "mirage.agents.pg",
    "transformer-pg": "mirage.agents.transformer_pg",
    "gap-regressor": "mirage.agents.gap_regressor",
}
"""Learned agents: name -> module with ``ALGO`` (SB3 class or alike), ``build(env, seed,
**kw)``, ``pretrain(model, data, seed)`` (hindsight learning) and ``score(model)`` (a
function of an observation batch; higher means more inclined to submit now)."""


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
    with atomic_path(path, suffix=".zip") as tmp:
        model.save(str(tmp))
        with zipfile.ZipFile(tmp, "a") as zf:
            zf.writestr(META_NAME, json.dumps(full, indent=1, sort_keys=True))
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


def write_meta(path: str | Path, meta: dict[str, Any], out: str | Path | None = None) -> Path:
    """Replace a saved model's metadata, rewriting its zip atomically (at ``out`` if given)."""
    out = Path(out or path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path) as src:
        entries = [(i, src.read(i)) for i in src.infolist() if i.filename != META_NAME]
    with atomic_path(out, suffix=".zip") as tmp, zipfile.ZipFile(tmp, "w") as zf:
        for info, blob in entries:
            zf.writestr(info, blob)
        zf.writestr(META_NAME, json.dumps(meta, indent=1, sort_keys=True))
    return out


class LearnedPolicy:
    """A trained model behind the :class:`Policy` interface. A model with a tuned
    ``threshold`` in its metadata submits once its score (see :data:`ALGO_MODULES`) reaches
    it, unless its start-estimate ``guard`` holds it back
    (:func:`~mirage.agents.common.rule.fires`); an older one acts greedily. A model with a
    training ``support`` (:mod:`~mirage.agents.common.support`) waits wherever a feature lies
    outside it."""

    needs_observation = True

    def __init__(
        self, model: Any, meta: dict[str, Any], name: str, score: Any | None = None
    ) -> None:
        self.model = model
        self.meta = meta
        self.name = name
        self.obs_shape = tuple(meta["obs_shape"])
        self.threshold = meta.get("threshold")
        self.guard = meta.get("guard")
        self.feature_version = int(meta["feature_version"])
        try:
            self.support = Support.from_meta(meta.get("support"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"{name}: bad training support in its metadata ({exc})") from exc
        if score is None and self.threshold is not None:
            score = algo_module(meta["agent"]).score(model)
        self._score = score

    def reset(self) -> None:
        pass

    def score(self, obs: np.ndarray) -> np.ndarray:
        """The model's scores for a batch of observations."""
        import torch as th

        assert self._score is not None
        obs = for_version(obs, self.feature_version)
        with th.no_grad():
            return self._score(th.as_tensor(obs, dtype=th.float32)).numpy()

    def fires(self, obs: np.ndarray) -> np.ndarray:
        """Whether the tuned rule submits, for a batch of observations."""
        assert self.threshold is not None
        fire = fires(self.score(obs), obs[:, -1], float(self.threshold), self.guard)
        return fire & self.inside(obs)

    def inside(self, obs: np.ndarray) -> np.ndarray:
        """Whether each observation lies inside the training support (all, without one)."""
        if self.support is None:
            return np.ones(len(obs), bool)
        return self.support.inside(obs)

    def decide(self, ctx: DecisionContext) -> Decision:
        if for_version(ctx.obs, self.feature_version).shape != self.obs_shape:
            raise ModelError(
                f"{self.name}: observation shape {ctx.obs.shape} does not fit the model's "
                f"{self.obs_shape} (feature version {self.feature_version})"
            )
        within = self.meta.get("decide_within")
        if within is not None and ctx.chain.pred_remaining > within:
            return Decision.WAIT  # trained to decide only in the last `within` seconds
        if self.threshold is not None:
            return Decision.SUBMIT if self.fires(ctx.obs[None])[0] else Decision.WAIT
        if not self.inside(ctx.obs[None])[0]:
            return Decision.WAIT
        action, _ = self.model.predict(
            for_version(ctx.obs, self.feature_version), deterministic=True
        )
        return Decision.SUBMIT if int(action) == 1 else Decision.WAIT


def load_model(path: str | Path) -> LearnedPolicy:
    """Load a saved model; checks that this code can build its observations (its feature
    version, or an older one whose features today's only append to)."""
    meta = read_meta(path)
    if meta.get("feature_version") not in CONTEXT_COLUMNS:
        raise ModelError(
            f"{path}: feature version {meta.get('feature_version')} is not this code's "
            f"{FEATURE_VERSION} nor one it can still feed ({', '.join(map(str, CONTEXT_COLUMNS))})"
            "; retrain the model"
        )
    module = algo_module(meta["agent"])
    if "ensemble" in meta:
        return _load_ensemble(path, meta, module)
    return LearnedPolicy(_load_algo(module, str(path)), meta, name=Path(path).name)


def _load_algo(module: Any, source: Any) -> Any:
    custom = {"learning_rate": 0.0, "lr_schedule": lambda _: 0.0, "exploration_schedule": None}
    with warnings.catch_warnings():  # e.g. n-step replay settings, irrelevant to acting
        warnings.simplefilter("ignore", UserWarning)
        return module.ALGO.load(source, device="cpu", custom_objects=custom)


def _load_ensemble(path: str | Path, meta: dict[str, Any], module: Any) -> LearnedPolicy:
    """A seed ensemble (:mod:`mirage.ensemble`): the mean of its members' scaled scores."""
    ens = meta["ensemble"]
    try:
        with zipfile.ZipFile(path) as zf:
            models = [
                _load_algo(module, io.BytesIO(zf.read(MEMBERS_DIR + n))) for n in ens["members"]
            ]
    except KeyError as exc:
        raise ModelError(f"{path}: ensemble member missing ({exc})") from exc
    fns = [module.score(m) for m in models]
    scales = [(float(mid), float(k)) for mid, k in ens["scales"]]

    def score(obs: Any) -> Any:
        return sum((f(obs) - mid) / k for f, (mid, k) in zip(fns, scales, strict=True)) / len(fns)

    return LearnedPolicy(models, meta, name=Path(path).name, score=score)
