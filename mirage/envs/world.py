"""A replayed trace prepared once per process for many chain episodes.

:class:`ChainWorld` replays the trace once, pushing a queue sample into an
:class:`~mirage.observation.ObservationBuilder` every ``sample_interval`` and keeping a
simulator snapshot (``sim.snapshot()``) plus the builder's history every ``grid`` seconds.
An episode restores the checkpoint just before its start instead of replaying the warm-up.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from tqdm import tqdm

from mirage.observation import SAMPLE_INTERVAL, WINDOW, BuilderState, ObservationBuilder
from sim.calibration import stored_units
from sim.traces.model import Trace

PAPER_SPLITS_LS6 = {
    "train": ("2022-11-01", "2023-02-23"),
    "test": ("2023-03-01", "2023-03-31"),
}
"""The Mirage paper's training months and its held-out month (dates, UTC) for the LS6
trace. The paper calls March its validation month; here March is the *test* month,
reported once, and validation days are held out of the training period (see
:data:`VALIDATION_EVERY`)."""

VALIDATION_EVERY = 5
"""Every fifth day of the training period is a validation day (so validation spans the
load regimes of the training months); the other days are training days."""


GENERIC_SPLITS = {"train": (0.10, 0.75), "test": (0.80, 0.95)}
"""Fractions of a trace's span when it has no dated split."""

Intervals = tuple[tuple[float, float], ...]
"""A split: disjoint ``(t0, t1)`` ranges of relative seconds, in order."""


@dataclass(frozen=True, slots=True)
class ChainSpec:
    """The chain's jobs. ``limit`` None means the trace's maximum limit (48 h on LS6)."""

    units: int = 1
    limit: float | None = None
    runtime_fraction: float = 1.0
    succ_units: int | None = None

    def resolved(self, max_limit: float) -> ResolvedChain:
        limit = float(self.limit if self.limit is not None else max_limit)
        return ResolvedChain(
            units=self.units,
            limit=limit,
            runtime=limit * self.runtime_fraction,
            succ_units=self.succ_units or self.units,
        )


@dataclass(frozen=True, slots=True)
class ResolvedChain:
    units: int
    limit: float
    runtime: float
    succ_units: int


@dataclass(slots=True)
class Checkpoint:
    time: float
    sim_state: Any
    builder: BuilderState


def _date_to_rel(date: str, start_epoch: float) -> float:
    try:
        when = datetime.fromisoformat(date)
    except ValueError as exc:
        raise ValueError(f"bad date {date!r} in a split range (want YYYY-MM-DD)") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp() - start_epoch


def estimate_total_units(trace: Trace) -> int:
    """The cluster size to simulate: the trace's stored calibration (``hpcsim calibrate``;
    74 nodes for the LS6 log), else the trace's own size, never less than the peak
    concurrent use of its recorded schedule (a sacct export or jobcomp log has no header: its
    reader takes the largest job as the size, smaller than the cluster that ran the log, as
    ``hpcsim replay`` knows)."""
    units = stored_units(trace)
    if units:
        return int(units)
    own = int(trace.total_units or trace.units.max())
    start = trace.recorded_start
    ok = ~np.isnan(start)
    if ok.sum() > 0:
        t = np.concatenate([start[ok], start[ok] + trace.runtime[ok]])
        d = np.concatenate([trace.units[ok], -trace.units[ok]])
        order = np.lexsort((d, t))
        return max(own, int(np.cumsum(d[order]).max()))
    return own


def max_limit_of(trace: Trace) -> float:
    """The partition's maximum limit: the largest requested limit once the top 0.1% of jobs
    (rare exceptions granted by admins) are set aside; the run times if limits are unknown."""
    lim = trace.limit[np.isfinite(trace.limit) & (trace.limit > 0)]
    if not lim.shape[0]:
        lim = trace.runtime[np.isfinite(trace.runtime) & (trace.runtime > 0)]
    if not lim.shape[0]:
        raise ValueError(f"{trace.source}: no positive limits or run times")
    lim = np.sort(lim)
    return float(lim[min(int(0.999 * lim.shape[0]), lim.shape[0] - 1)])


def _carve_validation(
    train: tuple[float, float], start_epoch: float
) -> tuple[Intervals, Intervals]:
    """Training and validation intervals of a training range: every
    :data:`VALIDATION_EVERY`-th calendar day (UTC) is a validation day."""
    a, b = train
    day = 86400.0
    first = math.floor((a + start_epoch) / day)
    tr: list[tuple[float, float]] = []
    va: list[tuple[float, float]] = []
    d = first
    while d * day - start_epoch < b:
        lo = max(a, d * day - start_epoch)
        hi = min(b, (d + 1) * day - start_epoch)
        if hi > lo:
            (va if d % VALIDATION_EVERY == VALIDATION_EVERY - 1 else tr).append((lo, hi))
        d += 1
    return _merge(tr), _merge(va)


def _merge(parts: list[tuple[float, float]]) -> Intervals:
    out: list[tuple[float, float]] = []
    for lo, hi in parts:
        if out and abs(out[-1][1] - lo) < 1e-6:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def split_ranges(
    trace: Trace, overrides: dict[str, tuple[str, str]] | None = None
) -> dict[str, Intervals]:
    """Named splits (relative seconds) episodes may start in: ``train`` and ``validation``
    (every fifth day of the training range) and ``test`` (after it). ``overrides`` set a
    split's date range; an explicit ``validation`` range is used as it is (and not carved
    out of ``train``)."""
    name = os.path.basename(trace.source or "").lower()
    span = float(trace.submit.max()) if len(trace) else 0.0
    ranges: dict[str, tuple[float, float]] = {
        key: (a * span, b * span) for key, (a, b) in GENERIC_SPLITS.items()
    }
    dated = dict(PAPER_SPLITS_LS6) if name.startswith("ls6") else {}
    dated.update(overrides or {})
    for key, (d0, d1) in dated.items():
        ranges[key] = (_date_to_rel(d0, trace.start_epoch), _date_to_rel(d1, trace.start_epoch))
    for key, (a, b) in ranges.items():
        if not (0 <= a < b):
            raise ValueError(f"split {key!r} range {a:.0f}..{b:.0f} s is empty or before t=0")
    out: dict[str, Intervals] = {k: ((a, b),) for k, (a, b) in ranges.items()}
    if "validation" not in ranges:
        out["train"], out["validation"] = _carve_validation(ranges["train"], trace.start_epoch)
        if not out["train"] or not out["validation"]:
            raise ValueError("the training range is too short to hold out validation days")
    return out


def split_days(intervals: Intervals) -> float:
    """Length of a split in days."""
    return sum(b - a for a, b in intervals) / 86400.0


def default_config() -> Any:
    """Multifactor priority by age alone (``PriorityWeightAge=10000``), backfill: the age of
    a job waiting on a dependency does not accrue, as in Slurm."""
    from sim.config import SlurmConfig

    return SlurmConfig(priority_type="priority/multifactor", weight_age=10000)


def default_simulator(trace: Trace, total_units: int, seed: int) -> Any:
    """The project's simulator with :func:`default_config`."""
    from sim.engine import Simulator

    return Simulator(trace, default_config(), total_units=total_units, seed=seed)


class ChainWorld:
    """A trace, its simulator, and checkpoints every ``grid`` seconds up to ``until``."""

    def __init__(
        self,
        trace: Trace,
        *,
        total_units: int | None = None,
        max_limit: float | None = None,
        window: int = WINDOW,
        sample_interval: float = SAMPLE_INTERVAL,
        grid: float = 6 * 3600.0,
        until: float | None = None,
        splits: dict[str, tuple[str, str]] | None = None,
        make_simulator: Callable[[Trace, int, int], Any] = default_simulator,
        seed: int = 0,
        progress: bool = False,
        time_scale: float = 1.0,
    ) -> None:
        """``time_scale`` k: the trace is a site's load replayed k times faster (durations
        divided by k); the agents see it at the site's scale (``max_limit`` is then in the
        site's seconds, the trace's longest limit times k when not given)."""
        if grid % sample_interval:
            raise ValueError("grid must be a multiple of sample_interval")
        self.trace = trace
        self.total_units = total_units or estimate_total_units(trace)
        self.time_scale = float(time_scale)
        self.max_limit = max_limit or max_limit_of(trace) * self.time_scale
        self.window = window
        self.sample_interval = sample_interval
        self.grid = grid
        self.splits = split_ranges(trace, splits)
        last = max(iv[-1][1] for iv in self.splits.values())
        self.until = until if until is not None else last
        self.sim = make_simulator(trace, self.total_units, seed)
        self.checkpoints: list[Checkpoint] = []
        self._last_id = (int(trace.job_id.max()) if len(trace) else 0) + 10_000_000
        self._prepare(progress)

    def new_builder(self) -> ObservationBuilder:
        return ObservationBuilder(
            self.total_units,
            self.max_limit,
            self.window,
            self.sample_interval * self.time_scale,
            time_scale=self.time_scale,
        )

    def _prepare(self, progress: bool) -> None:
        builder = self.new_builder()
        sim = self.sim
        step = self.sample_interval
        n = int(math.ceil(self.until / step)) + 1
        every = int(self.grid // step)
        bar = tqdm(total=n, desc="warm-up replay", unit="sample", disable=not progress)
        for i in range(n):
            t = i * step
            sim.advance(t)
            builder.push(sim.queue_snapshot())
            if i % every == 0:
                self.checkpoints.append(Checkpoint(t, sim.snapshot(), builder.state()))
            bar.update()
        bar.close()
        self._times = np.array([c.time for c in self.checkpoints])

    def checkpoint_before(self, t: float) -> Checkpoint:
        """The latest checkpoint at or before ``t``."""
        i = int(np.searchsorted(self._times, t, side="right")) - 1
        if i < 0:
            raise ValueError(f"no checkpoint before t={t}")
        return self.checkpoints[i]

    def restore(self, cp: Checkpoint) -> None:
        """Put the simulator back to ``cp``. Restoring the first checkpoint before it keeps
        the simulator's finished-job log bounded (``restore`` truncates the log but cannot
        go forward)."""
        self.sim.restore(self.checkpoints[0].sim_state)
        self.sim.restore(cp.sim_state)

    def new_job_id(self) -> int:
        """A job id no earlier episode used (restores rewind the simulator's own counter,
        not the ids its finished-job log remembers)."""
        self._last_id += 1
        return self._last_id

    def sample_start(self, split: str, rng: np.random.Generator) -> float:
        """A start time in ``split``, on the sample grid."""
        if split not in self.splits:
            raise ValueError(f"unknown split {split!r}; have {', '.join(self.splits)}")
        parts = [(a, min(b, self.until)) for a, b in self.splits[split] if a < self.until]
        if not parts:
            raise ValueError(f"split {split!r} lies after the prepared replay")
        lengths = np.array([b - a for a, b in parts])
        x = float(rng.uniform(0.0, lengths.sum()))
        i = min(int(np.searchsorted(np.cumsum(lengths), x, side="right")), len(parts) - 1)
        t = parts[i][0] + x - (lengths[:i].sum() if i else 0.0)
        return math.floor(t / self.sample_interval) * self.sample_interval


_WORLDS: dict[tuple[Any, ...], ChainWorld] = {}


def get_world(trace: str | Trace, **kwargs: Any) -> ChainWorld:
    """A per-process cached :class:`ChainWorld` for a trace path (or Trace) and options."""
    key = (trace if isinstance(trace, str) else id(trace), repr(sorted(kwargs.items())))
    if key not in _WORLDS:
        if isinstance(trace, str):
            from sim.traces.read import read_trace

            trace = read_trace(trace)
        _WORLDS[key] = ChainWorld(trace, **kwargs)
    return _WORLDS[key]
