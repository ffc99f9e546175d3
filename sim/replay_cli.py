"""``hpcsim replay``: replay a trace through the simulator, report and plot.

By default the trace's stored site profile (``hpcsim fit``: size, availability timeline,
per-user limits, priority) is used, unless ``--nodes``, ``--slurm-conf`` or ``--qos-limits``
is given or ``--no-profile``. Otherwise the cluster size is ``--nodes``, else that of the
partitions' node pools when the ``--slurm-conf`` splits the cluster (``PartitionName=...
Nodes=...``), else the trace's stored calibration (``hpcsim calibrate``), else the trace's
own (SWF ``MaxProcs``), else the largest job. When the trace records start times the cluster
is never smaller than the recorded schedule's peak use, and without a profile the nodes
available follow the recorded use (the most used within 6 h around each moment): the
recorded schedule always fits. The report sets the simulated waits beside the recorded ones.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console
from rich.table import Table

from hpcbase.config import ConfigError
from hpcbase.console import plain_console, say
from sim.config import SlurmConfig
from sim.limits import QosLimits
from sim.phases import PhaseTimer, gc_paused
from sim.pools import Pools
from sim.report import compare, plot, schedule_frame, summarize, write_schedule
from sim.traces.model import Trace, TraceError
from sim.traces.read import FORMATS, read_trace

if TYPE_CHECKING:
    from sim.availability import Availability
    from sim.profile import SiteProfile

MAX_WARNINGS_SHOWN = 10


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hpcsim replay",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "trace",
        nargs="?",
        help="trace file (SWF, sacct export or CSV); default: the embedded LS6 slice",
    )
    p.add_argument("--slurm-conf", type=Path, help="slurm.conf whose scheduling settings to use")
    p.add_argument(
        "--nodes",
        type=int,
        help="cluster size in the trace's units (nodes or processors); "
        "default: the trace's stored calibration, else its own size",
    )
    p.add_argument(
        "--qos-limits",
        metavar="FILE|LIMITS",
        help="per-user QOS limits: a file of sacctmgr Key=Value pairs, or the pairs themselves "
        "('MaxJobsPerUser=4 MaxTRESPerUser=node=8'); docs/simulator.md",
    )
    p.add_argument("--format", default="auto", choices=FORMATS)
    p.add_argument(
        "--strict", action="store_true", help="a malformed row is an error, not a warning"
    )
    p.add_argument("--out", type=Path, help="per-job schedule, .csv or .parquet")
    p.add_argument("--plot", type=Path, help="utilisation and wait plot, .png")
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="parse the trace text even when a Parquet cache of it exists",
    )
    p.add_argument(
        "--no-calibration",
        action="store_true",
        help="ignore a stored calibration (size from the trace or --nodes)",
    )
    p.add_argument(
        "--timings",
        type=Path,
        metavar="JSON",
        help="write each phase's wall/CPU seconds and peak memory as JSON",
    )
    p.add_argument(
        "--no-profile",
        action="store_true",
        help="ignore the trace's stored site profile (hpcsim fit)",
    )
    p.add_argument("--no-progress", action="store_true")
    return p


#: without a profile, the availability window around each moment (sim/availability.py)
DEFAULT_WINDOW_S = 6 * 3600.0
#: ... narrowed to this while a recorded job waited beside units the window left idle
#: (sim.idle_waits.narrowed_beside_idle)
DEFAULT_NARROW_S = 3600.0
#: where the replay's queue outgrows the recorded one (sim.fit.runaway_bound), its capacity
#: is too small: the availability relaxes step by step, (window, narrowed window or None);
#: the last step always runs to the end
RELAX_STEPS: tuple[tuple[float, float | None], ...] = (
    (DEFAULT_WINDOW_S, DEFAULT_NARROW_S),
    (DEFAULT_WINDOW_S, None),
    (86400.0, None),
    (3 * 86400.0, None),
    (30 * 86400.0, None),
)
#: a log whose recorded schedule holds more than the size it states for at least this share
#: of its span is not one machine's schedule (its runs overlap more than its nodes allow):
#: the replay says so, beside raising the size to the recorded peak
NOT_ONE_MACHINE_SHARE = 0.01


def _world(args, trace, cfg, total, limits, console, size_from, relax=0):  # type: ignore[no-untyped-def]
    """The stored site profile's world, or the recorded schedule's bounds on the given one
    (its availability as ``RELAX_STEPS[relax]``): (total, cfg, limits, availability, limit
    steps, whether the availability was fitted here); notes on standard error say which."""
    from sim.availability import recorded_usage
    from sim.idle_waits import narrowed_beside_idle
    from sim.limit_breaks import limit_steps
    from sim.log_inference import infer_limits, stated_pools
    from sim.profile import load

    explicit = args.nodes or args.slurm_conf or args.qos_limits
    prof = None if explicit or args.no_profile else load(trace)
    if prof is not None:
        note = f"site profile {prof.path}: {prof.describe()}"
        say(console, "note", note)
        qos = prof.qos()
        steps = limit_steps(trace, qos)
        before = qos
        for t, lim in steps:
            say(
                console,
                "note",
                f"from t={t / 86400:.2f} days the recorded schedule breaks "
                f"the limits ({qos.to_text() if qos else ''}): "
                f"{lim.changes_from(before, trace.user_names)} from then on",
            )
            before = lim
        return prof.units, prof.config(), qos, prof.availability(trace), steps, False
    if size_from:
        say(console, "note", f"cluster size from {size_from}")
    use = recorded_usage(trace)
    if not use.peak or Pools.active(cfg):
        return total, cfg, limits, None, [], False
    why = "--no-profile" if args.no_profile else "none stored; make one with `hpcsim fit TRACE`"
    why = "options given" if explicit else why
    say(console, "note", f"no site profile ({why})")
    total = total or trace.total_units
    if total is not None and total < use.peak:
        if args.nodes:
            raise ConfigError(
                f"--nodes {args.nodes}: the recorded schedule used {use.peak} {trace.unit} at "
                f"t={use.peak_time / 86400:.2f} days; a smaller cluster cannot have run it"
            )
        say(
            console,
            "note",
            f"size raised from {total} to the recorded peak of {use.peak} "
            f"{trace.unit} (a smaller cluster cannot have run the recorded schedule)",
        )
        above = use.share_above(total)
        if not size_from and trace.size_stated and above >= NOT_ONE_MACHINE_SHARE:
            say(
                console,
                "warning",
                "the log is not one machine's schedule: its "
                f"recorded starts and run times hold more than the {total} {trace.unit} it "
                f"states for {100 * above:.0f} % of its span (up to {use.peak}), so no cluster "
                "both is its size and runs its schedule, and the replayed waits may be far "
                "from the recorded ones",
            )
    total = max(total or 0, use.peak)
    split = stated_pools(trace) if cfg == SlurmConfig() and not explicit else None
    window, narrow = RELAX_STEPS[relax]
    say(
        console,
        "note",
        f"availability: the most {trace.unit} the recorded schedule used "
        f"within {window / 3600:g} h around each moment"
        + (" in each pool" if split else "")
        + (
            f", within {narrow / 3600:g} h while a recorded job waited that would have fit "
            "in what that left idle"
            if narrow is not None
            else ""
        ),
    )
    breaks: list[tuple[float, QosLimits]] = []
    if limits is None:  # per-user limits the recorded concurrency shows (sim.log_inference)
        limits = infer_limits(trace, np.isfinite(trace.recorded_start))
        if limits is not None:
            breaks = limit_steps(trace, limits)
            say(
                console,
                "note",
                f"per-user limits from the recorded concurrency: "
                f"{limits.to_text()}"
                + (
                    f" ({limits.user_limits_text(trace.user_names)}: "
                    "their recorded schedule ran past them)"
                    if limits.user_limits
                    else ""
                )
                + (f" ({len(breaks)} steps up where the record breaks them)" if breaks else ""),
            )
    avail: Availability | dict[str, Availability] | None
    avail = narrowed_beside_idle(trace, total, window=window, narrow=narrow, use=use)
    if cfg == SlurmConfig():  # no --slurm-conf, no calibration: the order the log shows
        lines = _start_order(trace, total, limits, console)
        if split is not None:
            pools = _stated_pools(trace, total, split, console, window, narrow)
            lines += pools.pool_lines(total)
            avail = pools.availability(trace, total)
        if lines:
            cfg = SlurmConfig.from_text("\n".join(lines) + "\n", "the recorded schedule")
    return total, cfg, limits, avail, breaks, True


def _stated_pools(
    trace: Trace,
    total: int,
    split: tuple[dict[str, int], dict[str, str]],
    console: Console,
    window: float,
    narrow: float | None,
) -> SiteProfile:
    """The partitions as node pools (:func:`sim.log_inference.stated_pools`) as a profile's
    pools, their availability windows as the one pool's."""
    from sim.fit import starting_profile

    pools, aliases = split
    own = {k: v for k, v in pools.items() if k not in aliases}
    say(
        console,
        "note",
        f"node pools: partitions {', '.join(own)} used at most "
        f"{' + '.join(str(v) for v in own.values())} {trace.unit} at once, within the "
        f"{trace.total_units} the log states: each is a pool of its own (its share of "
        f"{total}), the {len(aliases)} others' jobs run in the one they fit",
    )
    return replace(
        starting_profile(trace, 1.0),
        units=sum(own.values()),
        pools=pools,
        nested=aliases,
        window_s=window,
        narrow_s=narrow,
    )


def _start_order(trace: Trace, total: int, limits: QosLimits | None, console: Console) -> list[str]:
    """The priority and backfill depth the recorded start order shows
    (:func:`sim.start_order.infer_order`), as ``slurm.conf`` lines; none when it shows
    none."""
    from sim.start_order import infer_order

    order = infer_order(trace, total, limits)
    if order is None:
        return []
    say(console, "note", f"from the recorded start order: {order.describe()}")
    return list(order.lines()) if order.bounded else []


def _replay(args, trace, cfg, total, limits, console, size_from, timer):  # type: ignore[no-untyped-def]
    """Simulate the trace in its world (:func:`_world`); where that world's availability
    was fitted here and the replay's queue outgrows the recorded one
    (:func:`sim.fit.runaway_bound`), again with it relaxed (``RELAX_STEPS``), saying so.
    The finished simulator and its availability."""
    from sim.engine import RunawayReplay, Simulator
    from sim.fit import recorded_max_pending, runaway_bound

    quiet = plain_console(file=io.StringIO())
    for k in range(len(RELAX_STEPS)):
        with timer.phase("infer"):  # the world the log shows (no profile: inferred here)
            world = _world(
                args, trace, cfg, total, limits, console if k == 0 else quiet, size_from, k
            )
        n_units, n_cfg, n_limits, avail, steps, relaxable = world
        sim = Simulator(
            trace,
            n_cfg,
            total_units=n_units,
            limits=n_limits,
            availability=avail,
            limit_steps=steps,
        )
        guard = runaway_bound(trace) if relaxable and k + 1 < len(RELAX_STEPS) else None
        try:
            with timer.phase("simulate"), gc_paused():
                sim.run(progress=not args.no_progress and sys.stderr.isatty(), max_pending=guard)
            return sim, avail
        except RunawayReplay as e:
            window, _ = RELAX_STEPS[k + 1]
            say(
                console,
                "note",
                f"the replay ran away ({e}; the recorded schedule never "
                f"had more than {recorded_max_pending(trace)} pending): the availability "
                f"is too small, so replayed again with the most {trace.unit} used within "
                f"{window / 3600:g} h around each moment, not narrowed",
            )
    raise AssertionError("the last relaxation runs unguarded")


def _note_idle_waits(trace: Trace, total: int, avail: object, console: Console) -> None:
    """Where the replay's mean is off: the share of the recorded wait that no capacity
    explains (:func:`sim.idle_waits.waited_beside_idle`); not with pools."""
    from sim.availability import Availability
    from sim.idle_waits import waited_beside_idle

    if avail is not None and not isinstance(avail, Availability):
        return
    beside = waited_beside_idle(trace, total, avail)
    wait = np.maximum(trace.recorded_start - trace.submit, 0)
    whole = float(np.nansum(wait))
    if not beside.any() or whole <= 0:
        return
    say(
        console,
        "note",
        f"{100 * float(np.nansum(wait[beside])) / whole:.0f} % of the "
        f"recorded wait is in {int(beside.sum())} jobs that, at some moment of their wait, "
        f"could have run to their time limit in {trace.unit} the recorded schedule left idle "
        "(held, waiting on a dependency, or under a limit the log does not show): no replay "
        "of the site's capacity reproduces those waits",
    )


def _cluster_size(args, trace, cfg, total, embedded):  # type: ignore[no-untyped-def]
    """The cluster size (and config) to replay with, and where it came from."""
    size_from = "--nodes" if total else ""
    if total is None and Pools.active(cfg):
        total = cfg.cpus if trace.unit in ("cpus", "procs") else cfg.nodes
        size_from = f"the partitions' Nodes= in {cfg.source}"
    if total is None and not args.no_calibration:
        from sim.calibration import load, with_knobs

        cal = load(trace)
        if cal is not None:
            total = cal.units
            size_from = f"calibration {cal.path}"
            if cal.knobs and not args.slurm_conf:
                cfg = with_knobs(cfg, cal.knobs)
                knobs = ", ".join(f"{k}={v:g}" for k, v in cal.knobs.items())
                size_from += f" (with {knobs})"
    if total is None and embedded:
        from sim.data import default_total_units

        total, size_from = default_total_units(), "the embedded trace's default"
    return total, cfg, size_from


def _qos_limits(arg: str | None) -> QosLimits | None:
    """``--qos-limits``: a file, or the ``Key=Value`` pairs themselves."""
    if not arg:
        return None
    if "=" in arg and not Path(arg).exists():
        return QosLimits.from_text(arg, "--qos-limits")
    return QosLimits.from_file(arg)


def _note_held(sim, console: Console) -> None:  # type: ignore[no-untyped-def]
    """Jobs that never started (rejected at submission, or pending for ever), by reason."""
    counts: dict[str, int] = {}
    for why in sim.never_started().values():
        why = why.replace("rejected:", "rejected at submission:")
        why = why if why.startswith("rejected") else f"never started: {why}"
        counts[why] = counts.get(why, 0) + 1
    for why, n in sorted(counts.items()):
        say(console, "note", f"{n} jobs {why}")


def _report_table(title: str, summary, comparison, speed: str) -> Table:  # type: ignore[no-untyped-def]
    """The replay's summary, beside the recorded figures when the trace has them."""
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("simulated", justify="right")
    if comparison is not None:
        table.add_column("recorded", justify="right")
    pad = [""] if comparison is not None else []
    for k, v in summary.rows():
        table.add_row(k, v, *pad)
    if comparison is not None:
        table.add_section()
        for k, v, r in comparison.rows():
            table.add_row(k, v, r)
        table.add_section()
    table.add_row("simulation time", speed, *pad)
    return table


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = plain_console(stderr=True)
    out = plain_console(width=None if sys.stdout.isatty() else 100)
    timer = PhaseTimer()
    path = args.trace
    total = args.nodes
    embedded = path is None
    if embedded:
        from sim.data import default_trace_path

        path = str(default_trace_path())
    with timer.phase("read"):
        try:
            cfg = SlurmConfig.from_file(args.slurm_conf) if args.slurm_conf else SlurmConfig()
            trace = read_trace(path, fmt=args.format, strict=args.strict, cache=not args.no_cache)
            limits = _qos_limits(args.qos_limits)
        except (TraceError, ConfigError) as e:
            say(console, "error", e)
            return 2
    for note in trace.notes:
        say(console, "note", note)
    for w in trace.warnings[:MAX_WARNINGS_SHOWN]:
        say(console, "warning", w)
    if len(trace.warnings) > MAX_WARNINGS_SHOWN:
        console.print(
            f"... {len(trace.warnings) - MAX_WARNINGS_SHOWN} more warnings", style="yellow"
        )
    total, cfg, size_from = _cluster_size(args, trace, cfg, total, embedded)
    try:
        sim, avail = _replay(args, trace, cfg, total, limits, console, size_from, timer)
    except ConfigError as e:
        say(console, "error", e)
        return 2
    except ValueError as e:
        say(console, "error", f"{e} (use --nodes)")
        return 2
    _note_held(sim, console)
    elapsed = timer.phases[-1].wall_s
    with timer.phase("report"):
        df = schedule_frame(sim)
        malformed = sum(w.count for w in trace.warnings if w.kind == "malformed")
        s = summarize(df, sim.total_units, pending_left=sim.pending_count, malformed=malformed)
        comparison = compare(df, sim.total_units, trace.unit)
        title = f"{Path(path).name}: {len(trace)} jobs on {sim.total_units} {trace.unit}"
        speed = f"{elapsed:.2f} s ({len(trace) / max(elapsed, 1e-9):,.0f} jobs/s)"
        table = _report_table(title, s, comparison, speed)
        out.print(table)
        if comparison is None:
            say(
                console,
                "note",
                "no fidelity figures: the log records no job's start (its "
                "waits are unknown), so there is no recorded schedule to compare with",
            )
        elif (text := comparison.warning()) is not None:
            say(console, "warning", text)
            _note_idle_waits(trace, sim.total_units, avail, console)
        try:
            if args.out:
                write_schedule(df, args.out)
                out.print(f"schedule written to {args.out}")
            if args.plot:
                plot(df, sim.total_units, args.plot, title=Path(path).name)
                out.print(f"plot written to {args.plot}")
        except (OSError, ValueError) as e:
            say(console, "error", e)
            return 2
    if args.timings:
        data = {
            "jobs": len(trace),
            "phases": timer.as_dict(),
            "wall_s": timer.wall_s,
            "cpu_s": timer.cpu_s,
        }
        try:
            args.timings.write_text(json.dumps(data, indent=1) + "\n")
        except OSError as e:
            say(console, "error", f"{args.timings}: {e.strerror or e}")
            return 2
    return 0
