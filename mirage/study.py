"""``mirage study``: the whole Mirage study, from hindsight data to the test tables.

1. Hindsight data of the training and validation splits (validation = every fifth day of
   the training period, so it spans its load regimes).
2. Every learned agent with several seeds, its threshold chosen on validation.
3. The default: ``moe-dqn`` (the paper's) if it is the best on validation, else the best
   agent. ``transformer-pg``, the aggressive option, gets the threshold with the most
   uninterrupted chains whose overlap stays within twice the default's, on validation.
4. The test split, once: baselines and every model on the same seeded chains, for each
   chain size; tables with mean +- sd over seeds, per load level; plots.

Every step's output is kept in ``--out`` and reused when present (delete it to redo).
The log is replayed in its stored site profile (``hpcsim fit``; :mod:`mirage.envs.twin`)
unless ``--no-profile`` or ``--total-units`` is given, as for ``mirage backtest``; the
fidelity line beside every table names the simulator. Example (the command behind
``docs/results/ls6-study``, in the default simulator since it gives a size)::

    mirage study --trace ../shared/traces/ls6-a100.log --total-units 72 --jobs 2 \
        --out docs/results/ls6-study
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from hpcbase.atomic import atomic_write
from mirage.agents import LEARNED
from mirage.envs.options import (
    add_world_args,
    build_world,
    queue_feature_list,
    read_world_trace,
    unit_sizes,
)
from mirage.envs.twin import Twin, add_profile_arg, fidelity_line, replay_fidelity, site_world
from mirage.envs.world import ChainSpec, ChainWorld
from mirage.observation import DECISION_INTERVAL
from sim.fidelity import Fidelity

BASELINES = ("reactive", "average", "dependency", "start-estimate", "quantile", "oracle")
DEFAULT_AGENT = "moe-dqn"
AGGRESSIVE_AGENT = "transformer-pg"
LEARNED_BASELINE = "gap-regressor"
"""A learned baseline (the paper's reference "DQN"): compared with, never shipped."""
OVERLAP_BUDGET = 2.0
"""The aggressive agent's mean overlap may be at most this many times the default's."""


def _log(msg: str) -> None:
    print(f"[study {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def world_fidelity(
    world: ChainWorld, fid: Fidelity | None | bool = True, twin: Twin | None = None
) -> str:
    """The study's simulated world (in ``twin``'s simulator, default the project's) against
    the trace's recorded schedule, job by job (``sim.fidelity``, the table ``hpcsim replay``
    prints; ``fid`` when already computed), as markdown; "" without recorded starts."""
    if fid is True:
        fid = replay_fidelity(world.trace, world.total_units, twin or Twin())
    if not isinstance(fid, Fidelity):
        return ""
    lines = [
        f"Fidelity of the simulated world ({world.total_units} units) against the recorded "
        "schedule:",
        "",
        "| metric | simulated | recorded |",
        "|---|---:|---:|",
    ]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in fid.rows()]
    return "\n".join(lines) + "\n"


def study_world(args: argparse.Namespace) -> tuple[ChainWorld, Twin, str, str]:
    """The world the study tests in, its simulator (the stored site profile unless
    ``--no-profile`` or ``--total-units`` rule it out: :func:`mirage.envs.twin.site_world`),
    its fidelity table (:func:`world_fidelity`) and the line printed beside every table."""
    trace = read_world_trace(args)
    twin, total_units = site_world(trace, args, unit_sizes(args.total_units)[0])
    world = build_world(args, True, total_units, trace=trace, make_simulator=twin.make_simulator)
    fid = replay_fidelity(trace, world.total_units, twin)
    line = fidelity_line(twin.describe(world.total_units, trace.unit), fid)
    return world, twin, world_fidelity(world, fid), line


def make_data(
    worlds: Sequence[ChainWorld],
    out: Path,
    split: str,
    episodes: int,
    seed: int,
    chain_units: Sequence[int],
    jobs: int,
) -> Path:
    """The hindsight data of ``split``, ``episodes`` chains in each world (one world per
    cluster size), in one file (reused if it exists). Training data are labelled every
    :data:`~mirage.dataset.DATASET_DECISION_INTERVAL`; validation data at the interval the
    policies decide at (:data:`~mirage.observation.DECISION_INTERVAL`), so that a threshold
    is chosen for as many chances to fire as it will get."""
    from mirage import dataset as ds

    path = out / "data" / f"{split}.parquet"
    if path.exists():
        return path
    interval = ds.DATASET_DECISION_INTERVAL if split == "train" else DECISION_INTERVAL
    parts = []
    for i, world in enumerate(worlds):
        _log(
            f"hindsight data: {split}, {episodes} chains on {world.total_units} units, "
            f"a decision every {interval:g} s"
        )
        s = seed + 1000 * i
        starts = ds.sample_starts(world, split, episodes, chain_units, s)
        recs = ds.collect(world, starts, interval, jobs, progress=True)
        meta = ds.dataset_meta(world, split, episodes, s, interval, chain_units)
        parts.append(ds.from_records(recs, meta))
    ds.save(ds.concat(parts), path)
    return path


def _train_task(
    task: tuple[str, int, str, str, str, tuple[str, ...]],
) -> tuple[str, int, dict[str, Any]]:
    from mirage.agents.common.model_io import read_meta, save_model
    from mirage.dataset import load
    from mirage.train import train_hindsight

    agent, seed, train_path, val_path, model_path, drop = task
    if not Path(model_path).exists():
        model, meta = train_hindsight(
            agent, load(train_path), load(val_path), seed, drop_features=drop
        )
        save_model(model, model_path, agent, meta)
    return agent, seed, read_meta(model_path)


def train_all(
    out: Path,
    agents: Sequence[str],
    seeds: Sequence[int],
    train_path: Path,
    val_path: Path,
    jobs: int,
    drop_features: Sequence[str] = (),
) -> dict[tuple[str, int], dict[str, Any]]:
    """Every agent and seed (in parallel processes), each without the queue features
    ``drop_features``; their metadata."""
    from tqdm import tqdm

    (out / "models").mkdir(parents=True, exist_ok=True)
    tasks = [
        (a, s, str(train_path), str(val_path), str(model_path(out, a, s)), tuple(drop_features))
        for a in sorted(agents, key=lambda a: a != AGGRESSIVE_AGENT)  # the slowest first
        for s in seeds
    ]
    metas: dict[tuple[str, int], dict[str, Any]] = {}
    with tqdm(total=len(tasks), desc="training", unit="model") as bar:
        if jobs <= 1:
            results = map(_train_task, tasks)
            for agent, seed, meta in results:
                metas[agent, seed] = meta
                bar.update()
        else:
            with mp.get_context("spawn").Pool(min(jobs, len(tasks))) as pool:
                for agent, seed, meta in pool.imap_unordered(_train_task, tasks):
                    metas[agent, seed] = meta
                    bar.update()
    return metas


def model_path(out: Path, agent: str, seed: int) -> Path:
    return out / "models" / f"{agent}-s{seed}.zip"


def ensemble_path(out: Path, agent: str) -> Path:
    return out / "models" / f"{agent}-ens.zip"


def ensemble_labels(agents: Sequence[str]) -> dict[str, tuple[str, int | None]]:
    """Table labels of the agents' seed ensembles: file stem -> (row name, no seed)."""
    return {f"{a}-ens": (f"{a} ensemble", None) for a in agents}


def build_ensembles(
    out: Path, agents: Sequence[str], seeds: Sequence[int], val_path: Path
) -> dict[str, dict[str, Any]]:
    """Each agent's seed ensemble (:mod:`mirage.ensemble`; kept if already built), tuned on
    the validation data with its members' objective; their metadata by agent."""
    from mirage.agents.common.model_io import read_meta
    from mirage.dataset import load
    from mirage.ensemble import build_ensemble

    if len(seeds) < 2:
        return {}
    val = None
    metas = {}
    for a in agents:
        path = ensemble_path(out, a)
        if not path.exists():
            val = val if val is not None else load(val_path)
            build_ensemble([model_path(out, a, s) for s in seeds], val, path)
        metas[a] = read_meta(path)
    return metas


def choose_default(metas: dict[tuple[str, int], dict[str, Any]]) -> tuple[str, dict[str, float]]:
    """The default agent: :data:`DEFAULT_AGENT` if its mean validation ``|gap|`` over seeds
    is the best of Mirage's agents (neither the aggressive option nor the learned baseline),
    else the best of them; with every agent's mean."""
    means: dict[str, float] = {}
    for agent in dict.fromkeys(a for a, _ in metas):
        vals = [m["validation"]["abs_gap"] for (a, _), m in metas.items() if a == agent]
        means[agent] = float(np.mean(vals))
    ranked = sorted(
        (m, a) for a, m in means.items() if a not in (AGGRESSIVE_AGENT, LEARNED_BASELINE)
    )
    best = ranked[0][1]
    return (DEFAULT_AGENT if means.get(DEFAULT_AGENT) == ranked[0][0] else best), means


def retune(path: Path, val_path: Path, objective: str, max_overlap: float | None) -> dict[str, Any]:
    """Choose a saved model's threshold again on validation data (other objective)."""

    from mirage.agents.common.hindsight import tune_rule
    from mirage.agents.common.model_io import load_model, write_meta
    from mirage.agents.common.pretrain import predict
    from mirage.agents.common.support import masked
    from mirage.dataset import load
    from mirage.train import guard_in_hours

    policy = load_model(path)
    val = load(val_path)
    scores = predict(lambda obs: __import__("torch").as_tensor(policy.score(obs.numpy())), val)
    scores = masked(policy.support, val, scores)
    threshold, guard, stats = tune_rule(val, scores, objective, max_overlap)
    meta = dict(policy.meta)
    meta.update(
        threshold=threshold,
        guard=guard,
        guard_hours=guard_in_hours(guard, val.meta.get("max_limit")),
        objective=objective,
        max_overlap_hours=max_overlap,
        validation={k: getattr(stats, k) for k in stats.__slots__},
    )
    write_meta(path, meta)
    return meta


def validation_rows(
    val_path: Path, models: dict[str, Path]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Episode rows (as :func:`mirage.eval.runner.evaluate` gives them) of ``reactive``,
    the hindsight ``oracle`` and every model's tuned stopping rule on the validation data,
    evaluated exactly offline (:mod:`mirage.eval.offline`); episodes are keyed by their
    index in ``t0`` (several cluster sizes may share start times)."""
    from mirage.dataset import load
    from mirage.eval import offline

    val = load(val_path)
    gaps = {"reactive": val.ep_end_gap, "oracle": offline.oracle_gaps(val)}
    fired = {}
    for label, path in models.items():
        gaps[label], fired[label] = offline.rule_gaps(val, path)
    return offline.rows(val, gaps, fired, t0=np.arange(val.episodes, dtype=float)), list(gaps)


def seed_table(
    summary: list[dict[str, Any]], labels: dict[str, tuple[str, int | None]]
) -> list[dict[str, Any]]:
    """Per (level, agent): mean and sd over seeds of each statistic (sd 0 for baselines)."""
    rows = []
    keys = ("abs_gap_hours_mean", "uninterrupted_share", "on_time_share")
    for level in dict.fromkeys(s["level"] for s in summary):
        by_agent: dict[str, list[dict[str, Any]]] = {}
        for s in summary:
            if s["level"] == level and s["agent"] in labels:
                by_agent.setdefault(labels[s["agent"]][0], []).append(s)
        for agent, parts in by_agent.items():
            row: dict[str, Any] = {
                "level": level,
                "agent": agent,
                "seeds": len(parts),
                "chains": parts[0]["chains"],
            }
            vals = {
                **{k: [p[k] for p in parts] for k in keys},
                "interruption_hours": [p["interruption_hours"]["mean"] for p in parts],
                "overlap_node_hours": [p["overlap_node_hours"]["mean"] for p in parts],
            }
            for k, v in vals.items():
                row[k] = float(np.mean(v))
                row[k + "_sd"] = float(np.std(v, ddof=1)) if len(v) > 1 else 0.0
            rows.append(row)
    return rows


def seed_markdown(rows: list[dict[str, Any]], title: str) -> str:
    out = [f"## {title}", ""]
    for level in dict.fromkeys(r["level"] for r in rows):
        part = [r for r in rows if r["level"] == level]
        if not part[0]["chains"]:
            out += [f"### load: {level} (0 chains)", ""]
            continue
        out += [
            f"### load: {level} ({part[0]['chains']} chains)",
            "",
            "| agent | seeds | mean abs gap h | interruption h | overlap node-h "
            "| uninterrupted | on time |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in part:

            def pm(k: str, pct: bool = False, r: dict[str, Any] = r) -> str:
                if pct:
                    return f"{r[k]:.0%} ± {r[k + '_sd']:.0%}" if r["seeds"] > 1 else f"{r[k]:.0%}"
                return f"{r[k]:.2f} ± {r[k + '_sd']:.2f}" if r["seeds"] > 1 else f"{r[k]:.2f}"

            out.append(
                f"| {r['agent']} | {r['seeds']} | {pm('abs_gap_hours_mean')} "
                f"| {pm('interruption_hours')} | {pm('overlap_node_hours')} "
                f"| {pm('uninterrupted_share', True)} | {pm('on_time_share', True)} |"
            )
        out.append("")
    return "\n".join(out)


def run_test(
    world: ChainWorld,
    out: Path,
    name: str,
    specs: Sequence[str],
    units: int,
    episodes: int,
    seed: int,
    jobs: int,
    split: str = "test",
) -> list[dict[str, Any]]:
    """The baselines and every model of ``specs`` on ``split`` for ``units``-node chains;
    its summary. The baselines are played in the simulator (``mirage eval``); the models,
    stopping rules whose outcome one labelled replay per chain gives exactly, are evaluated
    from the labels (:mod:`mirage.eval.offline`), which is the same gap at a fraction of
    the cost."""
    from mirage import dataset as ds
    from mirage.eval import offline
    from mirage.eval.report import summarise, write_results
    from mirage.eval.runner import agent_label, evaluate

    folder = out / name
    done = folder / "summary.json"
    if done.exists():
        return json.loads(done.read_text())["summary"]
    models = [s for s in specs if s.endswith(".zip")]
    baselines = [s for s in specs if s not in models]
    _log(f"evaluation {name}: {len(specs)} agents x {episodes} chains of {units} node(s)")
    chain = ChainSpec(units=units).resolved(world.max_limit)
    rng = np.random.default_rng(seed)
    starts = [world.sample_start(split, rng) for _ in range(episodes)]
    rows = evaluate(world, baselines, chain, starts, jobs=jobs, progress=True)
    recs = ds.collect(world, [(t0, units) for t0 in starts], DECISION_INTERVAL, jobs, 2, True)
    if recs:
        data = ds.from_records(recs, {"window": world.window, "max_limit": world.max_limit})
        rows += offline.evaluate_models(data, models, [agent_label(m) for m in models])
    rows += _unlabelled(rows, models, {r["t0"] for r in recs})
    agents = [agent_label(s) for s in specs]
    summary = summarise(rows, agents)
    meta = {
        "trace": Path(world.trace.source or "").name,
        "split": split,
        "episodes": episodes,
        "seed": seed,
        "agents": agents,
        "total_units": world.total_units,
        "chain": asdict(chain),
        "decision_interval": DECISION_INTERVAL,
        "command": "mirage study",
        "models_evaluated": "offline, from the labels of one replay per chain",
        "failed_episodes": len({r["t0"] for r in rows if r["error"]}),
    }
    write_results(folder, rows, summary, meta)
    return summary


def _unlabelled(
    rows: list[dict[str, Any]], models: Sequence[str], labelled: set[float]
) -> list[dict[str, Any]]:
    """Rows for the models on chains that have no labels: chains that cannot be played
    (the baselines' error) or that end before the first decision, where every policy gets
    the forced submit, i.e. ``reactive``'s outcome."""
    from mirage.eval.runner import agent_label

    out = []
    for r in rows:
        if r["agent"] == "reactive" and r["t0"] not in labelled:
            out += [{**r, "agent": agent_label(m)} for m in models]
    return out


def plot_bars(path: Path, rows: list[dict[str, Any]], title: str) -> None:
    """Mean |gap| and uninterrupted share per agent, with the sd over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hpcbase.atomic import atomic_path

    part = [r for r in rows if r["level"] == "all"]
    names = [r["agent"] for r in part]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, label in (
        (axes[0], "abs_gap_hours_mean", "mean |gap| (h)"),
        (axes[1], "uninterrupted_share", "uninterrupted share"),
    ):
        ax.bar(
            names,
            [r[key] for r in part],
            yerr=[r[key + "_sd"] for r in part],
            capsize=3,
            color=["tab:grey" if r["seeds"] == 1 else "tab:blue" for r in part],
        )
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=60, labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=120)
    plt.close(fig)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mirage study", description=__doc__.split("\n")[0])
    add_world_args(p)
    p.add_argument("--agents", default=",".join(LEARNED), help="learned agents to train")
    p.add_argument("--seeds", default="0,1,2", help="training seeds (default 0,1,2)")
    p.add_argument("--train-episodes", type=int, default=400)
    p.add_argument("--validation-episodes", type=int, default=150)
    p.add_argument("--test-episodes", type=int, default=200)
    p.add_argument(
        "--test-split",
        default="test",
        help="split of the final tables (default test; 'validation' replays the validation "
        "days at --total-units in the simulator, e.g. for a trace too short for a test split)",
    )
    p.add_argument(
        "--chain-sizes",
        default="1,8",
        help="chain sizes: drawn per training chain; one test table each",
    )
    p.add_argument(
        "--train-units",
        default=None,
        help="extra cluster sizes (comma list) whose simulations of the training period "
        "add training and validation chains, so that the data span lighter and heavier load "
        "than the one size; the test runs at --total-units (or the site profile's size) "
        "only. In a site profile each size keeps the profile's limits and priority and its "
        "availability timeline scaled by size / the profile's size (the same share of the "
        "cluster drained at each moment)",
    )
    p.add_argument(
        "--drop-features",
        type=queue_feature_list,
        default="",
        help="comma-separated queue features every model learns without (mirage train)",
    )
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument(
        "--stage",
        default="all",
        choices=("data", "train", "all"),
        help="stop after this stage (default: all, through the test tables)",
    )
    p.add_argument("--out", required=True, help="output folder")
    add_profile_arg(p)
    return p


def validation_table(
    out: Path,
    val_path: Path,
    agents: Sequence[str],
    seeds: Sequence[int],
    ensembles: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Every tuned model (and seed ensemble), ``reactive`` and the oracle on the validation
    data, per load level, mean +- sd over seeds (``validation.md`` in ``out``)."""
    from mirage.eval.report import summarise

    models = {f"{a}-s{s}": model_path(out, a, s) for a in agents for s in seeds}
    models.update({f"{a}-ens": ensemble_path(out, a) for a in ensembles})
    rows, labels = validation_rows(val_path, models)
    names: dict[str, tuple[str, int | None]] = {"reactive": ("reactive", None)}
    names["oracle"] = ("oracle", None)
    names.update({f"{a}-s{s}": (a, s) for a in agents for s in seeds})
    names.update(ensemble_labels(ensembles))
    table = seed_table(summarise(rows, labels), names)
    text = seed_markdown(table, "Validation (where models and thresholds were chosen)")
    atomic_write(out / "validation.md", text.encode())
    return table


def gate_report(out: Path, val_path: Path, seeds: Sequence[int]) -> str:
    """How each ``moe-dqn`` model's gate routes the validation decisions: mean weight per
    expert overall, by time slice of the period (the experts' training slices) and by load
    level, and whether it collapsed onto one expert (``moe-gate.md`` in ``out``)."""
    from mirage.agents.common.model_io import load_model
    from mirage.agents.moe_dqn import ROUTING as moe_routing
    from mirage.agents.moe_dqn import collapsed, gate_usage, time_slices
    from mirage.dataset import load

    val = load(val_path)
    gap_h = val.ep_end_gap[val.episode] / 3600.0
    level = np.where(gap_h <= 2.0, "low", np.where(gap_h <= 12.0, "medium", "heavy"))
    lines = [
        "## MoE-DQN gate on the validation decisions",
        "",
        "Mean gate weight per expert (- where no decision has that load); time slices are "
        "the contiguous quarters of the period; load levels are those of the tables (low "
        "<= 2 h, medium <= 12 h, heavy). Each expert was taught to own one group "
        f"(`mirage.agents.moe_dqn.ROUTING`: {moe_routing!r}).",
        "",
        "| model | overall | by time slice 0 / 1 / 2 / 3 | by load low / medium / heavy "
        "| collapsed |",
        "|---|---|---|---|---|",
    ]
    for s in seeds:
        path = model_path(out, "moe-dqn", s)
        if not path.exists():
            continue
        model = load_model(path).model
        n = len(gate_usage(model, val)["mean_weight"])
        by_slice = gate_usage(model, val, time_slices(val, n))["by_group"]
        use = gate_usage(model, val, level)

        def fmt(w: list[float]) -> str:
            return " ".join(f"{x:.2f}" for x in w)

        slices = " / ".join(fmt(by_slice[k]) for k in sorted(by_slice))
        by_level = use["by_group"]
        levels = " / ".join(
            fmt(by_level[k]) if k in by_level else "-" for k in ("low", "medium", "heavy")
        )
        lines.append(
            f"| moe-dqn-s{s} | {fmt(use['mean_weight'])} | {slices} | {levels} "
            f"| {'yes' if collapsed(use) else 'no'} |"
        )
    text = "\n".join(lines) + "\n"
    atomic_write(out / "moe-gate.md", text.encode())
    return text


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    drop: list[str] = args.drop_features
    began = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    agents = [a for a in args.agents.split(",") if a]
    seeds = [int(s) for s in args.seeds.split(",")]
    sizes = [int(s) for s in args.chain_sizes.split(",")]
    world, twin, world_fid, sim_line = study_world(args)
    _log(world_fid + sim_line)
    have_data = all((out / "data" / f"{s}.parquet").exists() for s in ("train", "validation"))
    worlds = [world] + [
        build_world(args, True, u, trace=world.trace, make_simulator=twin.make_simulator)
        for u in ([] if have_data else unit_sizes(args.train_units))
        if u is not None and u != world.total_units
    ]
    train_path = make_data(worlds, out, "train", args.train_episodes, 0, sizes, args.jobs)
    val_path = make_data(worlds, out, "validation", args.validation_episodes, 1, sizes, args.jobs)
    if args.stage == "data":
        return 0
    metas = train_all(out, agents, seeds, train_path, val_path, args.jobs, drop)
    default, means = choose_default(metas)
    if AGGRESSIVE_AGENT in agents:
        default_overlap = np.mean(
            [m["validation"]["overlap"] for (a, _), m in metas.items() if a == default]
        )
        for s in seeds:
            metas[AGGRESSIVE_AGENT, s] = retune(
                model_path(out, AGGRESSIVE_AGENT, s),
                val_path,
                "uninterrupted",
                OVERLAP_BUDGET * float(default_overlap),
            )
    means = {
        a: float(np.mean([m["validation"]["abs_gap"] for (b, _), m in metas.items() if b == a]))
        for a in agents
    }
    ensembles = build_ensembles(out, agents, seeds, val_path)
    best_seed = min(seeds, key=lambda s: metas[default, s]["validation"]["abs_gap"])
    shipped = model_path(out, default, best_seed)
    if default in ensembles and (
        ensembles[default]["validation"]["abs_gap"]
        < metas[default, best_seed]["validation"]["abs_gap"]
    ):
        shipped = ensemble_path(out, default)
    choice = {
        "default": default,
        "default_seed": best_seed,
        "default_model": shipped.name,
        "simulator": {**twin.to_json(), "line": sim_line},
        "ensembles": {f"{a}-ens": m["validation"] for a, m in ensembles.items()},
        "validation_abs_gap": means,
        "models": {f"{a}-s{s}": m["validation"] for (a, s), m in sorted(metas.items())},
    }
    atomic_write(out / "choice.json", json.dumps(choice, indent=1).encode())
    _log(
        f"default: {default} ({shipped.name}); validation mean |gap|: "
        + ", ".join(f"{a} {v:.2f} h" for a, v in means.items())
        + "; ensembles: "
        + ", ".join(f"{a} {m['validation']['abs_gap']:.2f} h" for a, m in ensembles.items())
    )
    validation = validation_table(out, val_path, agents, seeds, list(ensembles))
    gate = gate_report(out, val_path, seeds) if "moe-dqn" in agents else ""
    if args.stage == "train":
        return 0
    labels: dict[str, tuple[str, int | None]] = {b: (b, None) for b in BASELINES}
    specs = list(BASELINES)
    for a in agents:
        for s in seeds:
            specs.append(str(model_path(out, a, s)))
            labels[f"{a}-s{s}"] = (a, s)
    specs += [str(ensemble_path(out, a)) for a in ensembles]
    labels.update(ensemble_labels(list(ensembles)))
    report = [
        f"# Mirage study: {Path(args.trace).name}",
        "",
        f"Default agent: **{default}** (`{shipped.name}` ships). Validation mean |gap| "
        "(mean over seeds): " + ", ".join(f"{a} {v:.2f} h" for a, v in means.items()),
        "",
        *(
            [f"Every model learns without the queue features {', '.join(drop)}.", ""]
            if drop
            else []
        ),
        world_fid,
        seed_markdown(validation, "Validation (where models and thresholds were chosen)"),
        sim_line + "\n",
        gate,
    ]
    tables: dict[str, Any] = {"validation": validation}
    split = args.test_split
    prefix = "test" if split == "test" else f"{split}-split"
    for units in sizes:
        summary = run_test(
            world,
            out,
            f"{prefix}-{units}node",
            specs,
            units,
            args.test_episodes,
            seed=2,
            jobs=args.jobs,
            split=split,
        )
        rows = seed_table(summary, labels)
        tables[f"{units}node" if split == "test" else f"{split}-{units}node"] = rows
        title = f"{split.capitalize()} split at {world.total_units} units, {units}-node chains"
        report += [seed_markdown(rows, title), sim_line + "\n"]
        plot_bars(out / f"{prefix}-{units}node.png", rows, title)
    atomic_write(out / "tables.json", json.dumps(tables, indent=1).encode())
    report.append(f"Study time: {time.time() - began:.0f} s with --jobs {args.jobs}.")
    atomic_write(out / "README.md", "\n".join(report).encode())
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
