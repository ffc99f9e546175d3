"""What a log's recorded start order shows of its scheduler: the priority and the backfill
depth (``bf_max_job_test``).

Slurm starts jobs in priority order: its main scheduler from the top of the queue, its
backfill from the first ``bf_max_job_test`` jobs that a per-user limit does not hold. So at
each recorded start, the started job's *rank* (how many pending jobs, not held by a limit,
the priority puts ahead of it) is small under the site's priority, and never reaches the
site's depth. :func:`infer_order` picks the ``PRIORITY_SETTINGS`` entry under which the
recorded starts reach least deep into their queues, and a depth where they stop well short
of the queues that were waiting. It reads the recorded order only, never the recorded
waits, which a replay is judged on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.config import SlurmConfig
from sim.limits import QosLimits
from sim.priority import PriorityModel, fairshare_at
from sim.profile import PRIORITY_SETTINGS, priority_lines
from sim.traces.model import Trace

#: recorded starts sampled (evenly over all recorded starts): enough for the ranks'
#: top percentile, cheap on a log of half a million jobs
SAMPLE = 1500
#: the ranks' percentile that bounds the depth (a few starts rank deeper: fair-share
#: factors the log's record of usage gives only roughly, jobs that ended at that moment)
DEPTH_PERCENTILE = 98.0
#: the order is bounded where the eligible queue was at least this many times deeper than
#: the ranks' bound at this share of the sampled starts
DEEPER = 2.0
DEEP_SHARE = 0.2
#: Slurm's default depth: more than this is no limit worth stating
DEFAULT_DEPTH = 500


@dataclass(frozen=True)
class StartOrder:
    """The priority and depth a log's start order shows, with the evidence."""

    priority: str  # a PRIORITY_SETTINGS key
    depth: int | None  # bf_max_job_test; None: Slurm's default
    #: per priority setting, the sampled starts' ranks' DEPTH_PERCENTILE
    bounds: dict[str, int]
    best: str  # the setting with the lowest bound (FIFO where it ties)
    starts: int  # sampled starts with a queue ahead
    bounded: bool  # whether the best bound stops well short of the queues (else FIFO)

    def lines(self) -> list[str]:
        """The ``slurm.conf`` lines of what was inferred."""
        depth = [f"SchedulerParameters=bf_max_job_test={self.depth}"] if self.depth else []
        return priority_lines(self.priority) + depth

    def describe(self) -> str:
        """One line: what was inferred, and from what."""
        within = (
            f"{DEPTH_PERCENTILE:g} % of {self.starts} recorded starts ranked within "
            f"{self.bounds[self.best]} of their queues under {self.best}"
        )
        if not self.bounded:
            return f"nothing: {within}, and the queues were seldom much deeper"
        depth = f"bf_max_job_test={self.depth}" if self.depth else "the default depth"
        vs = "" if self.priority == "fifo" else f" (under fifo within {self.bounds['fifo']})"
        return f"priority {self.priority}, {depth}: {within}{vs}"


def _sample(trace: Trace, sample: int) -> np.ndarray:
    """Indices of the recorded starts to rank: every started job, thinned evenly."""
    started = np.flatnonzero(np.isfinite(trace.recorded_start))
    started = started[np.argsort(trace.recorded_start[started], kind="stable")]
    if started.size > sample:
        started = started[np.linspace(0, started.size - 1, sample).astype(np.int64)]
    return started


def _held(
    trace: Trace, limits: QosLimits | None, t: float, cand: np.ndarray, running: np.ndarray
) -> np.ndarray:
    """Which of the candidate jobs a per-user limit holds at ``t`` (the jobs ``running``
    then as recorded)."""
    if limits is None or not limits.run_limited:
        return np.zeros(cand.size, bool)
    users = trace.user[running]
    size = int(max(trace.user[cand].max(initial=0), users.max(initial=0))) + 1
    held = np.zeros(cand.size, bool)
    cu = trace.user[cand]
    if limits.max_jobs_per_user is not None:
        jobs = np.bincount(users, minlength=size)
        held |= jobs[cu] >= limits.max_jobs_per_user
    cap = limits.max_nodes_per_user
    if cap is not None:
        units = np.bincount(users, weights=trace.units[running], minlength=size)
        over = units[cu] + trace.units[cand] > cap
        if limits.larger_jobs_exempt:
            over &= trace.units[cand] <= cap
        held |= over
    return held


def start_ranks(
    trace: Trace, units: int, limits: QosLimits | None, sample: int = SAMPLE
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """At each sampled recorded start with a queue ahead: per ``PRIORITY_SETTINGS`` entry,
    the started job's rank among the pending jobs not held by ``limits`` (ties: submitted
    first ranks first); and that eligible queue's length."""
    idx = _sample(trace, sample)
    sub, st = trace.submit, trace.recorded_start
    start = np.where(np.isfinite(st), st, np.inf)
    end = start + np.maximum(trace.runtime, 0.0)
    by_sub = np.argsort(sub, kind="stable")
    sub_sorted = sub[by_sub]
    longest_wait = float(np.nanmax(start - sub, initial=0.0, where=np.isfinite(start)))
    by_start = np.argsort(start, kind="stable")
    start_sorted = start[by_start]
    longest_run = float(np.max(np.maximum(trace.runtime, 0.0), initial=0.0))
    n_users = int(trace.user.max()) + 1 if len(trace) else 1
    halves = {PRIORITY_SETTINGS[k][0] for k in PRIORITY_SETTINGS} - {""}
    models: dict[str, PriorityModel] = {}
    sizes: dict[str, np.ndarray] = {}  # each job's job-size term under each setting
    uniq, inverse = np.unique(trace.units, return_inverse=True)
    for key in PRIORITY_SETTINGS:
        cfg = SlurmConfig.from_text("\n".join(priority_lines(key)) + "\n", f"priority {key}")
        model = models[key] = PriorityModel(cfg, units, trace.unit, n_users)
        factor = np.array([model.size_factor(int(u)) for u in uniq.tolist()])
        sizes[key] = cfg.weight_job_size * factor[inverse]
    times = st[idx]
    by_half = {h: fairshare_at(trace, _half_life(h), times, n_users) for h in halves}
    shares = {k: by_half.get(PRIORITY_SETTINGS[k][0], np.ones((times.size, 1))) for k in models}
    ranks: dict[str, list[int]] = {k: [] for k in PRIORITY_SETTINGS}
    queue: list[int] = []
    for row, j in enumerate(idx.tolist()):
        t = float(st[j])
        lo = np.searchsorted(sub_sorted, t - longest_wait, "left")
        hi = np.searchsorted(sub_sorted, t, "right")
        cand = by_sub[lo:hi]
        cand = cand[(start[cand] >= t) & (cand != j)]
        a = np.searchsorted(start_sorted, t - longest_run, "left")
        b = np.searchsorted(start_sorted, t, "left")
        running = by_start[a:b]
        running = running[end[running] > t]
        cand = cand[~_held(trace, limits, t, cand, running)]
        if not cand.size:
            continue
        queue.append(int(cand.size))
        for key, model in models.items():
            pri = _priorities(model, trace, np.r_[cand, j], t, sizes[key], shares[key][row])
            ahead = (pri[:-1] > pri[-1]) | ((pri[:-1] == pri[-1]) & (sub[cand] < sub[j]))
            ranks[key].append(int(ahead.sum()))
    return {k: np.array(v, np.int64) for k, v in ranks.items()}, np.array(queue, np.int64)


def _half_life(text: str) -> float:
    """A ``PRIORITIES`` half-life in seconds (as the config reads it)."""
    return SlurmConfig.from_text(f"PriorityDecayHalfLife={text}\n", "half-life").decay_half_life


def _priorities(
    model: PriorityModel,
    trace: Trace,
    jobs: np.ndarray,
    t: float,
    size_term: np.ndarray,
    fairshare: np.ndarray,
) -> np.ndarray:
    """The priority ``model`` gives ``jobs`` at ``t`` (FIFO: earlier submitted, higher), with
    each job's job-size term and each user's fair-share factor then."""
    cfg = model.cfg
    if not cfg.multifactor:
        return -trace.submit[jobs]
    age = np.clip(t - trace.submit[jobs], 0.0, cfg.max_age)
    pri = size_term[jobs] + model.w_age * (age / cfg.max_age if cfg.max_age > 0 else 1.0)
    if model.w_fairshare:
        pri += model.w_fairshare * fairshare[trace.user[jobs]]
    return np.maximum(np.trunc(pri), 1.0)


def infer_order(trace: Trace, units: int, limits: QosLimits | None) -> StartOrder | None:
    """The priority and depth the recorded start order shows (None: no start had a queue
    ahead). Under each priority setting the sampled starts' ranks have a bound (their
    ``DEPTH_PERCENTILE``); the site's priority is the one with the lowest bound (FIFO where
    it ties), since under any other the backfill seems to reach deeper than it did. The
    order is *bounded* where at least ``DEEP_SHARE`` of the queues were ``DEEPER`` times
    longer than that bound: then the priority is that one and the depth the bound + 1
    (below ``DEFAULT_DEPTH``). Otherwise backfill reached what it liked, the order says
    nothing, and the priority stays FIFO."""
    ranks, queue = start_ranks(trace, units, limits)
    if not queue.size:
        return None
    bounds = {k: int(math.ceil(np.percentile(r, DEPTH_PERCENTILE))) for k, r in ranks.items()}
    best = min(bounds, key=lambda k: (bounds[k], k != "fifo"))
    bound = bounds[best]
    bounded = float(np.mean(queue >= DEEPER * (bound + 1))) >= DEEP_SHARE
    depth = bound + 1 if bounded and bound + 1 < DEFAULT_DEPTH else None
    return StartOrder(best if bounded else "fifo", depth, bounds, best, int(queue.size), bounded)
