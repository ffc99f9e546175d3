"""``hpcsim replay``: replay a trace through the simulator, report and plot."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from hpcbase.config import ConfigError
from sim.config import SlurmConfig
from sim.engine import Simulator
from sim.report import plot, schedule_frame, summarize, write_schedule
from sim.traces.model import TraceError
from sim.traces.read import read_trace

MAX_WARNINGS_SHOWN = 10


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hpcsim replay", description=__doc__)
    p.add_argument(
        "trace",
        nargs="?",
        help="trace file (SWF, sacct export or CSV); default: the embedded LS6 slice",
    )
    p.add_argument("--slurm-conf", type=Path, help="slurm.conf whose scheduling settings to use")
    p.add_argument(
        "--nodes", type=int, help="cluster size in the trace's units (nodes or processors)"
    )
    p.add_argument("--format", default="auto", choices=("auto", "swf", "sacct", "csv"))
    p.add_argument(
        "--strict", action="store_true", help="a malformed row is an error, not a warning"
    )
    p.add_argument("--out", type=Path, help="per-job schedule, .csv or .parquet")
    p.add_argument("--plot", type=Path, help="utilisation and wait plot, .png")
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(stderr=True)
    out = Console()
    path = args.trace
    total = args.nodes
    if path is None:
        from sim.data import default_total_units, default_trace_path

        path = str(default_trace_path())
        total = total or default_total_units()
    try:
        cfg = SlurmConfig.from_file(args.slurm_conf) if args.slurm_conf else SlurmConfig()
        trace = read_trace(path, fmt=args.format, strict=args.strict)
    except (TraceError, ConfigError) as e:
        console.print(f"[red]error:[/red] {e}")
        return 2
    for w in trace.warnings[:MAX_WARNINGS_SHOWN]:
        console.print(f"[yellow]warning:[/yellow] {w}")
    if len(trace.warnings) > MAX_WARNINGS_SHOWN:
        console.print(
            f"[yellow]... {len(trace.warnings) - MAX_WARNINGS_SHOWN} more warnings[/yellow]"
        )
    if len(trace) == 0:
        console.print(f"[red]error:[/red] {path}: no usable jobs")
        return 2
    try:
        sim = Simulator(trace, cfg, total_units=total)
    except ValueError as e:
        console.print(f"[red]error:[/red] {e} (use --nodes)")
        return 2
    t0 = time.perf_counter()
    sim.run(progress=not args.no_progress and sys.stderr.isatty())
    elapsed = time.perf_counter() - t0
    df = schedule_frame(sim)
    malformed = sum(w.count for w in trace.warnings if w.kind == "malformed")
    s = summarize(df, sim.total_units, pending_left=sim.pending_count, malformed=malformed)
    table = Table(title=f"{Path(path).name}: {len(trace)} jobs on {sim.total_units} {trace.unit}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k, v in s.rows():
        table.add_row(k, v)
    table.add_row(
        "simulation time", f"{elapsed:.2f} s ({len(trace) / max(elapsed, 1e-9):,.0f} jobs/s)"
    )
    out.print(table)
    try:
        if args.out:
            write_schedule(df, args.out)
            out.print(f"schedule written to {args.out}")
        if args.plot:
            plot(df, sim.total_units, args.plot, title=Path(path).name)
            out.print(f"plot written to {args.plot}")
    except (OSError, ValueError) as e:
        console.print(f"[red]error:[/red] {e}")
        return 2
    return 0
