"""``mirage train``: train an agent and save it with its metadata.

From hindsight data (the default way; ``mirage dataset`` makes the files)::

    mirage train --agent moe-dqn --dataset runs/train.parquet \
        --validation runs/validation.parquet --seed 0 --out runs/moe-dqn.zip

The agent learns from the training file (fitted Q iteration for the DQN agents, behaviour
cloning of the hindsight oracle for the PG agents, regression for ``gap-regressor``), then
its submit threshold is chosen on the validation file, where any threshold's outcome is
known exactly. ``--online-steps N --trace T`` adds SB3's own online learning on
``mirage/Chain-v0`` afterwards. Without ``--dataset`` the agent learns by RL alone on the
env (``--trace``, ``--steps``), as before hindsight data existed.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from mirage.agents import LEARNED
from mirage.agents.common.model_io import algo_module, save_model
from mirage.dataset import DatasetError, HindsightData
from mirage.envs import ChainEnv, ChainSpec, ChainWorld
from mirage.envs.options import (
    add_world_args,
    build_world,
    chain_spec,
    queue_feature_list,
    unit_sizes,
)
from mirage.observation import FEATURE_VERSION, queue_columns

OFFLINE_BUFFER = 1_000
"""Replay buffer of a DQN built for offline training (SB3's default would reserve GBs)."""


class SpacesEnv(gym.Env):
    """The spaces of ``mirage/Chain-v0`` and nothing else: builds a model trained offline."""

    def __init__(self, obs_shape: tuple[int, ...]) -> None:
        self.observation_space = gym.spaces.Box(0.0, np.inf, shape=obs_shape, dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        raise RuntimeError("SpacesEnv only describes spaces; train online on mirage/Chain-v0")

    def step(self, action: Any) -> Any:
        raise RuntimeError("SpacesEnv only describes spaces; train online on mirage/Chain-v0")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _silent_logger() -> Any:
    """A stable-baselines3 logger with no outputs: without one, every ``learn`` leaves an
    empty ``$TMPDIR/SB3-<time>`` directory behind."""
    from stable_baselines3.common.logger import Logger

    return Logger(folder=None, output_formats=[])


def train_hindsight(
    agent: str,
    data: HindsightData,
    validation: HindsightData,
    seed: int,
    *,
    objective: str | None = None,
    max_overlap: float | None = None,
    online_env: gym.Env | None = None,
    online_steps: int = 0,
    drop_features: Sequence[str] = (),
    progress: bool = False,
    **pretrain_kwargs: Any,
) -> tuple[Any, dict[str, Any]]:
    """Learn ``agent`` from ``data``, choose its threshold on ``validation``; returns the
    model and its metadata (which holds the threshold and the validation figures). The
    queue features ``drop_features`` are pinned to 0: the model learns without them."""
    from mirage.agents.common.extractors import fit_input_range
    from mirage.agents.common.hindsight import tune_rule
    from mirage.agents.common.pretrain import predict, seed_everything
    from mirage.agents.common.support import Support, masked

    if data.obs(np.arange(1)).shape[1:] != validation.obs(np.arange(1)).shape[1:]:
        raise DatasetError("the training and validation data differ in observation shape")
    drop = queue_columns(drop_features)
    module = algo_module(agent)
    seed_everything(seed)
    shape = tuple(data.obs(np.arange(1)).shape[1:])
    kwargs: dict[str, Any] = {}
    if agent in ("dqn", "moe-dqn") and not online_steps:
        kwargs["buffer_size"] = OFFLINE_BUFFER
    model = module.build(SpacesEnv(shape), seed, **kwargs)
    fit_input_range(getattr(model, "policy", None) or model.net, data.hist, data.ctx, drop)
    began = time.process_time()
    stats = module.pretrain(model, data, seed, progress=progress, **pretrain_kwargs)
    if online_steps:
        if online_env is None:
            raise ValueError("online_steps needs online_env")
        model.set_env(online_env)
        model.set_logger(_silent_logger())
        model.learn(total_timesteps=online_steps, progress_bar=progress)
    cpu = time.process_time() - began
    support = Support.of_data(data, FEATURE_VERSION)
    scores = predict(module.score(model), validation)
    scores = masked(support, validation, scores)  # it waits outside its support
    objective = str(objective or getattr(module, "OBJECTIVE", "abs_gap"))
    threshold, guard, val = tune_rule(validation, scores, objective, max_overlap)
    meta = {
        "trace": data.meta.get("trace"),
        "total_units": data.meta.get("total_units"),
        "max_limit": data.meta.get("max_limit"),
        "window": data.meta.get("window"),
        "sample_interval": data.meta.get("sample_interval"),
        "decision_interval": data.meta.get("decision_interval"),
        "train_data": {k: data.meta.get(k) for k in ("split", "episodes_asked", "seed")},
        "train_decisions": len(data),
        "validation_data": {k: validation.meta.get(k) for k in ("split", "episodes_asked", "seed")},
        "decide_within": None,
        "threshold": threshold,
        "guard": guard,
        "guard_hours": guard_in_hours(guard, data.meta.get("max_limit")),
        "objective": objective,
        "max_overlap_hours": max_overlap,
        "validation": {k: getattr(val, k) for k in val.__slots__},
        "support": support.to_meta(),
        "dropped_features": list(drop_features),
        "pretrain": stats,
        "online_steps": online_steps,
        "seed": seed,
        "train_cpu_seconds": round(cpu, 1),
        "created": _now(),
        "feature_version": FEATURE_VERSION,
    }
    return model, meta


def guard_in_hours(fraction: float | None, max_limit: Any) -> float | None:
    """A guard (fraction of ``max_limit``) in hours, for people."""
    return None if fraction is None or not max_limit else round(fraction * max_limit / 3600, 3)


def train(
    world: ChainWorld | list[ChainWorld],
    agent: str,
    steps: int,
    seed: int,
    chain: ChainSpec | None = None,
    decision_interval: float = 1800.0,
    reward_scale: float = 0.1,
    decide_within: float | None = 24 * 3600.0,
    logdir: str | None = None,
    progress: bool = False,
    **algo_kwargs: Any,
) -> tuple[Any, dict[str, Any]]:
    """Train ``agent`` by RL alone for ``steps`` env steps; returns the model and its
    metadata."""
    import torch as th
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.monitor import Monitor

    th.set_num_threads(1)
    worlds = world if isinstance(world, list) else [world]
    env = Monitor(
        ChainEnv(
            worlds,
            "train",
            chain,
            decision_interval=decision_interval,
            reward_scale=reward_scale,
            decide_within=decide_within,
        )
    )
    world = worlds[0]
    env.reset(seed=seed)
    env.action_space.seed(seed)
    model = algo_module(agent).build(env, seed, **algo_kwargs)
    if logdir:
        formats = ["csv"]
        if importlib.util.find_spec("tensorboard") is not None:
            formats.append("tensorboard")
        model.set_logger(configure(logdir, formats))
    else:
        model.set_logger(_silent_logger())
    began = time.time()
    model.learn(total_timesteps=steps, progress_bar=progress)
    meta = {
        "trace": str(Path(world.trace.source).name),
        "total_units": world.total_units,
        "train_total_units": [w.total_units for w in worlds],
        "max_limit": world.max_limit,
        "window": world.window,
        "sample_interval": world.sample_interval,
        "decision_interval": decision_interval,
        "reward_scale": reward_scale,
        "decide_within": decide_within,
        "train_range": [list(iv) for iv in world.splits["train"]],
        "steps": steps,
        "seed": seed,
        "train_seconds": round(time.time() - began, 1),
        "episodes": len(env.get_episode_rewards()),
        "created": _now(),
        "feature_version": FEATURE_VERSION,
    }
    return model, meta


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mirage train", description=__doc__.split("\n")[0])
    add_world_args(p, trace_required=False)
    p.add_argument("--agent", required=True, choices=LEARNED)
    p.add_argument("--dataset", default=None, help="hindsight training data (mirage dataset)")
    p.add_argument(
        "--validation",
        default=None,
        help="hindsight validation data, on which the threshold is chosen",
    )
    p.add_argument(
        "--objective",
        default=None,
        choices=("abs_gap", "uninterrupted"),
        help="threshold objective (default: the agent's; abs_gap for most)",
    )
    p.add_argument(
        "--max-overlap-hours",
        type=float,
        default=None,
        help="with --objective uninterrupted: mean overlap budget in hours",
    )
    p.add_argument(
        "--online-steps",
        type=int,
        default=0,
        help="SB3 online learning on the env after hindsight training (needs --trace)",
    )
    p.add_argument(
        "--steps",
        type=int,
        default=50_000,
        help="env steps of RL alone (without --dataset; default 50000)",
    )
    p.add_argument(
        "--drop-features",
        type=queue_feature_list,
        default="",
        help="hindsight: comma-separated queue features the model learns without",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="MODEL.zip to write")
    p.add_argument(
        "--decision-interval",
        type=float,
        default=1800.0,
        help="simulated seconds between training decisions on the env (default 1800)",
    )
    p.add_argument("--reward-scale", type=float, default=0.1)
    p.add_argument(
        "--decide-within-hours",
        type=float,
        default=24.0,
        help="RL alone: the agent decides only in the predecessor's last H hours "
        "(default 24; 0 = over its whole run)",
    )
    p.add_argument(
        "--logdir",
        default=None,
        help="RL: CSV (and TensorBoard) logs; default OUT's name + '.logs'",
    )
    p.add_argument("--no-progress", action="store_true")
    return p


def _main_hindsight(args: argparse.Namespace, p: argparse.ArgumentParser, out: Path) -> int:
    from mirage.dataset import load

    if not args.validation:
        p.error("--dataset needs --validation (the threshold is chosen on it)")
    try:
        data, val = load(args.dataset), load(args.validation)
    except DatasetError as exc:
        print(f"mirage train: {exc}", file=sys.stderr)
        return 2
    env = None
    if args.online_steps:
        if not args.trace:
            p.error("--online-steps needs --trace")
        worlds = [build_world(args, not args.no_progress, n) for n in unit_sizes(args.total_units)]
        env = ChainEnv(
            worlds,
            "train",
            chain_spec(args),
            decision_interval=args.decision_interval,
            reward_scale=args.reward_scale,
        )
    model, meta = train_hindsight(
        args.agent,
        data,
        val,
        args.seed,
        objective=args.objective,
        max_overlap=args.max_overlap_hours,
        online_env=env,
        online_steps=args.online_steps,
        drop_features=args.drop_features,
        progress=not args.no_progress,
    )
    save_model(model, out, args.agent, meta)
    v = meta["validation"]
    print(
        f"saved {out} ({meta['train_cpu_seconds']} CPU-s); validation: mean |gap| "
        f"{v['abs_gap']:.2f} h, uninterrupted {v['uninterrupted']:.0%}, threshold "
        f"{meta['threshold']:.4g}",
        file=sys.stderr,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    out = Path(args.out)
    if out.suffix != ".zip":
        p.error("--out must end in .zip")
    if args.dataset:
        return _main_hindsight(args, p, out)
    if not args.trace:
        p.error("give --dataset (hindsight training) or --trace (RL alone)")
    if args.agent == "gap-regressor":
        p.error("gap-regressor learns from hindsight data only (--dataset)")
    if args.steps <= 0:
        p.error("--steps must be positive")
    if args.decision_interval % args.sample_interval:
        p.error("--decision-interval must be a multiple of --sample-interval")
    worlds = [build_world(args, not args.no_progress, n) for n in unit_sizes(args.total_units)]
    logdir = args.logdir or str(out.with_suffix("")) + ".logs"
    model, meta = train(
        worlds,
        args.agent,
        args.steps,
        args.seed,
        chain_spec(args),
        decision_interval=args.decision_interval,
        reward_scale=args.reward_scale,
        decide_within=args.decide_within_hours * 3600 or None,
        logdir=logdir,
        progress=not args.no_progress,
    )
    save_model(model, out, args.agent, meta)
    print(
        f"saved {out} ({meta['episodes']} episodes, {meta['train_seconds']} s); logs in {logdir}",
        file=sys.stderr,
    )
    return 0
