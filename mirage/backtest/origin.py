"""One origin of the backtest: train on what is known by then, choose on held-out days
before it, and predict the following week; the outcome saved as ``origins/WEEK.json``.

Training and validation chains are the labelled chains of the earlier weeks within the plan's
``history_days`` (56 by default, as ``mirage retrain`` trains in production) whose labels
are all known at the origin (:mod:`mirage.backtest.labels`), validation being every fifth
calendar day (:data:`~mirage.envs.world.VALIDATION_EVERY`, as in ``mirage study``). Each
agent is trained with each seed (:func:`mirage.train.train_hindsight`: its threshold and
guard tuned on validation); with several seeds each agent also gets its seed ensemble
(:func:`mirage.ensemble.build_ensemble`). The rolling model is the candidate with the least
validation mean ``|gap|``. Every model's per-chain gaps on the week are saved, so the report
can show any of them; nothing about the week is used before this evaluation.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from hpcbase.atomic import atomic_write
from mirage.backtest import labels as lb
from mirage.backtest.plan import DAY, Plan, Week
from mirage.envs.world import VALIDATION_EVERY


def origin_path(out: Path, week: Week) -> Path:
    return out / "origins" / f"{week.label}.json"


def model_dir(out: Path, week: Week) -> Path:
    return out / "models" / week.label


def known_data(
    out: Path, plan: Plan, week: Week, epoch: float
) -> tuple[lb.ds.HindsightData, lb.ds.HindsightData] | None:
    """Training and validation chains known at ``week``'s origin, from the weeks that end
    within the plan's ``history_days`` before it (all earlier weeks with 0); None if either
    is empty."""
    since = week.start - plan.history_days * DAY if plan.history_days > 0 else -np.inf
    parts = [d for w in plan.weeks if since < w.end <= week.start if (d := lb.load_week(out, w))]
    if not parts:
        return None
    data = lb.join(parts)
    known = np.flatnonzero(lb.per_chain(data, "known") <= week.start)
    day = np.floor((data.ep_t0[known] + epoch) / DAY).astype(np.int64)
    is_val = day % VALIDATION_EVERY == VALIDATION_EVERY - 1
    if not is_val.any() or is_val.all():
        return None
    return lb.select(data, known[~is_val]), lb.select(data, known[is_val])


def run_origin(task: tuple[str, dict[str, Any], int, float]) -> str:
    """Train, choose and evaluate at one origin (a worker task); returns the week label."""
    import torch as th

    from mirage.agents.common.model_io import read_meta, save_model
    from mirage.ensemble import build_ensemble
    from mirage.eval.offline import rule_gaps
    from mirage.train import train_hindsight

    th.set_num_threads(1)
    out_s, plan_json, index, epoch = task
    out = Path(out_s)
    plan = plan_from_json(plan_json)
    week = plan.weeks[index]
    began = time.process_time()
    origin_path(out, week).parent.mkdir(parents=True, exist_ok=True)
    split = known_data(out, plan, week, epoch)
    test = lb.load_week(out, week)
    result: dict[str, Any] = {"week": week.label, "role": week.role, "gaps": {}}
    if split is None or test is None:
        result["skipped"] = "no training/validation chains known yet" if test else "no chains"
        atomic_write(origin_path(out, week), json.dumps(result, indent=1))
        return week.label
    train, val = split
    mdir = model_dir(out, week)
    mdir.mkdir(parents=True, exist_ok=True)
    candidates: dict[str, dict[str, Any]] = {}
    for agent in plan.agents:
        paths = []
        for seed in plan.seeds:
            path = mdir / f"{agent}-s{seed}.zip"
            if not path.exists():
                model, meta = train_hindsight(agent, train, val, seed, **effort(agent, plan))
                save_model(model, path, agent, meta)
            paths.append(path)
            candidates[path.stem] = read_meta(path)
        if len(paths) > 1:
            ens = mdir / f"{agent}-ens.zip"
            if not ens.exists():
                build_ensemble(paths, val, ens)
            candidates[ens.stem] = read_meta(ens)
    pool = [k for k in candidates if k.endswith("-ens")] or list(candidates)
    chosen = min(pool, key=lambda k: (candidates[k]["validation"]["abs_gap"], k))
    for name in candidates:
        gaps, _ = rule_gaps(test, mdir / f"{name}.zip")
        result["gaps"][name] = gaps.tolist()
    result.update(
        chosen=chosen,
        chosen_model=str((mdir / f"{chosen}.zip").relative_to(out)),
        validation={k: candidates[k]["validation"] for k in candidates},
        validation_reactive=float(np.abs(val.ep_end_gap).mean() / 3600),
        train_chains=train.episodes,
        validation_chains=val.episodes,
        test_chains=test.episodes,
        cpu_seconds=round(time.process_time() - began, 1),
    )
    atomic_write(origin_path(out, week), json.dumps(result, indent=1))
    return week.label


def effort(agent: str, plan: Plan) -> dict[str, Any]:
    """The plan's ``epochs`` as the agent's own knob: fitted-Q iterations for the DQN
    agents, epochs for the others."""
    return {"iterations" if agent in ("dqn", "moe-dqn") else "epochs": plan.epochs}


def plan_from_json(obj: dict[str, Any]) -> Plan:
    """The :class:`Plan` saved as ``plan.json``."""
    fields = dict(obj)
    fields["weeks"] = tuple(Week(**w) for w in obj["weeks"])
    fields["shapes"] = tuple((int(u), float(x)) for u, x in obj["shapes"])
    fields["agents"] = tuple(obj["agents"])
    fields["seeds"] = tuple(obj["seeds"])
    return Plan(**fields)
