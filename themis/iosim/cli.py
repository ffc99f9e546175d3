"""``themis sim``: simulate I/O sharing policies on burst-buffer servers and compare them."""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hpcbase.console import plain_console, say
from themis.iosim.metrics import RunMetrics
from themis.iosim.model import GiB, ServerSpec
from themis.iosim.replay import ReplayError, concurrent_slice, rows_from_replay_csv
from themis.iosim.runs import DEFAULT_RUNS, RunSpec, fmt_shares, run_scenario
from themis.iosim.workload import MICRO, mix_from_rows, synthetic_rows

SCENARIOS = ("micro", *MICRO, "mix")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="themis sim", description=__doc__)
    p.add_argument(
        "--scenario",
        default="micro",
        choices=SCENARIOS,
        help="micro = all ThemisIO microbenchmarks (size, user, burst, global); "
        "mix = a job mix (synthetic, or --replay)",
    )
    p.add_argument(
        "--runs",
        default=",".join(DEFAULT_RUNS),
        help="comma-separated POLICY[:DISPATCHER][+nosync] (default: %(default)s)",
    )
    p.add_argument("--servers", type=int, help="server count (default 4; mix: 16)")
    p.add_argument("--bandwidth", type=float, default=2.0, help="GiB/s per server")
    p.add_argument("--overhead-us", type=float, default=20.0, help="per-request server cost, us")
    p.add_argument("--channels", type=int, default=4, help="concurrent requests per server")
    p.add_argument("--jobs", type=int, default=100, help="mix: synthetic job count")
    p.add_argument("--replay", type=Path, help="mix: jobs from `hpcsim replay --out X.csv`")
    p.add_argument("--units-per-node", type=int, default=1, help="replay: units per node")
    p.add_argument(
        "--at",
        type=float,
        help="replay: take the jobs running at this trace time (default: the busiest moment)",
    )
    p.add_argument("--duration", type=float, help="simulated seconds (default 2; mix: 1)")
    p.add_argument("--delta", type=float, default=0.01, help="usage-exchange interval, s")
    p.add_argument("--window", type=float, default=0.05, help="sampling window, s")
    p.add_argument(
        "--tbf-rate",
        type=float,
        help="TBF rate per job per server, MiB/s (default: bandwidth / mean jobs per server)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-alone", action="store_true", help="skip the alone runs (no slowdown)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("themis-sim-results"),
        help="directory for results.json, runs.csv, jobs.csv and plots",
    )
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    return p


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _scenarios(args: argparse.Namespace) -> list[tuple[str, list, str]]:
    if args.scenario == "micro":
        return [(s.name, list(s.jobs), s.about) for s in (f() for f in MICRO.values())]
    if args.scenario in MICRO:
        s = MICRO[args.scenario]()
        return [(s.name, list(s.jobs), s.about)]
    if args.replay:
        rows = rows_from_replay_csv(args.replay, units_per_node=args.units_per_node)
        at, rows = concurrent_slice(rows, args.at)
        # every job running at ``at`` does I/O for the whole simulated interval
        jobs = mix_from_rows(
            [r.__class__(r.job_id, r.user, r.group, r.nodes, 0.0, math.inf) for r in rows],
            seed=args.seed,
        )
        return [("mix", jobs, f"{len(jobs)} jobs running at t={at:.0f} s in {args.replay}")]
    jobs = mix_from_rows(synthetic_rows(args.jobs, seed=args.seed), seed=args.seed)
    return [("mix", jobs, f"{len(jobs)} synthetic concurrent jobs")]


def _table(runs: list[RunMetrics], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    for col in (
        "run",
        "GiB/s",
        "slowdown mean/max",
        "share err",
        "CoV",
        "achieved shares",
        "target shares",
    ):
        t.add_column(
            col, justify="left" if col in ("run", "achieved shares", "target shares") else "right"
        )
    for m in runs:
        t.add_row(
            m.run,
            f"{m.throughput / GiB:.2f}",
            f"{m.mean_slowdown:.2f}/{m.max_slowdown:.2f}",
            f"{m.share_error:.3f}",
            f"{m.mean_cov:.3f}",
            fmt_shares(m),
            fmt_shares(m, "target"),
        )
    return t


def _findings(runs: list[RunMetrics]) -> list[str]:
    """The ThemisIO claims, as measured figures."""
    by = {(m.scenario, m.run): m for m in runs}
    out = []

    def share(sc: str, run: str, job: str) -> float | None:
        m = by.get((sc, run))
        return next((j.share for j in m.jobs if j.job_id == job), None) if m else None

    for run in ("size-fair:lottery", "job-fair:lottery", "size-fair:sfq", "fifo"):
        s, lg = share("size", run, "small"), share("size", run, "large")
        if s and lg:
            out.append(f"size  {run:<20} small:large = 1:{lg / s:.2f}")
    for run in ("user-fair:lottery", "job-fair:lottery"):
        m = by.get(("user", run))
        if m:
            per_user: dict[str, float] = {}
            for j in m.jobs:
                per_user[j.user] = per_user.get(j.user, 0.0) + j.share
            out.append(
                f"user  {run:<20} per user " + " ".join(f"{u}={v:.3f}" for u, v in per_user.items())
            )
    tbf = next((m for m in runs if m.scenario == "burst" and m.dispatcher == "tbf"), None)
    fifo = by.get(("burst", "fifo"))
    for run in ("job-fair:lottery", "size-fair:lottery"):
        m = by.get(("burst", run))
        if m and tbf:
            out.append(
                f"burst {run:<20} throughput {m.throughput / GiB:.2f} GiB/s vs "
                f"{tbf.run} {tbf.throughput / GiB:.2f} GiB/s (x{m.throughput / tbf.throughput:.3f})"
            )
        if m and fifo:
            out.append(f"burst {run:<20} CoV {m.mean_cov:.3f} vs fifo {fifo.mean_cov:.3f}")
    for run in ("job-fair:lottery", "job-fair:lottery+nosync"):
        m = by.get(("global", run))
        if m:
            out.append(f"global {run:<23} share error {m.share_error:.3f} ({fmt_shares(m)})")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    err = plain_console(stderr=True)
    out = plain_console(width=None if sys.stdout.isatty() else 160)
    try:
        specs = [RunSpec.parse(s) for s in args.runs.split(",") if s.strip()]
        if not specs:
            raise ValueError("--runs: no runs given")
        for name in ("servers", "channels", "jobs"):
            v = getattr(args, name)
            if v is not None and v < 1:
                raise ValueError(f"--{name} must be >= 1, got {v}")
        for name in ("duration", "delta", "window", "bandwidth"):
            v = getattr(args, name)
            if v is not None and not v > 0:
                raise ValueError(f"--{name} must be > 0, got {v}")
        scenarios = _scenarios(args)
    except (ValueError, ReplayError) as e:
        say(err, "error", e)
        return 2
    mix = args.scenario == "mix"
    servers = ServerSpec(
        args.servers or (16 if mix else 4),
        args.bandwidth * GiB,
        args.overhead_us * 1e-6,
        args.channels,
    )
    duration = args.duration or (1.0 if mix else 2.0)
    all_runs: list[RunMetrics] = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=args.no_progress,
        transient=True,
    ) as bar:
        task = bar.add_task("simulating", total=len(scenarios) * len(specs) * duration)
        done = [0.0]

        def tick(label: str, t: float, sc: str = "") -> None:
            bar.update(task, completed=done[0] + t, description=f"{sc} {label}")

        for name, jobs, about in scenarios:
            if not jobs:
                say(err, "error", f"scenario {name}: no jobs")
                return 2
            runs = run_scenario(
                name,
                jobs,
                servers,
                specs,
                duration=duration,
                seed=args.seed,
                delta=args.delta,
                window=args.window,
                tbf_rate=args.tbf_rate * 2**20 if args.tbf_rate else None,
                with_alone=not args.no_alone,
                progress=functools.partial(tick, sc=name),
            )
            done[0] += len(specs) * duration
            all_runs.extend(runs)
            out.print(
                _table(
                    runs,
                    f"{name}: {about} — {servers.count} servers x "
                    f"{servers.bandwidth / GiB:g} GiB/s, {duration:g} s simulated",
                )
            )
    for line in _findings(all_runs):
        out.print(line)
    total_chunks = sum(m.chunks for m in all_runs)
    total_wall = sum(m.wall_s for m in all_runs)
    out.print(
        f"simulated {total_chunks:,} requests in {total_wall:.2f} s of simulation "
        f"({total_chunks / max(total_wall, 1e-9):,.0f} requests/s)"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    _atomic_write(
        args.out / "results.json",
        json.dumps(
            {
                "servers": servers.__dict__,
                "duration": duration,
                "seed": args.seed,
                "runs": [m.to_dict() for m in all_runs],
            },
            indent=1,
            default=float,
        ),
    )
    run_cols = [
        "scenario",
        "run",
        "policy",
        "dispatcher",
        "duration",
        "throughput",
        "ops_rate",
        "mean_slowdown",
        "max_slowdown",
        "share_error",
        "mean_cov",
        "chunks",
        "wall_s",
    ]
    _write_csv(
        args.out / "runs.csv", run_cols, ([getattr(m, c) for c in run_cols] for m in all_runs)
    )
    job_cols = [
        "job_id",
        "user",
        "group",
        "nodes",
        "kind",
        "bytes",
        "work",
        "rate",
        "alone_rate",
        "slowdown",
        "share",
        "target",
        "cov",
    ]
    _write_csv(
        args.out / "jobs.csv",
        ["scenario", "run", *job_cols],
        ([m.scenario, m.run, *(getattr(j, c) for c in job_cols)] for m in all_runs for j in m.jobs),
    )
    extra: list[str] = []
    if not args.no_plots:
        from themis.iosim.plots import plot_shares, plot_summary, plot_timelines

        plot_summary(all_runs, args.out / "summary.png")
        plot_shares(all_runs, args.out / "shares.png")
        extra = [p.name for p in plot_timelines(all_runs, args.out)]
    out.print(
        f"wrote {args.out}/results.json, runs.csv, jobs.csv"
        + ("" if args.no_plots else ", summary.png, shares.png, " + ", ".join(extra))
    )
    return 0


def _write_csv(path: Path, header: list[str], rows) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, path)
