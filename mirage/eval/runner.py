"""Play agents on seeded chain episodes, in forked worker processes sharing one world."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mirage.envs import ChainEpisode, ChainWorld, EpisodeError, play
from mirage.envs.world import ResolvedChain
from mirage.observation import DECISION_INTERVAL

_WORLD: ChainWorld | None = None  # set in the parent before forking the workers


def agent_label(spec: str) -> str:
    return Path(spec).stem if spec.endswith(".zip") else spec


def run_episodes(
    world: ChainWorld,
    spec: str,
    chain: ResolvedChain,
    starts: Sequence[float],
    decision_interval: float = DECISION_INTERVAL,
) -> list[dict[str, Any]]:
    """Play the policy named by ``spec`` on every start; one row per episode."""
    from mirage.agents import load_policy

    policy = load_policy(spec)
    rows = []
    for t0 in starts:
        try:
            out = play(ChainEpisode(world, chain, t0, decision_interval), policy)
        except EpisodeError as exc:
            rows.append({"agent": agent_label(spec), "t0": t0, "error": str(exc)})
            continue
        row = asdict(out)
        row.update(
            agent=agent_label(spec),
            interruption_hours=out.interruption_hours,
            overlap_node_hours=out.overlap_node_hours,
            error="",
        )
        rows.append(row)
    return rows


def _worker(task: tuple[str, ResolvedChain, list[float], float]) -> list[dict[str, Any]]:
    import torch as th

    th.set_num_threads(1)
    assert _WORLD is not None
    spec, chain, starts, di = task
    return run_episodes(_WORLD, spec, chain, starts, di)


def evaluate(
    world: ChainWorld,
    specs: Sequence[str],
    chain: ResolvedChain,
    starts: Sequence[float],
    jobs: int = 1,
    decision_interval: float = DECISION_INTERVAL,
    chunk: int = 25,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """All agents on the same starts; ``jobs`` > 1 forks worker processes."""
    global _WORLD
    tasks = [
        (spec, chain, list(starts[i : i + chunk]), decision_interval)
        for spec in specs
        for i in range(0, len(starts), chunk)
    ]
    from tqdm import tqdm

    bar = tqdm(total=len(tasks), desc="evaluating", unit="task", disable=not progress)
    rows: list[dict[str, Any]] = []
    _WORLD = world
    try:
        if jobs <= 1:
            for task in tasks:
                rows += _worker(task)
                bar.update()
        else:
            with mp.get_context("fork").Pool(jobs) as pool:
                for part in pool.imap_unordered(_worker, tasks):
                    rows += part
                    bar.update()
    finally:
        _WORLD = None
        bar.close()
    return order_rows(rows, specs)


def order_rows(rows: list[dict[str, Any]], specs: Sequence[str]) -> list[dict[str, Any]]:
    """Rows by agent (in ``specs`` order), then start time: the table's order."""
    labels = list(map(agent_label, specs))
    return sorted(rows, key=lambda r: (labels.index(r["agent"]), r["t0"]))
