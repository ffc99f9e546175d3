"""``mirage backtest TRACE --out DIR``: rolling-origin evaluation (docs/mirage-backtest.md).

Declares the weeks first (``plan.json``: history, development and test weeks; LS6's test is
March, already seen by earlier studies), labels each week's chains once, then at each
origin trains the agents on what is known by then, chooses on held-out days before it and
predicts the following week. Every week's labels and every origin's outcome are written
atomically as they finish, so a stopped run resumes where it stopped. Ends with
``backtest.md`` (tables), ``backtest.json`` and ``backtest.png`` (mean ``|gap|`` per week).
The log is replayed in its stored site profile (``hpcsim fit``) if it has one and neither
``--no-profile`` nor ``--total-units`` is given; ``fidelity.json`` and a line beside every
table say which simulator it was and how closely its replay follows the recorded schedule.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from hpcbase.atomic import atomic_write
from mirage.agents import LEARNED
from mirage.backtest import labels as lb
from mirage.backtest import report
from mirage.backtest.origin import origin_path, run_origin
from mirage.backtest.plan import (
    DeclaredPeriods,
    Plan,
    chain_shapes,
    declared_periods,
    make_weeks,
)
from mirage.envs.twin import add_profile_arg, site_world, world_report
from mirage.eval import array as slurm_array


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mirage backtest", description=__doc__.split("\n")[0])
    p.add_argument("trace", help="trace file (SWF, sacct export, jobcomp log or CSV)")
    p.add_argument("--out", required=True, help="output folder (reused: a run resumes)")
    p.add_argument(
        "--total-units",
        type=int,
        default=None,
        help="cluster size (default: the site profile's, else the trace's stored calibration, "
        "else its own size, at least its recorded peak use)",
    )
    add_profile_arg(p)
    p.add_argument(
        "--agents",
        default="gap-regressor",
        help="comma list of learned agents "
        f"({', '.join(LEARNED)}; default gap-regressor, the cheapest)",
    )
    p.add_argument("--seeds", default="0,1,2", help="training seeds (default 0,1,2)")
    p.add_argument(
        "--epochs",
        type=int,
        default=5,
        help="training epochs (fitted-Q iterations for dqn, moe-dqn; default 5)",
    )
    p.add_argument("--chains-per-week", type=int, default=30, help="default 30")
    p.add_argument("--every-days", type=float, default=7.0, help="days between origins")
    p.add_argument(
        "--first-origin",
        default=None,
        help="date of the first origin (default: "
        "as declared for the log, else the first whole week after --min-train-days)",
    )
    p.add_argument(
        "--test-from",
        default=None,
        help="origins from this date are the test "
        "(default: as declared for the log, else the last --test-weeks)",
    )
    p.add_argument("--test-weeks", type=int, default=4, help="default 4")
    p.add_argument(
        "--history-days",
        type=float,
        default=56.0,
        help="days of history each origin trains and validates on (default 56, as "
        "mirage retrain; 0: all known by then)",
    )
    p.add_argument("--min-train-days", type=float, default=21.0, help="default 21")
    p.add_argument(
        "--chain-units",
        type=int,
        default=None,
        help="chain job size (default: drawn from the site's long jobs)",
    )
    p.add_argument(
        "--chain-limit-hours",
        type=float,
        default=None,
        help="chain job limit (default: drawn from the site's long jobs)",
    )
    p.add_argument(
        "--decision-interval",
        type=float,
        default=1800.0,
        help="seconds between decisions, labelled and evaluated (default 1800)",
    )
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the chains (default 0)")
    p.add_argument("--no-progress", action="store_true")
    slurm_array.add_array_args(p, "the origins (labelling stays local)")
    return p


def _ints(text: str, flag: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise SystemExit(f"mirage backtest: {flag}: expected integers, got {text!r}") from None


def declare(args: argparse.Namespace, trace: object, total_units: int, max_limit: float) -> Plan:
    """The plan from the arguments (before anything runs)."""
    from sim.traces.model import Trace

    assert isinstance(trace, Trace)
    agents = tuple(a for a in args.agents.split(",") if a)
    unknown = [a for a in agents if a not in LEARNED]
    if not agents or unknown:
        raise SystemExit(f"mirage backtest: --agents: unknown {unknown}; choose from {LEARNED}")
    periods = declared_periods(trace) or DeclaredPeriods("")
    shapes = chain_shapes(trace, total_units, max_limit, args.chain_units, args.chain_limit_hours)
    weeks = make_weeks(
        trace,
        max(x for _, x in shapes),
        every_days=args.every_days,
        first_origin=args.first_origin or periods.first_origin,
        test_from=args.test_from or periods.test_from,
        test_weeks=args.test_weeks,
        min_train_days=args.min_train_days,
    )
    seeds = _ints(args.seeds, "--seeds")
    return Plan.of(trace, total_units, weeks, shapes, agents, seeds, args, periods.note)


def _fix_plan(out: Path, plan: Plan) -> None:
    """Write ``plan.json``, or check that the one there is this plan (a resumed run)."""
    path = out / "plan.json"
    now = json.loads(json.dumps(plan.to_json()))
    if path.exists():
        before = json.loads(path.read_text())
        before.setdefault("history_days", 0.0)  # declared before the option: all history
        if before != now:
            raise SystemExit(
                f"mirage backtest: {path} declares another plan (other trace, weeks, agents or "
                "options); use another --out, or delete it to start again"
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(now, indent=1))


def _run_origins(
    out: Path, plan: Plan, epoch: float, weeks: set[str], jobs: int, progress: bool
) -> None:
    """Train, choose and evaluate at the origins of ``weeks`` not done yet (``jobs``
    processes)."""
    from tqdm import tqdm

    plan_json = json.loads((out / "plan.json").read_text())
    tasks = [
        (str(out), plan_json, plan.weeks.index(w), epoch)
        for w in plan.origins
        if w.label in weeks and not origin_path(out, w).exists()
    ]
    with tqdm(total=len(tasks), desc="origins", unit="origin", disable=not progress) as bar:
        if jobs <= 1 or len(tasks) <= 1:
            for t in tasks:
                run_origin(t)
                bar.update()
        else:
            with mp.get_context("spawn").Pool(min(jobs, len(tasks))) as pool:
                for _ in pool.imap_unordered(run_origin, tasks):
                    bar.update()


def _log(msg: str) -> None:
    print(f"[backtest {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    from mirage.envs.world import ChainWorld, max_limit_of
    from sim.traces.model import TraceError
    from sim.traces.read import read_trace

    p = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(argv)
    if args.chains_per_week <= 0 or args.jobs <= 0 or args.epochs <= 0:
        raise SystemExit("mirage backtest: --chains-per-week, --jobs, --epochs must be positive")
    if not args.history_days >= 0:
        raise SystemExit(f"mirage backtest: --history-days: must be >= 0, got {args.history_days}")
    # an array task is given OUT/shards as --out (mirage.eval.array.task_script)
    out = Path(args.out).parent if args.shard else Path(args.out)
    try:
        trace = read_trace(args.trace, cache=True)
    except (TraceError, OSError) as exc:
        raise SystemExit(f"mirage backtest: cannot read trace: {exc}") from None
    twin, total_units = site_world(trace, args, args.total_units)
    max_limit = max_limit_of(trace)
    try:
        plan = declare(args, trace, total_units, max_limit)
    except ValueError as exc:
        raise SystemExit(f"mirage backtest: {exc}") from None
    shard, options = slurm_array.check_array_args(p, args, max(1, len(plan.origins)))
    _fix_plan(out, plan)
    if shard is not None:  # one task of a --slurm-array run: its origins, labels exist
        mine = [
            plan.origins[k].label
            for k in slurm_array.shard_indices(len(plan.origins), shard[1], shard[0])
        ]
        _run_origins(out, plan, trace.start_epoch, set(mine), args.jobs, False)
        slurm_array.write_shard(Path(args.out), *shard, mine, [{"week": w} for w in mine])
        return 0
    dev = [w.label for w in plan.weeks if w.role == "dev"]
    test = [w.label for w in plan.weeks if w.role == "test"]
    _log(
        f"declared: {len(plan.weeks) - len(dev) - len(test)} history weeks, development "
        f"weeks {', '.join(dev) or '-'}; test weeks {', '.join(test) or '-'}"
    )
    if plan.note:
        _log(plan.note)
    timing: dict[str, float] = {}
    began = time.time()
    try:
        world = ChainWorld(
            trace,
            total_units=total_units,
            max_limit=max_limit,
            until=plan.weeks[-1].end,
            progress=not args.no_progress,
            make_simulator=twin.make_simulator,
        )
    except ValueError as exc:
        raise SystemExit(f"mirage backtest: {args.trace}: {exc}") from None
    timing["replay_s"] = round(time.time() - began, 1)
    began = time.time()
    simulator = world_report(trace, total_units, twin)
    atomic_write(out / report.SIMULATOR_FILE, json.dumps(simulator, indent=1))
    _log(simulator["line"])
    timing["fidelity_s"] = round(time.time() - began, 1)
    began = time.time()
    lb.label_weeks(world, plan, out, args.jobs, progress=not args.no_progress)
    timing["labels_s"] = round(time.time() - began, 1)
    began = time.time()
    if args.slurm_array is not None:
        from hpcbase.slurm import SlurmError, get_client

        try:
            slurm_array.run_array(
                get_client(min_interval=args.slurm_poll),
                [sys.executable, "-m", "mirage.backtest.cli", *argv],
                [w.label for w in plan.origins],
                args.slurm_array,
                out / "shards",
                options,
                args.slurm_poll,
                not args.no_progress,
            )
        except (SlurmError, RuntimeError) as exc:
            print(f"mirage backtest: {exc}", file=sys.stderr)
            return 1
    else:
        weeks = {w.label for w in plan.origins}
        _run_origins(out, plan, trace.start_epoch, weeks, args.jobs, not args.no_progress)
    timing["origins_s"] = round(time.time() - began, 1)
    runs = json.loads((out / "timing.json").read_text()) if (out / "timing.json").exists() else []
    atomic_write(out / "timing.json", json.dumps([*runs, timing], indent=1))
    summary = report.write(out, plan)
    print((out / "backtest.md").read_text())
    _log(f"wall time this run: {timing}; results in {out}")
    parts = []
    for role, tot in summary["totals"].items():
        parts.append(" ".join(f"{role}_{p}={tot[p]['abs_gap']:.3f}h" for p in report.POLICIES))
    print("RESULT " + " ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
