"""``mirage eval``: every agent on the same seeded chain episodes, in parallel processes.

The log is replayed in its stored site profile (``hpcsim fit``), as ``mirage study`` and
``mirage backtest`` do, unless ``--no-profile`` or ``--total-units`` rule it out; the
simulator and its replay's fidelity are printed and kept in ``summary.json``.

Example::

    mirage eval --trace ../shared/traces/ls6-a100.log --total-units 72 \
        --agents reactive,average,dependency,start-estimate,quantile,oracle,runs/dqn.zip \
        --split test --episodes 200 --jobs 2 --out docs/results/ls6
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np

from mirage.envs.options import (
    add_world_args,
    build_world,
    chain_spec,
    read_world_trace,
    unit_sizes,
)
from mirage.envs.twin import add_profile_arg, site_world, world_report
from mirage.eval import array as eval_array
from mirage.eval.report import markdown_table, summarise, write_results
from mirage.eval.runner import agent_label, evaluate, order_rows
from mirage.observation import DECISION_INTERVAL


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="mirage eval", description=__doc__.split("\n")[0])
    add_world_args(p)
    add_profile_arg(p)
    p.add_argument(
        "--agents",
        default="reactive,average",
        help="comma-separated baselines, 'default', or MODEL.zip paths",
    )
    p.add_argument("--split", default="test")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--jobs", type=int, default=1, help="worker processes")
    p.add_argument("--seed", type=int, default=0, help="seed of the episode start times")
    p.add_argument("--decision-interval", type=float, default=DECISION_INTERVAL)
    p.add_argument("--out", default="eval-results", help="output folder")
    p.add_argument("--no-progress", action="store_true")
    eval_array.add_array_args(p, "the episodes")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    shard, sbatch_options = eval_array.check_array_args(p, args, args.episodes)
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
    trace = read_world_trace(args)
    twin, total_units = site_world(trace, args, sizes[0])
    world = build_world(
        args, not args.no_progress, total_units, trace=trace, make_simulator=twin.make_simulator
    )
    simulator: dict = {}
    if shard is None:  # the whole log replayed once, not per array task
        simulator = world_report(trace, world.total_units, twin)
        print(simulator["line"], file=sys.stderr)
    if args.split not in world.splits:
        p.error(f"unknown split {args.split!r}; have {', '.join(world.splits)}")
    chain = chain_spec(args).resolved(world.max_limit)
    rng = np.random.default_rng(args.seed)
    starts = [world.sample_start(args.split, rng) for _ in range(args.episodes)]
    if shard is not None:
        mine = [starts[k] for k in eval_array.shard_indices(len(starts), shard[1], shard[0])]
        rows = evaluate(
            world, specs, chain, mine, jobs=args.jobs, decision_interval=args.decision_interval
        )
        eval_array.write_shard(Path(args.out), *shard, mine, rows)
        return 0
    if args.slurm_array is not None:
        from hpcbase.slurm import SlurmError, get_client

        out = Path(args.out).resolve()
        try:
            rows = eval_array.run_array(
                get_client(min_interval=args.slurm_poll),
                [sys.executable, "-m", "mirage.eval.cli", *argv],
                starts,
                args.slurm_array,
                out / "shards",
                sbatch_options,
                args.slurm_poll,
                not args.no_progress,
            )
        except (SlurmError, eval_array.ArrayError) as exc:
            print(f"mirage eval: {exc}", file=sys.stderr)
            return 1
        rows = order_rows(rows, specs)
    else:
        rows = evaluate(
            world,
            specs,
            chain,
            starts,
            jobs=args.jobs,
            decision_interval=args.decision_interval,
            progress=not args.no_progress,
        )
    agents = [agent_label(s) for s in specs]
    summary = summarise(rows, agents)
    meta = {
        "trace": Path(args.trace).name,
        "split": args.split,
        "episodes": args.episodes,
        "seed": args.seed,
        "agents": agents,
        "total_units": world.total_units,
        "chain": asdict(chain),
        "decision_interval": args.decision_interval,
        "command": "mirage eval " + " ".join(argv),
        "failed_episodes": len({r["t0"] for r in rows if r["error"]}),
        "simulator": simulator,
    }
    write_results(Path(args.out), rows, summary, meta)
    print(markdown_table(summary))
    print(
        f"results in {args.out}/ (episodes.csv, summary.json, summary.md, gap_cdf.png)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":  # the tasks of a --slurm-array run
    raise SystemExit(main())
