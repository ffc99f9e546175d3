"""Mirage models for a cluster of one's own, from its recorded load: in the simulator
configured from its own slurm.conf, at its own time scale (here the toy live cluster of
``bench/live_chain.py``, whose recorded load ships in docs/bench-data).

The shipped LS6 model was trained on 48-h segments, 10-minute samples and waits of hours;
the toy cluster's segments last a minute, so that model is outside its training support
there and waits (``reactive``). This script records nothing itself: it reads the SWF that
``bench/live_chain.py --record SECONDS --trace-out FILE`` wrote, splits it by time (train,
then validation, then test), labels chains of the bench's shape (1 CPU, 60-s limit, 5-s
samples and decisions) with their exact gaps, trains each agent with three seeds, and saves
the one best on validation (the agent by its mean over seeds, then its best seed), with a
table of every agent, mean ± sd over seeds, on the validation and test slices (evaluated
exactly, offline, from the labels).

    .venv/bin/python bench/live_chain.py --record 1500 --trace-out runs/toy/live-load.swf
    .venv/bin/python bench/live_toy_model.py [runs/toy/live-load.swf] --out runs/toy
    .venv/bin/python bench/live_chain.py --policy runs/toy/toy-best.zip --max-limit 60

Ends with ``RESULT best=AGENT validation_abs_gap_s=... test_abs_gap_s=...``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from hpcbase.slurm.localcluster import LocalCluster
from mirage import dataset as ds
from mirage.agents.common.hindsight import GapStats
from mirage.agents.common.model_io import save_model
from mirage.envs.world import ChainWorld
from mirage.eval import offline
from mirage.train import train_hindsight
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.traces.read import read_trace

INTERVAL = 5.0  # the bench's sample and decision interval, s
CHAIN_LIMIT = 60.0  # the bench's segment limit, s (the features' max_limit: --max-limit 60)
CPUS = 16
AGENTS = ("gap-regressor", "pg", "dqn", "moe-dqn")


def bench_config() -> SlurmConfig:
    """The scheduling of the bench's cluster: its slurm.conf as the script renders it, with
    the bench's ``bf_interval=5``."""
    with tempfile.TemporaryDirectory() as d:
        extra = Path(d) / "extra.conf"
        extra.write_text("SchedulerParameters=bf_interval=5\n")
        conf = Path(d) / "slurm.conf"
        conf.write_text(LocalCluster(Path(d) / "c", cpus=CPUS, conf_extra=extra).render_conf())
        return SlurmConfig.from_file(conf)


def world_of(trace_path: Path, window: int) -> ChainWorld:
    """The toy cluster's world: its trace split by time into train (10-55 %), validation
    (55-70 %) and test (70-85 %) of its span, each chain starting there. The recording
    lacks the jobs still queued or running when it stopped, so the last 15 % is left out:
    a chain starting there would see a queue emptier than the real one was."""
    trace = read_trace(trace_path)
    cfg = bench_config()
    span = float(trace.submit.max())

    def at(frac: float) -> str:
        return datetime.fromtimestamp(trace.start_epoch + frac * span, UTC).isoformat()

    splits = {
        "train": (at(0.10), at(0.55)),
        "validation": (at(0.55), at(0.70)),
        "test": (at(0.70), at(0.85)),
    }
    return ChainWorld(
        trace,
        total_units=CPUS,
        max_limit=CHAIN_LIMIT,
        window=window,
        sample_interval=INTERVAL,
        grid=60.0,
        splits=splits,
        make_simulator=lambda tr, units, seed: Simulator(tr, cfg, total_units=units, seed=seed),
    )


def label(world: ChainWorld, split: str, episodes: int, seed: int) -> ds.HindsightData:
    starts = ds.sample_starts(world, split, episodes, [1], seed)
    recs = ds.collect(world, starts, INTERVAL, jobs=2, progress=True)
    return ds.from_records(recs, ds.dataset_meta(world, split, episodes, seed, INTERVAL, [1]))


def summary(stats: list[GapStats], key: str) -> str:
    """Mean ± sd over seeds of one figure, in seconds."""
    x = np.array([getattr(st, key) for st in stats]) * 3600
    return f"{x.mean():.1f} ± {x.std():.1f}" if len(x) > 1 else f"{x[0]:.1f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", type=Path, help="the SWF of live_chain.py --record")
    p.add_argument("--out", type=Path, default=Path("runs/toy"))
    p.add_argument("--window", type=int, default=24, help="history samples (default 2 min)")
    p.add_argument("--episodes", type=int, default=600, help="training chains")
    p.add_argument("--seed", type=int, default=0, help="seed of the chains drawn")
    p.add_argument("--seeds", default="0,1,2", help="training seeds of every agent")
    p.add_argument("--agents", default=",".join(AGENTS))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = [int(x) for x in args.seeds.split(",")]
    world = world_of(args.trace, args.window)
    train = label(world, "train", args.episodes, args.seed)
    val = label(world, "validation", args.episodes // 3, args.seed + 1)
    test = label(world, "test", args.episodes // 3, args.seed + 2)
    rows: dict[str, tuple[list[GapStats], list[GapStats]]] = {
        "reactive": ([GapStats.of(val.ep_end_gap)], [GapStats.of(test.ep_end_gap)]),
        "oracle": (
            [GapStats.of(offline.oracle_gaps(val))],
            [GapStats.of(offline.oracle_gaps(test))],
        ),
    }
    paths: dict[str, list[Path]] = {}
    for agent in args.agents.split(","):
        rows[agent] = ([], [])
        for seed in seeds:
            model, meta = train_hindsight(agent, train, val, seed=seed)
            path = save_model(model, args.out / f"toy-{agent}-s{seed}.zip", agent, meta)
            paths.setdefault(agent, []).append(path)
            rows[agent][0].append(GapStats.of(offline.rule_gaps(val, path)[0]))
            rows[agent][1].append(GapStats.of(offline.rule_gaps(test, path)[0]))
    print(
        f"\n{'agent':14} {'seeds':>5} {'validation |gap| s':>19} {'test |gap| s':>13} "
        f"{'test int. s':>12} {'test overlap s':>15}"
    )
    for name, (v, t) in rows.items():
        print(
            f"{name:14} {len(v):>5} {summary(v, 'abs_gap'):>19} {summary(t, 'abs_gap'):>13} "
            f"{summary(t, 'interruption'):>12} {summary(t, 'overlap'):>15}"
        )
    # chosen on validation only: the agent by its mean over seeds, then its best seed
    best = min(paths, key=lambda a: np.mean([st.abs_gap for st in rows[a][0]]))
    k = int(np.argmin([st.abs_gap for st in rows[best][0]]))
    shutil.copyfile(paths[best][k], args.out / "toy-best.zip")
    chosen_v, chosen_t = rows[best][0][k], rows[best][1][k]
    print(
        f"RESULT best={best} seed={seeds[k]} "
        f"validation_abs_gap_s={chosen_v.abs_gap * 3600:.1f} "
        f"test_abs_gap_s={chosen_t.abs_gap * 3600:.1f} "
        f"test_reactive_abs_gap_s={rows['reactive'][1][0].abs_gap * 3600:.1f} "
        f"chains_train={train.episodes} chains_validation={val.episodes} "
        f"chains_test={test.episodes} model={args.out / 'toy-best.zip'}"
    )
    return 0 if np.isfinite(chosen_v.abs_gap) else 1


if __name__ == "__main__":
    raise SystemExit(main())
