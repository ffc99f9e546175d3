"""Each week's chains labelled once, in hindsight, and kept: ``labels/WEEK.parquet``.

A label is the gap of submitting the successor at every decision (:func:`mirage.dataset.
label_episode`), so any stopping rule, the oracle and ``reactive`` (the forced submit) are
evaluated exactly from it. ``average`` reads the queue's history and is played in the same
replay. Per chain, the file's metadata also keeps its limit, the predecessor's end and the
time its labels are all known (the latest successor start of any submit time): a chain is
training data at an origin only once that time has passed.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mirage import dataset as ds
from mirage.backtest.plan import Plan, Week, week_starts
from mirage.envs.world import ChainSpec, ChainWorld

_WORLD: ChainWorld | None = None  # set in the parent before forking the workers


def _label(task: tuple[list[tuple[float, int, float]], float]) -> list[dict[str, Any]]:
    from mirage.eval.runner import run_episodes

    assert _WORLD is not None
    starts, di = task
    out = []
    for t0, units, limit in starts:
        spec = ChainSpec(units=units, limit=limit)
        rec = ds.label_episode(_WORLD, spec, t0, di)
        if rec is None:
            continue
        (avg,) = run_episodes(_WORLD, "average", spec.resolved(_WORLD.max_limit), [t0], di)
        rec["limit"] = limit
        rec["average_gap"] = avg.get("gap", rec["end_gap"])
        rec["known"] = rec["pred_end"] + max(max(rec["gap"], default=0.0), rec["end_gap"])
        out.append(rec)
    return out


def week_path(out: Path, week: Week) -> Path:
    return out / "labels" / f"{week.label}.parquet"


def _done(out: Path, week: Week) -> bool:
    path = week_path(out, week)
    return path.exists() or path.with_suffix(".empty").exists()


def label_weeks(
    world: ChainWorld, plan: Plan, out: Path, jobs: int = 1, progress: bool = True
) -> None:
    """Label every week not yet on disk (``jobs`` forked processes), each file written
    atomically as soon as its week is done."""
    from tqdm import tqdm

    global _WORLD
    todo = [w for w in plan.weeks if not _done(out, w)]
    bar = tqdm(
        total=len(todo) * plan.chains_per_week,
        desc="labelling chains",
        unit="chain",
        disable=not progress,
    )
    _WORLD = world
    try:
        with mp.get_context("fork").Pool(max(1, jobs)) as pool:
            for week in todo:
                starts = week_starts(plan, week, world.sample_interval)
                tasks = [
                    (starts[i : i + 2], plan.decision_interval) for i in range(0, len(starts), 2)
                ]
                recs: list[dict[str, Any]] = []
                for part, task in zip(pool.imap(_label, tasks), tasks, strict=True):
                    recs += part
                    bar.update(len(task[0]))
                _save(world, plan, week, recs, week_path(out, week))
    finally:
        _WORLD = None
        bar.close()


def _save(
    world: ChainWorld, plan: Plan, week: Week, recs: list[dict[str, Any]], path: Path
) -> None:
    meta = ds.dataset_meta(
        world,
        "train",
        plan.chains_per_week,
        plan.seed,
        plan.decision_interval,
        sorted({u for u, _ in plan.shapes}),
    )
    meta.update(
        split=f"week {week.label} ({week.role})",
        split_ranges=[[week.start, week.end]],
        chain_limit=[r["limit"] for r in recs],
        average_gap=[r["average_gap"] for r in recs],
        pred_end=[r["pred_end"] for r in recs],
        known=[r["known"] for r in recs],
    )
    if not recs:  # a week where no chain could be played: an empty marker
        path.parent.mkdir(parents=True, exist_ok=True)
        from hpcbase.atomic import atomic_write

        atomic_write(path.with_suffix(".empty"), "no chain could be played\n")
        return
    ds.save(ds.from_records(recs, meta), path)


def load_week(out: Path, week: Week) -> ds.HindsightData | None:
    """The week's labels, None if no chain of it could be played."""
    path = week_path(out, week)
    return ds.load(path) if path.exists() else None


def per_chain(data: ds.HindsightData, key: str) -> np.ndarray:
    """A per-chain list kept in the metadata (of one week, or of several concatenated)."""
    return np.asarray(data.meta[key], float)


def join(parts: Sequence[ds.HindsightData]) -> ds.HindsightData:
    """Several weeks as one dataset, with their per-chain lists joined too."""
    data = ds.concat(parts)
    for key in ("chain_limit", "average_gap", "pred_end", "known"):
        data.meta[key] = [x for p in parts for x in p.meta[key]]
    return data


def select(data: ds.HindsightData, episodes: np.ndarray) -> ds.HindsightData:
    """The given chains, with their per-chain lists."""
    sub = data.subset(episodes)
    for key in ("chain_limit", "average_gap", "pred_end", "known"):
        sub.meta[key] = [data.meta[key][int(e)] for e in episodes]
    return sub
