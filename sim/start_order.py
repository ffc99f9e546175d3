"""What a log's recorded start order shows of its scheduler: the priority and the backfill
depth (``bf_max_job_test``).

Slurm starts jobs in priority order: its main scheduler from the top of the queue, its
backfill from the first ``bf_max_job_test`` jobs that a per-user limit does not hold. So at
each recorded start, the started job's *rank* (how many pending jobs, not held by a limit,
the priority puts ahead of it) is small under the site's priority, and never reaches the
site's depth. :func:`infer_order` picks the ``PRIORITY_SETTINGS`` entry under which the
recorded starts reach least deep into their queues, and a depth where they stop well short
of the queues that were waiting (where the ranks thin out at a clear wall below their bound,
the wall: :func:`rank_wall`). It reads the recorded order only, never the recorded
waits, which a replay is judged on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.config import SlurmConfig
from sim.limits import Caps, QosLimits
from sim.priority import PriorityModel, fairshare_at
from sim.profile import PRIORITY_SETTINGS, priority_lines, weight_lines, weights_text
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
#: where the grid's best setting leaves the order unbounded but nearly so (at least this
#: share of ``DEEP_SHARE``), :func:`refine` tries weights off the grid, which may bound it
#: (a site whose job-size or age weight outweighs its fair share, which no grid entry has)
NEARLY = 0.5
#: Slurm's default depth: more than this is no limit worth stating
DEFAULT_DEPTH = 500
#: a *wall* in the ranks: the depth ``d`` (between the ranks' 90th percentile and their
#: bound) where their count per rank over ``[d, d + w)`` is at most ``WALL_SHARE`` of that
#: over ``[d - w, d)`` (``w`` = a fifth of ``d``, at least 3), the largest such drop; the
#: depth is the wall where it lies more than ``WALL_GAIN`` below the bound's depth (a few
#: starts that rank deeper, under fair-share factors the record gives only roughly, lift
#: the percentile past the site's depth)
WALL_FROM_PERCENTILE = 90.0
WALL_SHARE = 0.35
WALL_GAIN = 0.1


@dataclass(frozen=True)
class StartOrder:
    """The priority and depth a log's start order shows, with the evidence."""

    priority: str  # a PRIORITY_SETTINGS key
    depth: int | None  # bf_max_job_test; None: Slurm's default
    #: per priority setting, the sampled starts' ranks' DEPTH_PERCENTILE
    bounds: dict[str, int]
    #: the setting with the lowest bound (FIFO where it ties); where refined weights bound
    #: an order the grid left nearly bounded, the setting they were refined from
    best: str
    starts: int  # sampled starts with a queue ahead
    bounded: bool  # whether the best bound stops well short of the queues (else FIFO)
    #: the weights that bound the ranks lower still, off the grid (:func:`refine`, as
    #: :func:`~sim.profile.weight_lines` takes them), and their bound; empty where none does
    refined: tuple[float, ...] = ()
    weights_bound: int = 0
    #: the wall in the ranks the depth was taken at (:func:`rank_wall`); 0 where none was
    wall: int = 0

    @property
    def weights(self) -> tuple[str, ...]:
        """The refined weights' ``slurm.conf`` lines (empty where none)."""
        return weight_lines(*self.refined) if self.refined else ()

    def lines(self) -> list[str]:
        """The ``slurm.conf`` lines of what was inferred (the refined weights if any)."""
        depth = [f"SchedulerParameters=bf_max_job_test={self.depth}"] if self.depth else []
        return (list(self.weights) or priority_lines(self.priority)) + depth

    def describe(self) -> str:
        """One line: what was inferred, and from what."""
        share = f"{DEPTH_PERCENTILE:g} % of {self.starts} recorded starts ranked within"
        if not self.bounded:
            return (
                f"nothing: {share} {self.bounds[self.best]} of their queues under {self.best}, "
                "and the queues were seldom much deeper"
            )
        depth = f"bf_max_job_test={self.depth}" if self.depth else "the default depth"
        if self.wall:
            depth += " (where the ranks thin out)"
        fifo = "" if self.priority == "fifo" else f", {self.bounds['fifo']} under fifo"
        if not self.weights:
            return (
                f"priority {self.priority}, {depth}: {share} {self.bounds[self.best]} of "
                f"their queues under it{fifo}"
            )
        named = weights_text(self.refined)
        return (
            f"priority {self.priority} with its weights refined ({named}), {depth}: {share} "
            f"{self.weights_bound} of their queues under them ({self.bounds[self.best]} under "
            f"{self.best}{fifo})"
        )


def _sample(trace: Trace, sample: int, until: float) -> np.ndarray:
    """Indices of the recorded starts before ``until`` to rank: all, thinned evenly."""
    started = np.flatnonzero(trace.recorded_start < until)
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
    jobs_cap, cap = limits.max_jobs_per_user, limits.max_nodes_per_user
    own = {u[0]: limits.caps(u[0]) for u in limits.user_limits}
    if jobs_cap is not None:
        jobs = np.bincount(users, minlength=size)
        held |= jobs[cu] >= _per_user(cu, jobs_cap, own, 0)
    if cap is not None:
        units = np.bincount(users, weights=trace.units[running], minlength=size)
        over = units[cu] + trace.units[cand] > _per_user(cu, cap, own, 1)
        if limits.larger_jobs_exempt:
            over &= trace.units[cand] <= cap
        held |= over
    return held


def _per_user(users: np.ndarray, qos: int, own: dict[int, Caps], k: int) -> np.ndarray:
    """Each of ``users``' limit ``k`` (jobs, nodes): ``qos``, or their own (``own``: user ->
    :meth:`QosLimits.caps`) where they have one; no limit is infinite."""
    caps = np.full(users.size, float(qos))
    for user, c in own.items():
        caps[users == user] = math.inf if c[k] is None else c[k]
    return caps


class Queues:
    """The sampled recorded starts with a queue ahead: each start's time, the started job
    and the pending jobs no limit held then; each priority's ranks of them (:meth:`ranks`),
    with the fair-share factors per half-life computed once."""

    def __init__(
        self,
        trace: Trace,
        units: int,
        limits: QosLimits | None,
        sample: int = SAMPLE,
        until: float = math.inf,
    ) -> None:
        self.trace, self.units = trace, units
        idx = _sample(trace, sample, until)
        sub, st = trace.submit, trace.recorded_start
        start = np.where(np.isfinite(st), st, np.inf)
        end = start + np.maximum(trace.runtime, 0.0)
        by_sub = np.argsort(sub, kind="stable")
        sub_sorted = sub[by_sub]
        longest_wait = float(np.nanmax(start - sub, initial=0.0, where=np.isfinite(start)))
        by_start = np.argsort(start, kind="stable")
        start_sorted = start[by_start]
        longest_run = float(np.max(np.maximum(trace.runtime, 0.0), initial=0.0))
        self.started: list[int] = []
        self.pending: list[np.ndarray] = []
        for j in idx.tolist():
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
            if cand.size:
                self.started.append(j)
                self.pending.append(cand)
        self.times = st[np.array(self.started, np.int64)] if self.started else np.zeros(0)
        self.lengths = np.array([c.size for c in self.pending], np.int64)
        # every queue's pending jobs in one array, and the row (start) each belongs to
        self._flat = np.concatenate(self.pending) if self.pending else np.zeros(0, np.int64)
        self._row_of = np.repeat(np.arange(len(self.started)), self.lengths)
        self.n_users = int(trace.user.max()) + 1 if len(trace) else 1
        self._fairshare: dict[float, np.ndarray] = {}
        self._sizes, self._size_of = np.unique(trace.units, return_inverse=True)

    def ranks(self, cfg: SlurmConfig) -> np.ndarray:
        """Each start's rank under ``cfg``'s priority (ties: submitted first ranks first)."""
        trace = self.trace
        model = PriorityModel(cfg, self.units, trace.unit, self.n_users)
        factor = np.array([model.size_factor(int(u)) for u in self._sizes.tolist()])
        size_term = cfg.weight_job_size * factor[self._size_of]
        shares = None
        if model.w_fairshare:
            half = cfg.decay_half_life
            if half not in self._fairshare:
                self._fairshare[half] = fairshare_at(trace, half, self.times, self.n_users)
            shares = self._fairshare[half]
        sub, rows = trace.submit, np.arange(len(self.started))
        started, flat, row_of = np.array(self.started, np.int64), self._flat, self._row_of

        def fs(jobs: np.ndarray, at: np.ndarray) -> np.ndarray | None:
            """Each job's user's fair-share factor at its row's start."""
            return None if shares is None else shares[at, trace.user[jobs]]

        mine = _priorities(model, trace, started, self.times, size_term, fs(started, rows))
        pri = _priorities(model, trace, flat, self.times[row_of], size_term, fs(flat, row_of))
        theirs = mine[row_of]
        ahead = (pri > theirs) | ((pri == theirs) & (sub[flat] < sub[started][row_of]))
        return np.bincount(row_of, weights=ahead, minlength=len(rows)).astype(np.int64)


def grid_config(key: str) -> SlurmConfig:
    """The priority config of a ``PRIORITY_SETTINGS`` entry."""
    return SlurmConfig.from_text("\n".join(priority_lines(key)) + "\n", f"priority {key}")


def _priorities(
    model: PriorityModel,
    trace: Trace,
    jobs: np.ndarray,
    t: np.ndarray,
    size_term: np.ndarray,
    fairshare: np.ndarray | None,
) -> np.ndarray:
    """The priority ``model`` gives each of ``jobs`` at its time ``t`` (FIFO: earlier
    submitted, higher), with each job's job-size term and ``fairshare``, its user's factor
    then (None without fair share)."""
    cfg = model.cfg
    if not cfg.multifactor:
        return -trace.submit[jobs]
    age = np.clip(t - trace.submit[jobs], 0.0, cfg.max_age)
    pri = size_term[jobs] + model.w_age * (age / cfg.max_age if cfg.max_age > 0 else 1.0)
    if model.w_fairshare and fairshare is not None:
        pri += model.w_fairshare * fairshare
    return np.maximum(np.trunc(pri), 1.0)


def infer_order(
    trace: Trace, units: int, limits: QosLimits | None, until: float = math.inf
) -> StartOrder | None:
    """The priority and depth the recorded start order (before ``until``) shows (None: no
    start had a queue ahead). Under each priority setting the sampled starts' ranks have a
    bound (their ``DEPTH_PERCENTILE``); the site's priority is the one with the lowest bound
    (FIFO where it ties), since under any other the backfill seems to reach deeper than it
    did. The order is *bounded* where at least ``DEEP_SHARE`` of the queues were ``DEEPER``
    times longer than that bound: then the priority is that one and the depth the bound + 1
    (below ``DEFAULT_DEPTH``), unless the ranks thin out at a clear wall below it
    (:func:`rank_wall`). Weights off the grid (:func:`refine`, from the best setting other
    than FIFO) replace the setting's where they bound the order clearly lower, and may bound
    an order the grid left *nearly* bounded (``NEARLY``). Otherwise backfill reached what it
    liked, the order says nothing, and the priority stays FIFO."""
    q = Queues(trace, units, limits, until=until)
    if not q.started:
        return None
    ranked = {k: q.ranks(grid_config(k)) for k in PRIORITY_SETTINGS}
    bounds = {k: rank_bound(r) for k, r in ranked.items()}
    best = min(bounds, key=lambda k: (bounds[k], k != "fifo"))
    bound = bounds[best]

    def deep(b: int) -> float:
        """The share of queues ``DEEPER`` times deeper than the bound ``b``."""
        return float(np.mean(q.lengths >= DEEPER * (b + 1)))

    bounded = deep(bound) >= DEEP_SHARE
    nearly = not bounded and deep(bound) >= DEEP_SHARE * NEARLY
    weights: tuple[float, ...] = ()
    refined = bound
    if (bounded and best != "fifo") or nearly:
        start = min((k for k in bounds if k != "fifo"), key=lambda k: bounds[k])
        weights, refined = refine(q, start)
        if refined > (1 - REFINE_GAIN) * bounds[start] or deep(refined) < DEEP_SHARE:
            weights, refined = (), bound  # not clearly better: the grid's
        elif nearly:  # the refined weights bound what the grid's did not
            best, bounded = start, True
    wall = 0
    if bounded:
        ranks = ranked[best]
        if weights:
            lines = "\n".join(weight_lines(*weights)) + "\n"
            ranks = q.ranks(SlurmConfig.from_text(lines, "refined weights"))
        wall = rank_wall(ranks, refined) or 0
    depth = wall or refined + 1
    return StartOrder(
        best if bounded else "fifo",
        depth if bounded and depth < DEFAULT_DEPTH else None,
        bounds,
        best,
        len(q.started),
        bounded,
        weights,
        refined if weights else 0,
        wall,
    )


def rank_bound(ranks: np.ndarray) -> int:
    """The ranks' ``DEPTH_PERCENTILE``, rounded up."""
    return int(math.ceil(np.percentile(ranks, DEPTH_PERCENTILE)))


def rank_wall(ranks: np.ndarray, bound: int) -> int | None:
    """The depth at the ranks' wall (see :data:`WALL_SHARE`) where it lies clearly below
    ``bound`` + 1 (None: no such wall)."""
    counts = np.bincount(ranks, minlength=2 * bound + 8).astype(float)
    lowest = max(1, int(np.percentile(ranks, WALL_FROM_PERCENTILE)))
    best, wall = 0.0, None
    for d in range(lowest, bound + 2):
        w = max(3, d // 5)
        below, above = counts[max(0, d - w) : d].mean(), counts[d : d + w].mean()
        if above <= WALL_SHARE * below and below - above > best:
            best, wall = below - above, d
    return wall if wall is not None and wall < (1 - WALL_GAIN) * (bound + 1) else None


#: the weights :func:`refine` moves, relative to PriorityWeightFairshare=100000: the
#: half-life (days), the age factor's rate (share of the fair-share weight per day of age:
#: below the cap only the rate orders jobs), the job-size weight (share) and the age cap
#: (PriorityMaxAge, days); first over these values, then off them (:data:`STEPS`)
HALF_LIVES = (0.5, 1.0, 2.0, 3.5, 5.0, 7.0, 10.0, 14.0)
AGE_RATES = (0.0, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3)
SIZE_SHARES = (0.0, 0.01, 0.03, 0.1, 0.2, 0.35, 0.6, 1.0)
MAX_AGES = (1.0, 3.0, 7.0, 14.0)
AXES = (HALF_LIVES, AGE_RATES, SIZE_SHARES, MAX_AGES)
#: then each weight times and over these factors in turn (each until no move helps, at most
#: STEP_ROUNDS rounds): the bound is sensitive to weights between the axes' values
STEPS = (1.5, 1.22, 1.1)
STEP_ROUNDS = 4
#: the longest age cap tried (days)
LONGEST_MAX_AGE = 30.0
#: the ranks' top share whose mean tells apart weights of one bound
TAIL = 0.05
#: refined weights replace the grid's setting only where they lower its bound by this share
REFINE_GAIN = 0.1


def _stepped(value: float, axis: int, step: float, up: bool) -> float | None:
    """``value`` of weight ``axis`` times (``up``) or over ``step``: times in whole hours;
    a zero rate or share goes up to its axis' least non-zero value, and one that falls
    below half of that becomes zero (None: no such move)."""
    least = AXES[axis][1] if AXES[axis][0] == 0.0 else None
    if value == 0.0:
        return least if up else None
    new = value * step if up else value / step
    if least is not None and new < least / 2:
        return 0.0
    if least is None:  # a time: the half-life or the age cap, in whole hours
        new = min(max(round(new * 24) / 24, 1 / 24), LONGEST_MAX_AGE)
    return new


def refine(q: Queues, key: str) -> tuple[tuple[float, ...], int]:
    """Weights off the grid that bound the ranks lowest (then with the lowest mean of the
    ranks' top ``TAIL``), from the grid setting ``key``: a coordinate descent over the axes'
    values (at most 3 rounds), then a pattern search in the shrinking :data:`STEPS`. The
    weights (as :func:`~sim.profile.weight_lines` takes them) and their bound."""
    size_weight = PRIORITY_SETTINGS[key][1]
    half = grid_config(key).decay_half_life
    point = [half / 86400, 0.01 / 7, size_weight / 100000, 7.0]  # the grid's age: 1000 over 7 d
    seen: dict[tuple[str, ...], tuple[int, float]] = {}

    def score(x: list[float]) -> tuple[int, float]:
        lines = weight_lines(*x)
        if lines not in seen:
            ranks = q.ranks(SlurmConfig.from_text("\n".join(lines) + "\n", "refined weights"))
            top = np.sort(ranks)[int((1 - TAIL) * ranks.size) :]
            seen[lines] = (rank_bound(ranks), float(top.mean()) if top.size else 0.0)
        return seen[lines]

    def moved_to(axis: int, value: float | None) -> bool:
        """Whether ``point`` moved to ``value`` on ``axis`` (it does where that scores better)."""
        nonlocal point
        if value is None:
            return False
        cand = point[:axis] + [value] + point[axis + 1 :]
        if score(cand) < score(point):
            point = cand
            return True
        return False

    for _ in range(3):  # over the axes' values
        moved = False
        for i, options in enumerate(AXES):
            for v in options:
                moved |= moved_to(i, v)
        if not moved:
            break
    for step in STEPS:  # then off them
        for _ in range(STEP_ROUNDS):
            moved = False
            for i in range(len(AXES)):
                for up in (True, False):
                    moved |= moved_to(i, _stepped(point[i], i, step, up))
            if not moved:
                break
    return tuple(point), score(point)[0]
