"""``mirage eval``: every agent on the same seeded chain episodes, in parallel processes.

Example (the command behind ``docs/results/``)::

    mirage eval --trace ../shared/traces/ls6-a100.log --total-units 72 \
        --agents reactive,average,dependency,start-estimate,quantile,oracle,runs/dqn.zip \
        --split validation --episodes 200 --jobs 2 --out docs/results/ls6
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from mirage.envs import ChainEpisode, ChainWorld, EpisodeError, play
from mirage.envs.world import ResolvedChain
from mirage.train import add_world_args, build_world, chain_spec, unit_sizes

LEVELS = (("low", -np.inf, 2.0), ("medium", 2.0, 12.0), ("heavy", 12.0, np.inf))
"""Load levels by the reactive baseline's gap (hours): low <= 2, medium <= 12, heavy > 12."""

ZERO_GAP = 600.0
"""A chain counts as uninterrupted when its gap lies in 0 .. 10 min."""

_WORLD: ChainWorld | None = None  # set in the parent before forking the workers


def agent_label(spec: str) -> str:
    return Path(spec).stem if spec.endswith(".zip") else spec


def run_episodes(
    world: ChainWorld,
    spec: str,
    chain: ResolvedChain,
    starts: Sequence[float],
    decision_interval: float = 600.0,
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
        row.update(agent=agent_label(spec), interruption_hours=out.interruption_hours,
                   overlap_node_hours=out.overlap_node_hours, error="")
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
    decision_interval: float = 600.0,
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


def _stats(values: np.ndarray) -> dict[str, float]:
    if not values.shape[0]:
        return {"mean": float("nan"), "median": float("nan"), "p90": float("nan")}
    return {
        "mean": float(values.mean()),
        "median": float(np.median(values)),
        "p90": float(np.percentile(values, 90)),
    }


def summarise(rows: list[dict[str, Any]], agents: Sequence[str]) -> list[dict[str, Any]]:
    """One summary per (load level, agent); levels come from the reactive baseline's gaps."""
    ok = [r for r in rows if not r["error"]]
    bad = {r["t0"] for r in rows if r["error"]}
    reactive = {r["t0"]: r["gap"] / 3600 for r in ok if r["agent"] == "reactive"}
    if not reactive:
        raise ValueError("the evaluation needs the 'reactive' agent to define load levels")
    out = []
    for level, lo, hi in (("all", -np.inf, np.inf), *LEVELS):
        chosen = {t for t, g in reactive.items() if t not in bad and lo < g <= hi}
        for agent in agents:
            sel = [r for r in ok if r["agent"] == agent and r["t0"] in chosen]
            gaps = np.array([r["gap"] for r in sel], float)
            inter = np.maximum(gaps, 0) / 3600 + 0.0  # + 0.0: no "-0.00" in tables
            over = np.array([r["overlap_node_hours"] for r in sel], float) + 0.0
            out.append({
                "level": level,
                "agent": agent,
                "chains": len(sel),
                "interruption_hours": _stats(inter),
                "overlap_node_hours": _stats(over),
                "abs_gap_hours_mean": float(np.abs(gaps).mean() / 3600) if len(sel) else np.nan,
                "zero_interruption_share": float(((gaps >= 0) & (gaps <= ZERO_GAP)).mean())
                if len(sel) else np.nan,
            })
    return out


def markdown_table(summary: list[dict[str, Any]]) -> str:
    lines = []
    for level in dict.fromkeys(s["level"] for s in summary):
        part = [s for s in summary if s["level"] == level]
        n = part[0]["chains"] if part else 0
        if n == 0:
            lines += [f"### load: {level} (0 chains)", ""]
            continue
        lines += [
            f"### load: {level} ({n} chains)",
            "",
            "| agent | mean abs gap h | interruption h mean / median / p90 "
            "| overlap node-h mean / median / p90 | zero-interruption share |",
            "|---|---:|---:|---:|---:|",
        ]
        for s in part:
            i, o = s["interruption_hours"], s["overlap_node_hours"]
            lines.append(
                f"| {s['agent']} | {s['abs_gap_hours_mean']:.2f} "
                f"| {i['mean']:.2f} / {i['median']:.2f} / {i['p90']:.2f} "
                f"| {o['mean']:.2f} / {o['median']:.2f} / {o['p90']:.2f} "
                f"| {s['zero_interruption_share']:.0%} |"
            )
        lines.append("")
    return "\n".join(lines)


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name, dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def write_results(
    out: Path, rows: list[dict[str, Any]], summary: list[dict[str, Any]], meta: dict[str, Any]
) -> None:
    """episodes.csv, summary.json, summary.md and gap_cdf.png under ``out``."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    _atomic_write(out / "episodes.csv", pd.DataFrame(rows).to_csv(index=False).encode())
    doc = {"meta": meta, "summary": summary}
    _atomic_write(out / "summary.json", json.dumps(doc, indent=1).encode())
    title = f"# Mirage evaluation: {meta['trace']} ({meta['split']})\n\n"
    cmd = f"Command: `{meta['command']}`\n\n"
    _atomic_write(out / "summary.md", (title + cmd + markdown_table(summary)).encode())
    plot_cdf(out / "gap_cdf.png", rows, meta["agents"])


def plot_cdf(path: Path, rows: list[dict[str, Any]], agents: Sequence[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    colours = plt.get_cmap("tab10")
    for i, agent in enumerate(agents):
        gaps = np.sort([r["gap"] / 3600 for r in rows if r["agent"] == agent and not r["error"]])
        if gaps.shape[0]:
            ax.step(gaps, np.arange(1, gaps.shape[0] + 1) / gaps.shape[0], where="post",
                    label=agent, color=colours(i % 10), ls=("-", "--", ":")[i // 10 % 3])
    ax.set_xscale("symlog", linthresh=1.0)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_xlabel("gap = successor start - predecessor end (hours; < 0 overlap)")
    ax.set_ylabel("share of chains")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".png", dir=path.parent)
    os.close(fd)
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="mirage eval", description=__doc__.split("\n")[0])
    add_world_args(p)
    p.add_argument("--agents", default="reactive,average",
                   help="comma-separated baselines, 'default', or MODEL.zip paths")
    p.add_argument("--split", default="validation")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--seed", type=int, default=0, help="seed of the episode start times")
    p.add_argument("--decision-interval", type=float, default=600.0)
    p.add_argument("--out", default="eval-results", help="output folder")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--slurm-array", type=int, default=None, metavar="N",
                   help="run the episodes as N shards of one Slurm array job, then merge")
    p.add_argument("--sbatch-option", action="append", default=[], metavar="K=V",
                   help="extra sbatch option for the array, e.g. time=2:00:00 (repeatable)")
    p.add_argument("--slurm-poll", type=float, default=10.0, metavar="SECONDS",
                   help="seconds between polls of the array's state (default 10)")
    p.add_argument("--shard", default=None, help=argparse.SUPPRESS)  # I/N: one array task
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    from mirage import eval_array

    shard = None
    try:
        if args.shard is not None:
            shard = eval_array.parse_shard(args.shard)
        sbatch_options = eval_array.parse_sbatch_options(args.sbatch_option)
    except ValueError as exc:
        p.error(str(exc))
    if args.slurm_array is not None and shard is None:
        if not 1 <= args.slurm_array <= args.episodes:
            p.error(f"--slurm-array: expected 1 .. --episodes ({args.episodes}) shards, "
                    f"got {args.slurm_array}")
        if args.slurm_poll <= 0:
            p.error("--slurm-poll must be positive")
    specs = [s.strip() for s in args.agents.split(",") if s.strip()]
    if "reactive" not in specs:
        specs.insert(0, "reactive")
    from mirage.agents import load_policy
    from mirage.agents.common.model_io import ModelError

    for spec in specs:  # fail early, with a clear message, on a bad name or model
        try:
            load_policy(spec)
        except (ValueError, ModelError) as exc:
            print(f"mirage eval: {exc}", file=sys.stderr)
            return 2
    if args.episodes <= 0:
        p.error("--episodes must be positive")
    sizes = unit_sizes(args.total_units)
    if len(sizes) != 1:
        p.error("--total-units: evaluation takes one cluster size")
    world = build_world(args, not args.no_progress, sizes[0])
    if args.split not in world.splits:
        p.error(f"unknown split {args.split!r}; have {', '.join(world.splits)}")
    chain = chain_spec(args).resolved(world.max_limit)
    rng = np.random.default_rng(args.seed)
    starts = [world.sample_start(args.split, rng) for _ in range(args.episodes)]
    if shard is not None:
        mine = [starts[k] for k in eval_array.shard_indices(len(starts), shard[1], shard[0])]
        rows = evaluate(world, specs, chain, mine, jobs=args.jobs,
                        decision_interval=args.decision_interval)
        eval_array.write_shard(Path(args.out), *shard, mine, rows)
        return 0
    if args.slurm_array is not None:
        from hpcbase.slurm import SlurmError, get_client

        out = Path(args.out).resolve()
        try:
            rows = eval_array.run_array(
                get_client(min_interval=args.slurm_poll),
                [sys.executable, "-m", "mirage.evaluate", *argv], starts, args.slurm_array,
                out / "shards", sbatch_options, args.slurm_poll, not args.no_progress)
        except (SlurmError, eval_array.ArrayError) as exc:
            print(f"mirage eval: {exc}", file=sys.stderr)
            return 1
        rows = order_rows(rows, specs)
    else:
        rows = evaluate(world, specs, chain, starts, jobs=args.jobs,
                        decision_interval=args.decision_interval,
                        progress=not args.no_progress)
    agents = [agent_label(s) for s in specs]
    summary = summarise(rows, agents)
    meta = {
        "trace": Path(args.trace).name, "split": args.split, "episodes": args.episodes,
        "seed": args.seed, "agents": agents, "total_units": world.total_units,
        "chain": asdict(chain), "decision_interval": args.decision_interval,
        "command": "mirage eval " + " ".join(argv),
        "failed_episodes": len({r["t0"] for r in rows if r["error"]}),
    }
    write_results(Path(args.out), rows, summary, meta)
    print(markdown_table(summary))
    print(f"results in {args.out}/ (episodes.csv, summary.json, summary.md, gap_cdf.png)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":  # the tasks of a --slurm-array run
    raise SystemExit(main())
