"""``mirage train``: train an agent on ``mirage/Chain-v0`` and save it with its metadata.

Example::

    mirage train --trace ../shared/traces/ls6-a100.log --total-units 72 \
        --agent dqn --steps 120000 --seed 0 --out runs/dqn.zip
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

from mirage.agents import LEARNED
from mirage.agents.common.model_io import algo_module, save_model
from mirage.envs import ChainEnv, ChainSpec, ChainWorld
from mirage.observation import FEATURE_VERSION


def add_world_args(p: argparse.ArgumentParser) -> None:
    """Options shared by ``train`` and ``eval`` that shape the simulated world."""
    p.add_argument("--trace", required=True, help="trace file (SWF, sacct export or CSV)")
    p.add_argument("--total-units", default=None,
                   help="cluster size in the trace's units (default: 72 for the LS6 log, "
                   "else the trace's); training "
                   "takes a comma list, e.g. 70,72,76: one world per size, picked at random "
                   "per episode")
    p.add_argument("--window", type=int, default=144, help="history samples (default 144)")
    p.add_argument("--sample-interval", type=float, default=600.0,
                   help="seconds between queue samples (default 600)")
    p.add_argument("--chain-units", type=int, default=1, help="chain job size (default 1)")
    p.add_argument("--chain-limit-hours", type=float, default=None,
                   help="chain job limit (default: the trace's maximum limit)")
    p.add_argument("--train-range", default=None, metavar="FROM:TO",
                   help="dates of the training split, e.g. 2022-11-01:2023-02-23")
    p.add_argument("--validation-range", default=None, metavar="FROM:TO",
                   help="dates of the validation split")


def _range(text: str | None, flag: str) -> tuple[str, str] | None:
    if text is None:
        return None
    a, sep, b = text.partition(":")
    if not sep or not a or not b:
        raise SystemExit(f"{flag}: expected FROM:TO dates, got {text!r}")
    return (a, b)


def unit_sizes(text: str | None) -> list[int | None]:
    if text is None:
        return [None]
    try:
        sizes = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"--total-units: expected integers, got {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise SystemExit(f"--total-units: expected positive integers, got {text!r}")
    return list(sizes)


def build_world(
    args: argparse.Namespace, progress: bool = True, total_units: int | None = None
) -> ChainWorld:
    """Read the trace and prepare the world; exits with a clear message on bad input."""
    from sim.traces.model import TraceError
    from sim.traces.read import read_trace

    splits = {}
    for key, flag in (("train", "--train-range"), ("validation", "--validation-range")):
        rng = _range(getattr(args, key + "_range"), flag)
        if rng:
            splits[key] = rng
    try:
        trace = read_trace(args.trace)
    except (TraceError, OSError) as exc:
        raise SystemExit(f"mirage: cannot read trace: {exc}") from None
    try:
        return ChainWorld(
            trace,
            total_units=total_units,
            window=args.window,
            sample_interval=args.sample_interval,
            splits=splits or None,
            progress=progress,
        )
    except ValueError as exc:
        raise SystemExit(f"mirage: {args.trace}: {exc}") from None


def chain_spec(args: argparse.Namespace) -> ChainSpec:
    hours = args.chain_limit_hours
    return ChainSpec(units=args.chain_units, limit=None if hours is None else hours * 3600)


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
    """Train ``agent`` for ``steps`` env steps; returns the model and its metadata."""
    import torch as th
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.monitor import Monitor

    th.set_num_threads(1)
    worlds = world if isinstance(world, list) else [world]
    env = Monitor(
        ChainEnv(worlds, "train", chain, decision_interval=decision_interval,
                 reward_scale=reward_scale, decide_within=decide_within)
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
        "train_range": list(world.splits["train"]),
        "steps": steps,
        "seed": seed,
        "train_seconds": round(time.time() - began, 1),
        "episodes": len(env.get_episode_rewards()),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "feature_version": FEATURE_VERSION,
    }
    return model, meta


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="mirage train", description=__doc__.split("\n")[0])
    add_world_args(p)
    p.add_argument("--agent", required=True, choices=LEARNED)
    p.add_argument("--steps", type=int, default=50_000, help="env steps (default 50000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="MODEL.zip to write")
    p.add_argument("--decision-interval", type=float, default=1800.0,
                   help="simulated seconds between training decisions (default 1800)")
    p.add_argument("--reward-scale", type=float, default=0.1)
    p.add_argument("--decide-within-hours", type=float, default=24.0,
                   help="the agent decides only in the predecessor's last H hours (default "
                   "24; 0 = over its whole run); stored with the model and applied when run")
    p.add_argument("--logdir", default=None,
                   help="CSV (and TensorBoard, if installed) logs; default OUT's name + '.logs'")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    if args.steps <= 0:
        p.error("--steps must be positive")
    if args.decision_interval % args.sample_interval:
        p.error("--decision-interval must be a multiple of --sample-interval")
    out = Path(args.out)
    if out.suffix != ".zip":
        p.error("--out must end in .zip")
    worlds = [build_world(args, not args.no_progress, n) for n in unit_sizes(args.total_units)]
    logdir = args.logdir or str(out.with_suffix("")) + ".logs"
    model, meta = train(
        worlds, args.agent, args.steps, args.seed, chain_spec(args),
        decision_interval=args.decision_interval, reward_scale=args.reward_scale,
        decide_within=args.decide_within_hours * 3600 or None,
        logdir=logdir, progress=not args.no_progress,
    )
    save_model(model, out, args.agent, meta)
    print(f"saved {out} ({meta['episodes']} episodes, {meta['train_seconds']} s); logs in {logdir}",
          file=sys.stderr)
    return 0
