"""Command-line options that shape the simulated world, shared by ``mirage train``,
``mirage dataset``, ``mirage eval`` and ``mirage study``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from mirage.envs.world import ChainSpec, ChainWorld, default_simulator
from mirage.observation import SAMPLE_INTERVAL, WINDOW, queue_columns
from sim.traces.model import Trace


def add_world_args(p: argparse.ArgumentParser, trace_required: bool = True) -> None:
    """Options that shape the simulated world."""
    p.add_argument("--trace", required=trace_required, help="trace file (SWF, sacct export or CSV)")
    p.add_argument(
        "--total-units",
        default=None,
        help="cluster size in the trace's units (default: 72 for the LS6 log, "
        "else the trace's); training "
        "takes a comma list, e.g. 70,72,76: one world per size, picked at random "
        "per episode",
    )
    p.add_argument("--window", type=int, default=WINDOW, help=f"history samples (default {WINDOW})")
    p.add_argument(
        "--sample-interval",
        type=float,
        default=SAMPLE_INTERVAL,
        help=f"seconds between queue samples (default {SAMPLE_INTERVAL:g})",
    )
    p.add_argument("--chain-units", type=int, default=1, help="chain job size (default 1)")
    p.add_argument(
        "--chain-limit-hours",
        type=float,
        default=None,
        help="chain job limit (default: the trace's maximum limit)",
    )
    p.add_argument(
        "--train-range",
        default=None,
        metavar="FROM:TO",
        help="dates of the training split, e.g. 2022-11-01:2023-02-23",
    )
    p.add_argument(
        "--validation-range",
        default=None,
        metavar="FROM:TO",
        help="dates of the validation split (default: every fifth day of the training range)",
    )
    p.add_argument(
        "--test-range",
        default=None,
        metavar="FROM:TO",
        help="dates of the test split (default: March 2023 for LS6, else 80-95%% "
        "of the trace's span)",
    )


def _range(text: str | None, flag: str) -> tuple[str, str] | None:
    if text is None:
        return None
    a, sep, b = text.partition(":")
    if not sep or not a or not b:
        raise SystemExit(f"{flag}: expected FROM:TO dates, got {text!r}")
    return (a, b)


def queue_feature_list(text: str) -> list[str]:
    """argparse type of ``--drop-features``: a comma list of queue feature names, each
    checked (an unknown one is refused with the known ones)."""
    names = [n for n in text.split(",") if n]
    try:
        queue_columns(names)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return names


def unit_sizes(text: str | None) -> list[int | None]:
    if text is None:
        return [None]
    try:
        sizes = [int(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"--total-units: expected integers, got {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise SystemExit(f"--total-units: expected positive integers, got {text!r}")
    return list(sizes)


def read_world_trace(args: argparse.Namespace) -> Trace:
    """The ``--trace``; exits with a clear message when it cannot be read."""
    from sim.traces.model import TraceError
    from sim.traces.read import read_trace

    try:
        return read_trace(args.trace)
    except (TraceError, OSError) as exc:
        raise SystemExit(f"mirage: cannot read trace: {exc}") from None


def build_world(
    args: argparse.Namespace,
    progress: bool = True,
    total_units: int | None = None,
    *,
    trace: Trace | None = None,
    make_simulator: Callable[[Trace, int, int], Any] = default_simulator,
) -> ChainWorld:
    """Prepare the world of ``trace`` (default: read ``--trace``) in ``make_simulator``'s
    simulator; exits with a clear message on bad input."""
    splits = {}
    for key, flag in (
        ("train", "--train-range"),
        ("validation", "--validation-range"),
        ("test", "--test-range"),
    ):
        rng = _range(getattr(args, key + "_range"), flag)
        if rng:
            splits[key] = rng
    if trace is None:
        trace = read_world_trace(args)
    try:
        return ChainWorld(
            trace,
            total_units=total_units,
            window=args.window,
            sample_interval=args.sample_interval,
            splits=splits or None,
            progress=progress,
            make_simulator=make_simulator,
        )
    except ValueError as exc:
        raise SystemExit(f"mirage: {args.trace}: {exc}") from None


def chain_spec(args: argparse.Namespace) -> ChainSpec:
    hours = args.chain_limit_hours
    return ChainSpec(units=args.chain_units, limit=None if hours is None else hours * 3600)
