"""``hpcsim fit``: infer a site profile from a log's first two thirds (sim/fit.py) and
store it, so that ``hpcsim replay`` uses it by default."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from hpcbase.config import ConfigError
from hpcbase.console import plain_console, say
from sim.fidelity import fidelity
from sim.fit import AUTO, FIT_FRACTION, FIT_JITTERS, ProfileError, fit, replay_waits, split
from sim.profile import SiteProfile, store
from sim.traces.model import TraceError
from sim.traces.read import FORMATS, read_trace


def recent_share(text: str) -> float | str | None:
    """``--recent``'s value: a share, ``all`` (None) or ``auto``."""
    if text in ("all", AUTO):
        return None if text == "all" else AUTO
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a share of the fit period, 'all' or 'auto', not {text!r}"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hpcsim fit", description=__doc__)
    p.add_argument("trace", help="trace file with recorded start times (SWF, sacct or CSV)")
    p.add_argument("--format", default="auto", choices=FORMATS)
    p.add_argument(
        "--fraction",
        type=float,
        default=FIT_FRACTION,
        help="share of the log's span fitted on (default 2/3; the rest is held out)",
    )
    p.add_argument(
        "--jitters",
        type=int,
        default=FIT_JITTERS,
        help=f"replays per setting, run times jittered (default {FIT_JITTERS}; 1: exact)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=len(os.sched_getaffinity(0)),
        help="processes scoring the settings (default: this machine's cores; the same "
        "profile whatever the number)",
    )
    p.add_argument(
        "--recent",
        type=recent_share,
        default=AUTO,
        help="judge the settings on the last SHARE of the fit period only (e.g. 0.5: a site "
        "that drifts; the whole log is still replayed), 'all' for the whole period, or "
        "'auto' (default): the better of all and 0.5, checked inside the fit period",
        metavar="SHARE|all|auto",
    )
    p.add_argument("--store-dir", type=Path, help="store the profile in this folder")
    p.add_argument("--no-store", action="store_true", help="print the profile only")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    err = plain_console(stderr=True)
    out = plain_console(width=None if sys.stdout.isatty() else 130)
    if not 0.2 <= args.fraction <= 1:
        say(err, "error", "--fraction must be within 0.2 .. 1")
        return 2
    try:
        trace = read_trace(args.trace, fmt=args.format)
        with err.status("fitting") as status:
            prof = fit(
                trace,
                fraction=args.fraction,
                jitters=max(args.jitters, 1),
                recent=args.recent,
                progress=lambda s: status.update(s),
                workers=max(args.jobs, 1),
            )
    except (TraceError, ConfigError, ProfileError) as e:
        say(err, "error", e)
        return 2
    print_fit(out, prof, Path(args.trace).name)
    judged = "the whole fit period" if prof.recent is None else f"its last {prof.recent:.0%}"
    out.print(f"profile: {prof.describe()}; settings judged on {judged}")
    _, held, _ = split(trace, args.fraction)
    if held.any():
        rec = trace.recorded_start - trace.submit
        f = fidelity(replay_waits(trace, prof)[held], rec[held])
        table = Table(title=f"held-out part ({held.sum()} jobs): simulated against recorded")
        for col in ("metric", "simulated", "recorded"):
            table.add_column(col, justify="left" if col == "metric" else "right")
        for row in f.rows():
            table.add_row(*row)
        out.print(table)
        met = ", ".join(f"{k} {'met' if v else 'missed'}" for k, v in f.targets().items())
        out.print(f"issue 23 targets on the held-out part: {met}")
    if not args.no_store:
        try:
            path = store(prof, args.trace, args.store_dir)
        except OSError as e:
            say(err, "error", f"cannot store the profile: {e}")
            return 2
        out.print(f"profile stored in {path}")
    return 0


def print_fit(out: Console, prof: SiteProfile, name: str) -> None:
    """The settings the fit tried, the priorities against a recorded column, the recency
    check and the limits check."""
    steps = Table(title=f"{name}: settings tried on the fit part")
    for col in ("setting", "loss", "mean h", "p90 h", "Spearman", "KS"):
        steps.add_column(col, justify="left" if col == "setting" else "right")
    for s in prof.steps:
        steps.add_row(
            str(s["setting"]),
            f"{s['loss']:.3f}",
            f"{s['sim_mean_h']:.2f}/{s['rec_mean_h']:.2f}",
            f"{s['sim_p90_h']:.2f}/{s['rec_p90_h']:.2f}",
            f"{s['spearman']:.3f}",
            f"{s['ks']:.3f}",
        )
    out.print(steps)
    if prof.priority_spearman:
        ranks = Table(title="priority settings against the recorded Priority column (fit part)")
        for col in ("setting", "Spearman"):
            ranks.add_column(col, justify="left" if col == "setting" else "right")
        for key, rho in sorted(prof.priority_spearman.items(), key=lambda kv: -kv[1]):
            ranks.add_row(key + (" (chosen)" if key == prof.priority else ""), f"{rho:.3f}")
        out.print(ranks)
    if prof.recency:
        out.print(
            _losses_table(
                "judged on the whole fit period or its recent part: fitted on its first two "
                "thirds, judged on its last (inside the past)",
                "fit judged on",
                prof.recency,
                "whole"
                if prof.recent is None
                else next((k for k in prof.recency if k != "whole"), ""),
            )
        )
    if prof.limits_check:
        with_, without = list(prof.limits_check)
        out.print(
            _losses_table(
                "do the per-user limits earn their place? The fit part's loss with them and "
                "without, over the same jittered replays (kept where dropping them costs, "
                "replay for replay, at one-sided 90 % confidence)",
                "limits",
                prof.limits_check,
                with_ if prof.limits else without,
            )
        )


def _losses_table(title: str, first: str, losses: dict[str, list[float]], chosen: str) -> Table:
    """One of the fit's checks: each way's losses over jittered replays (none: it ran
    away), their mean, and the way chosen."""
    table = Table(title=title)
    for col in (first, "loss (jittered replays)", "mean"):
        table.add_column(col, justify="left" if col == first else "right")
    for name, values in losses.items():
        table.add_row(
            name + (" (chosen)" if name == chosen else ""),
            ", ".join(f"{v:.3f}" for v in values) or "ran away",
            f"{sum(values) / len(values):.3f}" if values else "",
        )
    return table
