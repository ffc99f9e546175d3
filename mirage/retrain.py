"""``mirage retrain``: the backtest's loop in production, once per run (a timer or scrontab).

From the site's recent accounting (a ``sacct`` export, the jobcomp/filetxt log, or any trace
file :func:`sim.traces.read.read_trace` reads), the most recent ``--holdout-days`` whose
chains have ended are held out; chains of the ``--history-days`` before them are labelled and
the agents trained and chosen exactly as at a backtest origin
(:func:`mirage.backtest.origin.run_origin`: every fifth day is validation). The candidate and
the current model (``--model``) are then compared on the held-out days, which neither has
seen, and the candidate replaces ``--model`` (an atomic rename: ``mirage agentd`` and running
chain watchers load it at their next decision; chains keep their state) only if its mean
``|gap|`` there is lower, or, without a current model, lower than ``reactive``'s. Every run
keeps its labels, models and ``report.json``/``report.md`` under ``--store/runs/STAMP``,
and every promoted model stays in ``--store/models``.

The log is replayed in the site profile ``hpcsim fit`` stored for it, if any
(:mod:`mirage.envs.twin`); the report names the simulator and the replay's fidelity against
the recorded schedule. ``--time-scale K`` reads accounting of a cluster that replays a site's
load K times faster (``mirage live-check``, the local test cluster): its times are multiplied
by K, so the model is trained, compared and used at the site's scale, as chains submitted
with ``mirage chain submit --time-scale K`` see it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from hpcbase.atomic import atomic_path, atomic_write
from mirage.agents import LEARNED
from mirage.backtest import labels as lb
from mirage.backtest.origin import origin_path, run_origin
from mirage.backtest.plan import Plan, chain_shapes, holdout_weeks
from mirage.envs.twin import add_profile_arg, site_world, world_report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mirage retrain", description=__doc__.split("\n")[0])
    p.add_argument(
        "--accounting",
        required=True,
        help="recent accounting: sacct export, jobcomp log, SWF or CSV",
    )
    p.add_argument(
        "--model",
        required=True,
        help="the deployed MODEL.zip (replaced atomically when the candidate wins)",
    )
    p.add_argument("--store", required=True, help="folder keeping every run and model")
    p.add_argument(
        "--total-units",
        type=int,
        default=None,
        help="cluster size (default: the site profile's, else the calibration's, else the log's)",
    )
    p.add_argument(
        "--unit",
        choices=("nodes", "procs", "gpus"),
        default=None,
        help="what a job's size counts in a sacct export or jobcomp log (default nodes)",
    )
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="K",
        help="the accounting's cluster replays a site's load K times faster: its times are "
        "multiplied by K (as chains submitted with --time-scale K see them)",
    )
    add_profile_arg(p)
    p.add_argument("--agents", default="gap-regressor", help="comma list (default gap-regressor)")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--epochs", type=int, default=5, help="(fitted-Q iterations for the DQNs)")
    p.add_argument("--chains-per-week", type=int, default=30)
    p.add_argument("--holdout-days", type=float, default=7.0)
    p.add_argument("--history-days", type=float, default=56.0)
    p.add_argument("--chain-units", type=int, default=None)
    p.add_argument("--chain-limit-hours", type=float, default=None)
    p.add_argument("--decision-interval", type=float, default=1800.0)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--adapt-days",
        type=float,
        default=0.0,
        metavar="N",
        help="then tune the deployed model's threshold and guard again on the chains of the "
        "last N days (0: off; the backtest's `adapted` row; run it daily)",
    )
    p.add_argument("--dry-run", action="store_true", help="compare and report, never promote")
    p.add_argument("--no-progress", action="store_true")
    return p


def _log(msg: str) -> None:
    print(f"[retrain {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def compare(run: Path, plan: Plan, current: Path | None) -> dict[str, Any]:
    """The candidate, the current model and reactive on the held-out week's chains."""
    from mirage.eval.offline import rule_gaps

    week = plan.weeks[-1]
    res = json.loads(origin_path(run, week).read_text())
    if "skipped" in res:
        raise SystemExit(f"mirage retrain: nothing to train on: {res['skipped']}")
    holdout = lb.load_week(run, week)
    assert holdout is not None

    def mean_abs(g: np.ndarray) -> float:
        return float(np.abs(g).mean() / 3600)

    out: dict[str, Any] = {
        "holdout": [week.label, holdout.episodes],
        "candidate": res["chosen_model"],
        "candidate_abs_gap": mean_abs(np.asarray(res["gaps"][res["chosen"]])),
        "reactive_abs_gap": mean_abs(holdout.ep_end_gap),
        "current": str(current) if current else None,
        "current_abs_gap": None,
        "train_chains": res["train_chains"],
        "validation_chains": res["validation_chains"],
    }
    if current is not None:
        try:
            out["current_abs_gap"] = mean_abs(rule_gaps(holdout, current)[0])
        except Exception as exc:  # a model the offline rule cannot run (RL horizon, shape)
            out["current_error"] = f"{type(exc).__name__}: {exc}"
    bar = out["current_abs_gap"]
    against = "the current model" if bar is not None else "reactive (no current model)"
    bar = out["reactive_abs_gap"] if bar is None else bar
    out["promote"] = out["candidate_abs_gap"] < bar
    out["reason"] = (
        f"candidate {out['candidate_abs_gap']:.2f} h "
        f"{'<' if out['promote'] else 'is not below'} {against} {bar:.2f} h"
    )
    return out


def promote(candidate: Path, model: Path, store: Path, stamp: str) -> Path:
    """Keep the candidate in ``store/models`` and put it at ``model`` by an atomic rename."""
    kept = store / "models" / f"{stamp}-{candidate.name}"
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(candidate, kept)
    model.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(model, suffix=".zip") as tmp:
        shutil.copyfile(candidate, tmp)
    return kept


def adapt(
    run: Path, plan: Plan, model: Path, store: Path, stamp: str, days: float, dry_run: bool
) -> dict[str, Any]:
    """Tune the deployed ``model``'s threshold and guard again on the labelled chains that
    started in the last ``days`` (:func:`mirage.backtest.adapt.retune`) and put the result
    at ``model`` atomically (kept in ``store/models``; not with ``dry_run``). The figures
    are on the chains it was tuned on, so they show the change, not a test."""
    from mirage.agents.common.hindsight import first_fire_gaps
    from mirage.agents.common.model_io import load_model, read_meta, write_meta
    from mirage.agents.common.rule import fires
    from mirage.backtest.adapt import pool_scores, retune
    from mirage.backtest.plan import DAY

    parts = [d for w in plan.weeks if (d := lb.load_week(run, w)) is not None]
    pool = lb.join(parts)
    since = plan.weeks[-1].end - days * DAY
    recent = np.flatnonzero(pool.ep_t0 >= since)  # every labelled chain has ended
    policy = load_model(model)
    out: dict[str, Any] = {"days": days, "chains": int(recent.shape[0]), "changed": False}
    if policy.threshold is None:
        out["line"] = f"{model.name} decides without a threshold: nothing to tune"
        return out
    score = pool_scores(policy, pool)
    tuned = retune(policy, pool, score, recent)
    if tuned is None:
        out["line"] = f"{recent.shape[0]} chains in the last {days:g} days: the rule stands"
        return out
    keep = np.isin(pool.episode, recent)
    data = lb.select(pool, recent)

    def mean_abs(threshold: float, guard: float | None) -> float:
        gaps = first_fire_gaps(data, fires(score[keep], data.ctx, threshold, guard))
        return float(np.abs(gaps).mean() / 3600)

    old = (float(policy.threshold), policy.guard)
    out.update(
        before={"threshold": old[0], "guard": old[1], "abs_gap": mean_abs(*old)},
        after={"threshold": tuned[0], "guard": tuned[1], "abs_gap": mean_abs(*tuned)},
        changed=tuned != old,
    )
    out["line"] = (
        f"threshold {old[0]:.4g} -> {tuned[0]:.4g}, guard {old[1]} -> {tuned[1]}, on "
        f"{recent.shape[0]} chains of the last {days:g} days (mean |gap| there "
        f"{out['before']['abs_gap']:.2f} -> {out['after']['abs_gap']:.2f} h, in sample)"
    )
    if out["changed"] and not dry_run:
        meta = read_meta(model)
        meta.update(threshold=tuned[0], guard=tuned[1])
        meta["adapted"] = {"stamp": stamp, "days": days, "chains": out["chains"]}
        adapted = write_meta(model, meta, out=run / f"adapted-{model.name}")
        out["kept_as"] = str(promote(adapted, model, store, stamp))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from mirage.envs.world import ChainWorld, max_limit_of
    from sim.compress import stretch
    from sim.traces.model import TraceError
    from sim.traces.read import read_trace

    args = _parser().parse_args(argv)
    agents = tuple(a for a in args.agents.split(",") if a)
    if not agents or any(a not in LEARNED for a in agents):
        raise SystemExit(f"mirage retrain: --agents: choose from {', '.join(LEARNED)}")
    if not args.time_scale > 0:
        raise SystemExit(f"mirage retrain: --time-scale: must be > 0, got {args.time_scale}")
    try:
        trace = stretch(read_trace(args.accounting, unit=args.unit), args.time_scale)
        seeds = tuple(int(s) for s in args.seeds.split(",") if s.strip())
    except (TraceError, OSError) as exc:
        raise SystemExit(f"mirage retrain: cannot read accounting: {exc}") from None
    except ValueError:
        raise SystemExit(f"mirage retrain: --seeds: expected integers: {args.seeds!r}") from None
    twin, total_units = site_world(trace, args, args.total_units)
    max_limit = max_limit_of(trace)
    try:
        shapes = chain_shapes(
            trace, total_units, max_limit, args.chain_units, args.chain_limit_hours
        )
        weeks = holdout_weeks(
            trace, max(x for _, x in shapes), args.holdout_days, args.history_days
        )
    except ValueError as exc:
        raise SystemExit(f"mirage retrain: {exc}") from None
    plan = Plan.of(trace, total_units, weeks, shapes, agents, seeds, args)
    store = Path(args.store)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run = store / "runs" / stamp
    run.mkdir(parents=True, exist_ok=False)
    atomic_write(run / "plan.json", json.dumps(plan.to_json(), indent=1))
    _log(
        f"{len(trace)} jobs; training on {weeks[0].label}..{weeks[-1].label}, "
        f"holding out the week from {weeks[-1].label}"
    )
    try:
        world = ChainWorld(
            trace,
            total_units=total_units,
            max_limit=max_limit,
            until=weeks[-1].end,
            progress=not args.no_progress,
            make_simulator=twin.make_simulator,
        )
    except ValueError as exc:
        raise SystemExit(f"mirage retrain: {args.accounting}: {exc}") from None
    simulator = world_report(trace, total_units, twin)
    _log(simulator["line"])
    lb.label_weeks(world, plan, run, args.jobs, progress=not args.no_progress)
    plan_json = json.loads((run / "plan.json").read_text())
    run_origin((str(run), plan_json, len(weeks) - 1, trace.start_epoch))
    model = Path(args.model)
    report = compare(run, plan, model if model.is_file() else None)
    report["promoted"] = bool(report["promote"] and not args.dry_run)
    report["simulator"] = simulator
    if report["promoted"]:
        report["kept_as"] = str(promote(run / report["candidate"], model, store, stamp))
    if args.adapt_days > 0 and model.is_file():
        report["adapted"] = adapt(run, plan, model, store, stamp, args.adapt_days, args.dry_run)
        _log(f"adaptation: {report['adapted']['line']}")
    atomic_write(run / "report.json", json.dumps(report, indent=1))
    atomic_write(run / "report.md", _markdown(report))
    print(_markdown(report))
    return 0


def _markdown(r: dict[str, Any]) -> str:
    cur = "-" if r["current_abs_gap"] is None else f"{r['current_abs_gap']:.2f}"
    if r["promoted"]:
        verdict = "promoted"
    elif r["promote"]:
        verdict = "dry run: not promoted"
    else:
        verdict = "kept the current model" if r["current"] else "not promoted, no model deployed"
    verdict += f" ({r['reason']})" if "reason" in r else ""
    return (
        f"# mirage retrain\n\nHeld-out week {r['holdout'][0]} ({r['holdout'][1]} chains), "
        f"mean abs gap (h): candidate {r['candidate_abs_gap']:.2f} ({r['candidate']}), "
        f"current {cur}, reactive {r['reactive_abs_gap']:.2f}. Trained on "
        f"{r['train_chains']} chains, chosen on {r['validation_chains']}. Verdict: {verdict}.\n"
        + (f"\nCurrent model not evaluated: {r['current_error']}\n" if "current_error" in r else "")
        + (f"\n{r['simulator']['line']}\n" if "simulator" in r else "")
        + (f"\nAdaptation: {r['adapted']['line']}.\n" if "adapted" in r else "")
    )


if __name__ == "__main__":
    raise SystemExit(main())
