"""The backtest's declaration, fixed before anything runs: its weeks and chain shapes.

Weeks are ``[origin, origin + every)`` intervals of the trace's relative clock. Chains of
``history`` weeks (before the first origin) are only ever training or validation data;
each ``dev`` or ``test`` week is predicted by models trained at its origin on what is known
by then. The test weeks are the last ``test_weeks`` ones, or those from ``test_from``.
A log's periods may be declared ahead, as data found by the log's SHA-256
(:class:`DeclaredPeriods`, ``NAME.backtest.json``); the project ships LS6's: weeks from
2023-01-02, the test from 2023-02-27 (March, which earlier studies have already seen).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mirage.envs.world import _date_to_rel
from sim.calibration import find_stored
from sim.traces.model import Trace

DAY = 86400.0
DECLARED_SUFFIX = ".backtest.json"
LONG_JOB_QUANTILE = 0.9
"""Chain shapes are drawn from the jobs whose limit is at least this quantile of limits."""


@dataclass(frozen=True, slots=True)
class Week:
    """One week: ``start``/``end`` in relative seconds, ``role`` history, dev or test."""

    start: float
    end: float
    role: str
    label: str  # the start as a UTC date


@dataclass(frozen=True, slots=True)
class Plan:
    """Everything the backtest declares before it runs (saved as ``plan.json``)."""

    trace: str
    digest: str
    total_units: int
    weeks: tuple[Week, ...]
    chains_per_week: int
    shapes: tuple[tuple[int, float], ...]  # (units, limit s) drawn from, uniformly
    decision_interval: float
    agents: tuple[str, ...]
    seeds: tuple[int, ...]
    epochs: int
    seed: int
    note: str
    #: days of labelled history an origin trains and validates on (the weeks that end within
    #: them); 0: everything known by then. ``mirage retrain`` and the backtest default to 56.
    history_days: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def origins(self) -> list[Week]:
        return [w for w in self.weeks if w.role != "history"]

    @classmethod
    def of(
        cls,
        trace: Trace,
        total_units: int,
        weeks: tuple[Week, ...],
        shapes: tuple[tuple[int, float], ...],
        agents: tuple[str, ...],
        seeds: tuple[int, ...],
        args: Any,
        note: str = "",
    ) -> Plan:
        """A plan from the commands' shared options (``chains_per_week``,
        ``decision_interval``, ``epochs``, ``seed`` and ``history_days`` of ``args``)."""
        return cls(
            trace=str(trace.source),
            digest=trace.digest,
            total_units=total_units,
            weeks=weeks,
            chains_per_week=args.chains_per_week,
            shapes=shapes,
            decision_interval=args.decision_interval,
            agents=agents,
            seeds=seeds,
            epochs=args.epochs,
            seed=args.seed,
            note=note,
            history_days=args.history_days,
        )


def _date(t: float, epoch: float) -> str:
    return datetime.fromtimestamp(t + epoch, UTC).strftime("%Y-%m-%d")


def _rel(date: str, epoch: float, flag: str) -> float:
    try:
        return _date_to_rel(date, epoch)
    except ValueError:
        raise ValueError(f"{flag}: not a date (YYYY-MM-DD): {date!r}") from None


@dataclass(frozen=True, slots=True)
class DeclaredPeriods:
    """A log's backtest periods, declared before any backtest ran on it: the first origin,
    where the test starts, and a note printed beside the test's figures (e.g. that the test
    period was seen before). Stored as ``NAME.backtest.json`` beside the log, in the user
    cache, or shipped in ``sim/data``, and found by the log's SHA-256."""

    sha256: str
    first_origin: str | None = None
    test_from: str | None = None
    note: str = ""

    @classmethod
    def from_json(cls, text: str, path: str = "") -> DeclaredPeriods:
        d = json.loads(text)
        return cls(d["sha256"], d.get("first_origin"), d.get("test_from"), d.get("note", ""))


def declared_periods(trace: Trace) -> DeclaredPeriods | None:
    """The periods declared for this log's content, or None."""
    return find_stored(trace, DECLARED_SUFFIX, "backtest-periods", DeclaredPeriods.from_json)


def make_weeks(
    trace: Trace,
    longest_chain: float,
    *,
    every_days: float = 7.0,
    first_origin: str | None = None,
    test_from: str | None = None,
    test_weeks: int = 4,
    min_train_days: float = 21.0,
    warmup: float = DAY,
) -> tuple[Week, ...]:
    """The weeks: full weeks whose chains (up to ``longest_chain`` long) end while the log
    still has arrivals, history weeks back to ``warmup`` (the observation's first day)."""
    step = every_days * DAY
    epoch = trace.start_epoch
    end = float(trace.submit.max()) - longest_chain  # the last chain start
    if first_origin is not None:
        first = _rel(first_origin, epoch, "--first-origin")
    else:  # as many whole weeks as fit after min_train_days, aligned on the log's end
        n = math.floor((end - min_train_days * DAY) / step)
        first = end - n * step
    origins = [first + k * step for k in range(max(0, math.floor((end - first) / step)))]
    if len(origins) < 2:
        raise ValueError(
            f"{trace.source}: the log is too short for a backtest: {len(origins)} whole "
            f"week(s) after the first origin {_date(first, epoch)} (need 2; chains up to "
            f"{longest_chain / 3600:.0f} h must end before the last arrival)"
        )
    if test_from is not None:
        cut = _rel(test_from, epoch, "--test-from")
        roles = ["test" if o >= cut else "dev" for o in origins]
    else:
        k = max(0, len(origins) - test_weeks)
        roles = ["dev"] * k + ["test"] * (len(origins) - k)
    history = []
    t = first - step
    while t + step > warmup:
        history.append(Week(max(t, warmup), t + step, "history", _date(max(t, warmup), epoch)))
        t -= step
    weeks = history[::-1] + [
        Week(o, o + step, r, _date(o, epoch)) for o, r in zip(origins, roles, strict=True)
    ]
    return tuple(weeks)


def holdout_weeks(
    trace: Trace, longest_chain: float, holdout_days: float = 7.0, history_days: float = 56.0
) -> tuple[Week, ...]:
    """``mirage retrain``'s weeks: the most recent ``holdout_days`` whose chains end before
    the log's last arrival (the one origin, role ``test``), after ``history_days`` of history
    weeks (training and validation), at most back to the observation's first day."""
    step = holdout_days * DAY
    end = float(trace.submit.max()) - longest_chain
    origin = end - step
    if origin < 2 * step:
        raise ValueError(
            f"{trace.source}: {(end + longest_chain) / DAY:.1f} days of accounting are too few "
            f"to train and hold out {holdout_days:g} days (chains up to "
            f"{longest_chain / 3600:.0f} h must end before its last job)"
        )
    epoch = trace.start_epoch
    weeks = []
    t = origin - step
    while t + step > max(DAY, origin - history_days * DAY):
        lo = max(t, DAY, origin - history_days * DAY)
        weeks.append(Week(lo, t + step, "history", _date(lo, epoch)))
        t -= step
    return (*weeks[::-1], Week(origin, origin + step, "test", _date(origin, epoch)))


def chain_shapes(
    trace: Trace,
    total_units: int,
    max_limit: float,
    units: int | None = None,
    limit_hours: float | None = None,
) -> tuple[tuple[int, float], ...]:
    """The (units, limit) pairs chains are drawn from: given ones, or the site's own long
    jobs (limit at least the :data:`LONG_JOB_QUANTILE` of limits, at most ``max_limit``,
    at most a quarter of the cluster), each distinct pair once."""
    if units is not None and limit_hours is not None:
        return ((int(units), float(limit_hours) * 3600.0),)
    lim = np.where(np.isfinite(trace.limit), trace.limit, 0.0)
    cut = float(np.quantile(lim[lim > 0], LONG_JOB_QUANTILE))
    ok = (lim >= cut) & (lim <= max_limit) & (trace.units <= max(1, total_units // 4))
    if units is not None:
        ok &= trace.units == units
    pairs = sorted({(int(u), float(x)) for u, x in zip(trace.units[ok], lim[ok], strict=True)})
    if limit_hours is not None:
        pairs = sorted({(u, float(limit_hours) * 3600.0) for u, _ in pairs})
    if not pairs:
        raise ValueError(f"{trace.source}: no long jobs to draw chain shapes from; give them")
    return tuple(pairs)


def week_starts(plan: Plan, week: Week, sample_interval: float) -> list[tuple[float, int, float]]:
    """The week's chains ``(t0, units, limit)``, seeded by the plan's seed and the week's
    start alone (a longer plan draws the same chains in the same weeks)."""
    rng = np.random.default_rng([plan.seed, int(week.start)])
    out = []
    for _ in range(plan.chains_per_week):
        t = float(rng.uniform(week.start, week.end))
        t = math.floor(t / sample_interval) * sample_interval
        units, limit = plan.shapes[int(rng.integers(len(plan.shapes)))]
        out.append((t, units, limit))
    return sorted(out)
