"""``hpcsim calibrate``: find the cluster size whose simulated waits match the recorded ones.

Replays the trace at several sizes (in parallel processes), prints each candidate's waits
and errors against the recorded waits, plots the curve (``--plot``), and stores the best
size for the trace (keyed by its content hash) where ``hpcsim replay`` and Mirage find it.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table

from hpcbase.console import plain_console, say
from sim.calibration import KNOBS, Calibration, CalibrationError, calibrate, store
from sim.config import ConfigError, SlurmConfig
from sim.pools import Pools
from sim.traces.model import TraceError
from sim.traces.read import FORMATS, read_trace


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hpcsim calibrate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("trace", help="trace with recorded start times (SWF with waits, sacct, CSV)")
    p.add_argument("--slurm-conf", type=Path, help="slurm.conf whose scheduling settings to use")
    p.add_argument("--format", default="auto", choices=FORMATS)
    p.add_argument(
        "--min", type=int, dest="lo", help="smallest size to try (default: the recorded peak)"
    )
    p.add_argument(
        "--max",
        type=int,
        dest="hi",
        help="largest size to try (default: 1.25 x the recorded peak use)",
    )
    p.add_argument("--points", type=int, default=8, help="evenly spaced first sizes (default 8)")
    p.add_argument(
        "--search",
        action="append",
        default=[],
        metavar="KNOB=V1,V2",
        help=f"also search a scheduler setting (seconds for durations): {', '.join(KNOBS)}",
    )
    p.add_argument(
        "--warmup",
        type=float,
        default=0.1,
        help="compare jobs submitted this fraction of the span after the first "
        "recorded start (default 0.1)",
    )
    p.add_argument("--since", help="compare jobs submitted from this date (YYYY-MM-DD, UTC) on")
    p.add_argument("--jobs", type=int, help="parallel processes (default: CPUs available)")
    p.add_argument("--plot", type=Path, help="write the curve as a .png")
    p.add_argument(
        "--store-dir",
        type=Path,
        help="store the calibration in this folder "
        "(default: beside the trace, or the user cache if that is read-only)",
    )
    p.add_argument("--no-store", action="store_true", help="print only, store nothing")
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    err = plain_console(stderr=True)
    out = plain_console(width=None if sys.stdout.isatty() else 120)
    try:
        cfg = SlurmConfig.from_file(args.slurm_conf) if args.slurm_conf else SlurmConfig()
        trace = read_trace(args.trace, fmt=args.format, cache=True)
        grid = _grid(args.search)
        since = _since(args.since, trace.start_epoch) if args.since else None
        if Pools.active(cfg):
            raise ConfigError(
                f"{cfg.source}: its partitions' Nodes= fix the cluster size that calibrate "
                "searches; calibrate with a copy whose partitions have Nodes=ALL"
            )
    except (TraceError, ConfigError, CalibrationError) as e:
        say(err, "error", e)
        return 2
    for note in trace.notes:
        say(err, "note", note)
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(desc="calibrate", unit="replay", file=sys.stderr)
    try:
        cal = calibrate(
            trace,
            cfg,
            lo=args.lo,
            hi=args.hi,
            points=args.points,
            knob_grid=grid,
            warmup=args.warmup,
            since=since,
            workers=args.jobs,
            on_result=(lambda c: bar.update(1)) if bar is not None else None,
        )
    except CalibrationError as e:
        say(err, "error", e)
        return 2
    finally:
        if bar is not None:
            bar.close()
    out.print(table(cal))
    best = cal.best
    knobs = "".join(f", {k}={v:g}" for k, v in best.knobs.items())
    out.print(
        f"best: {best.units} {cal.unit}{knobs}: mean wait {best.mean_h:.2f} h "
        f"({100 * best.mean_error:+.1f} %), p90 {best.p90_h:.2f} h "
        f"({100 * best.p90_error:+.1f} %) against recorded {cal.recorded['mean_h']:.2f} h "
        f"and {cal.recorded['p90_h']:.2f} h"
    )
    try:
        if args.plot:
            plot(cal, args.plot)
            out.print(f"plot written to {args.plot}")
        if not args.no_store:
            where = store(cal, args.trace, args.store_dir)
            out.print(f"calibration stored in {where}")
    except (OSError, ValueError) as e:
        say(err, "error", e)
        return 2
    return 0


def table(cal: Calibration) -> Table:
    days = cal.since_s / 86400
    t = Table(
        title=f"{cal.trace}: simulated against recorded waits of {cal.jobs_compared} jobs "
        f"(submitted from day {days:.1f})"
    )
    knobs = any(c.knobs for c in cal.candidates)
    cols = (
        ["size"]
        + (["settings"] if knobs else [])
        + ["mean h", "p50 h", "p90 h", "p95 h", "mean err", "p90 err", "error", "med |d| h", "rho"]
    )
    for col in cols:
        t.add_column(col, justify="right", no_wrap=True)
    r = cal.recorded
    t.add_row(
        "recorded",
        *([""] if knobs else []),
        f"{r['mean_h']:.2f}",
        f"{r['median_h']:.2f}",
        f"{r['p90_h']:.2f}",
        f"{r['p95_h']:.2f}",
        "",
        "",
        "",
        "",
        "",
        style="bold",
    )
    best = cal.best
    for c in cal.candidates:
        settings = [" ".join(f"{k}={v:g}" for k, v in c.knobs.items())] if knobs else []
        t.add_row(
            f"{c.units}",
            *settings,
            f"{c.mean_h:.2f}",
            f"{c.median_h:.2f}",
            f"{c.p90_h:.2f}",
            f"{c.p95_h:.2f}",
            _pct(c.mean_error),
            _pct(c.p90_error),
            _pct(c.score),
            f"{c.median_abs_error_h:.2f}",
            f"{c.spearman:.3f}",
            style="green" if c is best else None,
        )
    t.caption = (
        "error = max(|mean err|, |p90 err|); med |d| = median per-job |simulated - "
        "recorded| wait; rho = Spearman rank correlation of waits"
    )
    return t


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%" if math.isfinite(x) else "inf"


def plot(cal: Calibration, path: Path) -> None:
    """Mean and p90 wait against size (recorded as lines) and the error curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    groups: dict[str, list] = {}
    for c in cal.candidates:
        groups.setdefault(" ".join(f"{k}={v:g}" for k, v in c.knobs.items()), []).append(c)
    for label, cs in groups.items():
        cs = sorted(cs, key=lambda c: c.units)
        u = [c.units for c in cs]
        suffix = f" ({label})" if label else ""
        ax1.plot(u, [c.mean_h for c in cs], "o-", label="simulated mean" + suffix)
        ax1.plot(u, [c.p90_h for c in cs], "s-", label="simulated p90" + suffix)
        ax2.plot(u, [100 * c.score for c in cs], "o-", label=label or "error")
    ax1.axhline(cal.recorded["mean_h"], ls="--", color="k", lw=0.8, label="recorded mean")
    ax1.axhline(cal.recorded["p90_h"], ls=":", color="k", lw=0.8, label="recorded p90")
    ax1.set_yscale("symlog", linthresh=0.1)
    ax1.set_ylim(bottom=0)
    ax1.set(
        xlabel=f"cluster size ({cal.unit})", ylabel="wait (h)", title="waits against cluster size"
    )
    ax1.legend(fontsize=7)
    ax2.axhline(25, ls="--", color="grey", lw=0.8)
    ax2.axvline(cal.units, color="green", lw=0.8)
    ax2.set(
        xlabel=f"cluster size ({cal.unit})",
        ylabel="max(|mean err|, |p90 err|) %",
        yscale="log",
        title=f"error (best: {cal.units})",
    )
    fig.suptitle(cal.trace)
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)


def _grid(specs: list[str]) -> dict[str, list[float]]:
    grid: dict[str, list[float]] = {}
    for spec in specs:
        name, eq, values = spec.partition("=")
        name = name.strip().lower()
        if not eq:
            raise CalibrationError(f"--search {spec!r}: want KNOB=V1,V2")
        try:
            grid[name] = [float(v) for v in values.split(",") if v.strip()]
        except ValueError:
            raise CalibrationError(f"--search {spec!r}: want KNOB=V1,V2 with numbers") from None
        if not grid[name]:
            raise CalibrationError(f"--search {spec!r}: no values")
        if name in ("bf_max_job_test", "default_queue_depth"):
            grid[name] = [int(v) for v in grid[name]]
    return grid


def _since(text: str, start_epoch: float) -> float:
    from datetime import UTC, datetime

    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise CalibrationError(f"--since {text!r}: want a date such as 2022-11-01") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp() - start_epoch
