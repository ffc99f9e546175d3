"""Mirage's observation: a history of queue summaries plus the chain's own state.

One builder serves the simulator and the live cluster: push a
:class:`~hpcbase.snapshot.QueueSnapshot` every ``sample_interval`` seconds (default 10 min), then
call :meth:`ObservationBuilder.observe` with the chain's :class:`ChainState` at a decision.

The observation is a ``(window + 1, N_FEATURES)`` float32 matrix: rows ``0 .. window-1`` are
the last ``window`` queue samples (oldest first, zero rows before the first sample), the
last row holds the chain's context (predecessor and successor), zero-padded. Everything is
normalised by the cluster's size (``total_units``) and its maximum wall-clock limit
(``max_limit``) so that a model trained on one cluster runs on another:

* counts: ``log1p(n) / log1p(total_units)``;
* units: fraction of ``total_units``;
* limits, elapsed and remaining times: fraction of ``max_limit``;
* waits: ``log1p(hours) / log1p(max_limit in hours)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from hpcbase.snapshot import QueueSnapshot
from mirage import _obsrow

FEATURE_VERSION = 5
"""Bumped whenever the meaning or order of a feature changes; stored with every model.
2: work-based queue features (pending and running node-hours) and the scheduler's start
estimate for the successor in the context row. 3: how much of their limits recently ended
jobs used (``ended_*``), i.e. how far limit-based estimates have been off. 4: the waits of
recently started jobs no larger than the successor (``fit_*`` context features, appended).
5: ``run_remaining_work``, the running jobs' remaining node-time as ``run_work`` was meant to
be (a queue column, appended; ``run_work`` stays as versions 2-4 computed it)."""

WINDOW = 144
"""Default history length in samples (24 h of 10-minute samples)."""
SAMPLE_INTERVAL = 600.0
"""Default seconds between queue samples."""
DECISION_INTERVAL = 600.0
"""Default seconds between decisions on a live chain and in evaluation."""

QUEUE_FEATURES: tuple[str, ...] = (
    "pend_count",
    "run_count",
    "pend_units",
    "pend_eligible_units",
    "run_units",
    "pend_limit_p50",
    "pend_limit_p90",
    "pend_wait_p50",
    "pend_wait_p90",
    "pend_wait_max",
    "pend_job_units_p50",
    "pend_job_units_p90",
    "run_limit_p50",
    "run_elapsed_p50",
    "run_remaining_p10",
    "run_remaining_p50",
    "free_in_1h",
    "free_in_6h",
    "free_in_24h",
    "started_count",
    "started_wait_mean",
    "started_wait_p50",
    "started_wait_p90",
    "started_wait_max",
    "pend_work",
    "pend_eligible_work",
    "run_work",
    "ended_count",
    "ended_used_mean",
    "ended_used_p50",
    "ended_work_ratio",
    "run_remaining_work",
)
"""Per-sample summary features (columns of the history rows). ``*_work``: node-seconds
(pending: units x limit; running: units x remaining limit) over ``total_units x max_limit``,
i.e. how many maximum-limit periods the whole cluster needs for that work: what decides a
new job's wait under age-based priority, where every pending job outranks it.
``ended_*``: the running jobs that ended within ``wait_horizon`` of the sample (seen running
at one sample, gone at the next): their count, the mean and median share of their limit they
used, and the node-time they used over the node-time their limits promised. Jobs that end
before their limits are why the scheduler's estimates (which assume full limits) run late.
``run_work`` is kept as versions 2-4 computed it, which models of those versions were trained
on: each running job's units paired with the remaining limits in ascending order, not with
its own (the same sum when all jobs have one size; 6 % off at the median on LS6, where 80 %
of jobs take one node, and uncorrelated noise on HPC2N's processor counts).
``run_remaining_work`` (version 5) pairs each job with its own remaining limit."""

CONTEXT_FEATURES: tuple[str, ...] = (
    "pred_units",
    "pred_limit",
    "pred_started",
    "pred_wait",
    "pred_elapsed",
    "pred_remaining",
    "pred_remaining_log",
    "succ_units",
    "succ_limit",
    "est_known",
    "est_wait",
    "est_late",
    "est_early",
    "fit_count",
    "fit_wait_mean",
    "fit_wait_p50",
    "fit_wait_p90",
    "fit_recent_count",
    "fit_recent_wait_mean",
)
"""The chain's own features (the last row of the observation). ``est_*``: the scheduler's
start estimate for a successor submitted now (``sbatch --test-only`` live, a probe in the
simulator): known flag, its wait, and how far after (``late``) or before (``early``) the
predecessor's end it would start, as fractions of ``max_limit``. ``fit_*``: the jobs no
larger than the successor (units) that started within ``wait_horizon`` (``fit_recent_*``:
within :data:`FIT_RECENT`): their count and waits. A backlog of wide jobs can make the whole
queue read as heavy while jobs of the chain's size backfill at once; these waits see that."""

CONTEXT_COLUMNS = {3: 13, 4: 19, 5: len(CONTEXT_FEATURES)}
"""How many context features each feature version has: a version only appends, so a model
of an older version runs on today's observations with the newer columns zeroed (what it
saw in training), :func:`for_version`."""
QUEUE_COLUMNS = {3: 31, 4: 31, 5: len(QUEUE_FEATURES)}
"""How many queue features (the observation's width) each feature version has: a model of
an older version gets today's observations cut to its width, :func:`for_version`."""

FIT_RECENT = 3 * 3600.0
"""Horizon (seconds) of the ``fit_recent_*`` context features."""

N_FEATURES = len(QUEUE_FEATURES)


def queue_columns(names: Sequence[str]) -> list[int]:
    """The history columns of the queue features ``names``; a clear error for others."""
    unknown = [n for n in names if n not in QUEUE_FEATURES]
    if unknown:
        raise ValueError(
            f"not queue features: {', '.join(unknown)} (known: {', '.join(QUEUE_FEATURES)})"
        )
    return [QUEUE_FEATURES.index(n) for n in names]


if _obsrow.QUEUE_COLUMNS != QUEUE_FEATURES:  # the compiled row fills columns by position
    raise ImportError("mirage._obsrow was built for another QUEUE_FEATURES; rebuild it")
assert len(CONTEXT_FEATURES) <= N_FEATURES
Q = {name: i for i, name in enumerate(QUEUE_FEATURES)}
"""Column of each queue feature."""
C = {name: i for i, name in enumerate(CONTEXT_FEATURES)}
"""Column of each context feature in the last row."""


def for_version(obs: np.ndarray, version: int) -> np.ndarray:
    """Observations ``(..., window + 1, N_FEATURES)`` as a model of feature ``version`` saw
    them: as wide as that version's rows, the context columns it did not have zero (a copy
    only if needed)."""
    n = CONTEXT_COLUMNS.get(version)
    if n is None:
        raise ValueError(f"feature version {version} is not readable by this code")
    width = QUEUE_COLUMNS[version]
    if n == len(CONTEXT_FEATURES) and width == N_FEATURES:
        return obs
    out = np.array(obs[..., :width], copy=True)
    out[..., -1, n:] = 0.0
    return out


@dataclass(frozen=True, slots=True)
class ChainState:
    """What the agent knows about its chain at ``now`` (seconds, the snapshots' clock).

    ``pred_start`` is NaN while the predecessor is still pending.
    """

    now: float
    pred_units: int
    pred_limit: float
    pred_submit: float
    pred_start: float
    succ_units: int
    succ_limit: float
    est_start: float = math.nan
    """The scheduler's expected start of a successor submitted now; NaN if unknown."""

    def scaled(self, factor: float) -> ChainState:
        """The chain on a clock ``factor`` times slower (see ``QueueSnapshot.scaled``)."""
        if factor == 1.0:
            return self
        k = float(factor)
        return replace(
            self,
            now=self.now * k,
            pred_limit=self.pred_limit * k,
            pred_submit=self.pred_submit * k,
            pred_start=self.pred_start * k,
            succ_limit=self.succ_limit * k,
            est_start=self.est_start * k,
        )

    @property
    def pred_elapsed(self) -> float:
        return 0.0 if math.isnan(self.pred_start) else max(self.now - self.pred_start, 0.0)

    @property
    def pred_remaining(self) -> float:
        """Seconds until the predecessor reaches its limit (the agent's view of its end)."""
        return max(self.pred_limit - self.pred_elapsed, 0.0)


@dataclass(slots=True)
class BuilderState:
    """A copy of a builder's history, to restore it (e.g. with a simulator snapshot)."""

    rows: np.ndarray
    filled: int
    prev_ids: np.ndarray
    prev_submit: np.ndarray
    prev_run_ids: np.ndarray
    prev_time: float
    start_time: np.ndarray
    start_wait: np.ndarray
    start_units: np.ndarray
    prev_run_start: np.ndarray
    prev_run_limit: np.ndarray
    prev_run_units: np.ndarray
    end_time: np.ndarray
    end_used: np.ndarray
    end_units: np.ndarray
    end_limit: np.ndarray


class ObservationBuilder:
    """Turns queue snapshots into Mirage's normalised history window."""

    def __init__(
        self,
        total_units: int,
        max_limit: float,
        window: int = WINDOW,
        sample_interval: float = SAMPLE_INTERVAL,
        wait_horizon: float = 86400.0,
        time_scale: float = 1.0,
    ) -> None:
        """``time_scale`` k: the snapshots and chains given run on a clock k times faster
        than the site's the features are for (a time-compressed replay); every time and
        duration is multiplied by k on the way in, so ``max_limit``, ``sample_interval`` and
        ``wait_horizon`` are in the site's seconds, as are :meth:`recent_waits`."""
        if time_scale <= 0 or not math.isfinite(time_scale):
            raise ValueError(f"time_scale must be positive, got {time_scale}")
        if total_units <= 0:
            raise ValueError(f"total_units must be positive, got {total_units}")
        if max_limit <= 0:
            raise ValueError(f"max_limit must be positive, got {max_limit}")
        self.total_units = int(total_units)
        self.max_limit = float(max_limit)
        self.window = int(window)
        self.sample_interval = float(sample_interval)
        self.wait_horizon = float(wait_horizon)
        self.time_scale = float(time_scale)
        self._count_norm = 1.0 / math.log1p(self.total_units)
        self._wait_norm = 1.0 / math.log1p(self.max_limit / 3600.0)
        self._rows = np.zeros((self.window, N_FEATURES), np.float32)
        self._filled = 0
        self._prev_ids = np.empty(0, np.int64)
        self._prev_submit = np.empty(0, np.float64)
        self._prev_run_ids = np.empty(0, np.int64)
        self._prev_time = math.nan
        self._start_time = np.empty(0, np.float64)
        self._start_wait = np.empty(0, np.float64)
        self._start_units = np.empty(0, np.float64)
        self._fit_cache: dict[int, tuple[float, ...]] = {}
        self._prev_run_start = np.empty(0, np.float64)
        self._prev_run_limit = np.empty(0, np.float64)
        self._prev_run_units = np.empty(0, np.float64)
        self._end_time = np.empty(0, np.float64)
        self._end_used = np.empty(0, np.float64)  # seconds each ended job ran (estimated)
        self._end_units = np.empty(0, np.float64)
        self._end_limit = np.empty(0, np.float64)

    @property
    def shape(self) -> tuple[int, int]:
        """Shape of :meth:`observe`'s result."""
        return (self.window + 1, N_FEATURES)

    def _wait(self, seconds: float) -> float:
        """A wait feature: ``log1p(hours) / log1p(max_limit hours)``, negatives as 0 (NaN
        stays NaN)."""
        s = seconds if seconds > 0.0 or seconds != seconds else 0.0
        return float(np.log1p(s / 3600.0) * self._wait_norm)

    def recent_waits(self) -> np.ndarray:
        """Waits (seconds) of jobs seen starting within ``wait_horizon`` of the last sample.

        A job that was pending at the previous sample and runs now waited
        ``start - submit``; one that appeared and started between two samples is counted
        with a wait of 0 (a lower bound: it waited less than one sample interval).
        """
        return self._start_wait

    def _track(self, snap: QueueSnapshot) -> None:
        """Record the jobs that started (running now, not at the previous sample) and ended
        (running then, gone now) since the previous sample, and forget those older than
        ``wait_horizon`` (the compiled core, ``mirage/_obsrow.c``). A start's wait is
        ``start - submit`` if the job was pending at the previous sample, else 0 (it came
        and started within one interval: a lower bound). An end is placed at the middle of
        the interval, the time it ran clipped to its limit."""
        run_ids = snap.run_id
        starts = np.empty((3, self._start_time.shape[0] + run_ids.shape[0]))
        ends = np.empty((4, self._end_time.shape[0] + self._prev_run_ids.shape[0]))
        n_starts, n_ends = _obsrow.track(
            self._prev_time,
            snap.time,
            snap.time - self.wait_horizon,
            self._prev_ids,
            self._prev_submit,
            self._prev_run_ids,
            self._prev_run_start,
            self._prev_run_limit,
            self._prev_run_units,
            run_ids,
            snap.run_start,
            snap.run_units,
            self._start_time,
            self._start_wait,
            self._start_units,
            self._end_time,
            self._end_used,
            self._end_units,
            self._end_limit,
            starts,
            ends,
        )
        if n_starts >= 0:  # rows of one block: each a contiguous array
            self._start_time, self._start_wait, self._start_units = starts[:, :n_starts]
        if n_ends >= 0:
            self._end_time, self._end_used, self._end_units, self._end_limit = ends[:, :n_ends]
        self._fit_cache = {}
        # references, not copies: a snapshot's arrays are never changed after it is pushed
        self._prev_ids = snap.pend_id
        self._prev_submit = snap.pend_submit
        self._prev_run_ids = run_ids
        self._prev_run_start = snap.run_start
        self._prev_run_limit = snap.run_limit
        self._prev_run_units = snap.run_units.astype(np.float64)
        self._prev_time = snap.time

    def queue_features(self, snap: QueueSnapshot) -> np.ndarray:
        """The summary row of one snapshot (does not change the history); computed by the
        compiled core (``mirage/_obsrow.c``) over the snapshot and the tracked starts and
        ends."""
        row = np.empty(N_FEATURES, np.float32)
        _obsrow.queue_row(
            row,
            snap.time,
            self.max_limit,
            self.total_units,
            self._count_norm,
            self._wait_norm,
            snap.pend_units,
            snap.pend_limit,
            snap.pend_submit,
            snap.pend_eligible,
            snap.run_units,
            snap.run_limit,
            snap.run_start,
            self._start_wait,
            self._end_limit,
            self._end_used,
            self._end_units,
        )
        return row

    def push(self, snap: QueueSnapshot) -> np.ndarray:
        """Add one sample to the history; returns its row."""
        snap = snap.scaled(self.time_scale)
        self._track(snap)
        row = self.queue_features(snap)
        if self._filled < self.window:
            self._rows[self._filled] = row
            self._filled += 1
        else:
            self._rows[:-1] = self._rows[1:]
            self._rows[-1] = row
        return row

    def site_chain(self, chain: ChainState) -> ChainState:
        """``chain`` on the site's clock (:attr:`time_scale`), as the features see it."""
        return chain.scaled(self.time_scale)

    def context_row(self, chain: ChainState) -> np.ndarray:
        """The chain's context features, zero-padded to ``N_FEATURES``."""
        chain = self.site_chain(chain)
        u = 1.0 / self.total_units
        lim = 1.0 / self.max_limit
        started = not math.isnan(chain.pred_start)
        waited = (chain.pred_start if started else chain.now) - chain.pred_submit
        remaining = chain.pred_remaining
        est: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
        if not math.isnan(chain.est_start):
            wait = max(chain.est_start - chain.now, 0.0)
            late = wait - remaining  # > 0: would start after the predecessor ends
            est = (
                1.0,
                self._wait(wait),
                min(max(late, 0.0) * lim, 4.0),
                min(max(-late, 0.0) * lim, 4.0),
            )
        fit = self._fit_cache.get(chain.succ_units)
        if fit is None:
            fit = self._fit_cache[chain.succ_units] = self._fit_features(chain.succ_units)
        row = np.zeros(N_FEATURES, np.float32)
        row[: len(CONTEXT_FEATURES)] = (  # in CONTEXT_FEATURES' order
            chain.pred_units * u,
            chain.pred_limit * lim,
            1.0 if started else 0.0,
            self._wait(waited),
            chain.pred_elapsed * lim,
            remaining * lim,
            self._wait(remaining),
            chain.succ_units * u,
            chain.succ_limit * lim,
            *est,
            *fit,
        )
        return row

    def _fit_features(self, units: int) -> tuple[float, ...]:
        """The ``fit_*`` context features for a successor of ``units`` (cached per sample):
        over the tracked starts of jobs of at most ``units``, the count and the mean, median
        and p90 wait, then the count and mean wait of those within :data:`FIT_RECENT`."""
        return _obsrow.fit_features(
            self._start_units,
            self._start_wait,
            self._start_time,
            float(units),
            self._prev_time - FIT_RECENT,
            self._count_norm,
            self._wait_norm,
        )

    def observe(self, chain: ChainState) -> np.ndarray:
        """The observation at a decision: history rows (oldest first) + the context row."""
        obs = np.zeros(self.shape, np.float32)
        n = self._filled
        obs[self.window - n : self.window] = self._rows[:n]
        obs[self.window] = self.context_row(chain)
        return obs

    def state(self) -> BuilderState:
        """A copy of the history (for :meth:`set_state`)."""
        return BuilderState(
            rows=self._rows.copy(),
            filled=self._filled,
            prev_ids=self._prev_ids,
            prev_submit=self._prev_submit,
            prev_run_ids=self._prev_run_ids,
            prev_time=self._prev_time,
            start_time=self._start_time,
            start_wait=self._start_wait,
            start_units=self._start_units,
            prev_run_start=self._prev_run_start,
            prev_run_limit=self._prev_run_limit,
            prev_run_units=self._prev_run_units,
            end_time=self._end_time,
            end_used=self._end_used,
            end_units=self._end_units,
            end_limit=self._end_limit,
        )

    def set_state(self, state: BuilderState) -> None:
        """Go back to a copy taken by :meth:`state` (arrays are never mutated in place; a
        state read from a file gets the dtypes the compiled core needs)."""
        i64, f64 = np.int64, np.float64
        self._rows[:] = state.rows
        self._filled = state.filled
        self._prev_ids = np.ascontiguousarray(state.prev_ids, i64)
        self._prev_submit = np.ascontiguousarray(state.prev_submit, f64)
        self._prev_run_ids = np.ascontiguousarray(state.prev_run_ids, i64)
        self._prev_time = float(state.prev_time)
        self._start_time = np.ascontiguousarray(state.start_time, f64)
        self._start_wait = np.ascontiguousarray(state.start_wait, f64)
        self._start_units = np.ascontiguousarray(state.start_units, f64)
        self._fit_cache = {}
        self._prev_run_start = np.ascontiguousarray(state.prev_run_start, f64)
        self._prev_run_limit = np.ascontiguousarray(state.prev_run_limit, f64)
        self._prev_run_units = np.ascontiguousarray(state.prev_run_units, f64)
        self._end_time = np.ascontiguousarray(state.end_time, f64)
        self._end_used = np.ascontiguousarray(state.end_used, f64)
        self._end_units = np.ascontiguousarray(state.end_units, f64)
        self._end_limit = np.ascontiguousarray(state.end_limit, f64)
